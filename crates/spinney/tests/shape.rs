//! `Table::shape` through a scripted life: what each flush and manual
//! compaction does to a table, counted exactly.
//!
//! Method: no background thread and no autowork, so nothing moves unless the
//! test moves it. The write buffer (1 MiB) holds every fill (1,000 entries
//! of a 16-byte key and a 100-byte value, about 150 KB of memtable), so only
//! `flush` makes L0 runs, one per flush. Compaction output files are cut at
//! 64 MiB, far past the 2,000 entries the table ever holds, so every merge
//! writes exactly one file. After every step the shape must match the
//! expected counts, and the `.sst` files in the directory must be exactly
//! the files the shape counts: same number, same bytes.

use std::collections::BTreeMap;
use std::path::Path;

use spinney::{CompactionOptions, Db, Error, Options, Shape, Table, TableOptions, WriteBatch};

mod common;
use common::model::{key16 as key, value100 as value};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Entries per fill.
const FILL: u64 = 1000;

/// How one compaction style places data.
struct Script {
    name: &'static str,
    compaction: CompactionOptions,
    /// The level `compact_level(0)` writes into.
    l0_target: usize,
}

fn table_options(compaction: CompactionOptions) -> TableOptions {
    TableOptions {
        write_buffer_size: 1 << 20,
        compaction: CompactionOptions {
            target_file_size: 64 << 20,
            ..compaction
        },
        ..TableOptions::default()
    }
}

/// Number and total bytes of the `.sst` files in `dir`.
fn ssts_on_disk(dir: &Path) -> (usize, u64) {
    let mut count = 0;
    let mut bytes = 0;
    for entry in std::fs::read_dir(dir).expect("list") {
        let entry = entry.expect("entry");
        if entry.file_name().to_string_lossy().ends_with(".sst") {
            count += 1;
            bytes += entry.metadata().expect("metadata").len();
        }
    }
    (count, bytes)
}

/// Asserts the shape: `memtable` entries in the active memtable, no frozen
/// memtable, `l0` runs, `levels[n - 1]` files in level n; non-empty levels
/// have bytes and empty ones none; and the directory holds exactly these
/// files. Returns the shape.
fn expect_shape(
    ctx: &str,
    dir: &Path,
    table: &Table,
    memtable: u64,
    l0: usize,
    levels: [usize; 6],
) -> Shape {
    let shape = table.shape().expect("shape");
    assert_eq!(shape.memtable_entries, memtable, "{ctx}: memtable entries");
    assert_eq!(shape.immutable_memtables, 0, "{ctx}: immutable memtables");
    assert_eq!(shape.immutable_bytes, 0, "{ctx}: immutable bytes");
    assert_eq!(shape.l0_runs, l0, "{ctx}: L0 runs");
    assert_eq!(shape.l0_bytes > 0, l0 > 0, "{ctx}: L0 bytes");
    assert_eq!(shape.levels.len(), 6, "{ctx}: levels listed");
    for (i, l) in shape.levels.iter().enumerate() {
        assert_eq!(l.level, i + 1, "{ctx}: level numbering");
        assert_eq!(l.files, levels[i], "{ctx}: files in L{}: {shape:?}", i + 1);
        assert_eq!(l.bytes > 0, l.files > 0, "{ctx}: bytes of L{}", i + 1);
    }
    let (files, bytes) = ssts_on_disk(dir);
    let counted: usize = shape.l0_runs + shape.levels.iter().map(|l| l.files).sum::<usize>();
    let counted_bytes: u64 = shape.l0_bytes + shape.levels.iter().map(|l| l.bytes).sum::<u64>();
    assert_eq!(files, counted, "{ctx}: .sst files on disk vs shape");
    assert_eq!(bytes, counted_bytes, "{ctx}: .sst bytes on disk vs shape");
    let trees = 1 + l0 + levels.iter().filter(|&&n| n > 0).count();
    assert_eq!(shape.trees(), trees, "{ctx}: trees");
    shape
}

/// Writes keys `range` at `version` in one batch; the model follows.
fn fill(db: &Db, table: &Table, model: &mut Model, range: std::ops::Range<u64>, version: u64) {
    let mut batch = WriteBatch::new();
    for i in range {
        batch.put(table, &key(i), &value(i, version));
        model.insert(key(i), value(i, version));
    }
    db.write(batch).expect("write");
}

fn check_data(ctx: &str, table: &Table, model: &Model) {
    let got: Model = table
        .iter()
        .expect("iter")
        .collect::<spinney::Result<_>>()
        .expect("scan");
    assert!(
        got == *model,
        "{ctx}: contents differ ({} vs {} entries)",
        got.len(),
        model.len()
    );
}

fn levels_with(at: &[(usize, usize)]) -> [usize; 6] {
    let mut levels = [0; 6];
    for &(level, files) in at {
        levels[level - 1] = files;
    }
    levels
}

/// A database in which nothing moves unless the test moves it.
fn open_still(path: &Path) -> Db {
    let options = Options {
        background_threads: 0,
        autowork: false,
        ..Options::default()
    };
    Db::open(path, options).expect("open")
}

