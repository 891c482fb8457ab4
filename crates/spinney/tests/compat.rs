//! Databases written by earlier builds still open and read the same.
//!
//! Each directory under `tests/compat/` is a corpus made by
//! `scripts/make-compat-corpus.sh` at a given commit (its `SOURCE` says
//! which): a database (`db/`) and what it must read back (`expected.txt`).
//! Every build opens a copy of each (the corpus itself is never written),
//! replays its log, reads every table, verifies every file, reads every
//! table again through memory maps (`Options::mmap_reads`), and then
//! writes to it, reopens it and reads it again.

use std::path::{Path, PathBuf};

use spinney::{Db, Options};

mod common;

use common::files::copy_dir;

/// One table of `expected.txt`: its name, kind, codec and entries.
struct Expected {
    name: String,
    kind: String,
    codec: String,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn expected(path: &Path) -> Vec<Expected> {
    let text = std::fs::read_to_string(path).expect("expected.txt");
    let mut tables: Vec<Expected> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields.as_slice() {
            ["table", name, kind, codec] => tables.push(Expected {
                name: name.to_string(),
                kind: kind.to_string(),
                codec: codec.to_string(),
                entries: Vec::new(),
            }),
            [k, v] => tables
                .last_mut()
                .expect("an entry after its table")
                .entries
                .push((unhex(k), unhex(v))),
            _ => panic!("{}: a line of neither form: {line:?}", path.display()),
        }
    }
    tables
}

fn corpora() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/compat")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("expected.txt").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// Reads every expected table of `db` and compares.
fn check(db: &Db, want: &[Expected], corpus: &Path) {
    assert_eq!(
        db.tables().len(),
        want.len(),
        "{}: tables",
        corpus.display()
    );
    for t in want {
        let table = db.table(&t.name).expect("table");
        assert_eq!(table.options().kind.name(), t.kind, "{}", t.name);
        assert_eq!(table.options().compression.name(), t.codec, "{}", t.name);
        let got: Vec<(Vec<u8>, Vec<u8>)> = table
            .iter()
            .expect("iter")
            .collect::<spinney::Result<_>>()
            .unwrap_or_else(|e| panic!("{}: {}: {e}", corpus.display(), t.name));
        assert_eq!(
            got.len(),
            t.entries.len(),
            "{}: {} entries",
            corpus.display(),
            t.name
        );
        for (g, w) in got.iter().zip(&t.entries) {
            assert_eq!(g, w, "{}: {}", corpus.display(), t.name);
        }
        for (k, v) in t.entries.iter().step_by(7) {
            let value = table.get(k).expect("get");
            assert_eq!(
                value.as_ref(),
                Some(v),
                "{}: {} get",
                corpus.display(),
                t.name
            );
        }
    }
}

#[test]
fn every_corpus_of_an_earlier_build_opens_and_reads_the_same() {
    let corpora = corpora();
    assert!(!corpora.is_empty(), "no corpus under tests/compat");
    for corpus in corpora {
        let want = expected(&corpus.join("expected.txt"));
        assert!(
            want.iter().any(|t| !t.entries.is_empty()),
            "an empty corpus"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let copy = dir.path().join("db");
        copy_dir(&corpus.join("db"), &copy);

        let db = Db::open(&copy, Options::default())
            .unwrap_or_else(|e| panic!("{}: open: {e}", corpus.display()));
        check(&db, &want, &corpus);
        db.verify()
            .unwrap_or_else(|e| panic!("{}: verify: {e}", corpus.display()));
        db.close().expect("close");

        // The same files read through memory maps: blocks checked where
        // they lie, the compressed ones decompressed from there.
        let mapped = Options {
            mmap_reads: true,
            ..Options::default()
        };
        let db = Db::open(&copy, mapped)
            .unwrap_or_else(|e| panic!("{}: open mapped: {e}", corpus.display()));
        check(&db, &want, &corpus);

        // Written by this build, then reopened: the old files and the new
        // ones side by side.
        for t in &want {
            db.table(&t.name)
                .expect("table")
                .put(b"written-now", b"1")
                .expect("put");
        }
        db.flush().expect("flush");
        db.checkpoint().expect("checkpoint");
        db.close().expect("close");
        let db = Db::open(&copy, Options::default()).expect("reopen");
        for t in &want {
            let table = db.table(&t.name).expect("table");
            assert_eq!(table.get(b"written-now").expect("get"), Some(b"1".to_vec()));
            table.delete(b"written-now").expect("delete");
        }
        check(&db, &want, &corpus);
        db.verify().expect("verify after writing");
    }
}
