//! The write-ahead log: record framing, the segment writer, recovery reading,
//! and the write-batch payload it carries.
//!
//! One log serves every table of the database. Each committed `WriteBatch`
//! is one record; a record is framed into 32 KiB blocks so that recovery can
//! tell a torn tail (a crash in the middle of an append) from damage in the
//! middle of the log, and resynchronise at the next block. The manifest uses
//! the same framing for its records.
//!
//! Byte layout: docs/format.md#write-ahead-log.

pub(crate) mod batch;
pub(crate) mod format;
pub(crate) mod reader;
pub(crate) mod segment;
pub(crate) mod writer;
