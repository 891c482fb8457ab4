//! `lsm-shape`: read amplification by LSM tree shape (shared/seeds/001).
//! The same queries run against one data set held in five shapes, and the
//! summary gives, per engine, shape and query kind, the queries per second
//! and the engine's read counters per query. The seed (on RocksDB) found
//! QPS differing by up to 5x between shapes because of the number of trees
//! a query searches.
//!
//! Glossary of the shapes (the seed's):
//! - `pre_flush`: data in the memtable, in six L0 runs, in L1 and in L2;
//! - `post_flush`: after a flush, the memtable is one more L0 run;
//! - `compact_l0`: after compact0, L0 is merged into L1;
//! - `compact_l1`: after compact1, L1 is merged into L2;
//! - `compact_all`: after compactall, one sorted run in the last level
//!   holding data.
//!
//! The query kinds: `range` (a new cursor or iterator, a seek and 10 nexts,
//! on the table with bloom filters), `point with bloom` and `point without
//! bloom` (a get of an existing key). Two tables in one database, one with
//! `--bloom_bits` bits per key and one with none, receive the same entries
//! in the same batches and go through the same flushes and compactions, so
//! their shapes match (checked at every stage).
//!
//! Engines: spinney's LSM (`spinney-lsm`, the default) and RocksDB
//! (`--engine=rocksdb`, or both with `--compare=spinney-lsm,rocksdb`, each
//! then in a child process of its own and one summary with an `engine`
//! column). The scenario needs three things of an engine, which the lab
//! has for these two only (`refusal` says why not for each other one):
//! tables held in a shape (`TableSpec::hold_shape`), the operations flush,
//! compact0, compact1 and compactall (`Store::operation`), the shape of a
//! table (`Store::lsm_shape`), and read counters of the querying thread
//! (`Session::start_read_counts`).
//!
//! How the shape is built: every key of `[0, N)` is written once, in a
//! random order split into rounds, so that each round spans the whole key
//! range. The first round (60% of the keys) is flushed and compacted down
//! to L2, the second (20%) into L1, six rounds of 2.5% each are flushed
//! into L0 runs one by one, and the last round (5%) stays in the memtable,
//! whose write buffer the scenario sizes to hold it about 60% full (a
//! larger round fills several memtables, each flushed into an L0 run, all
//! merged by the compactions that follow). The tables hold their shape: no
//! flush or compaction runs unless the scenario asks, L0 never triggers
//! one, and levels are sized statically, so that compact0 goes to L1 —
//! spinney with no background threads and no autowork, RocksDB with
//! `disable_auto_compactions`, L0 triggers at 64 and
//! `level_compaction_dynamic_level_bytes` off. The shape of both tables is
//! compared before and after every query phase to prove it held.
//!
//! Each shape's queries start from a warm cache (both tables are scanned
//! first) and use the same random keys, on every engine; one thread runs
//! them, with the engine's read counters on for that thread alone, so the
//! counts are exactly the queries'. spinney's counters are its
//! `ReadContext`, each column exactly. RocksDB's are its perf context
//! (`kEnableCount` during the queries, `kDisable` otherwise, as its
//! sessions always run): bloom checks `bloom_sst_hit_count +
//! bloom_sst_miss_count`, keys compared `user_key_comparison_count` (which
//! also counts the merging heap's and the file pickers' comparisons),
//! blocks from cache `block_cache_hit_count`, from storage
//! `block_read_count` (data blocks: index and filter blocks stay in the
//! table readers), trees searched `seek_child_seek_count` for range
//! queries, and for point queries `get_from_memtable_count` (non-empty
//! memtables only) plus the filters consulted (with bloom) or an upper
//! bound, the data blocks read (without). docs/bench.md, "lsm-shape", has
//! the table; the summary's notes name the approximations. A column an
//! engine cannot fill prints `-`.
//!
//! Sizes at `--scale=1` (about a minute per engine on two cores in a
//! release build): `ENTRIES_AT_SCALE_1` entries per table and
//! `QUERIES_AT_SCALE_1` queries per shape and query kind. The scenario
//! sets the levels, the write buffer, the L0 trigger and the background
//! work itself (`--num`, `--threads`, `--write_buffer_size` and
//! `--compaction_style` do not apply; `--background_threads` applies to
//! RocksDB only, whose flushes of full memtables need a thread);
//! `--cache_size`, `--compression_type`, `--bloom_bits` (above 0),
//! `--key_size`, `--value_size`, durability and `--seed` do. Each engine's
//! database is `lsm-shape/<engine>` under `--db` (kept) or under a
//! temporary directory (removed), emptied first as db_bench's fills empty
//! theirs (a directory holding anything but a database of the lab is
//! refused).
//!
//! Thread-safety: runs entirely in the caller's thread (RocksDB flushes a
//! full memtable in its own background thread meanwhile).

use std::io::Write;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::Rng;

use super::btree_vs_lsm::{load_average, load_text};
use super::{optional, parse_optional, Fields, Summary};
use crate::engine::{self, Batch, EngineResult, LsmShape, ReadCounts, Session, Store, TableSpec};
use crate::keys::{worker_rng, KeyFormat, ValueGenerator};
use crate::plot::{self, Bar};
use crate::{BenchError, Benchmark, Config, Engine};

/// Entries in each table at `--scale=1`.
const ENTRIES_AT_SCALE_1: f64 = 200_000.0;

/// Queries per shape and query kind at `--scale=1`.
const QUERIES_AT_SCALE_1: f64 = 800_000.0;

/// The fewest entries of a scaled run: every round gets some.
const ENTRIES_MIN: u64 = 1_000;

/// The fewest queries per shape and kind of a scaled run.
const QUERIES_MIN: u64 = 500;

/// Steps after each range query's seek (the seed's short range query).
const RANGE_NEXTS: usize = 10;