fn run(script: &Script) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path();
    let db = open_still(path);
    let table = db
        .create_table("t", table_options(script.compaction))
        .expect("create");
    let mut model = Model::new();
    let name = script.name;
    let target = script.l0_target;

    // 1. A fill stays in the memtable: one tree, nothing on disk.
    let empty = table.shape().expect("shape").memtable_bytes;
    fill(&db, &table, &mut model, 0..FILL, 0);
    let shape = expect_shape(
        &format!("{name}: after the first fill"),
        path,
        &table,
        FILL,
        0,
        [0; 6],
    );
    assert!(
        shape.memtable_bytes >= empty + FILL * 116,
        "{name}: {} bytes of memtable hold {FILL} entries of 116 bytes",
        shape.memtable_bytes
    );

    // 2. Each flush makes one L0 run; the same keys are written again each
    // time, so the runs overlap and hold 4 versions of every key.
    table.flush().expect("flush");
    let mut run_bytes = Vec::new();
    let mut l0_bytes =
        expect_shape(&format!("{name}: flush 1"), path, &table, 0, 1, [0; 6]).l0_bytes;
    run_bytes.push(l0_bytes);
    for version in 1..4 {
        fill(&db, &table, &mut model, 0..FILL, version);
        table.flush().expect("flush");
        let ctx = format!("{name}: flush {}", version + 1);
        let shape = expect_shape(&ctx, path, &table, 0, version as usize + 1, [0; 6]);
        run_bytes.push(shape.l0_bytes - l0_bytes);
        l0_bytes = shape.l0_bytes;
    }
    // A flush of an empty memtable makes no run.
    table.flush().expect("empty flush");
    expect_shape(&format!("{name}: empty flush"), path, &table, 0, 4, [0; 6]);
    assert_eq!(
        db.verify().expect("verify"),
        4 * FILL,
        "{name}: entries in 4 runs"
    );
    check_data(&format!("{name}: 4 runs"), &table, &model);

    // 3. compact_level(0) merges the 4 runs into one file of the target
    // level, keeping only the newest version of each key: exactly the
    // entries (keys, seqnos, values) of the last flush, so the file has the
    // bytes of that flush's SST.
    table.compact_level(0).expect("compact L0");
    let shape = expect_shape(
        &format!("{name}: compact_level(0)"),
        path,
        &table,
        0,
        0,
        levels_with(&[(target, 1)]),
    );
    let merged = shape.levels[target - 1].bytes;
    assert_eq!(
        merged, run_bytes[3],
        "{name}: the merged file should be the size of the newest run (runs {run_bytes:?})"
    );
    assert_eq!(
        db.verify().expect("verify"),
        FILL,
        "{name}: shadowed versions dropped"
    );
    let stats = db.stats();
    let level_stats = &stats.tables[0].levels[target];
    assert_eq!(level_stats.compactions, 1, "{name}: {level_stats:?}");
    assert_eq!(level_stats.trivial_moves, 0, "{name}: {level_stats:?}");
    assert_eq!(
        level_stats.read_above_bytes, l0_bytes,
        "{name}: {level_stats:?}"
    );
    assert_eq!(level_stats.written_bytes, merged, "{name}: {level_stats:?}");
    check_data(&format!("{name}: after compact_level(0)"), &table, &model);

    // 4. New keys above every key so far, flushed: compact_level(0) has
    // nothing to merge the run with, so it moves the file down as it is.
    fill(&db, &table, &mut model, FILL..2 * FILL, 0);
    table.flush().expect("flush");
    let run = expect_shape(
        &format!("{name}: disjoint run"),
        path,
        &table,
        0,
        1,
        levels_with(&[(target, 1)]),
    )
    .l0_bytes;
    table.compact_level(0).expect("compact L0");
    let shape = expect_shape(
        &format!("{name}: trivial move"),
        path,
        &table,
        0,
        0,
        levels_with(&[(target, 2)]),
    );
    assert_eq!(
        shape.levels[target - 1].bytes,
        merged + run,
        "{name}: a moved file keeps its bytes"
    );
    let stats = db.stats();
    assert_eq!(stats.trivial_moves, 1, "{name}: trivial moves");
    assert_eq!(stats.tables[0].levels[target].trivial_moves, 1, "{name}");

    // 5. compact_level of an empty level does nothing at all.
    let before = (db.stats().compactions, table.shape().expect("shape"));
    for empty in (1..6).filter(|&n| n != target) {
        table.compact_level(empty).expect("compact an empty level");
    }
    table.compact_level(0).expect("compact an empty L0");
    assert_eq!(
        (db.stats().compactions, table.shape().expect("shape")),
        before,
        "{name}: compacting empty levels changed something"
    );

    // 6. compact_level(1): where L1 holds the two files, they are merged
    // into one file of L2 (two input files: a merge, not a move).
    if target == 1 {
        table.compact_level(1).expect("compact L1");
        expect_shape(
            &format!("{name}: compact_level(1)"),
            path,
            &table,
            0,
            0,
            levels_with(&[(2, 1)]),
        );
        assert_eq!(db.verify().expect("verify"), 2 * FILL);
        check_data(&format!("{name}: after compact_level(1)"), &table, &model);
    }
    let deep = if target == 1 { 2 } else { target };
    let deep_files = if target == 1 { 1 } else { 2 };

    // 7. compact_all: one L0 run (250 deletes), and in the memtable 250
    // more deletes and 500 overwrites. Everything lands in one file of the
    // last level; the deletes are dropped there with the values they hide.
    let mut batch = WriteBatch::new();
    for i in 0..250 {
        batch.delete(&table, &key(i));
        model.remove(&key(i));
    }
    db.write(batch).expect("deletes");
    table.flush().expect("flush");
    expect_shape(
        &format!("{name}: before compact_all"),
        path,
        &table,
        0,
        1,
        levels_with(&[(deep, deep_files)]),
    );
    let mut batch = WriteBatch::new();
    for i in 250..500 {
        batch.delete(&table, &key(i));
        model.remove(&key(i));
    }
    db.write(batch).expect("deletes");
    fill(&db, &table, &mut model, 1500..2000, 9);
    expect_shape(
        &format!("{name}: memtable before compact_all"),
        path,
        &table,
        750,
        1,
        levels_with(&[(deep, deep_files)]),
    );
    table.compact_all().expect("compact all");
    expect_shape(
        &format!("{name}: compact_all"),
        path,
        &table,
        0,
        0,
        levels_with(&[(6, 1)]),
    );
    assert_eq!(
        db.verify().expect("verify"),
        2 * FILL - 500,
        "{name}: deletes and what they hide are gone from the last level"
    );
    check_data(&format!("{name}: after compact_all"), &table, &model);

    // 8. Level 6 has no level below; 7 does not exist.
    for level in [6, 7, 100] {
        match table.compact_level(level) {
            Err(Error::InvalidArgument(_)) => {}
            other => panic!("{name}: compact_level({level}) returned {other:?}"),
        }
    }
    expect_shape(
        &format!("{name}: after refused compactions"),
        path,
        &table,
        0,
        0,
        levels_with(&[(6, 1)]),
    );
}

