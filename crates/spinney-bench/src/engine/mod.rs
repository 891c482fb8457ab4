//! The engines the lab measures: spinney's two kinds, and the engines a user
//! would otherwise pick (docs/peers.md), each behind a cargo feature of its
//! own so that the default build needs none of their libraries. Which
//! engines there are, by name, is `lineup::Engine`; here is what runs them.
//!
//! The benchmarks see an engine through two traits. A `Store` is one open
//! database holding the run's tables; it runs the operations (flush,
//! compactions, checkpoint), prints its statistics and is closed at the
//! end. A `Session` is one thread's handle on it: writes in batches, point
//! reads, seeks with steps, and scans. Engines whose handles are not shared
//! between threads (WiredTiger's sessions, LMDB's read transactions) keep
//! them in the session; for the others a session is a borrowed reference.
//!
//! Every engine is given the same cache budget, bloom bits per key,
//! compression, durability and background threads from the `Config`, and
//! otherwise keeps its own defaults; each adapter's header names what it
//! sets and how its durability maps onto `--sync` and `--disable_wal`. An
//! operation an engine lacks is reported as not supported, never faked.
//!
//! Thread-safety: a `Store` is shared by all threads of a benchmark; a
//! `Session` belongs to one thread.

use std::fmt;
use std::path::Path;

use crate::{BenchError, Benchmark, Config, Engine, ShapeCounts};

mod spinney_store;

#[cfg(test)]
mod conformance;

#[cfg(feature = "fjall")]
mod fjall_store;
#[cfg(feature = "leveldb")]
mod leveldb;
#[cfg(any(feature = "leveldb", feature = "rocksdb", feature = "rocksdb-current"))]
mod leveldb_shape;
#[cfg(any(feature = "lmdb", feature = "lmdb-current"))]
mod lmdb;
#[cfg(feature = "redb")]
mod redb_store;
#[cfg(any(feature = "rocksdb", feature = "rocksdb-current"))]
mod rocksdb;
#[cfg(feature = "wiredtiger")]
mod wiredtiger;

/// An engine's failure during a benchmark.
#[derive(Debug)]
#[non_exhaustive]
pub enum EngineError {
    /// spinney's own error, typed.
    Spinney(spinney::Error),
    /// A peer's error, as its library words it.
    Peer {
        /// Which engine.
        engine: Engine,
        /// Its message (and code, where it has one).
        message: String,
    },
    /// A read-modify-write of new keys found one there.
    Present {
        /// The table's index in the store.
        table: usize,
        key: Vec<u8>,
    },
    /// The engine's background work did not finish (`bench::settle`).
    Settle(String),
}

impl EngineError {
    /// A peer's error.
    pub fn peer(engine: Engine, message: impl Into<String>) -> EngineError {
        EngineError::Peer {
            engine,
            message: message.into(),
        }
    }
}

impl From<spinney::Error> for EngineError {
    fn from(e: spinney::Error) -> EngineError {
        EngineError::Spinney(e)
    }
}

/// An engine error while setting up: a refused option is a usage error.
pub(crate) fn setup_error(context: &str, e: spinney::Error) -> BenchError {
    match e {
        spinney::Error::InvalidArgument(m) => BenchError::Config(m),
        error => BenchError::Engine {
            context: context.to_string(),
            error: error.into(),
        },
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Spinney(e) => write!(f, "{e}"),
            EngineError::Peer { engine, message } => write!(f, "{engine}: {message}"),
            EngineError::Present { table, key } => write!(
                f,
                "key \"{}\" of table {table} is there already, where a new key was to go",
                key.escape_ascii()
            ),
            EngineError::Settle(why) => write!(f, "background work did not finish: {why}"),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineError::Spinney(e) => Some(e),
            EngineError::Peer { .. } | EngineError::Present { .. } | EngineError::Settle(_) => None,
        }
    }
}

/// The result of an engine call.
pub(crate) type EngineResult<T> = Result<T, EngineError>;