/// L0 runs at `pre_flush`, as in the seed's trees.
const L0_RUNS: usize = 6;

/// The shares of the entries, in thousandths: the L2 round takes the rest.
const MEMTABLE_PER_MILLE: u64 = 50;
const L0_RUN_PER_MILLE: u64 = 25;
const L1_PER_MILLE: u64 = 200;
const _: () = assert!(MEMTABLE_PER_MILLE + L0_RUN_PER_MILLE * L0_RUNS as u64 + L1_PER_MILLE < 1000);

/// Bytes a memtable entry takes beyond its key and value (internal key
/// trailer, skiplist links, arena alignment): an estimate for sizing the
/// write buffer; the real fill is printed.
const MEMTABLE_ENTRY_OVERHEAD_BYTES: usize = 64;

/// The memtable round fills this share of the write buffer (the seed's
/// memtable was about 80% full; an estimate below the true entry size
/// must not overflow it).
const MEMTABLE_FILL_TARGET: f64 = 0.6;

/// Entries per commit while loading.
const BATCH_ENTRIES: usize = 1_000;

/// The two tables, in the order they are opened (their numbers).
const TABLE_BLOOM: &str = "bloom";
const TABLE_NO_BLOOM: &str = "no_bloom";
const BLOOM: usize = 0;
const NO_BLOOM: usize = 1;

/// A shape of the tree, in the order the scenario builds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    PreFlush,
    PostFlush,
    CompactL0,
    CompactL1,
    CompactAll,
}

impl Stage {
    const ALL: [Stage; 5] = [
        Stage::PreFlush,
        Stage::PostFlush,
        Stage::CompactL0,
        Stage::CompactL1,
        Stage::CompactAll,
    ];

    fn name(self) -> &'static str {
        match self {
            Stage::PreFlush => "pre_flush",
            Stage::PostFlush => "post_flush",
            Stage::CompactL0 => "compact_l0",
            Stage::CompactL1 => "compact_l1",
            Stage::CompactAll => "compact_all",
        }
    }

    fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The operation that makes this shape from the one before.
    fn operation(self) -> Option<Benchmark> {
        match self {
            Stage::PreFlush => None,
            Stage::PostFlush => Some(Benchmark::Flush),
            Stage::CompactL0 => Some(Benchmark::Compact0),
            Stage::CompactL1 => Some(Benchmark::Compact1),
            Stage::CompactAll => Some(Benchmark::CompactAll),
        }
    }
}

/// What a query does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Query {
    Range,
    PointBloom,
    PointNoBloom,
}

impl Query {
    const ALL: [Query; 3] = [Query::Range, Query::PointBloom, Query::PointNoBloom];

    fn name(self) -> &'static str {
        match self {
            Query::Range => "range",
            Query::PointBloom => "point with bloom",
            Query::PointNoBloom => "point without bloom",
        }
    }

    /// The name in a record (which holds no spaces).
    fn token(self) -> &'static str {
        match self {
            Query::Range => "range",
            Query::PointBloom => "point_bloom",
            Query::PointNoBloom => "point_no_bloom",
        }
    }

    fn from_token(token: &str) -> Option<Query> {
        Query::ALL.into_iter().find(|q| q.token() == token)
    }

    /// The table the query reads.
    fn table(self) -> usize {
        match self {
            Query::Range | Query::PointBloom => BLOOM,
            Query::PointNoBloom => NO_BLOOM,
        }
    }
}

/// Why the scenario cannot run on `engine`; `None` when it can.
fn refusal(engine: Engine) -> Option<String> {
    let why = match engine {
        Engine::SpinneyLsm
        | Engine::SpinneyLsmMapped
        | Engine::SpinneyLsmMmap
        | Engine::Rocksdb
        | Engine::RocksdbCurrent => return None,
        Engine::SpinneyBtree
        | Engine::SpinneyBtreeMapped
        | Engine::SpinneyBtreeMmap
        | Engine::WiredtigerBtree
        | Engine::Lmdb
        | Engine::LmdbCurrent
        | Engine::Redb => {
            "it is a B-tree: there is no memtable, L0 or level to hold in a shape"
        }
        Engine::WiredtigerLsm => {
            "WiredTiger's LSM tree merges chunks in generations, with no levels to compact one at a time (compact0, compact1), and the lab reads no per-query read counters from it"
        }
        Engine::Leveldb => {
            "LevelDB's C API compacts whole key ranges through every level (no compact0 or compact1) and has no per-query read counters"
        }
        Engine::Fjall => {
            "the lab's fjall adapter has no compaction of one level into the next (compact0, compact1), no view of its levels and no per-query read counters"
        }
    };
    Some(format!(
        "the lsm-shape scenario runs on {} and {}, not on {engine}: {why}",
        Engine::SpinneyLsm,
        Engine::Rocksdb
    ))
}

/// Refuses, as a usage error, engines the scenario cannot run on or that
/// this build lacks, before anything runs.
pub(crate) fn check_engines(engines: &[Engine]) -> Result<(), BenchError> {
    for &engine in engines {
        if let Some(why) = refusal(engine) {
            return Err(BenchError::Config(why));
        }
        if !engine.is_built() {
            return Err(BenchError::Config(engine.not_built()));
        }
    }
    Ok(())
}

/// The scenario's sizes, from the configuration: the same for every
/// engine.
struct Plan {
    entries: u64,
    queries: u64,
    /// Each table's memtable: the memtable round's estimated bytes over
    /// `MEMTABLE_FILL_TARGET`, within spinney's limits (RocksDB's floor is
    /// the same 64 KiB).
    write_buffer_bytes: usize,
}