/// A leveled table with fixed level targets uses L1, L2, ... in order:
/// `compact_level(0)` writes L1, `compact_level(1)` writes L2, and
/// `compact_all` writes L6; the counts at each step are exact (see `run`).
#[test]
fn static_leveled_table_moves_down_level_by_level() {
    run(&Script {
        name: "static leveled",
        compaction: CompactionOptions {
            dynamic_level_bytes: false,
            ..CompactionOptions::leveled()
        },
        l0_target: 1,
    });
}

/// With dynamic level sizing, a table far below `level_base_bytes` (64
/// MiB) has the last level as its base level: `compact_level(0)` writes L6,
/// L1..L5 stay empty, and `compact_level(1)` finds nothing to do.
#[test]
fn dynamic_leveled_table_compacts_l0_into_the_last_level() {
    run(&Script {
        name: "dynamic leveled",
        compaction: CompactionOptions::leveled(),
        l0_target: 6,
    });
}

/// A tiered table's `compact_level(0)` writes L1 and `compact_level(1)`
/// writes L2; `compact_all` writes L6.
#[test]
fn tiered_table_compacts_l0_into_l1() {
    run(&Script {
        name: "tiered",
        compaction: CompactionOptions::tiered(),
        l0_target: 1,
    });
}

/// A compaction reads its inputs without adding their blocks to the cache:
/// they are read once and deleted after, and caching them would evict the
/// blocks readers use. Blocks a reader loads stay cached, and a compaction
/// that finds one there may use it but adds nothing.
#[test]
fn a_compaction_leaves_the_cache_as_it_found_it() {
    for compaction in [CompactionOptions::leveled(), CompactionOptions::tiered()] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open_still(dir.path());
        let table = db
            .create_table("t", table_options(compaction))
            .expect("create");
        let mut model = Model::new();
        for round in 0..3 {
            fill(&db, &table, &mut model, 0..FILL, round);
            table.flush().expect("flush");
        }
        let ctx = format!("{compaction:?}");
        let empty = db.stats().cache.usage_bytes;
        assert_eq!(empty, 0, "{ctx}: flushes cache nothing");
        // A reader's block: cached.
        let k = key(FILL / 2);
        assert_eq!(table.get(&k).expect("get"), model.get(&k).cloned());
        let one_read = db.stats().cache.usage_bytes;
        assert!(one_read > 0, "{ctx}: a get caches the block it reads");

        // A cursor opened before keeps the input files (and any blocks of
        // theirs in the cache) alive through the compaction.
        let before = table.iter().expect("iter");
        table.compact_all().expect("compact");
        let after = db.stats().cache.usage_bytes;
        assert_eq!(
            after, one_read,
            "{ctx}: the compaction changed the cache: {one_read} -> {after} bytes"
        );
        drop(before);
        check_data(&ctx, &table, &model);
        assert!(
            db.stats().cache.usage_bytes > after,
            "{ctx}: a scan of the compacted table caches its blocks"
        );
    }
}
