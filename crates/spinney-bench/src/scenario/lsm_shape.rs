//! `lsm-shape`: read amplification by LSM tree shape (shared/seeds/001).
//! The same queries run against one data set held in five shapes, and the
//! summary gives, per shape and query kind, the queries per second and the
//! engine's read context per query. The seed found QPS differing by up to
//! 5x between shapes because of the number of trees a query searches.
//!
//! Glossary of the shapes (the seed's):
//! - `pre_flush`: data in the memtable, in six L0 runs, in L1 and in L2;
//! - `post_flush`: after `Db::flush`, the memtable is one more L0 run;
//! - `compact_l0`: after `compact_level(0)`, L0 is merged into L1;
//! - `compact_l1`: after `compact_level(1)`, L1 is merged into L2;
//! - `compact_all`: after `compact_all`, one sorted run in the last level.
//!
//! The query kinds: `range` (a new cursor, a seek and 10 nexts, on the
//! table with bloom filters), `point with bloom` and `point without bloom`
//! (`Table::get` of an existing key). Two tables in one database, one with
//! `--bloom_bits` bits per key and one with none, receive the same entries
//! in the same batches and go through the same flushes and compactions, so
//! their shapes match (checked at every stage).
//!
//! How the shape is built: every key of `[0, N)` is written once, in a
//! random order split into rounds, so that each round spans the whole key
//! range. The first round (60% of the keys) is flushed and compacted down
//! to L2, the second (20%) into L1, six rounds of 2.5% each are flushed
//! into L0 runs one by one, and the last round (5%) stays in the memtable,
//! whose write buffer the scenario sizes to hold it about 60% full. Levels
//! are static (`dynamic_level_bytes = false`), so `compact_level(0)` goes to
//! L1. The database runs with `background_threads = 0` and `autowork =
//! false`, so that no flush or compaction runs unless the scenario asks:
//! the shape stays put while the queries run, and `Table::shape` is
//! compared before and after every query phase to prove it.
//!
//! Each shape's queries start from a warm cache (both tables are scanned
//! first) and use the same random keys; one thread runs them, with its
//! `ReadContext` on, so the read context is exactly the queries'.
//!
//! Sizes at `--scale=1` (about a minute on two cores in a release build):
//! `ENTRIES_AT_SCALE_1` entries per table and `QUERIES_AT_SCALE_1` queries
//! per shape and query kind. The scenario sets the levels, the write
//! buffer, the L0 trigger and the background work itself (`--num`,
//! `--threads`, `--write_buffer_size` and `--background_threads` do not
//! apply); `--cache_size`, `--compression_type`, `--bloom_bits` (above 0),
//! `--key_size`, `--value_size`, durability and `--seed` do. `--db` names
//! the database directory, emptied first as db_bench's fills empty it (a
//! directory holding anything but a spinney database is refused).
//!
//! Thread-safety: runs entirely in the caller's thread.

use std::io::Write;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::Rng;
use spinney::{CompactionOptions, Db, ReadContext, Shape, Table, TableOptions, WriteBatch};

use super::btree_vs_lsm::{load_average, load_text};
use super::Summary;
use crate::keys::{worker_rng, KeyFormat, ValueGenerator};
use crate::plot::{self, Bar};
use crate::{BenchError, Config, ReadContextMean};

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

const TABLE_BLOOM: &str = "bloom";
const TABLE_NO_BLOOM: &str = "no_bloom";

/// A shape of the tree, in the order the scenario builds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
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
}

/// The scenario's sizes, from the configuration.
struct Plan {
    entries: u64,
    queries: u64,
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
        Ok(Plan { entries, queries })
    }

    /// Entries of the memtable round.
    fn memtable_entries(&self) -> usize {
        share(self.entries, MEMTABLE_PER_MILLE)
    }
}

/// `per_mille` thousandths of `n`, at least 1.
fn share(n: u64, per_mille: u64) -> usize {
    usize::try_from(n.saturating_mul(per_mille) / 1000)
        .unwrap_or(usize::MAX)
        .max(1)
}