impl Plan {
    fn of(config: &Config) -> Result<Plan, BenchError> {
        config.validate().map_err(BenchError::Config)?;
        if !(config.scale.is_finite() && config.scale > 0.0) {
            return Err(BenchError::Config(format!(
                "--scale={} must be above 0",
                config.scale
            )));
        }
        if config.bloom_bits == 0 {
            return Err(BenchError::Config(
                "lsm-shape compares a table with bloom filters to one without: --bloom_bits must be above 0".into(),
            ));
        }
        // Float-to-integer casts saturate; validate() bounds the scale.
        let entries = ((ENTRIES_AT_SCALE_1 * config.scale).round() as u64).max(ENTRIES_MIN);
        let queries = ((QUERIES_AT_SCALE_1 * config.scale).round() as u64).max(QUERIES_MIN);
        let keys = KeyFormat::new(config.key_size);
        if entries > keys.capacity() {
            return Err(BenchError::Config(format!(
                "lsm-shape at --scale={} writes {entries} keys, which do not fit in keys of {} digits (--key_size)",
                config.scale, config.key_size
            )));
        }
        let entry = config.key_size + config.value_size + MEMTABLE_ENTRY_OVERHEAD_BYTES;
        let wanted = (share(entries, MEMTABLE_PER_MILLE).saturating_mul(entry) as f64
            / MEMTABLE_FILL_TARGET)
            .min(spinney::limits::WRITE_BUFFER_BYTES_MAX as f64) as usize;
        Ok(Plan {
            entries,
            queries,
            write_buffer_bytes: wanted.clamp(
                spinney::limits::WRITE_BUFFER_BYTES_MIN,
                spinney::limits::WRITE_BUFFER_BYTES_MAX,
            ),
        })
    }

    /// Entries of the memtable round.
    fn memtable_entries(&self) -> usize {
        share(self.entries, MEMTABLE_PER_MILLE)
    }

    /// The two tables: the same but for their filters, both held still.
    fn tables(&self, config: &Config) -> [TableSpec; 2] {
        let spec = |name: &str, bloom_bits: u32| TableSpec {
            bloom_bits: Some(bloom_bits),
            write_buffer_bytes: Some(self.write_buffer_bytes),
            hold_shape: true,
            ..TableSpec::named(name)
        };
        [
            spec(TABLE_BLOOM, config.bloom_bits),
            spec(TABLE_NO_BLOOM, 0),
        ]
    }
}

/// `per_mille` thousandths of `n`, at least 1.
fn share(n: u64, per_mille: u64) -> usize {
    usize::try_from(n.saturating_mul(per_mille) / 1000)
        .unwrap_or(usize::MAX)
        .max(1)
}

/// One query phase's figures: the read counters are totals over the
/// phase's queries.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measurement {
    engine: Engine,
    stage: Stage,
    query: Query,
    queries: u64,
    seconds: f64,
    /// Point queries that found their key; range queries whose seek landed
    /// on it.
    found: u64,
    counts: ReadCounts,
}

impl Measurement {
    fn qps(&self) -> f64 {
        self.queries as f64 / self.seconds.max(1e-9)
    }

    /// A counter's mean per query, if the engine has it.
    fn per_query(&self, total: Option<u64>) -> Option<f64> {
        total.map(|t| {
            if self.queries == 0 {
                0.0
            } else {
                t as f64 / self.queries as f64
            }
        })
    }

    fn trees(&self) -> Option<f64> {
        self.per_query(self.counts.trees_searched)
    }
}

/// What a run on one engine hands to the summary (and a comparison's child
/// to its parent, one line each).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Record {
    /// The engine's run as a whole.
    Run {
        engine: Engine,
        built_seconds: f64,
        load_before: Option<f64>,
        load_after: Option<f64>,
    },
    /// The shape of the table with bloom filters at a stage, before its
    /// queries.
    Shape {
        engine: Engine,
        stage: Stage,
        shape: LsmShape,
    },
    /// One query phase.
    Phase(Measurement),
    /// A check that failed, in words.
    Problem { engine: Engine, text: String },
}

impl Record {
    /// One line of `name=value` fields.
    pub(crate) fn encode(&self) -> String {
        let mut f = Fields::new();
        match self {
            Record::Run {
                engine,
                built_seconds,
                load_before,
                load_after,
            } => {
                f.put("record", "run");
                f.put("engine", engine.name());
                f.put("built_seconds", built_seconds);
                f.put("load_before", optional(*load_before));
                f.put("load_after", optional(*load_after));
            }
            Record::Shape {
                engine,
                stage,
                shape,
            } => {
                f.put("record", "shape");
                f.put("engine", engine.name());
                f.put("stage", stage.name());
                f.put("memtable_entries", shape.memtable_entries);
                f.put("memtable_bytes", shape.memtable_bytes);
                f.put("immutable_memtables", shape.immutable_memtables);
                f.put("l0_runs", shape.l0_runs);
                let levels: Vec<String> = shape.level_files.iter().map(usize::to_string).collect();
                f.put("level_files", levels.join(","));
            }
            Record::Phase(m) => {
                f.put("record", "phase");
                f.put("engine", m.engine.name());
                f.put("stage", m.stage.name());
                f.put("query", m.query.token());
                f.put("queries", m.queries);
                f.put("seconds", m.seconds);
                f.put("found", m.found);
                let c = &m.counts;
                f.put("trees_searched", optional(c.trees_searched));
                f.put("bloom_checks", optional(c.bloom_checks));
                f.put("bloom_negatives", optional(c.bloom_negatives));
                f.put("keys_compared", optional(c.keys_compared));
                f.put("blocks_from_cache", optional(c.blocks_from_cache));
                f.put("blocks_from_storage", optional(c.blocks_from_storage));
            }
            Record::Problem { engine, text } => {
                f.put("record", "problem");
                f.put("engine", engine.name());
                f.put_words("text", text);
            }
        }
        f.line()
    }

