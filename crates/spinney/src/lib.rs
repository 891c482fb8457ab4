//! spinney: an embedded storage engine whose tables are B-trees or LSM trees.

pub(crate) mod cache;
pub(crate) mod encoding;
pub mod error;
pub mod fs;
pub mod limits;
pub(crate) mod lsm;
pub(crate) mod manifest;
pub mod options;
pub(crate) mod wal;

pub use error::{Error, Result};
pub use options::{
    Compression, Durability, Options, TableKind, TableOptions, WalRecovery, WriteOptions,
};
