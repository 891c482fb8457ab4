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
    // A page size the engine refuses: its reason, exit 3, for either kind.
    for (kind, size) in [("btree", "5000"), ("btree", "2048"), ("lsm", "65536")] {
        let bad = spinney(&db, &["create", "p", "--kind", kind, "--page-size", size]);
        let err = String::from_utf8_lossy(&bad.stderr);
        assert_eq!(bad.status.code(), Some(3), "{kind} {size}: {err}");
        assert!(
            err.contains(&format!(
                "page_size {size} is not a power of two in 4096..=32768"
            )),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    // Not a number at all: a usage error of the command line.
    assert_eq!(
        spinney(&db, &["create", "p", "--page-size", "big"])
            .status
            .code(),
        Some(2)
    );
    assert!(!ok(&db, &["tables"]).contains("p\t"));
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

/// The `.btree` files of a database directory.
fn btree_files(db: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(db)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "btree"))
        .collect();
    files.sort();
    files
}

fn dump(file: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spinney"))
        .arg("dump")
        .arg(file)
        .output()
        .expect("dump")
}

#[test]
fn btree_tables_are_created_loaded_read_and_described() {
    // Goal: every command a user reaches for works on a B-tree table and
    // says what the user needs: create with a page size, tables (kind, page
    // size, key limit), put/get/delete/scan, load (creating the table with
    // --kind/--page-size), shape and stats in text and JSON, checkpoint.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("x");
    ok(
        &db,
        &["create", "b", "--kind", "btree", "--page-size", "4096"],
    );
    ok(&db, &["create", "l"]);
    let tables = ok(&db, &["tables"]);
    let line = tables
        .lines()
        .find(|l| l.starts_with("b\t"))
        .unwrap_or_else(|| panic!("no line for b in:\n{tables}"));
    let limit: usize = line
        .strip_prefix("b\tbtree\tcompression=none page_size=4096 max_key_len=")
        .unwrap_or_else(|| panic!("{line:?}"))
        .parse()
        .unwrap_or_else(|e| panic!("{line:?}: {e}"));
    assert!((512..=1024).contains(&limit), "{line:?}");
    assert!(
        tables.contains("l\tlsm\tcompression=none bloom_bits=10"),
        "{tables}"
    );

    // Reads and writes.
    for k in ["c", "a", "b", "d"] {
        ok(&db, &["put", "b", k, &k.to_uppercase()]);
    }
    ok(&db, &["delete", "b", "b"]);
    assert_eq!(ok(&db, &["get", "b", "a"]), "A\n");
    assert_eq!(spinney(&db, &["get", "b", "b"]).status.code(), Some(1));
    assert_eq!(ok(&db, &["scan", "b"]), "a\tA\nc\tC\nd\tD\n");
    assert_eq!(
        ok(&db, &["scan", "b", "--reverse", "--limit", "2"]),
        "d\tD\nc\tC\n"
    );
    // The key limit is the table's: one byte more is refused, with it.
    ok(&db, &["put", "b", &"k".repeat(limit), "v"]);
    let long = spinney(&db, &["put", "b", &"k".repeat(limit + 1), "v"]);
    let err = String::from_utf8_lossy(&long.stderr);
    assert_eq!(long.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("limit of {limit} bytes")), "{err}");
    ok(&db, &["delete", "b", &"k".repeat(limit)]);

    // load into the existing table (its kind given or not), and into a new
    // one it creates with the kind and page size asked for.
    let loaded = ok(&db, &["load", "b", "--kind", "btree", "--count", "3000"]);
    assert!(loaded.contains("read back 3000 of 3000"), "{loaded}");
    assert!(loaded.contains("a scan sees 3003"), "{loaded}");
    let loaded = ok(
        &db,
        &[
            "load",
            "n",
            "--kind",
            "btree",
            "--page-size",
            "16384",
            "--count",
            "2000",
            "--random",
        ],
    );
    assert!(loaded.contains("read back 2000 of 2000"), "{loaded}");
    assert!(
        ok(&db, &["tables"]).contains("n\tbtree\tcompression=none page_size=16384 max_key_len="),
        "{}",
        ok(&db, &["tables"])
    );
    let wrong = spinney(&db, &["load", "b", "--kind", "lsm", "--count", "10"]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("is a btree table, not lsm"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
    let other = spinney(&db, &["load", "n", "--page-size", "4096", "--count", "10"]);
    assert_eq!(other.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("exists with 16384-byte pages, not 4096"),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
    assert_eq!(ok(&db, &["scan", "n"]).lines().count(), 2000);

    // shape, as text and as JSON.
    let text = ok(&db, &["shape", "b"]);
    for word in [
        "B-tree", "height", "leaf", "branch", "overflow", "free", "entries", "fill", "file",
    ] {
        assert!(text.contains(word), "{word:?} missing in:\n{text}");
    }
    let shape = shape_json(&db, "b");
    let b = &shape["btree"];
    assert!(b["height"].as_u64() >= Some(2), "{shape}");
    assert!(b["leaf_pages"].as_u64() > Some(1), "{shape}");
    assert!(b["branch_pages"].as_u64() >= Some(1), "{shape}");
    assert!(b["entries"].as_u64() >= Some(3003), "{shape}");
    assert_eq!(b["page_size"].as_u64(), Some(4096), "{shape}");
    let fill = b["fill"].as_f64().expect("fill is a number");
    assert!(fill > 0.0 && fill <= 1.0, "{shape}");
    let bytes = b["file_bytes"].as_u64().expect("file_bytes is a number");
    assert!(bytes > 3000 * 100 && bytes.is_multiple_of(4096), "{shape}");
    assert_eq!(shape["levels"].as_array().map(Vec::len), Some(0), "{shape}");
    assert_eq!(
        shape_json(&db, "l")["btree"],
        serde_json::Value::Null,
        "an LSM table has no B-tree shape"
    );

    // checkpoint: every B-tree table, one line each. (Opening the database
    // already checkpointed what its log replayed.)
    let out = ok(&db, &["checkpoint"]);
    assert!(out.contains("checkpoint b: "), "{out}");
    assert!(out.contains("checkpoint n: "), "{out}");
    assert!(!out.contains("checkpoint l:"), "{out}");
    let empty = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        ok(&empty.path().join("y"), &["create", "t"]),
        "",
        "create prints nothing"
    );
    assert_eq!(
        ok(&empty.path().join("y"), &["checkpoint"]),
        "no B-tree tables\n"
    );
    ok(&db, &["flush"]);

    // stats, as text and as JSON.
    let text = ok(&db, &["stats"]);
    assert!(text.contains("table b (B-tree)"), "{text}");
    assert!(text.contains("pages of 4096 bytes"), "{text}");
    assert!(text.contains("checkpoints:"), "{text}");
    assert!(text.contains("table l ("), "{text}");
    let text = ok(&db, &["stats", "--json"]);
    let stats: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("stats --json: {e}: {text}"));
    let tables = stats["tables"].as_array().expect("tables is an array");
    let b = tables
        .iter()
        .find(|t| t["name"] == "b")
        .unwrap_or_else(|| panic!("no table b in {stats}"));
    assert_eq!(b["kind"], "btree", "{stats}");
    assert_eq!(b["btree"]["page_size"].as_u64(), Some(4096), "{stats}");
    assert!(b["btree"]["height"].as_u64() >= Some(2), "{stats}");
    assert!(b["btree"]["file_pages"].as_u64() > Some(2), "{stats}");
    let l = tables.iter().find(|t| t["name"] == "l").expect("table l");
    assert_eq!(l["kind"], "lsm", "{stats}");
    assert_eq!(l["btree"], serde_json::Value::Null, "{stats}");
}