    /// The record of a line made by `encode`.
    pub(crate) fn decode(line: &str) -> Result<Record, String> {
        let f = Fields::parse(line)?;
        let engine = f.engine("engine")?;
        let stage = || -> Result<Stage, String> {
            let name: String = f.number("stage")?;
            Stage::from_name(&name).ok_or_else(|| format!("unknown shape '{name}'"))
        };
        let kind: String = f.number("record")?;
        match kind.as_str() {
            "run" => Ok(Record::Run {
                engine,
                built_seconds: f.number("built_seconds")?,
                load_before: parse_optional(&f, "load_before")?,
                load_after: parse_optional(&f, "load_after")?,
            }),
            "shape" => {
                let levels: String = f.number("level_files")?;
                let level_files = levels
                    .split(',')
                    .filter(|l| !l.is_empty())
                    .map(|l| {
                        l.parse()
                            .map_err(|_| format!("level_files '{levels}' is not a list of numbers"))
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Record::Shape {
                    engine,
                    stage: stage()?,
                    shape: LsmShape {
                        memtable_entries: f.number("memtable_entries")?,
                        memtable_bytes: f.number("memtable_bytes")?,
                        immutable_memtables: f.number("immutable_memtables")?,
                        l0_runs: f.number("l0_runs")?,
                        level_files,
                    },
                })
            }
            "phase" => {
                let token: String = f.number("query")?;
                let query =
                    Query::from_token(&token).ok_or_else(|| format!("unknown query '{token}'"))?;
                Ok(Record::Phase(Measurement {
                    engine,
                    stage: stage()?,
                    query,
                    queries: f.number("queries")?,
                    seconds: f.number("seconds")?,
                    found: f.number("found")?,
                    counts: ReadCounts {
                        trees_searched: parse_optional(&f, "trees_searched")?,
                        bloom_checks: parse_optional(&f, "bloom_checks")?,
                        bloom_negatives: parse_optional(&f, "bloom_negatives")?,
                        keys_compared: parse_optional(&f, "keys_compared")?,
                        blocks_from_cache: parse_optional(&f, "blocks_from_cache")?,
                        blocks_from_storage: parse_optional(&f, "blocks_from_storage")?,
                    },
                }))
            }
            "problem" => Ok(Record::Problem {
                engine,
                text: f.words("text")?,
            }),
            other => Err(format!("unknown lsm-shape record '{other}'")),
        }
    }

    fn engine(&self) -> Engine {
        match self {
            Record::Run { engine, .. }
            | Record::Shape { engine, .. }
            | Record::Problem { engine, .. } => *engine,
            Record::Phase(m) => m.engine,
        }
    }
}

/// What can be read off a shape without byte counts (which differ between
/// the two tables by their filters): the trees a read may search.
fn outline(s: &LsmShape) -> String {
    let mut text = format!(
        "memtable {} entries, {} immutable, L0 {} run{}",
        s.memtable_entries,
        s.immutable_memtables,
        s.l0_runs,
        if s.l0_runs == 1 { "" } else { "s" }
    );
    for (i, &files) in s.level_files.iter().enumerate() {
        if files > 0 {
            text.push_str(&format!(
                ", L{} {} file{}",
                i + 1,
                files,
                if files == 1 { "" } else { "s" }
            ));
        }
    }
    text.push_str(&format!(" ({} trees)", s.trees()));
    text
}

/// A shape's line, as printed during the run and in the notes.
fn shape_line(stage: Stage, shape: &LsmShape, write_buffer_bytes: usize) -> String {
    format!(
        "{:<12} {}; memtable {} ({:.0}% of the write buffer)",
        stage.name(),
        outline(shape),
        bytes_text(shape.memtable_bytes),
        shape.memtable_bytes as f64 * 100.0 / write_buffer_bytes.max(1) as f64
    )
}

/// Bytes in KiB below a MiB, in MiB above.
fn bytes_text(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / 1_048_576.0)
    }
}

/// A mean per query for a cell: `decimals` places, "-" when the engine has
/// no such counter.
fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

/// The two tables of one engine's run, and what the scenario writes into
/// them.
struct Tables<'a> {
    engine: Engine,
    store: &'a dyn Store,
    session: Box<dyn Session + 'a>,
    format: KeyFormat,
    value_size: usize,
    values: ValueGenerator,
}

