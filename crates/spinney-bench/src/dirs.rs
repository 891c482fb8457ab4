//! Where a run keeps its databases: the root directory (`--db`, or a
//! temporary one removed after the run), and a directory emptied for a new
//! database. The benchmarks, `--compare` and the scenarios all place their
//! databases this way; it sits below each of them, so that none imports
//! another for it.
//!
//! Thread-safety: plain functions on the file system; a directory belongs
//! to the run that made it.

use std::path::{Path, PathBuf};

use crate::lineup::Engine;
use crate::{BenchError, Config};

/// Empties `dir` for a new database: creates it if missing, deletes the
/// database it holds (of any engine the lab knows), refuses a directory
/// holding anything else.
pub(crate) fn destroy(dir: &Path) -> Result<(), BenchError> {
    let shown = dir.display();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().count(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(BenchError::io(format!("read {shown}"))(e)),
    };
    if entries > 0 {
        if !Engine::ALL.iter().any(|e| dir.join(e.marker()).exists()) {
            return Err(BenchError::Config(format!(
                "--db={shown} holds files but no database the lab made (no CURRENT, WiredTiger, data.mdb, fjall.lab or data.redb file); refusing to delete them"
            )));
        }
        std::fs::remove_dir_all(dir).map_err(BenchError::io(format!("delete {shown}")))?;
    }
    std::fs::create_dir_all(dir).map_err(BenchError::io(format!("create {shown}")))
}

/// Where a run keeps its databases: `--db` if the user gave one (kept
/// after the run), else a new temporary directory, removed when the
/// returned guard drops.
pub(crate) fn root_dir(
    config: &Config,
) -> Result<(PathBuf, Option<tempfile::TempDir>), BenchError> {
    match &config.db {
        Some(db) => Ok((db.clone(), None)),
        None => {
            let temp = tempfile::Builder::new()
                .prefix("spinney-bench-")
                .tempdir()
                .map_err(BenchError::io("create a temporary directory"))?;
            Ok((temp.path().to_path_buf(), Some(temp)))
        }
    }
}
