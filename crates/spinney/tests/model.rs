//! Model test: random operations on a database and on a `BTreeMap` model
//! must give identical results.
//!
//! Method: for several seeds, 12,000 random operations over two tables —
//! puts, deletes, range deletes, batches spanning both tables, point reads, bounded scans
//! in both directions, cursor walks that change direction, snapshots read
//! later, flushes, checkpoints, compactions of one level and full
//! compactions, and close/reopen. Small write buffers and level targets make
//! flushes and compactions happen throughout, under each compaction style
//! and each work model: background threads, autowork (0 threads), and
//! application-driven `Db::work`. The same operations run on B-tree tables:
//! both tables B-trees, an LSM and a B-tree table written in the same
//! batches, B-trees in a cache of four pages (dirty pages are written out
//! and read back all the time), and without background threads; a small
//! `checkpoint_wal_bytes` makes background checkpoints happen too. One
//! run reads B-tree leaves through memory maps (`Options::mmap_reads`).

use std::collections::BTreeMap;
use std::ops::Bound;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spinney::{
    CompactionOptions, CompactionStyle, Db, Options, ReadOptions, Snapshot, Table, TableKind,
    TableOptions, WriteBatch,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const TABLES: [&str; 2] = ["alpha", "beta"];

/// A kind and compaction style per table, a work model and a cache size.
#[derive(Clone, Copy)]
struct Config {
    kinds: [TableKind; 2],
    styles: [CompactionStyle; 2],
    background_threads: usize,
    autowork: bool,
    cache_size: u64,
    /// SSTs and B-tree pages read through memory maps.
    mmap_reads: bool,
}

impl Config {
    /// Two LSM tables with the default cache of the model tests.
    fn lsm(styles: [CompactionStyle; 2], background_threads: usize, autowork: bool) -> Config {
        Config {
            kinds: [TableKind::Lsm; 2],
            styles,
            background_threads,
            autowork,
            cache_size: 256 << 10,
            mmap_reads: false,
        }
    }

    fn has(&self, kind: TableKind) -> bool {
        self.kinds.contains(&kind)
    }
}

fn table_options(kind: TableKind, style: CompactionStyle) -> TableOptions {
    if kind == TableKind::Btree {
        // Default pages (8 KiB): values over about 2 KiB go to overflow
        // pages.
        return TableOptions::btree();
    }
    let base = match style {
        CompactionStyle::Leveled => CompactionOptions::leveled(),
        CompactionStyle::Tiered => CompactionOptions::tiered(),
    };
    TableOptions {
        write_buffer_size: 64 << 10,
        block_size: 512,
        compaction: CompactionOptions {
            fanout: 4,
            level_base_bytes: 128 << 10,
            target_file_size: 64 << 10,
            l0_trigger: 3,
            ..base
        },
        ..TableOptions::default()
    }
}

fn random_key(rng: &mut StdRng) -> Vec<u8> {
    // A small key space so that keys are overwritten and deleted often;
    // varied lengths so that prefixes of other keys occur.
    let n = rng.gen_range(0..600u32);
    let mut k = format!("k{n:04}").into_bytes();
    if rng.gen_bool(0.1) {
        k.truncate(rng.gen_range(1..k.len()));
    }
    k
}

fn random_value(rng: &mut StdRng) -> Vec<u8> {
    let len = if rng.gen_bool(0.02) {
        rng.gen_range(1000..20_000)
    } else {
        rng.gen_range(0..120)
    };
    (0..len).map(|_| rng.gen()).collect()
}

fn random_bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(random_key(rng)),
        _ => Bound::Excluded(random_key(rng)),
    }
}

/// A narrow range of keys (a few dozen of the 600), now and then without
/// a bound on one side.
fn random_range(rng: &mut StdRng) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let a = rng.gen_range(0..600u32);
    let b = a + rng.gen_range(0..40u32);
    let key = |n: u32| format!("k{n:04}").into_bytes();
    let lower = match rng.gen_range(0..20) {
        0 => Bound::Unbounded,
        1..=5 => Bound::Excluded(key(a)),
        _ => Bound::Included(key(a)),
    };
    let upper = match rng.gen_range(0..20) {
        0 => Bound::Unbounded,
        1..=5 => Bound::Included(key(b)),
        _ => Bound::Excluded(key(b)),
    };
    if lower == Bound::Unbounded && upper == Bound::Unbounded {
        // The whole table now and then is too often.
        return (Bound::Included(key(a)), Bound::Excluded(key(b)));
    }
    (lower, upper)
}

