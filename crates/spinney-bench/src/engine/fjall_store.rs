//! The fjall adapter: not written yet (the lab refuses to run it).

use std::path::Path;

use super::{Store, TableSpec};
use crate::{BenchError, Config};

pub(crate) fn open(
    _config: &Config,
    _dir: &Path,
    _tables: &[TableSpec],
) -> Result<Box<dyn Store>, BenchError> {
    Err(BenchError::Config(
        "the fjall adapter is not written yet".into(),
    ))
}

pub(crate) fn version() -> String {
    "(not written)".into()
}

pub(crate) fn describe(_config: &Config) -> String {
    "(not written)".into()
}