/// One table a run opens: its name, and what differs from the
/// configuration's options for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableSpec {
    pub name: String,
    /// Bloom bits per key of its filters, when they differ from
    /// `Config::bloom_bits` (0: no filter).
    pub bloom_bits: Option<u32>,
    /// Bytes of its memtable, when they differ from
    /// `Config::write_buffer_size`.
    pub write_buffer_bytes: Option<usize>,
    /// Hold the table's LSM shape still (the lsm-shape scenario): no
    /// compaction runs unless asked for (`Store::operation`), L0 is never
    /// due for one, and levels are sized statically (so that compact0
    /// moves L0 into L1 and compact1 L1 into L2). A memtable that fills is
    /// still flushed into an L0 run. spinney does this for the whole
    /// database (no background threads, no autowork: nothing but the
    /// writer flushes a full memtable); RocksDB per column family
    /// (`disable_auto_compactions`, L0 triggers at spinney's largest,
    /// `level_compaction_dynamic_level_bytes` off). Only `open` of the two
    /// engines that can takes it (`holds_shape`).
    pub hold_shape: bool,
}

impl TableSpec {
    /// A table with the configuration's options.
    pub fn named(name: &str) -> TableSpec {
        TableSpec {
            name: name.to_string(),
            bloom_bits: None,
            write_buffer_bytes: None,
            hold_shape: false,
        }
    }
}

/// An LSM table's shape: the trees a read may have to search (seed 001's
/// "LSM tree shape"), as the engine reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LsmShape {
    /// Entries in the active memtable.
    pub memtable_entries: u64,
    /// Bytes of the active memtable, as the engine measures them (arena
    /// or skiplist bytes: not comparable between engines).
    pub memtable_bytes: u64,
    /// Frozen memtables waiting for flush.
    pub immutable_memtables: usize,
    /// Sorted runs in L0 (RocksDB: L0 files, one per flush).
    pub l0_runs: usize,
    /// SSTs of L1, L2, ... in order (index 0 is L1), empty levels included
    /// up to the last level the engine has.
    pub level_files: Vec<usize>,
}

impl LsmShape {
    /// Trees a point read may search: the active memtable (even empty),
    /// the immutable ones, every L0 run and every non-empty deeper level.
    pub fn trees(&self) -> usize {
        1 + self.immutable_memtables
            + self.l0_runs
            + self.level_files.iter().filter(|&&f| f > 0).count()
    }
}

/// One thread's read counters over a stretch of reads through one
/// session, in the lab's columns; `None` where the engine keeps no counter
/// the column can be read from. What each column is for each engine:
/// docs/bench.md, "lsm-shape".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ReadCounts {
    /// Memtables, L0 runs and level files searched.
    pub trees_searched: Option<u64>,
    /// Bloom filters consulted.
    pub bloom_checks: Option<u64>,
    /// Bloom filters that ruled a file out.
    pub bloom_negatives: Option<u64>,
    /// Key comparisons.
    pub keys_compared: Option<u64>,
    /// Blocks found in the block cache.
    pub blocks_from_cache: Option<u64>,
    /// Blocks read from their file.
    pub blocks_from_storage: Option<u64>,
}

/// The engine's own file I/O counters, where it keeps them (spinney does);
/// other engines are measured from the process's counters instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct IoCounters {
    pub bytes_written: u64,
    /// Of `bytes_written`, those copied into a memory map (spinney's mapped
    /// log): no write call carried them, so the process's `wchar` misses
    /// them.
    pub bytes_mapped: u64,
    pub bytes_read: u64,
    pub read_requests: u64,
    pub write_requests: u64,
    pub syncs: u64,
}

impl IoCounters {
    /// spinney's counters of `db`.
    pub fn of(db: &spinney::Db) -> IoCounters {
        let io = db.stats().io;
        IoCounters {
            bytes_written: io.bytes_written,
            bytes_mapped: io.bytes_mapped,
            bytes_read: io.bytes_read,
            read_requests: io.read_requests,
            write_requests: io.write_requests,
            syncs: io.syncs,
        }
    }
}

/// What a seek with steps saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Seek {
    /// The seek landed on the key it was given.
    pub found: bool,
    /// Bytes of keys and values of the entries stepped over.
    pub bytes: u64,
}

/// One open database of an engine, holding the run's tables (numbered in
/// the order they were given to `open`).
pub(crate) trait Store: Send + Sync {
    /// A handle for one thread.
    fn session(&self) -> EngineResult<Box<dyn Session + '_>>;

