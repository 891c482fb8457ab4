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
    let btree = spinney(&db, &["create", "b", "--kind", "btree"]);
    assert_eq!(btree.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&btree.stderr).contains("B-tree tables are not available yet"));
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
