//! iibench: documents inserted in primary-key order into a primary table
//! with three secondary indexes, on LSM tables and on B-tree tables, at
//! three cache sizes (Mark Callaghan's "iibench on MongoDB" post, in
//! `shared/seeds/`, 003). The engines are spinney's two kinds, or those of
//! `--compare` (the post's own WiredTiger B-tree and LSM beside spinney's,
//! each then in a child process of its own).
//!
//! Each run opens a fresh database of one engine holding four tables:
//! `documents` (the primary table) and the indexes `by_price`,
//! `by_customer` and `by_register`. A document has an increasing id, its
//! primary key (16 zero-padded decimal digits), and three random
//! attributes as iibench-mongodb draws them: a price (8 digits, 10^8
//! values: iibench's price is a double, so practically unique), a customer
//! (6 digits, 100,000 customers) and a cash register (4 digits, 1,000
//! registers). Its value is the three attributes (price ‖ customer ‖
//! register, 18 bytes) followed by filler up to `Config::value_size`. The
//! index keys are iibench's three compound indexes, each led by one
//! attribute and ended by the primary key, with empty values:
//!
//! ```text
//! by_price:    price    ‖ customer ‖ id
//! by_customer: customer ‖ price    ‖ id
//! by_register: register ‖ price    ‖ id
//! ```
//!
//! The primary table grows at its right edge; each index takes its keys at
//! random places. Every 1,000 documents are one atomic batch of
//! 4,000 entries (iibench's 1,000 documents per insert request; fewer at
//! tiny scales, where an interval holds fewer documents). `--batch_size=N`
//! makes each batch N documents: with 1, each document is a transaction of
//! its own, as MongoDB commits them (WiredTiger 3.2 rolls back a
//! transaction of 1,000 documents once the index pages it dirties outgrow
//! the small cache, so the post's WiredTiger runs need it). Every run inserts
//! the same documents (drawn from `Config::seed`).
//!
//! The run is cut into ten intervals of equal numbers of documents (the
//! post's "per 200k inserts" table, scaled: one interval is a tenth of the
//! run). For each interval the scenario reports documents per second and,
//! per 1,000 documents, the engine's KB written, KB read and read requests,
//! and the whole process's CPU microseconds and context switches (the
//! post's io.kBw, io.kBr, io.r, vm.us+sy and vm.cs), plus the size of the
//! three indexes at the interval's end where the engine tells them apart
//! (spinney: a B-tree's pages in use, an LSM table's SSTs; WiredTiger: the
//! tables' files) and the whole database directory's. For spinney the I/O
//! figures are its own counters; for a peer, the process's (see
//! `measure`).
//!
//! The notes say whether each engine degrades at the small cache: an
//! engine whose whole-run rate there is below 80% of its rate at the large
//! cache is cache-bound if it also reads clearly more per document (more
//! than twice, plus 10 KB per 1,000 documents), and otherwise slowed by
//! something else (on a shared two-core machine, usually other work).
//!
//! The three caches are fractions of the indexes' final size in a B-tree
//! (`INDEX_BYTES_PER_DOC`, measured): an eighth (the indexes outgrow it by
//! the second interval), a half (they outgrow it halfway through) and one
//! and a half times the whole database (everything stays in memory). The
//! scenario fixes the engines, the cache size and the key layout; the
//! other flags (`--value_size`, `--compression_type`, `--page_size`,
//! `--write_buffer_size`, `--bloom_bits`, `--compaction_style`,
//! `--background_threads`, `--sync`/`--disable_wal`, `--seed`) apply.
//!
//! Seed 003 ran with direct I/O, so that the engine's cache, not the
//! OS's, is what the indexes outgrow. `--use_direct_reads=1
//! --use_direct_io_for_flush_and_compaction=1` runs it so, on spinney's
//! two kinds and WiredTiger's B-tree and LSM (`--compare`), and refuses
//! engines without direct I/O. Without them, the OS's page cache holds
//! what the engine's cache does not, and on a machine with memory to
//! spare the small cache reads from memory, not storage.
//!
//! `--iibench_writes` says how each batch is written: `blind` (the
//! default, iibench's inserts: puts only), `rmw` (a read-modify-write
//! transaction that reads every key it will write first, and writes only
//! if none is there: the documents' ids and their index entries, as an
//! application's unique checks read; spinney in a `Transaction`, a peer
//! by reads before its batch), or both, `blind,rmw`, each engine and cache
//! then run both ways, with a note of what the reads cost each engine.
//! The post's verdict weighs the blind runs.
//!
//! With `--db=DIR`, run `<engine>-<cache>` (for instance
//! `spinney-btree-small`, `spinney-btree-small-rmw`) keeps its database in
//! `DIR/iibench/spinney-btree-small`; without it each run's
//! database is a temporary directory removed when the run ends.
//!
//! Thread-safety: runs in the caller's thread; the engine's background
//! threads flush, compact and checkpoint beside it.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::Rng;
use spinney::TableKind;

use super::{optional, parse_optional, Fields, Summary};
use crate::engine::{self, Batch, TableSpec};
use crate::keys::{worker_rng, KeyFormat, ValueGenerator};
use crate::measure::{dir_size, Amplification, Resources};
use crate::plot;
use crate::{BenchError, Config, Engine, IndexWrites};

/// Documents inserted by each run at scale 1: sized so that the six runs
/// take about a minute on two cores.
const DOCS_DEFAULT: f64 = 800_000.0;