    /// Runs an operation benchmark (flush, compact, compact0, compact1,
    /// compactall, waitforcompaction, checkpoint) on every table. `false`
    /// when the engine has no such operation.
    fn operation(&self, op: Benchmark) -> EngineResult<bool>;

    /// The text of a printout benchmark (stats, shape) of table 0; `None`
    /// when the engine has none.
    fn printout(&self, what: Benchmark) -> EngineResult<Option<String>>;

    /// The shape of table 0 now, for the time series (zeros where the
    /// engine does not say).
    fn shape_counts(&self) -> ShapeCounts {
        ShapeCounts::default()
    }

    /// Bytes on disk of the tables `tables`, where the engine keeps them
    /// apart (`None` where it does not say).
    fn table_bytes(&self, tables: &[usize]) -> Option<u64> {
        let _ = tables;
        None
    }

    /// The engine's own I/O counters, if it keeps them.
    fn io_counters(&self) -> Option<IoCounters> {
        None
    }

    /// Waits until the engine's background work (flushes, compactions)
    /// is done, where the engine can say when it is; returns at once where
    /// it cannot tell. Either way the lab then watches its files
    /// (`bench::settle`).
    fn wait_for_background(&self) -> EngineResult<()> {
        Ok(())
    }

    /// False for an engine whose writes reach its files through a memory
    /// map rather than write calls (LMDB with `MDB_WRITEMAP`), so that the
    /// process's count of bytes passed to write calls misses them and its
    /// w-amp is not measured. spinney's mapped log counts its own
    /// (`IoCounters::bytes_mapped`).
    fn write_calls_count_writes(&self) -> bool {
        true
    }

    /// True when reads fill spinney's thread-local `ReadContext`.
    fn counts_reads(&self) -> bool {
        false
    }

    /// True when `Session::write` takes range deletes (`deleterange`).
    fn deletes_ranges(&self) -> bool {
        false
    }

    /// The LSM shape of table `table` now; `None` when the engine does not
    /// report one (a B-tree, or an LSM engine the lab cannot see into).
    fn lsm_shape(&self, table: usize) -> EngineResult<Option<LsmShape>> {
        let _ = table;
        Ok(None)
    }

    /// Closes the database, waiting for its work to end.
    fn close(self: Box<Self>) -> EngineResult<()>;
}

/// One thread's handle on a `Store`.
pub(crate) trait Session {
    /// Applies the batch as one atomic commit with the run's durability.
    fn write(&mut self, batch: &Batch) -> EngineResult<()>;

    /// Reads every key the batch puts, in its order, and commits the batch
    /// only if none is there: a read-modify-write of new keys (iibench's
    /// `--iibench_writes=rmw`). An engine with transactions does it in one
    /// (spinney); the others read, then write the batch, which costs the
    /// same reads with one writer.
    fn write_after_reads(&mut self, batch: &Batch) -> EngineResult<()> {
        for op in batch.ops() {
            if let Op::Put { table, key, .. } = op {
                if self.get(table, key)?.is_some() {
                    return Err(EngineError::Present {
                        table,
                        key: key.to_vec(),
                    });
                }
            }
        }
        self.write(batch)
    }

    /// Reads `key` of `table` at a fresh view; the value's length if found.
    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>>;

    /// Seeks to the first key at or after `key` in a fresh view (as
    /// db_bench makes a new iterator per seek), then reads up to `steps`
    /// entries from there, stepping forward after each.
    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek>;

    /// Reads `table` in key order (or reverse), calling `visit` with the
    /// bytes of each entry's key and value until it returns false.
    fn scan(
        &mut self,
        table: usize,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> EngineResult<()>;

    /// Starts counting the reads this session makes in this thread, from
    /// zero, until `take_read_counts`; `false` when the engine keeps no
    /// read counters (nothing is counted then). Counting is off otherwise,
    /// and costs the reads nothing then.
    fn start_read_counts(&mut self) -> EngineResult<bool> {
        Ok(false)
    }

    /// Stops counting and returns what was counted since
    /// `start_read_counts`; `None` when nothing was being counted.
    fn take_read_counts(&mut self) -> EngineResult<Option<ReadCounts>> {
        Ok(None)
    }
}

/// A write of a batch: a put or a delete on one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op<'a> {
    Put {
        table: usize,
        key: &'a [u8],
        value: &'a [u8],
    },
    Delete {
        table: usize,
        key: &'a [u8],
    },
    /// Every key in `[start, end)`.
    DeleteRange {
        table: usize,
        start: &'a [u8],
        end: &'a [u8],
    },
}