impl Tables<'_> {
    /// Commits `keys` into both tables, the same entry to each in the same
    /// batch.
    fn load(&mut self, keys: &[u64]) -> Result<(), BenchError> {
        let mut key = Vec::with_capacity(self.format.width() + 1);
        let mut batch = Batch::new();
        for chunk in keys.chunks(BATCH_ENTRIES) {
            batch.clear();
            for &k in chunk {
                self.format.write(k, &mut key);
                let value = self.values.next(self.value_size);
                batch.put(BLOOM, &key, value);
                batch.put(NO_BLOOM, &key, value);
            }
            self.session
                .write(&batch)
                .map_err(BenchError::engine("load the tables"))?;
        }
        Ok(())
    }

    /// Runs `op` (flush, compact0, compact1, compactall) on both tables.
    fn operation(&self, op: Benchmark) -> Result<(), BenchError> {
        let done = self
            .store
            .operation(op)
            .map_err(BenchError::engine(format!("{op} the tables")))?;
        if done {
            Ok(())
        } else {
            Err(BenchError::Config(format!(
                "{} has no {op} operation, which lsm-shape needs",
                self.engine
            )))
        }
    }

    fn shape(&self, table: usize) -> Result<LsmShape, BenchError> {
        let name = [TABLE_BLOOM, TABLE_NO_BLOOM][table];
        self.store
            .lsm_shape(table)
            .map_err(BenchError::engine(format!("read the shape of {name}")))?
            .ok_or_else(|| {
                BenchError::Config(format!(
                    "{} does not report the shape of its tables, which lsm-shape needs",
                    self.engine
                ))
            })
    }

    fn shapes(&self) -> Result<(LsmShape, LsmShape), BenchError> {
        Ok((self.shape(BLOOM)?, self.shape(NO_BLOOM)?))
    }

    /// Reads every entry of both tables, so that the queries find their
    /// blocks in the cache (if it holds them); returns the entries of each.
    fn warm(&mut self) -> Result<(u64, u64), BenchError> {
        let mut scan = |table: usize| -> Result<u64, BenchError> {
            let mut n = 0u64;
            self.session
                .scan(table, true, &mut |_| {
                    n += 1;
                    true
                })
                .map_err(BenchError::engine(format!(
                    "scan {}",
                    [TABLE_BLOOM, TABLE_NO_BLOOM][table]
                )))?;
            Ok(n)
        };
        Ok((scan(BLOOM)?, scan(NO_BLOOM)?))
    }

    /// Runs `query` for every key of `keys`; the queries that found their
    /// key.
    fn run_queries(&mut self, query: Query, keys: &[u64]) -> EngineResult<u64> {
        let table = query.table();
        let mut key = Vec::with_capacity(self.format.width() + 1);
        let mut found = 0u64;
        for &k in keys {
            self.format.write(k, &mut key);
            let hit = match query {
                Query::Range => self.session.seek(table, &key, RANGE_NEXTS)?.found,
                Query::PointBloom | Query::PointNoBloom => self.session.get(table, &key)?.is_some(),
            };
            found += u64::from(hit);
        }
        Ok(found)
    }

    /// Runs `query` for every key of `keys`, timed, with the read counters
    /// of this thread on.
    fn measure(
        &mut self,
        stage: Stage,
        query: Query,
        keys: &[u64],
    ) -> Result<Measurement, BenchError> {
        let context = format!("{} queries at {}", query.name(), stage.name());
        let counting = self
            .session
            .start_read_counts()
            .map_err(BenchError::engine(&context))?;
        if !counting {
            return Err(BenchError::Config(format!(
                "{} keeps no read counters, which lsm-shape needs",
                self.engine
            )));
        }
        let start = Instant::now();
        let outcome = self.run_queries(query, keys);
        let seconds = start.elapsed().as_secs_f64();
        // Counting stops on the failure path too.
        let counts = self.session.take_read_counts();
        let found = outcome.map_err(BenchError::engine(&context))?;
        let counts = counts
            .map_err(BenchError::engine(&context))?
            .unwrap_or_default();
        Ok(Measurement {
            engine: self.engine,
            stage,
            query,
            queries: keys.len() as u64,
            seconds,
            found,
            counts,
        })
    }
}

/// Runs the scenario on each engine of `engines` in this process, one after
/// the other.
pub(crate) fn measure(
    config: &Config,
    engines: &[Engine],
    out: &mut dyn Write,
) -> Result<Vec<Record>, BenchError> {
    check_engines(engines)?;
    let plan = Plan::of(config)?;
    let mut records = Vec::new();
    for &engine in engines {
        records.extend(run_one(config, &plan, engine, out)?);
    }
    Ok(records)
}