/// Intervals a run is cut into.
const INTERVALS: u64 = 10;

/// Documents per atomic batch, as iibench's insert requests.
const BATCH_DOCS_MAX: u64 = 1000;

/// Fewest documents per interval (tiny scales).
const INTERVAL_DOCS_MIN: u64 = 100;

/// Digits of the primary key (db_bench's 16-byte keys).
const ID_DIGITS: usize = 16;

/// Prices: 10^8 values in 8 digits, practically unique per document.
const PRICES: u64 = 100_000_000;
const PRICE_DIGITS: usize = 8;

/// Customers: iibench's 100,000, in 6 digits.
const CUSTOMERS: u64 = 100_000;
const CUSTOMER_DIGITS: usize = 6;

/// Cash registers: iibench's 1,000, in 4 digits.
const REGISTERS: u64 = 1_000;
const REGISTER_DIGITS: usize = 4;

/// Bytes of the attributes at the start of a document's value.
const ATTRIBUTE_BYTES: usize = PRICE_DIGITS + CUSTOMER_DIGITS + REGISTER_DIGITS;

/// The primary table.
const PRIMARY: &str = "documents";

/// The secondary indexes, in the order of `index_keys`.
const INDEXES: [&str; 3] = ["by_price", "by_customer", "by_register"];

/// Bytes the three B-tree indexes take on disk per document, measured at
/// scale 1 with 8 KiB pages (random inserts leave pages about 70% full).
const INDEX_BYTES_PER_DOC: f64 = 200.0;

/// Bytes the primary B-tree takes on disk per document of 100-byte values,
/// measured likewise (appends leave pages full).
const PRIMARY_BYTES_PER_DOC: f64 = 140.0;

/// The smallest cache a run gets (tiny scales), so that a root-to-leaf
/// path of every table always fits.
const CACHE_BYTES_MIN: u64 = 256 << 10;

/// A cache of a run: its name, and how its size follows from the
/// documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CacheChoice {
    label: &'static str,
    bytes: u64,
}

/// The cache labels, smallest first.
const CACHE_LABELS: [&str; 3] = ["small", "medium", "large"];

/// The three caches for `docs` documents of `value_size` bytes.
fn caches(docs: u64, value_size: usize) -> [CacheChoice; 3] {
    let index = docs as f64 * INDEX_BYTES_PER_DOC;
    let primary = docs as f64 * PRIMARY_BYTES_PER_DOC * (value_size.max(1) as f64 / 100.0).max(1.0);
    let bytes = |b: f64| (b as u64).max(CACHE_BYTES_MIN);
    [
        CacheChoice {
            label: "small",
            bytes: bytes(index / 8.0),
        },
        CacheChoice {
            label: "medium",
            bytes: bytes(index / 2.0),
        },
        CacheChoice {
            label: "large",
            bytes: bytes((index + primary) * 1.5),
        },
    ]
}

/// How many documents, per interval and per batch, a scale asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sizes {
    interval_docs: u64,
    batch_docs: u64,
}

impl Sizes {
    /// The sizes at `scale`, with batches of `batch` documents
    /// (`--batch_size`; iibench's 1,000 when `None`).
    fn of(scale: f64, batch: Option<usize>) -> Sizes {
        let wanted = (DOCS_DEFAULT * scale / INTERVALS as f64).round();
        // `wanted` is finite and non-negative (scale is checked to be in
        // (0, 1e6]), so the conversion saturates at worst.
        let mut interval_docs = (wanted as u64).max(INTERVAL_DOCS_MIN);
        if interval_docs >= BATCH_DOCS_MAX {
            interval_docs = interval_docs / BATCH_DOCS_MAX * BATCH_DOCS_MAX;
        }
        let batch = batch.map_or(BATCH_DOCS_MAX, |b| b.max(1) as u64);
        Sizes {
            interval_docs,
            batch_docs: interval_docs.min(BATCH_DOCS_MAX).min(batch),
        }
    }

    fn docs(&self) -> u64 {
        self.interval_docs * INTERVALS
    }
}

/// One document's attributes.
#[derive(Debug, Clone, Copy)]
struct Document {
    price: u64,
    customer: u64,
    register: u64,
}

impl Document {
    fn random(rng: &mut SmallRng) -> Document {
        Document {
            price: rng.gen_range(0..PRICES),
            customer: rng.gen_range(0..CUSTOMERS),
            register: rng.gen_range(0..REGISTERS),
        }
    }
}