/// The writes of one commit, in one buffer so that a batch costs no
/// allocation once it has grown (every engine copies it into its own batch
/// or transaction).
#[derive(Debug, Default)]
pub(crate) struct Batch {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    table: usize,
    key_end: usize,
    /// None for a delete.
    value_end: Option<usize>,
    /// A range delete: the key is its start, the value its end.
    range: bool,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
    }

    pub fn put(&mut self, table: usize, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.entries.push(Entry {
            table,
            key_end,
            value_end: Some(self.bytes.len()),
            range: false,
        });
    }

    /// Deletes every key of `table` in `[start, end)`.
    pub fn delete_range(&mut self, table: usize, start: &[u8], end: &[u8]) {
        self.put(table, start, end);
        if let Some(e) = self.entries.last_mut() {
            e.range = true;
        }
    }

    pub fn delete(&mut self, table: usize, key: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.entries.push(Entry {
            table,
            key_end: self.bytes.len(),
            value_end: None,
            range: false,
        });
    }

    /// The writes, in the order they were added.
    pub fn ops(&self) -> impl Iterator<Item = Op<'_>> + '_ {
        let mut start = 0;
        self.entries.iter().map(move |e| {
            let key = self.bytes.get(start..e.key_end).unwrap_or_default();
            let op = match e.value_end {
                Some(end) => {
                    let value = self.bytes.get(e.key_end..end).unwrap_or_default();
                    start = end;
                    if e.range {
                        Op::DeleteRange {
                            table: e.table,
                            start: key,
                            end: value,
                        }
                    } else {
                        Op::Put {
                            table: e.table,
                            key,
                            value,
                        }
                    }
                }
                None => {
                    start = e.key_end;
                    Op::Delete {
                        table: e.table,
                        key,
                    }
                }
            };
            op
        })
    }
}

/// Opens (creating if need be) `engine`'s database in `dir` with `tables`.
/// A configuration the engine cannot honour is a `BenchError::Config`
/// naming the option.
pub(crate) fn open(
    engine: Engine,
    config: &Config,
    dir: &Path,
    tables: &[TableSpec],
) -> Result<Box<dyn Store>, BenchError> {
    if !engine.holds_shape() {
        if let Some(spec) = tables
            .iter()
            .find(|t| t.hold_shape || t.write_buffer_bytes.is_some())
        {
            return Err(BenchError::Config(format!(
                "the lab cannot hold the LSM shape of {engine}'s table '{}' still or size its memtable (only {} and {} take those options)",
                spec.name,
                Engine::SpinneyLsm,
                Engine::Rocksdb
            )));
        }
    }
    match engine {
        Engine::SpinneyLsm
        | Engine::SpinneyBtree
        | Engine::SpinneyLsmMapped
        | Engine::SpinneyBtreeMapped
        | Engine::SpinneyLsmMmap
        | Engine::SpinneyBtreeMmap => {
            spinney_store::SpinneyStore::open(engine, config, dir, tables)
                .map(|s| Box::new(s) as Box<dyn Store>)
        }
        #[cfg(feature = "rocksdb")]
        Engine::Rocksdb => rocksdb::open(config, dir, tables),
        #[cfg(feature = "rocksdb-current")]
        Engine::RocksdbCurrent => rocksdb::open(config, dir, tables),
        #[cfg(feature = "wiredtiger")]
        Engine::WiredtigerBtree | Engine::WiredtigerLsm => {
            wiredtiger::open(engine, config, dir, tables)
        }
        #[cfg(feature = "leveldb")]
        Engine::Leveldb => leveldb::open(config, dir, tables),
        #[cfg(feature = "lmdb")]
        Engine::Lmdb => lmdb::open(config, dir, tables),
        #[cfg(feature = "lmdb-current")]
        Engine::LmdbCurrent => lmdb::open(config, dir, tables),
        #[cfg(feature = "fjall")]
        Engine::Fjall => fjall_store::open(config, dir, tables),
        #[cfg(feature = "redb")]
        Engine::Redb => redb_store::open(config, dir, tables),
        #[allow(
            unreachable_patterns,
            reason = "reachable only in builds without some peer's feature"
        )]
        other => Err(BenchError::Config(other.not_built())),
    }
}