/// One query phase's figures.
struct Measurement {
    stage: Stage,
    query: Query,
    queries: u64,
    seconds: f64,
    /// Point queries that found their key; range queries whose seek landed
    /// on it.
    found: u64,
    per_query: ReadContextMean,
}

impl Measurement {
    fn qps(&self) -> f64 {
        self.queries as f64 / self.seconds.max(1e-9)
    }
}

/// What can be read off a shape without byte counts (which differ between
/// the two tables by their filters): the trees a read may search.
fn outline(s: &Shape) -> String {
    let mut text = format!(
        "memtable {} entries, {} immutable, L0 {} run{}",
        s.memtable_entries,
        s.immutable_memtables,
        s.l0_runs,
        if s.l0_runs == 1 { "" } else { "s" }
    );
    for l in s.levels.iter().filter(|l| l.files > 0) {
        text.push_str(&format!(
            ", L{} {} file{}",
            l.level,
            l.files,
            if l.files == 1 { "" } else { "s" }
        ));
    }
    text.push_str(&format!(" ({} trees)", s.trees()));
    text
}

/// Bytes in KiB below a MiB, in MiB above.
fn bytes_text(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / 1_048_576.0)
    }
}

/// Turns a thread's read counting on, and off again when dropped (also on
/// an early return with an error).
struct Counting;

impl Counting {
    fn start() -> Counting {
        ReadContext::enable();
        ReadContext::reset();
        Counting
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        ReadContext::disable();
    }
}

/// The two tables and what the scenario writes into them.
struct Tables {
    db: Db,
    bloom: Table,
    plain: Table,
    format: KeyFormat,
    value_size: usize,
    values: ValueGenerator,
}