#[test]
fn dump_and_verify_read_btree_files_and_find_a_damaged_page() {
    // Goal: `dump FILE.btree` prints the header, the pages and a verify
    // line; `verify` covers B-tree tables and fails, naming the file, when
    // a page of one is damaged.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("x");
    ok(
        &db,
        &[
            "load",
            "b",
            "--kind",
            "btree",
            "--page-size",
            "4096",
            "--count",
            "2000",
        ],
    );
    ok(&db, &["load", "l", "--count", "100"]);
    let verify = ok(&db, &["verify"]);
    assert!(verify.starts_with("ok: "), "{verify}");
    assert!(verify.contains("in 2 tables checked"), "{verify}");
    let entries: u64 = verify
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{verify}"));
    assert!(entries >= 2100, "{verify}");

    let files = btree_files(&db);
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let out = dump(file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    let first = text.lines().next().unwrap_or_default();
    for part in [
        "B-tree file",
        "page size 4096",
        "checkpoint",
        "root page",
        "height",
        "free map",
    ] {
        assert!(first.contains(part), "{part:?} missing in {first:?}");
    }
    assert!(text.contains(" branch "), "{text}");
    assert!(text.contains("\"key0000000001999\" @"), "{text}");
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("verified: 2000 versions, every page used once"),
        "{last}"
    );

    // Damage one leaf page: verify and dump both fail, naming the file.
    let leaf: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("page ")?.split_once(" leaf "))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no leaf page in:\n{text}"));
    let mut bytes = std::fs::read(file).expect("read");
    let at = (leaf * 4096 + 2048) as usize;
    bytes[at] ^= 0xFF;
    std::fs::write(file, bytes).expect("write");
    let name = file.file_name().and_then(|n| n.to_str()).expect("name");
    let out = spinney(&db, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(name) && err.contains(&format!("page {leaf}")),
        "{err}"
    );
    let out = dump(file);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("page {leaf}: checksum mismatch")),
        "{err}"
    );
}