/// The engine's version, as its library reports it (the crate's, for the
/// Rust engines).
pub(crate) fn version(engine: Engine) -> String {
    match engine {
        Engine::SpinneyLsm
        | Engine::SpinneyBtree
        | Engine::SpinneyLsmMapped
        | Engine::SpinneyBtreeMapped
        | Engine::SpinneyLsmMmap
        | Engine::SpinneyBtreeMmap => env!("CARGO_PKG_VERSION").to_string(),
        #[cfg(feature = "rocksdb")]
        Engine::Rocksdb => rocksdb::version(),
        #[cfg(feature = "rocksdb-current")]
        Engine::RocksdbCurrent => rocksdb::version(),
        #[cfg(feature = "wiredtiger")]
        Engine::WiredtigerBtree | Engine::WiredtigerLsm => wiredtiger::version(),
        #[cfg(feature = "leveldb")]
        Engine::Leveldb => leveldb::version(),
        #[cfg(feature = "lmdb")]
        Engine::Lmdb => lmdb::version(),
        #[cfg(feature = "lmdb-current")]
        Engine::LmdbCurrent => lmdb::version(),
        #[cfg(feature = "fjall")]
        Engine::Fjall => fjall_store::version(),
        #[cfg(feature = "redb")]
        Engine::Redb => redb_store::version(),
        #[allow(
            unreachable_patterns,
            reason = "reachable only in builds without some peer's feature"
        )]
        _ => "(not built)".to_string(),
    }
}

/// One line naming what a peer's adapter sets for `config` (the header's
/// `Table:` line).
pub(crate) fn describe(config: &Config) -> String {
    match config.engine {
        #[cfg(feature = "rocksdb")]
        Engine::Rocksdb => rocksdb::describe(config),
        #[cfg(feature = "rocksdb-current")]
        Engine::RocksdbCurrent => rocksdb::describe(config),
        #[cfg(feature = "wiredtiger")]
        Engine::WiredtigerBtree | Engine::WiredtigerLsm => wiredtiger::describe(config),
        #[cfg(feature = "leveldb")]
        Engine::Leveldb => leveldb::describe(config),
        #[cfg(feature = "lmdb")]
        Engine::Lmdb => lmdb::describe(config),
        #[cfg(feature = "lmdb-current")]
        Engine::LmdbCurrent => lmdb::describe(config),
        #[cfg(feature = "fjall")]
        Engine::Fjall => fjall_store::describe(config),
        #[cfg(feature = "redb")]
        Engine::Redb => redb_store::describe(config),
        other => format!("{other} with the flags' options"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_hands_back_its_writes_in_order() {
        // Goal: the flat buffer keeps each key and value apart, deletes
        // included, and a cleared batch starts empty.
        let mut b = Batch::new();
        b.put(0, b"k1", b"value-one");
        b.delete(2, b"gone");
        b.put(1, b"", b"");
        b.put(0, b"k3", b"v3");
        b.delete_range(1, b"a", b"c");
        let ops: Vec<Op<'_>> = b.ops().collect();
        assert_eq!(
            ops,
            [
                Op::Put {
                    table: 0,
                    key: b"k1",
                    value: b"value-one"
                },
                Op::Delete {
                    table: 2,
                    key: b"gone"
                },
                Op::Put {
                    table: 1,
                    key: b"",
                    value: b""
                },
                Op::Put {
                    table: 0,
                    key: b"k3",
                    value: b"v3"
                },
                Op::DeleteRange {
                    table: 1,
                    start: b"a",
                    end: b"c"
                },
            ]
        );
        b.clear();
        assert_eq!(b.ops().count(), 0);
    }
}