/// Builds the five shapes on a fresh database of `engine` and queries each.
fn run_one(
    config: &Config,
    plan: &Plan,
    engine: Engine,
    out: &mut dyn Write,
) -> Result<Vec<Record>, BenchError> {
    let (dir, _temp) = super::database_dir(config, "lsm-shape", engine.name())?;
    let load_before = load_average();
    let run_config = Config {
        engine,
        ..config.clone()
    };
    let store = engine::open(engine, &run_config, &dir, &plan.tables(config))?;
    let session = store
        .session()
        .map_err(BenchError::engine("open a session"))?;
    let mut rng = worker_rng(config.seed, 0, 0);
    let mut tables = Tables {
        engine,
        store: store.as_ref(),
        session,
        format: KeyFormat::new(config.key_size),
        value_size: config.value_size,
        values: ValueGenerator::new(rng.gen(), config.value_size),
    };
    let print = |e| BenchError::io("print")(e);
    writeln!(
        out,
        "lsm-shape on {engine}: {} entries in each of two tables ({} with {} bloom bits per key, {} without), {} queries per shape and query kind, write buffer {}",
        plan.entries,
        TABLE_BLOOM,
        config.bloom_bits,
        TABLE_NO_BLOOM,
        plan.queries,
        bytes_text(plan.write_buffer_bytes as u64)
    )
    .map_err(print)?;

    // Every key once, in a random order cut into rounds.
    let mut order: Vec<u64> = (0..plan.entries).collect();
    order.shuffle(&mut rng);
    let memtable_round = plan.memtable_entries();
    let l0_round = share(plan.entries, L0_RUN_PER_MILLE);
    let l1_round = share(plan.entries, L1_PER_MILLE);
    let deep_round = order
        .len()
        .saturating_sub(memtable_round + l0_round * L0_RUNS + l1_round);
    let (deep, rest) = order.split_at(deep_round.min(order.len()));
    let (middle, rest) = rest.split_at(l1_round.min(rest.len()));
    let (l0, memtable) = rest.split_at((l0_round * L0_RUNS).min(rest.len()));

    let built = Instant::now();
    tables.load(deep)?;
    tables.operation(Benchmark::Flush)?;
    tables.operation(Benchmark::Compact0)?;
    tables.operation(Benchmark::Compact1)?;
    tables.load(middle)?;
    tables.operation(Benchmark::Flush)?;
    tables.operation(Benchmark::Compact0)?;
    for run in l0.chunks(l0_round.max(1)) {
        tables.load(run)?;
        tables.operation(Benchmark::Flush)?;
    }
    tables.load(memtable)?;
    let built_seconds = built.elapsed().as_secs_f64();
    writeln!(out, "built pre_flush in {built_seconds:.2} s").map_err(print)?;

    let mut query_rng = worker_rng(config.seed, 1, 0);
    let keys: Vec<u64> = (0..plan.queries)
        .map(|_| query_rng.gen_range(0..plan.entries))
        .collect();

    let mut records = Vec::new();
    let problem = |text: String| Record::Problem { engine, text };
    let mut problems = Vec::new();
    for stage in Stage::ALL {
        if let Some(op) = stage.operation() {
            tables.operation(op)?;
        }
        let (entries_bloom, entries_plain) = tables.warm()?;
        if entries_bloom != plan.entries || entries_plain != plan.entries {
            problems.push(problem(format!(
                "at {}: a scan found {entries_bloom} entries in {TABLE_BLOOM} and {entries_plain} in {TABLE_NO_BLOOM}, not {}",
                stage.name(),
                plan.entries
            )));
        }
        let (mut bloom_shape, mut plain_shape) = tables.shapes()?;
        writeln!(
            out,
            "{}",
            shape_line(stage, &bloom_shape, plan.write_buffer_bytes)
        )
        .map_err(print)?;
        records.push(Record::Shape {
            engine,
            stage,
            shape: bloom_shape.clone(),
        });
        if outline(&bloom_shape) != outline(&plain_shape) {
            problems.push(problem(format!(
                "at {}: the tables' shapes differ: {TABLE_BLOOM} {}; {TABLE_NO_BLOOM} {}",
                stage.name(),
                outline(&bloom_shape),
                outline(&plain_shape)
            )));
        }
        for query in Query::ALL {
            let m = tables.measure(stage, query, &keys)?;
            writeln!(
                out,
                "  {:<20} {:>10.0} queries/s; per query: {} trees searched, {} bloom checks ({} negative), {} keys compared, {} blocks from cache, {} from storage",
                query.name(),
                m.qps(),
                cell(m.trees(), 2),
                cell(m.per_query(m.counts.bloom_checks), 2),
                cell(m.per_query(m.counts.bloom_negatives), 2),
                cell(m.per_query(m.counts.keys_compared), 1),
                cell(m.per_query(m.counts.blocks_from_cache), 2),
                cell(m.per_query(m.counts.blocks_from_storage), 2)
            )
            .map_err(print)?;
            if m.found != m.queries {
                problems.push(problem(format!(
                    "at {}: {} of {} {} queries found their key, though every key exists",
                    stage.name(),
                    m.found,
                    m.queries,
                    query.name()
                )));
            }
            records.push(Record::Phase(m));
            let (bloom_after, plain_after) = tables.shapes()?;
            for (name, before, after) in [
                (TABLE_BLOOM, &bloom_shape, &bloom_after),
                (TABLE_NO_BLOOM, &plain_shape, &plain_after),
            ] {
                if before != after {
                    problems.push(problem(format!(
                        "at {}: the shape of {name} changed during the {} queries: {} -> {}",
                        stage.name(),
                        query.name(),
                        outline(before),
                        outline(after)
                    )));
                }
            }
            bloom_shape = bloom_after;
            plain_shape = plain_after;
        }
    }
    drop(tables);
    store
        .close()
        .map_err(BenchError::engine("close the database"))?;
    records.push(Record::Run {
        engine,
        built_seconds,
        load_before,
        load_after: load_average(),
    });
    records.extend(problems);
    Ok(records)
}

/// The summary of every engine's records, and the chart if asked.
pub(crate) fn finish(config: &Config, records: &[Record]) -> Result<Summary, BenchError> {
    let plan = Plan::of(config)?;
    let summary = summarise(&plan, records);
    if let Some(path) = &config.plot {
        let phases: Vec<&Measurement> = phases(records).collect();
        let several = engines_of(records).len() > 1;
        let bars: Vec<Bar> = phases
            .iter()
            .map(|m| Bar {
                group: m.stage.name().to_string(),
                series: if several {
                    format!("{} {}", m.engine, m.query.name())
                } else {
                    m.query.name().to_string()
                },
                value: m.qps(),
            })
            .collect();
        plot::bars(
            path,
            "lsm-shape: queries per second by tree shape",
            "queries/s",
            &bars,
        )
        .map_err(BenchError::Plot)?;
    }
    Ok(summary)
}

fn phases(records: &[Record]) -> impl Iterator<Item = &Measurement> + '_ {
    records.iter().filter_map(|r| match r {
        Record::Phase(m) => Some(m),
        _ => None,
    })
}

/// The engines of `records`, in the order they ran.
fn engines_of(records: &[Record]) -> Vec<Engine> {
    let mut engines = Vec::new();
    for r in records {
        if !engines.contains(&r.engine()) {
            engines.push(r.engine());
        }
    }
    engines
}

/// What an engine's columns mean where they are not spinney's, for the
/// notes (docs/bench.md has the whole table).
fn column_caveat(engine: Engine) -> Option<&'static str> {
    match engine {
        Engine::Rocksdb | Engine::RocksdbCurrent => Some(
            "perf context counters. Trees searched by point queries count non-empty memtables only (spinney's count the empty one too), plus the filters consulted (with bloom) or the data blocks read (without: an upper bound, as a key past a block's last key reads the next block too); by range queries, the merging iterator's children. Keys compared also count the merging heap's and the file pickers' comparisons.",
        ),
        _ => None,
    }
}