/// Appends `n` zero-padded to `width` decimal digits.
fn push_digits(buf: &mut Vec<u8>, n: u64, width: usize) {
    let start = buf.len();
    buf.resize(start + width, b'0');
    let mut rest = n;
    for byte in buf.iter_mut().skip(start).rev() {
        if rest == 0 {
            break;
        }
        // `rest % 10` is one digit, so the cast cannot truncate.
        *byte = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
}

/// The keys of `doc` (whose primary key is `id`) in the three indexes.
fn index_keys(doc: &Document, id: &[u8], keys: &mut [Vec<u8>; 3]) {
    let [price, customer, register] = keys;
    price.clear();
    push_digits(price, doc.price, PRICE_DIGITS);
    push_digits(price, doc.customer, CUSTOMER_DIGITS);
    price.extend_from_slice(id);
    customer.clear();
    push_digits(customer, doc.customer, CUSTOMER_DIGITS);
    push_digits(customer, doc.price, PRICE_DIGITS);
    customer.extend_from_slice(id);
    register.clear();
    push_digits(register, doc.register, REGISTER_DIGITS);
    push_digits(register, doc.price, PRICE_DIGITS);
    register.extend_from_slice(id);
}

/// The figures of one interval.
#[derive(Debug, Clone, Copy, PartialEq)]
struct IntervalFigures {
    /// Documents inserted from the run's start to the interval's end.
    docs: u64,
    docs_per_sec: f64,
    amplification: Amplification,
    /// Bytes of the three indexes on disk at the interval's end, where the
    /// engine tells its tables apart.
    index_bytes: Option<u64>,
    /// Bytes of the whole database directory at the interval's end.
    db_bytes: u64,
}

/// One run: one engine at one cache size.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Run {
    engine: Engine,
    cache: CacheChoice,
    /// How each batch was written.
    writes: IndexWrites,
    intervals: Vec<IntervalFigures>,
    seconds: f64,
    /// Bytes of the primary table on disk at the end, where the engine
    /// tells its tables apart.
    primary_bytes: Option<u64>,
}

impl Run {
    fn name(&self) -> String {
        format!(
            "{}{} {} ({})",
            self.engine.name(),
            writes_suffix(self.writes),
            self.cache.label,
            mib(self.cache.bytes)
        )
    }

    fn kind(&self) -> TableKind {
        self.engine.kind()
    }

    /// Lines of `name=value` fields (a comparison's child reports with
    /// them): one for the run, then one per interval.
    pub(crate) fn encode(&self) -> Vec<String> {
        let mut head = Fields::new();
        head.put("engine", self.engine.name());
        head.put("cache", self.cache.label);
        head.put("cache_bytes", self.cache.bytes);
        head.put("writes", self.writes.name());
        head.put("seconds", self.seconds);
        head.put("primary_bytes", optional(self.primary_bytes));
        head.put("intervals", self.intervals.len());
        let mut lines = vec![head.line()];
        for i in &self.intervals {
            let a = &i.amplification;
            let mut f = Fields::new();
            f.put("docs", i.docs);
            f.put("docs_per_sec", i.docs_per_sec);
            f.put("kb_written", a.kb_written);
            f.put("kb_read", a.kb_read);
            f.put("read_requests", a.read_requests);
            f.put("syncs", optional(a.syncs));
            f.put("cpu_micros", a.cpu_micros);
            f.put("context_switches", a.context_switches);
            f.put("index_bytes", optional(i.index_bytes));
            f.put("db_bytes", i.db_bytes);
            lines.push(f.line());
        }
        lines
    }

    /// The runs of lines made by `encode`.
    pub(crate) fn decode(lines: &[String]) -> Result<Vec<Run>, String> {
        let mut runs = Vec::new();
        let mut rest = lines.iter();
        while let Some(head) = rest.next() {
            let f = Fields::parse(head)?;
            let label: String = f.number("cache")?;
            let label = CACHE_LABELS
                .into_iter()
                .find(|l| *l == label)
                .ok_or_else(|| format!("unknown cache '{label}'"))?;
            let writes: String = f.number("writes")?;
            let writes = IndexWrites::from_name(&writes)
                .ok_or_else(|| format!("unknown way of writing '{writes}'"))?;
            let count: usize = f.number("intervals")?;
            let mut intervals = Vec::with_capacity(count);
            for _ in 0..count {
                let line = rest.next().ok_or("a run's intervals are cut short")?;
                let i = Fields::parse(line)?;
                intervals.push(IntervalFigures {
                    docs: i.number("docs")?,
                    docs_per_sec: i.number("docs_per_sec")?,
                    amplification: Amplification {
                        kb_written: i.number("kb_written")?,
                        kb_read: i.number("kb_read")?,
                        read_requests: i.number("read_requests")?,
                        syncs: parse_optional(&i, "syncs")?,
                        cpu_micros: i.number("cpu_micros")?,
                        context_switches: i.number("context_switches")?,
                    },
                    index_bytes: parse_optional(&i, "index_bytes")?,
                    db_bytes: i.number("db_bytes")?,
                });
            }
            runs.push(Run {
                engine: f.engine("engine")?,
                cache: CacheChoice {
                    label,
                    bytes: f.number("cache_bytes")?,
                },
                writes,
                intervals,
                seconds: f.number("seconds")?,
                primary_bytes: parse_optional(&f, "primary_bytes")?,
            });
        }
        Ok(runs)
    }

    /// Documents per second over the whole run.
    fn mean_rate(&self) -> f64 {
        let docs = self.intervals.last().map_or(0, |i| i.docs);
        if self.seconds > 0.0 {
            docs as f64 / self.seconds
        } else {
            0.0
        }
    }

    fn final_rate(&self) -> f64 {
        self.intervals.last().map_or(0.0, |i| i.docs_per_sec)
    }

    fn final_index_bytes(&self) -> Option<u64> {
        self.intervals.last().and_then(|i| i.index_bytes)
    }

    fn final_db_bytes(&self) -> u64 {
        self.intervals.last().map_or(0, |i| i.db_bytes)
    }

    /// The mean of a figure over the last three intervals, where the
    /// indexes are largest.
    fn late_mean(&self, figure: impl Fn(&IntervalFigures) -> f64) -> f64 {
        let tail: Vec<f64> = self.intervals.iter().rev().take(3).map(figure).collect();
        if tail.is_empty() {
            0.0
        } else {
            tail.iter().sum::<f64>() / tail.len() as f64
        }
    }
}

