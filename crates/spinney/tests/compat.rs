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

use common::files::{copy_dir, with_extension};

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

/// The database format `expected.txt` names (`# format N`); a corpus
/// made before formats were numbered names none, and is format 1.
fn format_of(path: &Path) -> u32 {
    let text = std::fs::read_to_string(path).expect("expected.txt");
    text.lines()
        .find_map(|l| l.strip_prefix("# format "))
        .map_or(1, |n| n.parse().expect("a format number"))
}

/// Whether the files this build wrote into `db` (its live manifest and
/// its newest log segment, which holds a write) name their format, as
/// they must from format 2 on and must not before.
fn files_name_their_format(db: &Path) -> (bool, bool) {
    let dump = |path: &Path| {
        let mut out = Vec::new();
        spinney::dump(path, &mut out).unwrap_or_else(|e| panic!("dump {}: {e}", path.display()));
        String::from_utf8(out).expect("UTF-8")
    };
    let current = std::fs::read_to_string(db.join("CURRENT")).expect("CURRENT");
    let manifest = dump(&db.join(current.trim_end()));
    let segments = with_extension(db, "wal");
    let segment = dump(segments.last().expect("a log segment"));
    assert!(
        segment.contains(" batch "),
        "no write in the newest segment:\n{segment}"
    );
    let first_record = manifest.lines().nth(1).unwrap_or_default();
    (
        first_record.starts_with("@0 format="),
        segment.contains("@0 segment header: log format version"),
    )
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

        let format = format_of(&corpus.join("expected.txt"));
        let db = Db::open(&copy, Options::default())
            .unwrap_or_else(|e| panic!("{}: open: {e}", corpus.display()));
        assert_eq!(db.format_version(), format, "{}", corpus.display());
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
        // Opened and written by this build, the database kept its format:
        // the build that wrote it can still open it.
        assert_eq!(db.format_version(), format, "{}", corpus.display());
        drop(db);
        assert_eq!(
            files_name_their_format(&copy),
            (format >= 2, format >= 2),
            "{}: the new manifest's and log segment's format",
            corpus.display()
        );

        // Upgraded when asked: the newest format, the same content.
        let upgrade = Options {
            upgrade_format: true,
            ..Options::default()
        };
        let db = Db::open(&copy, upgrade).expect("upgrade");
        assert_eq!(db.format_version(), spinney::FORMAT_VERSION);
        check(&db, &want, &corpus);
        db.table(&want[0].name)
            .expect("table")
            .put(b"after-upgrade", b"1")
            .expect("put");
        drop(db);
        assert_eq!(
            files_name_their_format(&copy),
            (true, true),
            "{}",
            corpus.display()
        );
        let db = Db::open(&copy, Options::default()).expect("reopen upgraded");
        assert_eq!(db.format_version(), spinney::FORMAT_VERSION);
        db.table(&want[0].name)
            .expect("table")
            .delete(b"after-upgrade")
            .expect("delete");
        check(&db, &want, &corpus);
        db.verify().expect("verify after the upgrade");
    }
}