fn remove_range(model: &mut Model, lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) {
    for (k, _) in in_range(model, lower, upper) {
        model.remove(&k);
    }
}

fn in_range(
    model: &Model,
    lower: &Bound<Vec<u8>>,
    upper: &Bound<Vec<u8>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let lo = match lower {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    };
    let hi = match upper {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    };
    let empty = match (&lo, &hi) {
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a > b
                || (a == b
                    && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
        }
        _ => false,
    };
    if empty {
        return Vec::new();
    }
    model
        .range::<[u8], _>((lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

struct Harness {
    dir: tempfile::TempDir,
    db: Option<Db>,
    tables: Vec<Table>,
    models: Vec<Model>,
    snapshots: Vec<(Snapshot, Vec<Model>)>,
    config: Config,
    /// Compactions run by the databases closed so far.
    compactions: u64,
    /// B-tree figures of the databases closed so far, summed over tables:
    /// checkpoints, dirty evictions, pages read from the file.
    checkpoints: u64,
    evictions_dirty: u64,
    pages_from_storage: u64,
    pages_mapped: u64,
}

impl Harness {
    fn new(config: Config) -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut h = Harness {
            dir,
            db: None,
            tables: Vec::new(),
            models: vec![Model::new(); 2],
            snapshots: Vec::new(),
            config,
            compactions: 0,
            checkpoints: 0,
            evictions_dirty: 0,
            pages_from_storage: 0,
            pages_mapped: 0,
        };
        h.open();
        h
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("open")
    }

    fn open(&mut self) {
        let options = Options {
            cache_size: self.config.cache_size,
            background_threads: self.config.background_threads,
            autowork: self.config.autowork,
            checkpoint_wal_bytes: 256 << 10,
            mmap_reads: self.config.mmap_reads,
            ..Options::default()
        };
        let db = Db::open(self.dir.path(), options).expect("open");
        self.tables = TABLES
            .iter()
            .enumerate()
            .map(|(t, n)| {
                let options = table_options(self.config.kinds[t], self.config.styles[t]);
                let table = db.open_table(n, options).expect("table");
                assert_eq!(table.options().kind, self.config.kinds[t]);
                table
            })
            .collect();
        self.db = Some(db);
    }

    fn reopen(&mut self) {
        self.snapshots.clear();
        self.tables.clear();
        let db = self.db.take().expect("open");
        self.add_figures(&db);
        db.close().expect("close");
        self.open();
    }

    fn add_figures(&mut self, db: &Db) {
        let stats = db.stats();
        self.compactions += stats.compactions;
        for b in stats.tables.iter().filter_map(|t| t.btree.as_ref()) {
            self.checkpoints += b.checkpoints;
            self.evictions_dirty += b.evictions_dirty;
            self.pages_from_storage += b.pages_from_storage;
            self.pages_mapped += b.pages_mapped;
        }
    }

    fn check_scan(&self, rng: &mut StdRng, t: usize, at: Option<usize>) {
        let lower = random_bound(rng);
        let upper = random_bound(rng);
        let (model, snapshot) = match at {
            Some(i) => (&self.snapshots[i].1[t], Some(&self.snapshots[i].0)),
            None => (&self.models[t], None),
        };
        let want = in_range(model, &lower, &upper);
        let table = &self.tables[t];
        let range = match snapshot {
            Some(s) => s
                .range(table, (lower.clone(), upper.clone()))
                .expect("range"),
            None => table.range((lower.clone(), upper.clone())).expect("range"),
        };
        if rng.gen_bool(0.5) {
            let got: Vec<_> = range.collect::<spinney::Result<_>>().expect("scan");
            assert_eq!(got, want, "forward scan {lower:?}..{upper:?}");
        } else {
            let mut got: Vec<_> = range.rev().collect::<spinney::Result<_>>().expect("scan");
            got.reverse();
            assert_eq!(got, want, "reverse scan {lower:?}..{upper:?}");
        }
    }

    fn check_cursor_walk(&self, rng: &mut StdRng, t: usize) {
        // A cursor moved at random both ways tracks an index into the model.
        let lower = random_bound(rng);
        let upper = random_bound(rng);
        let want = in_range(&self.models[t], &lower, &upper);
        let options = ReadOptions {
            snapshot: None,
            lower,
            upper,
        };
        let mut c = self.tables[t].cursor_with(&options).expect("cursor");
        let mut pos: Option<usize>;
        if rng.gen_bool(0.5) {
            c.seek_to_first();
            pos = (!want.is_empty()).then_some(0);
        } else {
            c.seek_to_last();
            pos = want.len().checked_sub(1);
        }
        for _ in 0..20 {
            match pos {
                Some(i) => {
                    assert!(
                        c.valid(),
                        "cursor invalid where the model has {:?}",
                        want[i].0
                    );
                    assert_eq!(
                        (c.key(), c.value()),
                        (want[i].0.as_slice(), want[i].1.as_slice())
                    );
                }
                None => {
                    assert!(!c.valid(), "cursor on {:?} past the model's end", c.key());
                    c.status().expect("no error");
                    break;
                }
            }
            if rng.gen_bool(0.5) {
                c.next();
                pos = pos.and_then(|i| (i + 1 < want.len()).then_some(i + 1));
            } else {
                c.prev();
                pos = pos.and_then(|i| i.checked_sub(1));
            }
        }
    }

    fn step(&mut self, rng: &mut StdRng) {
        let t = rng.gen_range(0..2);
        match rng.gen_range(0..101) {
            0 => {
                let (lower, upper) = random_range(rng);
                self.tables[t]
                    .delete_range((lower.clone(), upper.clone()))
                    .expect("delete range");
                remove_range(&mut self.models[t], &lower, &upper);
            }
            1..=34 => {
                let (k, v) = (random_key(rng), random_value(rng));
                self.tables[t].put(&k, &v).expect("put");
                self.models[t].insert(k, v);
            }
            35..=44 => {
                let k = random_key(rng);
                self.tables[t].delete(&k).expect("delete");
                self.models[t].remove(&k);
            }
            45..=59 => {
                let mut batch = WriteBatch::new();
                for _ in 0..rng.gen_range(1..20) {
                    let t = rng.gen_range(0..2);
                    let k = random_key(rng);
                    if rng.gen_bool(0.03) {
                        let (lower, upper) = random_range(rng);
                        batch.delete_range(&self.tables[t], (lower.clone(), upper.clone()));
                        remove_range(&mut self.models[t], &lower, &upper);
                    } else if rng.gen_bool(0.7) {
                        let v = random_value(rng);
                        batch.put(&self.tables[t], &k, &v);
                        self.models[t].insert(k, v);
                    } else {
                        batch.delete(&self.tables[t], &k);
                        self.models[t].remove(&k);
                    }
                }
                self.db().write(batch).expect("write");
            }
            60..=74 => {
                let k = random_key(rng);
                assert_eq!(
                    self.tables[t].get(&k).expect("get"),
                    self.models[t].get(&k).cloned(),
                    "get {k:?}"
                );
            }
            75..=82 => self.check_scan(rng, t, None),
            83..=86 => self.check_cursor_walk(rng, t),
            87..=89 => {
                if self.snapshots.len() < 4 {
                    self.snapshots
                        .push((self.db().snapshot(), self.models.clone()));
                } else {
                    self.snapshots
                        .remove(rng.gen_range(0..self.snapshots.len()));
                }
            }
            90..=94 => {
                if !self.snapshots.is_empty() {
                    let i = rng.gen_range(0..self.snapshots.len());
                    if rng.gen_bool(0.5) {
                        let k = random_key(rng);
                        let (snap, models) = &self.snapshots[i];
                        assert_eq!(
                            snap.get(&self.tables[t], &k).expect("get"),
                            models[t].get(&k).cloned()
                        );
                    } else {
                        self.check_scan(rng, t, Some(i));
                    }
                }
            }
            95 => self.db().flush().expect("flush"),
            96 => match rng.gen_range(0..4) {
                0 => self.tables[t].compact_all().expect("compact all"),
                1 => self.db().wait_for_compaction().expect("wait"),
                n => self.tables[t].compact_level(n - 2).expect("compact level"),
            },
            97 => {
                // The application's own work calls (they find nothing to do
                // while background threads keep up).
                self.db().work(rng.gen_range(0..1 << 20)).expect("work");
            }
            98..=99 => {
                if rng.gen_bool(0.5) {
                    self.reopen();
                }
            }
            _ => self.db().checkpoint().expect("checkpoint"),
        }
    }

    fn check_all(&self) {
        for (t, name) in TABLES.iter().enumerate() {
            let got: Vec<_> = self.tables[t]
                .iter()
                .expect("iter")
                .collect::<spinney::Result<_>>()
                .expect("scan");
            let want: Vec<_> = self.models[t]
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "table {name}");
        }
    }
}

fn run(seed: u64, ops: usize, config: Config) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut h = Harness::new(config);
    for i in 0..ops {
        h.step(&mut rng);
        if i % 2000 == 1999 {
            h.check_all();
        }
    }
    h.check_all();
    h.db().wait_for_compaction().expect("wait");
    assert!(h.db().verify().expect("verify") > 0);
    // Closing adds the database's figures to those of earlier sessions.
    h.reopen();
    if config.has(TableKind::Lsm) {
        assert!(h.compactions > 0, "no compaction ran");
    }
    if config.has(TableKind::Btree) {
        assert!(h.checkpoints > 0, "no checkpoint ran");
        if config.cache_size < 64 << 10 {
            assert!(h.evictions_dirty > 0, "no dirty page was evicted");
            assert!(h.pages_from_storage > 0, "no page was read back");
        }
        // Leaves are read through the map exactly when it is asked for.
        assert_eq!(
            h.pages_mapped > 0,
            config.mmap_reads,
            "{} leaves read through the map",
            h.pages_mapped
        );
    }
    h.check_all();
    let stats = h.db().stats();
    assert_eq!(stats.tables.len(), 2);
    for t in &stats.tables {
        let i = TABLES.iter().position(|n| *n == t.name).expect("a table");
        match config.kinds[i] {
            TableKind::Lsm => assert!(t.levels.iter().map(|l| l.files).sum::<usize>() > 0),
            TableKind::Btree => assert!(t.btree.as_ref().is_some_and(|b| b.height > 0)),
        }
    }
}

