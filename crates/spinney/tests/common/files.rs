//! What the directory of a database at rest may hold: recovery and every
//! finished operation leave no orphan behind; and a copy of a database's
//! directory on the real file system.

use std::path::{Path, PathBuf};

use spinney::fs::FaultFs;
use spinney::Db;

use super::DB;

/// The names that start with "MANIFEST-", sorted.
pub fn manifests_in(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut m: Vec<String> = names
        .into_iter()
        .filter(|n| n.starts_with("MANIFEST-"))
        .collect();
    m.sort();
    m
}

/// Checks that the directory holds exactly the files of a database at
/// rest: the SSTs the shapes of the LSM tables `lsm` count, one file per
/// B-tree table (`btrees` of them), one manifest, one log segment, CURRENT
/// and LOCK.
pub fn check_files(ctx: &str, fs: &FaultFs, db: &Db, lsm: &[&str], btrees: usize) {
    let mut shape_files = 0;
    for name in lsm {
        let shape = db
            .table(name)
            .and_then(|t| t.shape())
            .unwrap_or_else(|e| panic!("{ctx}: shape of {name}: {e}"));
        assert_eq!(shape.immutable_memtables, 0, "{ctx}: {name}: {shape:?}");
        shape_files += shape.l0_runs + shape.levels.iter().map(|l| l.files).sum::<usize>();
    }
    let names: Vec<String> = fs
        .files()
        .iter()
        .filter(|p| p.parent() == Some(Path::new(DB)))
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let count = |f: &dyn Fn(&str) -> bool| names.iter().filter(|n| f(n)).count();
    let ssts = count(&|n| n.ends_with(".sst"));
    assert_eq!(
        ssts, shape_files,
        "{ctx}: {ssts} .sst files but the shapes count {shape_files}: {names:?}"
    );
    assert_eq!(
        count(&|n| n.ends_with(".btree")),
        btrees,
        "{ctx}: B-tree files: {names:?}"
    );
    assert_eq!(
        manifests_in(names.iter().cloned()).len(),
        1,
        "{ctx}: manifests: {names:?}"
    );
    assert_eq!(
        count(&|n| n.ends_with(".wal")),
        1,
        "{ctx}: log segments: {names:?}"
    );
    let others: Vec<&String> = names
        .iter()
        .filter(|n| {
            !(n.ends_with(".sst")
                || n.ends_with(".btree")
                || n.ends_with(".wal")
                || n.starts_with("MANIFEST-")
                || *n == "CURRENT"
                || *n == "LOCK")
        })
        .collect();
    assert!(others.is_empty(), "{ctx}: unexpected files {others:?}");
}

/// The files of the directory `dir` named `*.ext` (`wal`, `btree`, ...),
/// on the real file system, in name order (for numbered files, oldest
/// first).
pub fn with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

/// Copies every file of the directory `from` into `to` (made if missing),
/// on the real file system: a database at rest, to damage or to open
/// without changing the original.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}