fn summarise(plan: &Plan, records: &[Record]) -> Summary {
    let headers = [
        "engine",
        "shape",
        "query",
        "qps",
        "trees searched",
        "bloom checks",
        "keys compared",
        "blocks from cache",
        "blocks from storage",
    ]
    .map(String::from)
    .to_vec();
    let rows = phases(records)
        .map(|m| {
            vec![
                m.engine.name().to_string(),
                m.stage.name().to_string(),
                m.query.name().to_string(),
                format!("{:.0}", m.qps()),
                cell(m.trees(), 2),
                cell(m.per_query(m.counts.bloom_checks), 2),
                cell(m.per_query(m.counts.keys_compared), 1),
                cell(m.per_query(m.counts.blocks_from_cache), 2),
                cell(m.per_query(m.counts.blocks_from_storage), 2),
            ]
        })
        .collect();

    let engines = engines_of(records);
    let mut notes = vec![format!(
        "Read counter columns are means per query over {} queries (the same keys at every shape and on every engine); one query thread; {} entries per table; write buffer {} per table.",
        plan.queries,
        plan.entries,
        bytes_text(plan.write_buffer_bytes as u64)
    )];
    for &engine in &engines {
        notes.extend(engine_notes(plan, engine, records));
    }
    if let Some(line) = comparison(&engines, records) {
        notes.push(line);
    }
    let loads: Vec<String> = records
        .iter()
        .filter_map(|r| match r {
            Record::Run {
                engine,
                load_before,
                load_after,
                ..
            } => Some(format!(
                "{engine} {} before and {} after",
                load_text(*load_before),
                load_text(*load_after)
            )),
            _ => None,
        })
        .collect();
    notes.push(format!(
        "Machine: {} CPUs, load average {}.",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        loads.join("; ")
    ));
    Summary {
        scenario: "lsm-shape".into(),
        headers,
        rows,
        notes,
    }
}