const LEVELED: CompactionStyle = CompactionStyle::Leveled;
const TIERED: CompactionStyle = CompactionStyle::Tiered;

#[test]
fn model_leveled_two_threads() {
    let config = Config::lsm([LEVELED, LEVELED], 2, true);
    run(1, 12_000, config);
}

#[test]
fn model_tiered_two_threads() {
    let config = Config::lsm([TIERED, TIERED], 2, true);
    run(2, 12_000, config);
}

#[test]
fn model_leveled_autowork() {
    let config = Config::lsm([LEVELED, LEVELED], 0, true);
    run(3, 12_000, config);
}

#[test]
fn model_tiered_autowork() {
    let config = Config::lsm([TIERED, TIERED], 0, true);
    run(4, 12_000, config);
}

#[test]
fn model_both_styles_application_driven_work() {
    // No threads and no autowork: only `Db::work`, manual operations and
    // writers that would otherwise stall do the work.
    let config = Config::lsm([LEVELED, TIERED], 0, false);
    run(5, 12_000, config);
}

#[test]
fn model_both_styles_one_thread() {
    let config = Config::lsm([TIERED, LEVELED], 1, true);
    run(6, 12_000, config);
}

const LSM: TableKind = TableKind::Lsm;
const BTREE: TableKind = TableKind::Btree;