impl Tables {
    /// Commits `keys` into both tables, the same entry to each in the same
    /// batch.
    fn load(&mut self, keys: &[u64]) -> Result<(), BenchError> {
        let mut key = Vec::with_capacity(self.format.width() + 1);
        for chunk in keys.chunks(BATCH_ENTRIES) {
            let mut batch = WriteBatch::new();
            for &k in chunk {
                self.format.write(k, &mut key);
                let value = self.values.next(self.value_size);
                batch.put(&self.bloom, &key, value);
                batch.put(&self.plain, &key, value);
            }
            self.db
                .write(batch)
                .map_err(BenchError::engine("load the tables"))?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), BenchError> {
        self.db
            .flush()
            .map_err(BenchError::engine("flush the memtables"))
    }

    fn compact_level(&self, level: usize) -> Result<(), BenchError> {
        for t in [&self.bloom, &self.plain] {
            t.compact_level(level).map_err(BenchError::engine(format!(
                "compact L{level} of {}",
                t.name()
            )))?;
        }
        Ok(())
    }

    fn compact_all(&self) -> Result<(), BenchError> {
        for t in [&self.bloom, &self.plain] {
            t.compact_all()
                .map_err(BenchError::engine(format!("compact all of {}", t.name())))?;
        }
        Ok(())
    }

    fn shapes(&self) -> Result<(Shape, Shape), BenchError> {
        let shape = |t: &Table| {
            t.shape().map_err(BenchError::engine(format!(
                "read the shape of {}",
                t.name()
            )))
        };
        Ok((shape(&self.bloom)?, shape(&self.plain)?))
    }

    /// Reads every entry of both tables, so that the queries find their
    /// blocks in the cache (if it holds them); returns the entries of each.
    fn warm(&self) -> Result<(u64, u64), BenchError> {
        let scan = |t: &Table| -> Result<u64, BenchError> {
            let mut cursor = t
                .cursor()
                .map_err(BenchError::engine(format!("scan {}", t.name())))?;
            cursor.seek_to_first();
            let mut n = 0u64;
            while cursor.valid() {
                n += 1;
                cursor.next();
            }
            cursor
                .status()
                .map_err(BenchError::engine(format!("scan {}", t.name())))?;
            Ok(n)
        };
        Ok((scan(&self.bloom)?, scan(&self.plain)?))
    }

    /// Runs `query` for every key of `keys`, timed, with the read context on.
    fn measure(&self, stage: Stage, query: Query, keys: &[u64]) -> Result<Measurement, BenchError> {
        let context = format!("{} queries at {}", query.name(), stage.name());
        let table = match query {
            Query::Range | Query::PointBloom => &self.bloom,
            Query::PointNoBloom => &self.plain,
        };
        let mut key = Vec::with_capacity(self.format.width() + 1);
        let mut found = 0u64;
        let counting = Counting::start();
        let start = Instant::now();
        for &k in keys {
            self.format.write(k, &mut key);
            match query {
                Query::Range => {
                    let mut cursor = table.cursor().map_err(BenchError::engine(&context))?;
                    cursor.seek(&key);
                    if cursor.valid() && cursor.key() == key.as_slice() {
                        found += 1;
                    }
                    for _ in 0..RANGE_NEXTS {
                        if !cursor.valid() {
                            break;
                        }
                        std::hint::black_box(cursor.value());
                        cursor.next();
                    }
                    cursor.status().map_err(BenchError::engine(&context))?;
                }
                Query::PointBloom | Query::PointNoBloom => {
                    if table
                        .get(&key)
                        .map_err(BenchError::engine(&context))?
                        .is_some()
                    {
                        found += 1;
                    }
                }
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        let counts = ReadContext::take();
        drop(counting);
        let queries = keys.len() as u64;
        Ok(Measurement {
            stage,
            query,
            queries,
            seconds,
            found,
            per_query: ReadContextMean::of(&counts, queries),
        })
    }
}

/// The options of both tables: static levels, L0 never due for compaction
/// at six runs, and a write buffer that holds the memtable round.
fn table_options(config: &Config, plan: &Plan, bloom_bits: u32) -> TableOptions {
    let entry = config.key_size + config.value_size + MEMTABLE_ENTRY_OVERHEAD_BYTES;
    let wanted = (plan.memtable_entries().saturating_mul(entry) as f64 / MEMTABLE_FILL_TARGET)
        .min(spinney::limits::WRITE_BUFFER_BYTES_MAX as f64) as usize;
    TableOptions {
        compression: config.compression,
        bloom_bits_per_key: bloom_bits,
        write_buffer_size: wanted.clamp(
            spinney::limits::WRITE_BUFFER_BYTES_MIN,
            spinney::limits::WRITE_BUFFER_BYTES_MAX,
        ),
        compaction: CompactionOptions {
            dynamic_level_bytes: false,
            l0_trigger: spinney::limits::L0_TRIGGER_MAX,
            ..CompactionOptions::leveled()
        },
        ..TableOptions::lsm()
    }
}

pub(crate) fn run(config: &Config, out: &mut dyn Write) -> Result<Summary, BenchError> {
    let plan = Plan::of(config)?;
    let (dir, _temp) = crate::bench::root_dir(config)?;
    crate::bench::destroy(&dir)?;
    let load_start = load_average();
    let options = spinney::Options {
        background_threads: 0,
        autowork: false,
        ..config.db_options()
    };
    let db = Db::open(&dir, options).map_err(BenchError::engine("open the database"))?;
    let bloom = db
        .create_table(TABLE_BLOOM, table_options(config, &plan, config.bloom_bits))
        .map_err(BenchError::engine("create the table with bloom filters"))?;
    let plain = db
        .create_table(TABLE_NO_BLOOM, table_options(config, &plan, 0))
        .map_err(BenchError::engine("create the table without bloom filters"))?;
    let write_buffer_bytes = bloom.options().write_buffer_size;
    let mut rng = worker_rng(config.seed, 0, 0);
    let mut tables = Tables {
        db,
        bloom,
        plain,
        format: KeyFormat::new(config.key_size),
        value_size: config.value_size,
        values: ValueGenerator::new(rng.gen(), config.value_size),
    };
    let print = |e| BenchError::io("print")(e);
    writeln!(
        out,
        "lsm-shape: {} entries in each of two tables ({} with {} bloom bits per key, {} without), {} queries per shape and query kind, write buffer {}",
        plan.entries,
        TABLE_BLOOM,
        config.bloom_bits,
        TABLE_NO_BLOOM,
        plan.queries,
        bytes_text(write_buffer_bytes as u64)
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
    tables.flush()?;
    tables.compact_level(0)?;
    tables.compact_level(1)?;
    tables.load(middle)?;
    tables.flush()?;
    tables.compact_level(0)?;
    for run in l0.chunks(l0_round.max(1)) {
        tables.load(run)?;
        tables.flush()?;
    }
    tables.load(memtable)?;
    writeln!(
        out,
        "built pre_flush in {:.2} s",
        built.elapsed().as_secs_f64()
    )
    .map_err(print)?;

    let mut query_rng = worker_rng(config.seed, 1, 0);
    let keys: Vec<u64> = (0..plan.queries)
        .map(|_| query_rng.gen_range(0..plan.entries))
        .collect();

    let mut measured = Vec::new();
    let mut shape_lines = Vec::new();
    let mut problems = Vec::new();
    for stage in Stage::ALL {
        match stage {
            Stage::PreFlush => {}
            Stage::PostFlush => tables.flush()?,
            Stage::CompactL0 => tables.compact_level(0)?,
            Stage::CompactL1 => tables.compact_level(1)?,
            Stage::CompactAll => tables.compact_all()?,
        }
        let (entries_bloom, entries_plain) = tables.warm()?;
        if entries_bloom != plan.entries || entries_plain != plan.entries {
            problems.push(format!(
                "at {}: a scan found {entries_bloom} entries in {TABLE_BLOOM} and {entries_plain} in {TABLE_NO_BLOOM}, not {}",
                stage.name(),
                plan.entries
            ));
        }
        let (mut bloom_shape, plain_shape) = tables.shapes()?;
        let line = format!(
            "{:<12} {}; memtable {} ({:.0}% of the write buffer)",
            stage.name(),
            outline(&bloom_shape),
            bytes_text(bloom_shape.memtable_bytes),
            bloom_shape.memtable_bytes as f64 * 100.0 / write_buffer_bytes.max(1) as f64
        );
        writeln!(out, "{line}").map_err(print)?;
        shape_lines.push(format!("  {}", line.trim_end()));
        if outline(&bloom_shape) != outline(&plain_shape) {
            problems.push(format!(
                "at {}: the tables' shapes differ: {TABLE_BLOOM} {}; {TABLE_NO_BLOOM} {}",
                stage.name(),
                outline(&bloom_shape),
                outline(&plain_shape)
            ));
        }
        let mut plain_shape = plain_shape;
        for query in Query::ALL {
            let m = tables.measure(stage, query, &keys)?;
            writeln!(
                out,
                "  {:<20} {:>10.0} queries/s; per query: {:.2} trees searched, {:.2} bloom checks ({:.2} negative), {:.1} keys compared, {:.2} blocks from cache, {:.2} from storage",
                query.name(),
                m.qps(),
                m.per_query.trees_searched,
                m.per_query.bloom_checks,
                m.per_query.bloom_negatives,
                m.per_query.keys_compared,
                m.per_query.blocks_from_cache,
                m.per_query.blocks_from_storage
            )
            .map_err(print)?;
            if m.found != m.queries {
                problems.push(format!(
                    "at {}: {} of {} {} queries found their key, though every key exists",
                    stage.name(),
                    m.found,
                    m.queries,
                    query.name()
                ));
            }
            measured.push(m);
            let (bloom_after, plain_after) = tables.shapes()?;
            for (name, before, after) in [
                (TABLE_BLOOM, &bloom_shape, &bloom_after),
                (TABLE_NO_BLOOM, &plain_shape, &plain_after),
            ] {
                if before != after {
                    problems.push(format!(
                        "at {}: the shape of {name} changed during the {} queries: {} -> {}",
                        stage.name(),
                        query.name(),
                        outline(before),
                        outline(after)
                    ));
                }
            }
            bloom_shape = bloom_after;
            plain_shape = plain_after;
        }
    }
    drop(tables.bloom);
    drop(tables.plain);
    tables
        .db
        .close()
        .map_err(BenchError::engine("close the database"))?;

    let summary = summarise(&plan, &measured, shape_lines, problems, load_start);
    if let Some(path) = &config.plot {
        let bars: Vec<Bar> = measured
            .iter()
            .map(|m| Bar {
                group: m.stage.name().to_string(),
                series: m.query.name().to_string(),
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

fn summarise(
    plan: &Plan,
    measured: &[Measurement],
    shape_lines: Vec<String>,
    problems: Vec<String>,
    load_start: Option<f64>,
) -> Summary {
    let headers = [
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
    let rows = measured
        .iter()
        .map(|m| {
            vec![
                m.stage.name().to_string(),
                m.query.name().to_string(),
                format!("{:.0}", m.qps()),
                format!("{:.2}", m.per_query.trees_searched),
                format!("{:.2}", m.per_query.bloom_checks),
                format!("{:.1}", m.per_query.keys_compared),
                format!("{:.2}", m.per_query.blocks_from_cache),
                format!("{:.2}", m.per_query.blocks_from_storage),
            ]
        })
        .collect();

    let mut notes = vec![format!(
        "Read context columns are means per query over {} queries (the same keys at every shape); one query thread; {} entries per table. Shapes (the table with bloom filters):",
        plan.queries, plan.entries
    )];
    notes.extend(shape_lines);
    for query in Query::ALL {
        let of_query: Vec<&Measurement> = measured.iter().filter(|m| m.query == query).collect();
        let best = of_query.iter().max_by(|a, b| a.qps().total_cmp(&b.qps()));
        let worst = of_query.iter().min_by(|a, b| a.qps().total_cmp(&b.qps()));
        if let (Some(best), Some(worst)) = (best, worst) {
            notes.push(format!(
                "{}: {:.2}x between the fastest shape, {} ({:.0}/s, {:.2} trees searched), and the slowest, {} ({:.0}/s, {:.2} trees searched).",
                query.name(),
                best.qps() / worst.qps().max(1e-9),
                best.stage.name(),
                best.qps(),
                best.per_query.trees_searched,
                worst.stage.name(),
                worst.qps(),
                worst.per_query.trees_searched
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
        "Point queries with bloom filters over without: {}.",
        bloom_gain.join(", ")
    ));
    if problems.is_empty() {
        notes.push(format!(
            "Checks: the two tables had the same shape at every stage; no shape changed during any of the {} query phases; every point query found its key; every scan found {} entries.",
            measured.len(),
            plan.entries
        ));
    } else {
        notes.push("Checks FAILED:".to_string());
        notes.extend(problems.into_iter().map(|p| format!("  {p}")));
    }
    notes.push(format!(
        "Machine: {} CPUs, load average {} before the run and {} after it.",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_text(load_start),
        load_text(load_average())
    ));
    Summary {
        scenario: "lsm-shape".into(),
        headers,
        rows,
        notes,
    }
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
        // within the engine's limits.
        let config = Config::default();
        let plan = Plan::of(&config).expect("plan");
        let t = table_options(&config, &plan, 10);
        let round = plan.memtable_entries() * (16 + 100 + MEMTABLE_ENTRY_OVERHEAD_BYTES);
        assert!(t.write_buffer_size > round);
        assert!(!t.compaction.dynamic_level_bytes);
    }
}