/// Bytes in MiB for a cell: three significant decimals at most, trailing
/// zeros dropped ("0.25", "6", "48.5").
fn mib_number(bytes: u64) -> String {
    let text = format!("{:.3}", bytes as f64 / f64::from(1u32 << 20));
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text.is_empty() {
        "0".to_string()
    } else {
        text.to_string()
    }
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", mib_number(bytes))
}

/// Runs every engine of `engines` at the three caches in this process.
pub(crate) fn measure(
    config: &Config,
    engines: &[Engine],
    out: &mut dyn Write,
) -> Result<Vec<Run>, BenchError> {
    config.validate().map_err(BenchError::Config)?;
    if config.use_existing_db {
        return Err(BenchError::Config(
            "--use_existing_db does not apply to the iibench scenario: it loads fresh databases"
                .into(),
        ));
    }
    let sizes = Sizes::of(config.scale, config.batch_size);
    let docs = sizes.docs();
    let caches = caches(docs, config.value_size);
    let print = BenchError::io("print");
    writeln!(
        out,
        "iibench: {docs} documents per run in {INTERVALS} intervals of {}, {} per batch; caches {}",
        sizes.interval_docs,
        sizes.batch_docs,
        caches
            .map(|c| format!("{} {}", c.label, mib(c.bytes)))
            .join(", ")
    )
    .map_err(print)?;
    let mut runs = Vec::new();
    for &engine in engines {
        for (&writes, cache) in config
            .iibench_writes
            .iter()
            .flat_map(|w| caches.iter().map(move |c| (w, c)))
        {
            // An engine that takes no cache this small gets its smallest.
            let cache = CacheChoice {
                bytes: cache.bytes.max(engine.cache_bytes_min()),
                ..*cache
            };
            let run = run_one(config, sizes, engine, cache, writes, out)?;
            writeln!(
                out,
                "iibench: {:<16} cache {:<7} {:>9} docs in {:>6.1} s, last interval {:>8.0} docs/s, indexes {}, documents {}, database {}",
                format!("{}{}", engine.name(), writes_suffix(writes)),
                cache.label,
                docs,
                run.seconds,
                run.final_rate(),
                run.final_index_bytes().map_or("-".to_string(), mib),
                run.primary_bytes.map_or("-".to_string(), mib),
                mib(run.final_db_bytes())
            )
            .map_err(BenchError::io("print"))?;
            runs.push(run);
        }
    }
    Ok(runs)
}

/// The summary of every engine's runs, and the chart if asked.
pub(crate) fn finish(config: &Config, runs: &[Run]) -> Result<Summary, BenchError> {
    let sizes = Sizes::of(config.scale, config.batch_size);
    let caches = caches(sizes.docs(), config.value_size);
    if let Some(path) = &config.plot {
        draw(path, runs)?;
    }
    Ok(summary(sizes, &caches, runs))
}

/// Inserts the documents into a fresh database of `engine` with `cache`,
/// measuring each interval.
fn run_one(
    config: &Config,
    sizes: Sizes,
    engine: Engine,
    cache: CacheChoice,
    writes: IndexWrites,
    out: &mut dyn Write,
) -> Result<Run, BenchError> {
    let name = match writes {
        IndexWrites::Blind => format!("{}-{}", engine.name(), cache.label),
        IndexWrites::Rmw => format!("{}-{}-rmw", engine.name(), cache.label),
    };
    let (dir, _temp) = super::database_dir(config, "iibench", &name)?;
    let run_config = Config {
        engine,
        cache_size: cache.bytes,
        ..config.clone()
    };
    let tables: Vec<TableSpec> = std::iter::once(PRIMARY)
        .chain(INDEXES)
        .map(TableSpec::named)
        .collect();
    let store = engine::open(engine, &run_config, &dir, &tables)?;
    writeln!(
        out,
        "iibench: {:<16} cache {:<7} ({}) loading...",
        format!("{}{}", engine.name(), writes_suffix(writes)),
        cache.label,
        mib(cache.bytes)
    )
    .map_err(BenchError::io("print"))?;

    let ids = KeyFormat::new(ID_DIGITS);
    let mut rng = worker_rng(config.seed, 0, 0);
    let mut values = ValueGenerator::new(config.seed, config.value_size);
    let mut id_buf = Vec::with_capacity(ID_DIGITS);
    let mut value = Vec::with_capacity(config.value_size.max(ATTRIBUTE_BYTES));
    let mut index_bufs: [Vec<u8>; 3] = Default::default();
    let mut next_id = 0u64;
    let mut intervals = Vec::with_capacity(INTERVALS as usize);
    let mut session = store
        .session()
        .map_err(BenchError::engine("open a session"))?;
    let mut batch = Batch::new();
    let run_start = Instant::now();
    for _ in 0..INTERVALS {
        let before = Resources::now(store.io_counters());
        let start = Instant::now();
        let mut left = sizes.interval_docs;
        while left > 0 {
            let n = left.min(sizes.batch_docs);
            batch.clear();
            for _ in 0..n {
                let doc = Document::random(&mut rng);
                ids.write(next_id, &mut id_buf);
                next_id += 1;
                value.clear();
                push_digits(&mut value, doc.price, PRICE_DIGITS);
                push_digits(&mut value, doc.customer, CUSTOMER_DIGITS);
                push_digits(&mut value, doc.register, REGISTER_DIGITS);
                value.extend_from_slice(
                    values.next(config.value_size.saturating_sub(ATTRIBUTE_BYTES)),
                );
                batch.put(0, &id_buf, &value);
                index_keys(&doc, &id_buf, &mut index_bufs);
                for (table, key) in index_bufs.iter().enumerate() {
                    batch.put(table + 1, key, &[]);
                }
            }
            match writes {
                IndexWrites::Blind => session.write(&batch),
                IndexWrites::Rmw => session.write_after_reads(&batch),
            }
            .map_err(BenchError::engine("insert a batch of documents"))?;
            left -= n;
        }
        let seconds = start.elapsed().as_secs_f64();
        let used = Resources::now(store.io_counters()).since(&before);
        intervals.push(IntervalFigures {
            docs: next_id,
            docs_per_sec: if seconds > 0.0 {
                sizes.interval_docs as f64 / seconds
            } else {
                0.0
            },
            amplification: used.per_thousand(sizes.interval_docs),
            index_bytes: store.table_bytes(&[1, 2, 3]),
            db_bytes: dir_size(&dir),
        });
    }
    let seconds = run_start.elapsed().as_secs_f64();
    let primary_bytes = store.table_bytes(&[0]);
    drop(session);
    store
        .close()
        .map_err(BenchError::engine("close the database"))?;
    Ok(Run {
        engine,
        cache,
        writes,
        intervals,
        seconds,
        primary_bytes,
    })
}