/// The notes of one engine: its shapes, the spread between shapes per
/// query kind, what bloom filters gained, and its checks.
fn engine_notes(plan: &Plan, engine: Engine, records: &[Record]) -> Vec<String> {
    let measured: Vec<&Measurement> = phases(records).filter(|m| m.engine == engine).collect();
    let built = records.iter().find_map(|r| match r {
        Record::Run {
            engine: e,
            built_seconds,
            ..
        } if *e == engine => Some(*built_seconds),
        _ => None,
    });
    let mut notes = vec![format!(
        "{engine}: shapes (the table with bloom filters){}:",
        built.map_or(String::new(), |s| format!(", pre_flush built in {s:.2} s"))
    )];
    notes.extend(records.iter().filter_map(|r| match r {
        Record::Shape {
            engine: e,
            stage,
            shape,
        } if *e == engine => Some(format!(
            "  {}",
            shape_line(*stage, shape, plan.write_buffer_bytes)
        )),
        _ => None,
    }));
    if let Some(caveat) = column_caveat(engine) {
        notes.push(format!("{engine}: read counters are its {caveat}"));
    }
    for query in Query::ALL {
        let of_query: Vec<&&Measurement> = measured.iter().filter(|m| m.query == query).collect();
        let best = of_query.iter().max_by(|a, b| a.qps().total_cmp(&b.qps()));
        let worst = of_query.iter().min_by(|a, b| a.qps().total_cmp(&b.qps()));
        if let (Some(best), Some(worst)) = (best, worst) {
            notes.push(format!(
                "{engine} {}: {:.2}x between the fastest shape, {} ({:.0}/s, {} trees searched), and the slowest, {} ({:.0}/s, {} trees searched).",
                query.name(),
                best.qps() / worst.qps().max(1e-9),
                best.stage.name(),
                best.qps(),
                cell(best.trees(), 2),
                worst.stage.name(),
                worst.qps(),
                cell(worst.trees(), 2)
            ));
        }
    }
    let bloom_gain: Vec<String> = Stage::ALL
        .iter()
        .filter_map(|&stage| {
            let find = |q| measured.iter().find(|m| m.stage == stage && m.query == q);
            let (with, without) = (find(Query::PointBloom)?, find(Query::PointNoBloom)?);
            Some(format!(
                "{} {:.2}x",
                stage.name(),
                with.qps() / without.qps().max(1e-9)
            ))
        })
        .collect();
    notes.push(format!(
        "{engine}: point queries with bloom filters over without: {}.",
        bloom_gain.join(", ")
    ));
    let problems: Vec<&str> = records
        .iter()
        .filter_map(|r| match r {
            Record::Problem { engine: e, text } if *e == engine => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if problems.is_empty() {
        notes.push(format!(
            "Checks: on {engine} the two tables had the same shape at every stage; no shape changed during any of the {} query phases; every query found its key; every scan found every entry.",
            measured.len()
        ));
    } else {
        notes.push(format!("Checks FAILED on {engine}:"));
        notes.extend(problems.into_iter().map(|p| format!("  {p}")));
    }
    notes
}

/// The line comparing each engine's queries per second with the first
/// engine's, per shape and query kind; `None` with one engine.
fn comparison(engines: &[Engine], records: &[Record]) -> Option<String> {
    let (&first, others) = engines.split_first()?;
    if others.is_empty() {
        return None;
    }
    let qps = |engine: Engine, stage: Stage, query: Query| {
        phases(records)
            .find(|m| m.engine == engine && m.stage == stage && m.query == query)
            .map(Measurement::qps)
    };
    let mut parts = Vec::new();
    for &other in others {
        let per_stage: Vec<String> = Stage::ALL
            .iter()
            .map(|&stage| {
                let ratios: Vec<String> = Query::ALL
                    .iter()
                    .map(
                        |&query| match (qps(other, stage, query), qps(first, stage, query)) {
                            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
                            _ => "-".to_string(),
                        },
                    )
                    .collect();
                format!("{} {}", stage.name(), ratios.join(" / "))
            })
            .collect();
        parts.push(format!("{other} over {first}: {}", per_stage.join(", ")));
    }
    Some(format!(
        "Queries per second by shape (range / point with bloom / point without bloom), {}.",
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_leave_the_last_level_the_largest_share() {
        // Goal: the round sizes add up to at most the entries and leave the
        // deepest round the rest, the largest, at the floor size too.
        for entries in [ENTRIES_MIN, 200_000] {
            let memtable = share(entries, MEMTABLE_PER_MILLE);
            let l0 = share(entries, L0_RUN_PER_MILLE) * L0_RUNS;
            let l1 = share(entries, L1_PER_MILLE);
            let deep = entries as usize - memtable - l0 - l1;
            assert!(
                deep > l1 && l1 > memtable,
                "{entries}: {deep} {l1} {memtable}"
            );
        }
    }

    #[test]
    fn a_zero_bloom_setting_is_a_usage_error() {
        // Goal: the scenario refuses what would make its comparison empty,
        // and keys too narrow for its entries, without panicking.
        let no_bloom = Config {
            bloom_bits: 0,
            ..Config::default()
        };
        assert!(matches!(Plan::of(&no_bloom), Err(BenchError::Config(_))));
        let narrow = Config {
            key_size: 3,
            num: 100,
            ..Config::default()
        };
        assert!(matches!(Plan::of(&narrow), Err(BenchError::Config(_))));
    }

    #[test]
    fn write_buffer_holds_the_memtable_round() {
        // Goal: the memtable round's estimated bytes fit the write buffer,
        // within the engine's limits, and both tables hold their shape
        // with it, only one of them with filters.
        let config = Config::default();
        let plan = Plan::of(&config).expect("plan");
        let round = plan.memtable_entries() * (16 + 100 + MEMTABLE_ENTRY_OVERHEAD_BYTES);
        assert!(plan.write_buffer_bytes > round);
        let [bloom, plain] = plan.tables(&config);
        for t in [&bloom, &plain] {
            assert!(t.hold_shape);
            assert_eq!(t.write_buffer_bytes, Some(plan.write_buffer_bytes));
        }
        assert_eq!(bloom.bloom_bits, Some(config.bloom_bits));
        assert_eq!(plain.bloom_bits, Some(0));
    }

    #[test]
    fn only_spinney_lsm_and_rocksdb_are_taken_and_the_rest_say_why() {
        // Goal: every other engine is refused as a usage error that names
        // it and gives a reason; spinney's LSM always passes (with either
        // log), RocksDB when built.
        assert!(check_engines(&[Engine::SpinneyLsm]).is_ok());
        assert!(check_engines(&[Engine::SpinneyLsmMapped]).is_ok());
        assert_eq!(
            check_engines(&[Engine::Rocksdb]).is_ok(),
            Engine::Rocksdb.is_built()
        );
        assert_eq!(
            check_engines(&[Engine::RocksdbCurrent]).is_ok(),
            Engine::RocksdbCurrent.is_built()
        );
        for engine in Engine::ALL {
            if matches!(
                engine,
                Engine::SpinneyLsm
                    | Engine::SpinneyLsmMapped
                    | Engine::SpinneyLsmMmap
                    | Engine::Rocksdb
                    | Engine::RocksdbCurrent
            ) {
                continue;
            }
            let Err(BenchError::Config(why)) = check_engines(&[Engine::SpinneyLsm, engine]) else {
                panic!("{engine} was not refused");
            };
            assert!(why.contains(engine.name()) && why.contains(": "), "{why}");
        }
    }

    #[test]
    fn records_round_trip_through_their_lines() {
        // Goal: what a comparison's child writes, its parent reads back the
        // same, missing counters, empty level lists and problems with
        // spaces and percent signs included.
        let records = [
            Record::Run {
                engine: Engine::Rocksdb,
                built_seconds: 1.25,
                load_before: Some(0.5),
                load_after: None,
            },
            Record::Shape {
                engine: Engine::SpinneyLsm,
                stage: Stage::CompactL0,
                shape: LsmShape {
                    memtable_entries: 12,
                    memtable_bytes: 4096,
                    immutable_memtables: 1,
                    l0_runs: 6,
                    level_files: vec![0, 3, 1],
                },
            },
            Record::Shape {
                engine: Engine::SpinneyLsm,
                stage: Stage::PreFlush,
                shape: LsmShape::default(),
            },
            Record::Phase(Measurement {
                engine: Engine::Rocksdb,
                stage: Stage::PostFlush,
                query: Query::PointNoBloom,
                queries: 500,
                seconds: 0.001_234_567,
                found: 499,
                counts: ReadCounts {
                    trees_searched: None,
                    bloom_checks: Some(0),
                    bloom_negatives: Some(0),
                    keys_compared: Some(12_345),
                    blocks_from_cache: Some(700),
                    blocks_from_storage: None,
                },
            }),
            Record::Problem {
                engine: Engine::Rocksdb,
                text: "at pre_flush: 99% of\tqueries = odd".into(),
            },
        ];
        for r in &records {
            let line = r.encode();
            assert!(!line.contains('\t'), "{line}");
            assert_eq!(Record::decode(&line).as_ref(), Ok(r), "{line}");
        }
        assert!(Record::decode("record=nope engine=rocksdb").is_err());
    }

    #[test]
    fn the_comparison_puts_each_engine_beside_the_first() {
        // Goal: with two engines the notes compare their QPS per shape and
        // query kind; with one there is no such line.
        let phase = |engine, seconds| {
            Record::Phase(Measurement {
                engine,
                stage: Stage::PreFlush,
                query: Query::Range,
                queries: 100,
                seconds,
                found: 100,
                counts: ReadCounts::default(),
            })
        };
        let records = [phase(Engine::SpinneyLsm, 1.0), phase(Engine::Rocksdb, 0.5)];
        let line = comparison(&[Engine::SpinneyLsm, Engine::Rocksdb], &records).expect("line");
        assert!(
            line.contains("rocksdb over spinney-lsm: pre_flush 2.00x / - / -"),
            "{line}"
        );
        assert_eq!(comparison(&[Engine::SpinneyLsm], &records), None);
    }
}
