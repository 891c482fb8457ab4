//! (Being written.)

use std::io::Write;

use super::Summary;
use crate::{BenchError, Config};

pub(crate) fn run(_config: &Config, _out: &mut dyn Write) -> Result<Summary, BenchError> {
    Err(BenchError::Config("this scenario is not built yet".into()))
}