/// What a run's name carries beside its engine: nothing for blind writes
/// (the post's runs), " rmw" for read-modify-write transactions.
fn writes_suffix(writes: IndexWrites) -> &'static str {
    match writes {
        IndexWrites::Blind => "",
        IndexWrites::Rmw => " rmw",
    }
}

fn draw(path: &Path, runs: &[Run]) -> Result<(), BenchError> {
    let series: Vec<plot::Series> = runs
        .iter()
        .map(|r| plot::Series {
            name: r.name(),
            points: r
                .intervals
                .iter()
                .map(|i| (i.docs as f64, i.docs_per_sec))
                .collect(),
        })
        .collect();
    plot::lines(
        path,
        "iibench: insert rate with three secondary indexes",
        "documents inserted",
        "documents/s",
        &series,
    )
    .map_err(BenchError::Plot)
}

fn summary(sizes: Sizes, caches: &[CacheChoice; 3], runs: &[Run]) -> Summary {
    let headers = [
        "engine",
        "kind",
        "writes",
        "cache_mib",
        "docs",
        "docs_per_sec",
        "kb_written_per_1k",
        "kb_read_per_1k",
        "reads_per_1k",
        "cpu_us_per_1k",
        "cs_per_1k",
        "index_mib",
        "db_mib",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for run in runs {
        for i in &run.intervals {
            let a = &i.amplification;
            rows.push(vec![
                run.engine.name().to_string(),
                run.kind().name().to_string(),
                run.writes.name().to_string(),
                mib_number(run.cache.bytes),
                i.docs.to_string(),
                format!("{:.0}", i.docs_per_sec),
                format!("{:.1}", a.kb_written),
                format!("{:.1}", a.kb_read),
                format!("{:.2}", a.read_requests),
                format!("{:.0}", a.cpu_micros),
                format!("{:.1}", a.context_switches),
                i.index_bytes.map_or("-".to_string(), mib_number),
                mib_number(i.db_bytes),
            ]);
        }
    }
    Summary {
        scenario: "iibench".into(),
        headers,
        rows,
        notes: notes(sizes, caches, runs),
    }
}

fn notes(sizes: Sizes, caches: &[CacheChoice; 3], runs: &[Run]) -> Vec<String> {
    let mut notes = vec![format!(
        "{} documents per run (4 tables: documents + 3 indexes), {} per atomic batch; \
         each row is one interval of {} documents (a tenth of the run; the post's rows are per 200k); \
         costs are per 1,000 documents, CPU and context switches of the whole process.",
        sizes.docs(),
        sizes.batch_docs,
        sizes.interval_docs
    )];
    if sizes.docs() < NOISY_BELOW_DOCS {
        notes.push(format!(
            "At this scale an interval lasts milliseconds and its rate is mostly noise; \
             from {NOISY_BELOW_DOCS} documents (--scale={}) the rates settle.",
            NOISY_BELOW_DOCS as f64 / DOCS_DEFAULT
        ));
    }
    if sizes.batch_docs < BATCH_DOCS_MAX.min(sizes.interval_docs) {
        notes.push(format!(
            "--batch_size={}: a batch holds {} documents, not iibench's 1,000 \
             (MongoDB, the post's server, commits each document of an insert request \
             in a transaction of its own).",
            sizes.batch_docs, sizes.batch_docs
        ));
    } else if sizes.batch_docs < BATCH_DOCS_MAX {
        notes.push(format!(
            "At this scale a batch holds {} documents, not iibench's 1,000.",
            sizes.batch_docs
        ));
    }
    notes.push(format!(
        "Caches: {} (an eighth, a half of the B-tree indexes' expected final size, and 1.5 times the whole database).",
        caches
            .iter()
            .map(|c| format!("{} {}", c.label, mib(c.bytes)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for (engine, writes) in engines_of(runs)
        .into_iter()
        .flat_map(|e| [IndexWrites::Blind, IndexWrites::Rmw].map(|w| (e, w)))
    {
        let finals: Vec<String> = runs
            .iter()
            .filter(|r| r.engine == engine && r.writes == writes)
            .map(|r| {
                format!(
                    "{} {:.0} ({:.0})",
                    mib(r.cache.bytes),
                    r.final_rate(),
                    r.mean_rate()
                )
            })
            .collect();
        if finals.is_empty() {
            continue;
        }
        notes.push(format!(
            "Final docs/s ({engine}{}) by cache, last interval (whole run): {}.",
            writes_suffix(writes),
            finals.join(", ")
        ));
    }
    // The post's finding is about blind writes.
    let blind: Vec<Run> = runs
        .iter()
        .filter(|r| r.writes == IndexWrites::Blind)
        .cloned()
        .collect();
    notes.extend(verdict(&blind));
    notes.extend(rmw_cost(runs));
    notes
}

/// What reading before writing costs each engine at each cache: its
/// read-modify-write run's rate against its blind run's, and the reads
/// per document of each (the last three intervals).
fn rmw_cost(runs: &[Run]) -> Vec<String> {
    let mut lines = Vec::new();
    for engine in engines_of(runs) {
        let mut parts = Vec::new();
        for label in CACHE_LABELS {
            let find = |writes: IndexWrites| {
                runs.iter()
                    .find(|r| r.engine == engine && r.cache.label == label && r.writes == writes)
            };
            let (Some(blind), Some(rmw)) = (find(IndexWrites::Blind), find(IndexWrites::Rmw))
            else {
                continue;
            };
            let share = if blind.mean_rate() > 0.0 {
                rmw.mean_rate() / blind.mean_rate() * 100.0
            } else {
                0.0
            };
            parts.push(format!(
                "{label} {share:.0}% ({:.0} vs {:.0} docs/s, {:.1} vs {:.1} KB read and {:.0} vs {:.0} CPU us per 1k docs)",
                rmw.mean_rate(),
                blind.mean_rate(),
                rmw.late_mean(|i| i.amplification.kb_read),
                blind.late_mean(|i| i.amplification.kb_read),
                rmw.late_mean(|i| i.amplification.cpu_micros),
                blind.late_mean(|i| i.amplification.cpu_micros),
            ));
        }
        if !parts.is_empty() {
            lines.push(format!(
                "{}: read-modify-write (every key read before it is written, in a transaction) against blind writes, by cache: {}.",
                engine.name(),
                parts.join("; ")
            ));
        }
    }
    lines
}

/// How a kind's rate at the small cache compares with the large cache's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sensitivity {
    /// At least `DEGRADED_BELOW` of the large cache's rate.
    Insensitive,
    /// Slower, and reading clearly more per document: the cache is why.
    CacheBound,
    /// Slower, with no more reads: the machine (shared, two cores) or CPU,
    /// not the cache.
    SlowerWithoutReads,
}

/// The engines of `runs`, in the order they ran.
fn engines_of(runs: &[Run]) -> Vec<Engine> {
    let mut engines = Vec::new();
    for r in runs {
        if !engines.contains(&r.engine) {
            engines.push(r.engine);
        }
    }
    engines
}

/// Whether each engine slows down at the small cache against the large
/// one, in words, with the figures that show why. Rates are whole runs'
/// (documents over seconds), steadier than any one interval's; reads are
/// the last three intervals', where the indexes are largest.
fn verdict(runs: &[Run]) -> Vec<String> {
    let find = |engine: Engine, label: &str| {
        runs.iter()
            .find(|r| r.engine == engine && r.cache.label == label)
    };
    let mut lines = Vec::new();
    let mut sensitivity: Vec<(Engine, Sensitivity)> = Vec::new();
    for engine in engines_of(runs) {
        let (Some(small), Some(large)) = (find(engine, "small"), find(engine, "large")) else {
            continue;
        };
        let (rate_small, rate_large) = (small.mean_rate(), large.mean_rate());
        let ratio = if rate_large > 0.0 {
            rate_small / rate_large
        } else {
            0.0
        };
        let read_small = small.late_mean(|i| i.amplification.kb_read);
        let read_large = large.late_mean(|i| i.amplification.kb_read);
        let s = if ratio >= DEGRADED_BELOW {
            Sensitivity::Insensitive
        } else if read_small > 2.0 * read_large + READ_KB_PER_1K_MARGIN {
            Sensitivity::CacheBound
        } else {
            Sensitivity::SlowerWithoutReads
        };
        sensitivity.push((engine, s));
        lines.push(format!(
            "{}: at the small cache the run goes at {:.0}% of the large cache's rate \
             ({:.0} vs {:.0} docs/s over the run); in the last three intervals it reads {:.1} vs {:.1} KB \
             in {:.2} vs {:.2} requests and writes {:.1} vs {:.1} KB per 1k docs; indexes {} against a cache of {}.",
            engine.name(),
            ratio * 100.0,
            rate_small,
            rate_large,
            read_small,
            read_large,
            small.late_mean(|i| i.amplification.read_requests),
            large.late_mean(|i| i.amplification.read_requests),
            small.late_mean(|i| i.amplification.kb_written),
            large.late_mean(|i| i.amplification.kb_written),
            small
                .final_index_bytes()
                .map_or_else(|| format!("(database {})", mib(small.final_db_bytes())), mib),
            mib(small.cache.bytes),
        ));
    }
    let of_kind = |kind: TableKind| -> Vec<(Engine, Sensitivity)> {
        sensitivity
            .iter()
            .copied()
            .filter(|(e, _)| e.kind() == kind)
            .collect()
    };
    let (lsms, btrees) = (of_kind(TableKind::Lsm), of_kind(TableKind::Btree));
    let (&[(lsm_engine, lsm)], &[(btree_engine, btree)]) = (lsms.as_slice(), btrees.as_slice())
    else {
        // Several engines of a kind: a line per kind naming who degraded.
        for (kind, group) in [(TableKind::Btree, &btrees), (TableKind::Lsm, &lsms)] {
            if group.is_empty() {
                continue;
            }
            let named = |wanted: Sensitivity| -> String {
                let names: Vec<&str> = group
                    .iter()
                    .filter(|(_, s)| *s == wanted)
                    .map(|(e, _)| e.name())
                    .collect();
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            };
            lines.push(format!(
                "{} engines: cache-bound at the small cache (below {:.0}% of the large cache's rate, reading more): {}; slower without reading more: {}; not slower: {}. (The post: the B-trees degrade once their indexes outgrow the cache, the LSMs do not.)",
                kind.name(),
                DEGRADED_BELOW * 100.0,
                named(Sensitivity::CacheBound),
                named(Sensitivity::SlowerWithoutReads),
                named(Sensitivity::Insensitive)
            ));
        }
        return lines;
    };
    if let (Some(lsm_run), Some(btree_run)) =
        (find(lsm_engine, "large"), find(btree_engine, "large"))
    {
        let (lsm, btree) = (lsm_run, btree_run);
        let (lsm_rate, btree_rate) = (lsm.mean_rate(), btree.mean_rate());
        lines.push(format!(
            "With everything in the large cache the B-tree runs at {:.0} docs/s against the LSM's {:.0}, \
             for {:.0} against {:.0} CPU us per 1k docs in the last three intervals \
             ({}; in the post the B-tree was the faster and cheaper while its indexes fit).",
            btree_rate,
            lsm_rate,
            btree.late_mean(|i| i.amplification.cpu_micros),
            lsm.late_mean(|i| i.amplification.cpu_micros),
            if btree_rate > lsm_rate {
                "the B-tree is faster here too"
            } else {
                "the LSM is faster here"
            }
        ));
    }
    let below = DEGRADED_BELOW * 100.0;
    {
        use Sensitivity::{CacheBound, Insensitive, SlowerWithoutReads};
        lines.push(match (btree, lsm) {
            (CacheBound, Insensitive) => format!(
                "As in the post: the B-tree degrades once its indexes outgrow the cache \
                 (each index insert reads its leaf first), the LSM does not (blind writes). \
                 (Degraded: below {below:.0}% of the large cache's rate, with more reads.)"
            ),
            (CacheBound, SlowerWithoutReads) => format!(
                "As in the post, the B-tree degrades once its indexes outgrow the cache (each index insert reads its leaf first). \
                 The LSM is below {below:.0}% too, but it reads no more at the small cache than at the large one: \
                 its slowdown is the machine's noise, not the cache (blind writes)."
            ),
            (CacheBound, CacheBound) => format!(
                "Both kinds fall below {below:.0}% at the small cache, reading more: \
                 the LSM is not insensitive to the cache here, unlike the post."
            ),
            (Insensitive | SlowerWithoutReads, _) => format!(
                "Unlike the post, the B-tree does not degrade at the small cache \
                 (not below {below:.0}% of its large-cache rate with more reads)."
            ),
        });
    }
    lines
}

/// Reads per 1,000 documents that a kind may add at the small cache
/// before its slowdown counts as the cache's doing (beyond doubling).
const READ_KB_PER_1K_MARGIN: f64 = 10.0;

/// Runs of fewer documents have intervals too short to time well.
const NOISY_BELOW_DOCS: u64 = 200_000;

/// A kind whose rate at the small cache is below this share of its rate at
/// the large cache has degraded.
const DEGRADED_BELOW: f64 = 0.8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_whole_batches_and_ten_intervals() {
        // Goal: every scale gives ten equal intervals of whole batches, 1,000
        // documents per batch once an interval holds that many.
        for scale in [0.0001, 0.005, 0.03, 0.5, 1.0, 3.3, 1e6] {
            let s = Sizes::of(scale, None);
            assert!(s.interval_docs >= INTERVAL_DOCS_MIN, "{scale}");
            assert_eq!(s.interval_docs % s.batch_docs, 0, "{scale}");
            assert_eq!(s.docs(), s.interval_docs * INTERVALS);
            if s.interval_docs >= BATCH_DOCS_MAX {
                assert_eq!(s.batch_docs, BATCH_DOCS_MAX, "{scale}");
            }
        }
        assert_eq!(Sizes::of(1.0, None).docs(), DOCS_DEFAULT as u64);
        let one = Sizes::of(1.0, Some(1));
        assert_eq!((one.batch_docs, one.docs()), (1, DOCS_DEFAULT as u64));
    }

    #[test]
    fn index_keys_end_with_the_primary_key_and_sort_by_attribute() {
        // Goal: the key layout the module documents, which the tests and
        // readers of a kept database rely on.
        let doc = Document {
            price: 1234,
            customer: 56,
            register: 7,
        };
        let id = KeyFormat::new(ID_DIGITS).key(42);
        let mut keys: [Vec<u8>; 3] = Default::default();
        index_keys(&doc, &id, &mut keys);
        let id = "0000000000000042";
        assert_eq!(keys[0], format!("00001234000056{id}").as_bytes());
        assert_eq!(keys[1], format!("00005600001234{id}").as_bytes());
        assert_eq!(keys[2], format!("000700001234{id}").as_bytes());
    }

    /// A run of `engine` at cache `label` that took `seconds` for 10,000
    /// documents, reading `kb_read` KB per 1,000 documents.
    fn run_of(engine: Engine, label: &'static str, seconds: f64, kb_read: f64) -> Run {
        Run {
            engine,
            cache: CacheChoice {
                label,
                bytes: 1 << 20,
            },
            writes: IndexWrites::Blind,
            intervals: (1..=10)
                .map(|i| IntervalFigures {
                    docs: i * 1000,
                    docs_per_sec: 10_000.0 / seconds,
                    amplification: Amplification {
                        kb_read,
                        ..Amplification::default()
                    },
                    index_bytes: Some(i * 100),
                    db_bytes: i * 300,
                })
                .collect(),
            seconds,
            primary_bytes: None,
        }
    }

    #[test]
    fn runs_survive_their_records() {
        // Goal: what a comparison's child reports, its parent reads back.
        let runs = vec![
            run_of(Engine::SpinneyLsm, "small", 1.0, 3.5),
            Run {
                writes: IndexWrites::Rmw,
                ..run_of(Engine::WiredtigerBtree, "large", 2.0, 0.0)
            },
        ];
        let lines: Vec<String> = runs.iter().flat_map(Run::encode).collect();
        assert_eq!(lines.len(), 22);
        assert_eq!(Run::decode(&lines), Ok(runs));
        assert!(Run::decode(&lines[..5]).is_err(), "cut short");
    }

    #[test]
    fn verdict_blames_the_cache_only_when_reads_grow() {
        // Goal: the post's finding is stated when the B-tree is slower at
        // the small cache and reads more there; an LSM that is slower
        // without reading more is called noise, not cache-bound; a B-tree
        // that keeps its rate does not confirm the post.
        let last = |runs: &[Run]| verdict(runs).last().cloned().unwrap_or_default();
        let runs = [
            run_of(Engine::SpinneyLsm, "small", 1.0, 300.0),
            run_of(Engine::SpinneyLsm, "large", 1.0, 300.0),
            run_of(Engine::SpinneyBtree, "small", 4.0, 20_000.0),
            run_of(Engine::SpinneyBtree, "large", 1.0, 0.0),
        ];
        assert!(last(&runs).starts_with("As in the post: the B-tree degrades"));
        let runs = [
            run_of(Engine::SpinneyLsm, "small", 1.5, 300.0),
            run_of(Engine::SpinneyLsm, "large", 1.0, 300.0),
            run_of(Engine::SpinneyBtree, "small", 4.0, 20_000.0),
            run_of(Engine::SpinneyBtree, "large", 1.0, 0.0),
        ];
        assert!(last(&runs).contains("machine's noise"), "{}", last(&runs));
        let runs = [
            run_of(Engine::SpinneyLsm, "small", 1.0, 300.0),
            run_of(Engine::SpinneyLsm, "large", 1.0, 300.0),
            run_of(Engine::SpinneyBtree, "small", 1.1, 5.0),
            run_of(Engine::SpinneyBtree, "large", 1.0, 0.0),
        ];
        assert!(
            last(&runs).starts_with("Unlike the post"),
            "{}",
            last(&runs)
        );
        assert!(verdict(&runs[..1]).is_empty());
    }

    #[test]
    fn rmw_cost_sets_each_engines_rmw_runs_against_its_blind_ones() {
        // Goal: the note says, per engine and cache, the read-modify-write
        // run's share of the blind run's rate; engines or caches run one
        // way only get no line or no part.
        let rmw = |r: Run| Run {
            writes: IndexWrites::Rmw,
            ..r
        };
        let runs = [
            run_of(Engine::SpinneyLsm, "small", 1.0, 0.0),
            rmw(run_of(Engine::SpinneyLsm, "small", 4.0, 80.0)),
            run_of(Engine::SpinneyLsm, "large", 1.0, 0.0),
            run_of(Engine::SpinneyBtree, "small", 1.0, 0.0),
        ];
        let lines = rmw_cost(&runs);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("spinney-lsm: read-modify-write"));
        assert!(lines[0].contains("small 25% (2500 vs 10000 docs/s, 80.0 vs 0.0 KB read"));
        assert!(!lines[0].contains("large"));
        // The post's verdict weighs blind runs only.
        let notes = notes(Sizes::of(1.0, None), &caches(1000, 100), &runs);
        assert!(notes
            .iter()
            .any(|n| n.starts_with("Final docs/s (spinney-lsm rmw)")));
    }

    #[test]
    fn caches_grow_from_small_to_large() {
        // Goal: the three caches are distinct and ordered at every scale,
        // never below the floor.
        for docs in [1000, 300_000, 10_000_000] {
            let c = caches(docs, 100);
            assert!(c[0].bytes >= CACHE_BYTES_MIN);
            assert!(
                c[0].bytes <= c[1].bytes && c[1].bytes <= c[2].bytes,
                "{docs}"
            );
        }
        assert_eq!(mib_number(3 << 19), "1.5");
        assert_eq!(mib_number(64 << 20), "64");
        assert_eq!(mib_number(256 << 10), "0.25");
    }
}