#[test]
fn a_lost_current_is_refused_by_create_and_recover_current_brings_the_table_back() {
    // The reliability issue's reproduction: `load`, remove CURRENT,
    // `create` another table. The table loaded first was once gone.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("x");
    let load = spinney(&db, &["load", "bt", "--kind", "btree", "--count", "6000"]);
    assert!(load.status.success(), "{load:?}");
    std::fs::remove_file(db.join("CURRENT")).expect("remove CURRENT");
    let create = spinney(&db, &["create", "t2"]);
    let err = String::from_utf8_lossy(&create.stderr);
    assert_eq!(create.status.code(), Some(3), "{err}");
    assert!(
        err.contains("CURRENT is missing") && err.contains("recover-current"),
        "{err}"
    );
    let recover = spinney(&db, &["recover-current"]);
    assert!(recover.status.success(), "{recover:?}");
    assert!(stdout(&recover).starts_with("CURRENT now names MANIFEST-"));
    let verify = spinney(&db, &["verify"]);
    assert_eq!(stdout(&verify), "ok: 6000 entries in 1 tables checked\n");
}

/// Every file of a directory, with its bytes.
fn dir_bytes(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).expect("read"))
        })
        .collect()
}

#[test]
fn the_read_commands_change_no_byte_of_the_directory() {
    // Goal: tables, get, scan, shape, verify and stats open the database
    // read-only: the log's unflushed writes are read, and no file is
    // written, made or removed (a writable open would flush the recovered
    // memtable, checkpoint the B-tree and start a new manifest and log).
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("x");
    ok(&db, &["create", "l"]);
    ok(&db, &["create", "b", "--kind", "btree"]);
    ok(&db, &["put", "l", "k", "lsm"]);
    ok(&db, &["put", "b", "k", "btree"]);
    let before = dir_bytes(&db);
    for args in [
        &["tables"][..],
        &["get", "l", "k"],
        &["get", "b", "k"],
        &["scan", "b"],
        &["shape", "l"],
        &["shape", "b"],
        &["verify"],
        &["stats"],
    ] {
        let out = ok(&db, args);
        if args[0] == "get" {
            assert!(out == "lsm\n" || out == "btree\n", "{args:?}: {out}");
        }
        assert_eq!(dir_bytes(&db), before, "{args:?} changed the directory");
    }
    // A write command still writes.
    ok(&db, &["put", "l", "k2", "v"]);
    assert_ne!(dir_bytes(&db), before);
}

#[test]
fn upgrade_raises_a_database_of_an_older_format_once() {
    // A database of format 1 (the compatibility corpus made before formats
    // were numbered) keeps it until `upgrade`, which raises it once.
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../spinney/tests/compat/log1-sst1-btree2/db");
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    std::fs::create_dir(&db).expect("mkdir");
    for entry in std::fs::read_dir(&corpus).expect("corpus") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, db.join(path.file_name().expect("name"))).expect("copy");
    }
    ok(&db, &["put", "lsm_leveled", "k", "v"]);
    assert_eq!(
        ok(&db, &["upgrade"]),
        format!(
            "the database's format went from 1 to {}\n",
            spinney::FORMAT_VERSION
        )
    );
    assert_eq!(
        ok(&db, &["upgrade"]),
        format!(
            "the database is in format {}, the newest this build writes\n",
            spinney::FORMAT_VERSION
        )
    );
    assert_eq!(ok(&db, &["get", "lsm_leveled", "k"]), "v\n");
}