#[test]
fn model_btree_two_threads() {
    let config = Config {
        kinds: [BTREE, BTREE],
        ..Config::lsm([LEVELED, LEVELED], 2, true)
    };
    run(7, 12_000, config);
}

#[test]
fn model_lsm_and_btree_written_in_the_same_batches() {
    // Batches span both tables, so each commit goes to an LSM and a B-tree
    // table at once.
    let config = Config {
        kinds: [LSM, BTREE],
        ..Config::lsm([LEVELED, LEVELED], 2, true)
    };
    run(8, 12_000, config);
}

#[test]
fn model_btree_in_a_cache_of_four_pages_application_driven_work() {
    // Four 8 KiB pages of cache: nearly every page a write changes is
    // written out dirty before its checkpoint and read back later. No
    // threads and no autowork: checkpoints happen through `Db::checkpoint`
    // and `Db::work`.
    let config = Config {
        kinds: [BTREE, BTREE],
        cache_size: 4 * 8192,
        ..Config::lsm([LEVELED, LEVELED], 0, false)
    };
    run(9, 12_000, config);
}

#[test]
fn model_lsm_and_btree_read_through_maps_in_a_cache_of_four_pages() {
    // SST blocks are used in place in their files' maps, and B-tree leaves
    // that miss a cache of four pages are read through the file's map, both
    // without being cached, while two threads write, flush, compact,
    // evict, checkpoint and reuse pages under the reads.
    let config = Config {
        kinds: [LSM, BTREE],
        cache_size: 4 * 8192,
        mmap_reads: true,
        ..Config::lsm([LEVELED, LEVELED], 2, true)
    };
    run(11, 12_000, config);
}

#[test]
fn model_btree_and_tiered_autowork() {
    // No background threads: writers run checkpoints and compactions.
    let config = Config {
        kinds: [BTREE, LSM],
        ..Config::lsm([LEVELED, TIERED], 0, true)
    };
    run(10, 12_000, config);
}
