//! The `spinney` command, run as a process: outputs and exit codes.

use std::path::Path;
use std::process::{Command, Output};

fn spinney(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spinney"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("run spinney")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn create_put_get_prints_the_value() {
    // The done-criterion, exactly.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("x");
    assert!(spinney(&db, &["create", "t"]).status.success());
    assert!(spinney(&db, &["put", "t", "k", "v"]).status.success());
    let out = spinney(&db, &["get", "t", "k"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "v\n");
}

#[test]
fn exit_codes_tell_absent_from_usage_from_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("x");
    assert!(spinney(&db, &["create", "t"]).status.success());
    assert_eq!(
        spinney(&db, &["get", "t", "missing"]).status.code(),
        Some(1)
    );
    assert_eq!(
        spinney(&db, &["get", "no_such_table", "k"]).status.code(),
        Some(3)
    );
    assert_eq!(spinney(&db, &["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        spinney(&db, &["--hex", "get", "t", "zz"]).status.code(),
        Some(2)
    );
    assert!(spinney(&db, &["create", "b", "--kind", "btree"])
        .status
        .success());
    // Commands other than create and load do not create a database.
    assert_eq!(
        spinney(&dir.path().join("nothing"), &["tables"])
            .status
            .code(),
        Some(3)
    );
}

#[test]
fn scan_prints_key_tab_value_lines_with_bounds_reverse_and_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("x");
    assert!(spinney(
        &db,
        &["create", "t", "--compression", "zstd", "--bloom-bits", "0"]
    )
    .status
    .success());
    for k in ["a", "b", "c", "d"] {
        assert!(spinney(&db, &["put", "t", k, &k.to_uppercase()])
            .status
            .success());
    }
    assert!(spinney(&db, &["delete", "t", "b"]).status.success());
    assert!(spinney(&db, &["flush"]).status.success());
    assert_eq!(stdout(&spinney(&db, &["scan", "t"])), "a\tA\nc\tC\nd\tD\n");
    assert_eq!(
        stdout(&spinney(&db, &["scan", "t", "--from", "b", "--to", "d"])),
        "c\tC\n"
    );
    assert_eq!(
        stdout(&spinney(&db, &["scan", "t", "--reverse", "--limit", "2"])),
        "d\tD\nc\tC\n"
    );
    assert_eq!(
        stdout(&spinney(&db, &["--hex", "scan", "t", "--limit", "1"])),
        "61\t41\n"
    );
    assert_eq!(
        stdout(&spinney(&db, &["tables"])),
        "t\tlsm\tcompression=zstd bloom_bits=0 block_size=4096 write_buffer_size=8388608\n"
    );
    let verify = spinney(&db, &["verify"]);
    assert!(verify.status.success());
    assert!(stdout(&verify).starts_with("ok: "));
}

#[test]
fn verify_fails_on_a_corrupt_file_and_dump_reads_every_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("x");
    assert!(spinney(&db, &["load", "t", "--count", "2000"])
        .status
        .success());
    assert!(spinney(&db, &["put", "t", "after", "flush"])
        .status
        .success());
    let names: Vec<String> = std::fs::read_dir(&db)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    for name in &names {
        if name.ends_with(".sst")
            || name.ends_with(".wal")
            || name.starts_with("MANIFEST-")
            || name == "CURRENT"
        {
            let out = Command::new(env!("CARGO_BIN_EXE_spinney"))
                .arg("dump")
                .arg(db.join(name))
                .output()
                .expect("dump");
            assert!(
                out.status.success(),
                "dump {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!out.stdout.is_empty());
        }
    }
    let sst = names.iter().find(|n| n.ends_with(".sst")).expect("an sst");
    let path = db.join(sst);
    let mut bytes = std::fs::read(&path).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xFF;
    std::fs::write(&path, bytes).expect("write");
    let out = spinney(&db, &["verify"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(sst.as_str()),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `spinney` and fails the test, showing stderr, if it does not exit 0.
fn ok(db: &Path, args: &[&str]) -> String {
    let out = spinney(db, args);
    assert!(
        out.status.success(),
        "spinney {args:?} exited {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

/// `shape --json` of `table`, parsed.
fn shape_json(db: &Path, table: &str) -> serde_json::Value {
    let text = ok(db, &["shape", table, "--json"]);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("shape --json: {e}: {text}"))
}

/// The file count of each level 1..=6 in a parsed shape.
fn level_files(shape: &serde_json::Value) -> Vec<u64> {
    let levels = shape["levels"].as_array().expect("levels is an array");
    levels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            assert_eq!(l["level"].as_u64(), Some(i as u64 + 1), "{shape}");
            l["files"].as_u64().expect("files is a number")
        })
        .collect()
}

/// The count column of the row named `tree` in `shape`'s table output.
fn shape_row(text: &str, tree: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(tree))
        .unwrap_or_else(|| panic!("no {tree} row in:\n{text}"));
    line.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line:?}"))
}

#[test]
fn compact_and_shape_follow_a_tiered_table_from_l0_to_the_last_level() {
    // Goal: the compaction commands move a tiered table's data where the
    // shape command says it is: flushed into one L0 run, `compact --level
    // 0` into L1, `compact --all` into L6; in table and JSON form; and
    // `stats --json` describes the table. `compact` needs --level or --all.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("x");
    ok(&db, &["create", "t", "--compaction", "tiered"]);
    let loaded = ok(&db, &["load", "t", "--count", "3000"]);
    assert!(loaded.contains("read back 3000 of 3000"), "{loaded}");
    ok(&db, &["flush"]);
    // The 3,000 entries fit one write buffer: one L0 run (made by the flush,
    // or by the reopen's recovery of the log, whichever came first).
    let text = ok(&db, &["shape", "t"]);
    assert_eq!(shape_row(&text, "L0"), 1, "{text}");
    for level in 1..=6 {
        assert_eq!(shape_row(&text, &format!("L{level}")), 0, "{text}");
    }
    assert_eq!(shape_row(&text, "immutable"), 0, "{text}");

    ok(&db, &["compact", "t", "--level", "0"]);
    let text = ok(&db, &["shape", "t"]);
    assert_eq!(shape_row(&text, "L0"), 0, "{text}");
    assert_eq!(shape_row(&text, "L1"), 1, "{text}");
    let shape = shape_json(&db, "t");
    assert_eq!(shape["l0_runs"].as_u64(), Some(0), "{shape}");
    assert_eq!(level_files(&shape), [1, 0, 0, 0, 0, 0], "{shape}");
    assert!(
        shape["levels"][0]["bytes"].as_u64() > Some(3000 * 100),
        "{shape}"
    );

    ok(&db, &["compact", "t", "--all"]);
    let shape = shape_json(&db, "t");
    assert_eq!(shape["l0_runs"].as_u64(), Some(0), "{shape}");
    assert_eq!(level_files(&shape), [0, 0, 0, 0, 0, 1], "{shape}");

    let text = ok(&db, &["stats", "--json"]);
    let stats: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("stats --json: {e}: {text}"));
    let tables = stats["tables"].as_array().expect("tables is an array");
    assert_eq!(tables.len(), 1, "{stats}");
    assert_eq!(tables[0]["name"], "t", "{stats}");
    assert_eq!(tables[0]["compaction_style"], "tiered", "{stats}");
    assert_eq!(tables[0]["levels"].as_array().map(Vec::len), Some(7));
    assert_eq!(tables[0]["shape"]["levels"][5]["files"].as_u64(), Some(1));
    assert_eq!(ok(&db, &["scan", "t"]).lines().count(), 3000);

    // Neither --level nor --all is a usage error; a level with none below
    // it is an error of the engine's.
    let neither = spinney(&db, &["compact", "t"]);
    assert_eq!(neither.status.code(), Some(2));
    let last = spinney(&db, &["compact", "t", "--level", "6"]);
    assert_eq!(last.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&last.stderr).contains("level 6"),
        "{}",
        String::from_utf8_lossy(&last.stderr)
    );
}
