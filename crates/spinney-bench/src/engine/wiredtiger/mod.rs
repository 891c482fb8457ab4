//! The WiredTiger adapter: `wiredtiger-btree` (row-store B-tree tables) and
//! `wiredtiger-lsm` (LSM tables with bloom filters), on Debian's
//! libwiredtiger 3.2.1 through the C shim `shim.c`, whose plain
//! functions are declared by hand in `ffi.rs`.
//!
//! What the adapter sets; everything else is WiredTiger's default, named
//! here so that a figure says what ran.
//! - Connection (`wiredtiger_open`): `create`, `cache_size` from
//!   `--cache_size` (WiredTiger takes 1 MB to 10 TB), `log=(enabled=true)`
//!   (defaults kept: log files archived after checkpoints, preallocated,
//!   not compressed; 100 MB files for the LSM, `--checkpoint_log_bytes`
//!   for the B-tree, below; the directory holds three from the start, one
//!   in use and two preallocated, and the lab's database size counts
//!   them), `transaction_sync` from the durability
//!   (below), `eviction=(threads_min=1,threads_max=N)` with N =
//!   `--background_threads` clamped to WiredTiger's 1..=20 (0 becomes 1;
//!   WiredTiger's default is 1..=8; application threads also evict when the
//!   cache passes its default triggers, 95% full or 20% dirty),
//!   `statistics=(fast)` for the stats, shape and merge waits, and
//!   `session_max` = max(100, threads + 64), as WiredTiger's own threads
//!   take sessions too (the LSM manager opens 20). A B-tree checkpoints
//!   every `--checkpoint_log_bytes` of log (64 MiB unless set, spinney's
//!   `Options::checkpoint_wal_bytes` default; spinney's B-tree runs with
//!   the same), `checkpoint=(log_size=N)` with `log=(file_max=N)`:
//!   WiredTiger checkpoints no more often than once a log file, so its log
//!   files are made as large (three of them from the start, one in use and
//!   two preallocated). Until 2026-11-29 it kept WiredTiger's default of
//!   no periodic checkpoint, which left its tree to eviction and to close
//!   and kept every log file of a run. The LSM keeps that default. Kept:
//!   `checkpoint_sync=true`, eviction targets 80% full and 5% dirty,
//!   `mmap=true`.
//! - LSM tables also set `lsm_manager=(worker_thread_max=N+1)` with N =
//!   `--background_threads`, clamped to WiredTiger's 3..=20: the count
//!   includes the manager thread, which only schedules work, so 0, 1 and 2
//!   all become 2 workers (one for switches and flushes, one for flushes,
//!   bloom filters and merges); `lsm_manager=(merge=true)` is the default.
//! - Tables: `table:NAME` with `key_format=u,value_format=u` (raw bytes,
//!   compared with memcmp). A B-tree keeps WiredTiger's page defaults:
//!   `allocation_size=4KB`, `leaf_page_max=32KB`, `internal_page_max=4KB`,
//!   `memory_page_max=5MB` (at most a tenth of the cache), `split_pct=90`,
//!   `prefix_compression=false`, `checksum=uncompressed`; `--page_size` is
//!   not applied. An LSM table sets `type=lsm,lsm=(chunk_size=W,bloom=B,
//!   bloom_bit_count=K)`: W = `--write_buffer_size` (WiredTiger takes 512 KB
//!   to 500 MB), K = the table's bloom bits (2 to 1000; 0 turns bloom
//!   filters off). Kept: `bloom_hash_count=8`, `bloom_oldest=false` (no
//!   filter on the oldest chunk), `merge_max=15`, `merge_min=0` (half of
//!   merge_max), `chunk_max=5GB`, `auto_throttle=true`,
//!   `chunk_count_limit=0`; WiredTiger builds a chunk's filter after the
//!   chunk is flushed and when merges write a new chunk. Compression: only
//!   `none` (Debian builds WiredTiger with the snappy and zlib extensions
//!   only; lz4 and zstd are refused). An existing table keeps the settings
//!   it was created with: WiredTiger stores them in its metadata.
//! - Sessions: `isolation=snapshot` (WiredTiger's default is
//!   read-committed, under which two transactions writing the same key do
//!   not conflict and can interleave; see `SESSION_CONFIG`).
//!
//! Writes: a batch of one entry is one auto-commit write (WiredTiger itself
//! retries it while it conflicts with another transaction); a larger batch
//! is one explicit transaction across its tables, retried while WiredTiger
//! rolls it back for a conflict (`ROLLBACK_RETRY_WAIT_MAX`). Puts overwrite
//! (cursors keep `overwrite=true`), so deleting a missing key is no error.
//! WiredTiger refuses empty keys: reads of one find nothing, a put of one is
//! an error. A read (`get`, `seek`, `scan`) resets its cursor when done, so
//! that it pins no snapshot or page and the next read sees the latest data.
//!
//! Durability, from WiredTiger's "Commit-level durability" page
//! (src/docs/tune-durability.dox) and its source (conn_log.c
//! `__logmgr_sync_cfg`, log.c `__log_write_internal`, the log server
//! thread):
//! - `Normal` (the lab's default: written to the OS at each commit, not
//!   synced), B-tree: `transaction_sync=(enabled=true,method=none)`. A commit
//!   returns once its log records have been written with write(2) (WT's
//!   WT_LOG_FLUSH: it waits for the log's write LSN to pass its records); no
//!   sync. Survives a crash of the process, not of the machine. The LSM
//!   runs as `Off` instead: with `method=none` WiredTiger 3.2.1 deadlocks
//!   a fast load into an LSM tree (see `effective_durability`).
//! - `Full` (`--sync=1`): `transaction_sync=(enabled=true,method=fsync)`. A
//!   commit returns once the log is fsync'ed past its records; concurrent
//!   commits share a sync (WiredTiger's group commit).
//! - `Off` (`--disable_wal=1`): `transaction_sync=(enabled=false)`. The log
//!   is kept (every table is logged), but a commit only copies its records
//!   into WiredTiger's in-memory log buffer (a 256 KB slot, switched once it
//!   holds 128 KB) and returns without writing them. They reach the OS when
//!   the slot fills, when a checkpoint or another sync forces the log out,
//!   or when the log server thread forces out buffered writes; it does so
//!   each time it wakes, every 50 ms while commits arrive and up to 1 s when
//!   idle. They are synced only at log file switches, checkpoints and close.
//!   A crash of the process may lose the commits of the last 50 ms (of the
//!   last second, after an idle spell).
//!
//! strace of fillseq, 2,000 commits of one entry on the B-tree: `Normal`
//! made 2,079 pwrite calls and 80 syncs (the syncs of creating the files,
//! of the checkpoint and of close), `Full` 2,077 pwrites and 2,092 syncs,
//! `Off` 70 pwrites and 79 syncs; and `Off` at 100 commits a second wrote
//! the log every 50 ms.
//!
//! In every mode a checkpoint syncs the log and the data files, and the
//! log file left by a switch is synced before it is closed.
//!
//! Operations (`Store::operation`):
//! - `checkpoint` and `flush` run `WT_SESSION::checkpoint` (all tables):
//!   it writes every dirty page and syncs the files, which is what makes
//!   in-memory data durable without the log. For an LSM tree the checkpoint
//!   includes the chunks not yet on disk, the in-memory chunk among them
//!   (lsm_tree.c `__wt_lsm_tree_worker`), so their data reaches disk; but
//!   the in-memory chunk is not switched: it stays the chunk that takes
//!   writes, and it becomes an on-disk chunk only when full or at compact.
//! - `compact` and `compactall` run `WT_SESSION::compact` on every table
//!   (timeout 1200 s, its default). On a B-tree it moves blocks from the
//!   end of the file into free space nearer its start and truncates the
//!   file; it does nothing unless at least 1 MB and 10% of the file can be
//!   won (block_compact.c). On an LSM tree it forces the in-memory chunk to
//!   disk, then waits while merges run with WiredTiger's merge
//!   aggressiveness raised, until a merge finds nothing to do (lsm_tree.c
//!   `__wt_lsm_compact`). A tree of one chunk is left as it is, and one
//!   with fewer on-disk chunks than merge_min (7) may be too: observed,
//!   the first merge attempt runs before the aggressiveness is raised,
//!   finds nothing, and compact takes that as done.
//! - `compact0` and `compact1` are not supported: WiredTiger's LSM has
//!   merge generations, not levels, and no call to merge one of them.
//! - `waitforcompaction` (LSM only; not supported on a B-tree): WiredTiger
//!   has no "merges pending" signal, so the adapter waits until, for
//!   `MERGES_QUIET` (2 s), no LSM work has shown in its statistics: the
//!   rows merged, the chunks of every table and the bytes written by the
//!   block manager all stayed still (its count of work units done does not
//!   serve: the LSM manager queues units every 10 ms that find nothing to
//!   do). A flush, a bloom filter or a merge writes, so a still count means
//!   none ran; the LSM manager may still start a merge later, when more
//!   chunks reach disk.
//!
//! Thread-safety: a `WT_CONNECTION` is shared by all threads, and
//! `WiredTigerStore` is `Send + Sync` through it. A `WT_SESSION` and its
//! cursors must not be used by two threads at once (WiredTiger's
//! "Multithreading" page), so each `WiredTigerSession` owns one session and
//! belongs to one thread, and the store's operations and printouts each
//! open a session of their own. Sessions borrow the store, so none is open
//! when `close` closes the connection; dropping the store closes it too.

mod config;
mod ffi;
mod handles;
mod session;
mod stats;
#[cfg(test)]
mod tests;

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{EngineError, EngineResult, Session, Store, TableSpec};
use crate::lineup::Engine;
use crate::{BenchError, Benchmark, Config, ShapeCounts};
pub(crate) use config::describe;
use config::{connection_config, table_config};
use handles::{c_string, Connection, Table};
use session::{WiredTigerSession, ROLLBACK_RETRY_WAIT_MAX};

/// `waitforcompaction`: how long the LSM statistics must stay still, how
/// often they are read, and how long to wait at most (WT_SESSION::compact's
/// own default timeout).
const MERGES_QUIET: Duration = Duration::from_secs(2);
const MERGES_POLL: Duration = Duration::from_millis(100);
const MERGES_WAIT_MAX: Duration = Duration::from_secs(1200);

/// Opens (creating if need be) the WiredTiger database in `dir` with
/// `tables`, as `engine`'s kind.
pub(crate) fn open(
    engine: Engine,
    config: &Config,
    dir: &Path,
    tables: &[TableSpec],
) -> Result<Box<dyn Store>, BenchError> {
    WiredTigerStore::open(engine, config, dir, tables).map(|s| Box::new(s) as Box<dyn Store>)
}

/// WiredTiger's version, such as "3.2.1".
pub(crate) fn version() -> String {
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: wiredtiger_version only writes the three integers it is given
    // and returns a pointer to a static string, which is not read here.
    unsafe { ffi::wiredtiger_version(&mut major, &mut minor, &mut patch) };
    format!("{major}.{minor}.{patch}")
}

/// The store: one connection and the run's tables.
pub(crate) struct WiredTigerStore {
    engine: Engine,
    tables: Vec<Table>,
    conn: Connection,
    /// The database directory (the tables' files are in it).
    dir: std::path::PathBuf,
}

impl WiredTigerStore {
    fn open(
        engine: Engine,
        config: &Config,
        dir: &Path,
        specs: &[TableSpec],
    ) -> Result<WiredTigerStore, BenchError> {
        let connection = c_string(
            "the WiredTiger configuration",
            connection_config(engine, config)?.as_bytes(),
        )?;
        let mut table_configs = Vec::with_capacity(specs.len());
        for spec in specs {
            table_configs.push(c_string(
                "the table configuration",
                table_config(engine, config, spec)?.as_bytes(),
            )?);
        }
        let home = c_string("the database directory", dir.as_os_str().as_bytes())?;
        let context = format!("open the {engine} database in {}", dir.display());
        let conn =
            Connection::open(engine, &home, &connection).map_err(|f| BenchError::Engine {
                context: context.clone(),
                error: f.into_error(engine),
            })?;
        let mut tables = Vec::with_capacity(specs.len());
        {
            let mut session = conn
                .session()
                .map_err(BenchError::engine(context.clone()))?;
            for (spec, table_config) in specs.iter().zip(&table_configs) {
                let table = Table {
                    name: spec.name.clone(),
                    uri: c_string("the table name", format!("table:{}", spec.name).as_bytes())?,
                    statistics_uri: c_string(
                        "the table name",
                        format!("statistics:table:{}", spec.name).as_bytes(),
                    )?,
                };
                let colgroup = c_string(
                    "the table name",
                    format!("colgroup:{}", spec.name).as_bytes(),
                )?;
                match session
                    .metadata(&colgroup)
                    .map_err(BenchError::engine(context.clone()))?
                {
                    None => session
                        .create(&table.uri, table_config)
                        .map_err(BenchError::engine(context.clone()))?,
                    Some(metadata) => {
                        let found = existing_engine(&metadata);
                        if found != Some(engine) {
                            return Err(BenchError::Config(format!(
                                "the table '{}' in {} is not a {engine} table ({}); pass --engine={} or use another --db",
                                spec.name,
                                dir.display(),
                                match found {
                                    Some(e) => format!("it is a {e} table"),
                                    None => format!("WiredTiger's metadata: {metadata}"),
                                },
                                found.map_or("wiredtiger-btree|wiredtiger-lsm", Engine::name),
                            )));
                        }
                    }
                }
                tables.push(table);
            }
        }
        Ok(WiredTigerStore {
            engine,
            tables,
            conn,
            dir: dir.to_path_buf(),
        })
    }

    fn table(&self, index: usize) -> EngineResult<&Table> {
        self.tables
            .get(index)
            .ok_or_else(|| EngineError::peer(self.engine, format!("no table number {index}")))
    }

    /// Waits until no LSM merge, flush or bloom filter has shown in the
    /// statistics for `MERGES_QUIET` (see the module header).
    fn wait_for_merges(&self) -> EngineResult<()> {
        let mut session = self.conn.session()?;
        let start = Instant::now();
        let mut last = self.merge_signs(&mut session)?;
        let mut still_since = Instant::now();
        loop {
            std::thread::sleep(MERGES_POLL);
            let now = self.merge_signs(&mut session)?;
            if now != last {
                last = now;
                still_since = Instant::now();
            } else if still_since.elapsed() >= MERGES_QUIET {
                return Ok(());
            }
            if start.elapsed() >= MERGES_WAIT_MAX {
                return Err(EngineError::peer(
                    self.engine,
                    format!(
                        "waitforcompaction: the LSM trees were still merging after {} s",
                        MERGES_WAIT_MAX.as_secs()
                    ),
                ));
            }
        }
    }
}

/// Which engine made a table, from its column group's metadata (WiredTiger
/// keeps the data source there: `source="lsm:NAME"` for an LSM tree,
/// `source="file:NAME.wt"` for a B-tree).
fn existing_engine(colgroup_metadata: &str) -> Option<Engine> {
    if colgroup_metadata.contains("source=\"lsm:") {
        Some(Engine::WiredtigerLsm)
    } else if colgroup_metadata.contains("source=\"file:") {
        Some(Engine::WiredtigerBtree)
    } else {
        None
    }
}

/// True when `file` holds data of the table `name`: a B-tree's `NAME.wt`,
/// an LSM tree's chunks `NAME-NNNNNN.lsm` and their bloom filters
/// `NAME-NNNNNN.bf`.
fn is_table_file(file: &str, name: &str) -> bool {
    if file.strip_prefix(name) == Some(".wt") {
        return true;
    }
    let Some(rest) = file.strip_prefix(name).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    let digits = rest
        .strip_suffix(".lsm")
        .or_else(|| rest.strip_suffix(".bf"));
    digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

impl Store for WiredTigerStore {
    /// A B-tree table truncates a range (`WT_SESSION::truncate` between two
    /// cursors); the lab does not ask it of WiredTiger's LSM.
    fn deletes_ranges(&self) -> bool {
        self.engine == Engine::WiredtigerBtree
    }

    /// The bytes of the tables' files (B-tree files, LSM chunks and their
    /// bloom filters), as the directory lists them now.
    fn table_bytes(&self, tables: &[usize]) -> Option<u64> {
        let names: Vec<&str> = tables
            .iter()
            .filter_map(|&t| self.tables.get(t).map(|t| t.name.as_str()))
            .collect();
        let entries = std::fs::read_dir(&self.dir).ok()?;
        Some(
            entries
                .flatten()
                .filter(|e| {
                    let file = e.file_name();
                    let file = file.to_string_lossy();
                    names.iter().any(|n| is_table_file(&file, n))
                })
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum(),
        )
    }

    fn session(&self) -> EngineResult<Box<dyn Session + '_>> {
        Ok(Box::new(WiredTigerSession {
            store: self,
            handle: self.conn.session()?,
            cursors: vec![None; self.tables.len()],
            rollback_wait_max: ROLLBACK_RETRY_WAIT_MAX,
        }))
    }

    fn operation(&self, op: Benchmark) -> EngineResult<bool> {
        match op {
            Benchmark::Flush | Benchmark::Checkpoint => self.conn.session()?.checkpoint()?,
            Benchmark::Compact | Benchmark::CompactAll => {
                let mut session = self.conn.session()?;
                for table in &self.tables {
                    session.compact(&table.uri)?;
                }
            }
            Benchmark::WaitForCompaction if self.engine == Engine::WiredtigerLsm => {
                self.wait_for_merges()?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn printout(&self, what: Benchmark) -> EngineResult<Option<String>> {
        match what {
            Benchmark::Stats => self.statistics_text().map(Some),
            Benchmark::Shape if self.engine == Engine::WiredtigerLsm => {
                let shape = self.lsm_shape()?;
                Ok(Some(format!(
                    "LSM tree {}: {} chunks (highest merge generation {}), {} bloom filters of {} bytes in all\n",
                    self.table(0)?.name,
                    shape.chunks,
                    shape.generation_max,
                    shape.bloom_filters,
                    shape.bloom_bytes
                )))
            }
            _ => Ok(None),
        }
    }

    /// For an LSM tree, its chunks (every chunk is a sorted run, so both
    /// `l0_runs` and `sst_files`); a B-tree's shape is not read (WiredTiger
    /// counts pages only with its costly `tree_walk` statistics).
    /// Nothing: the time series reads the shape every second while the
    /// benchmark runs, and in WiredTiger 3.2.1 a statistics cursor on an
    /// LSM table, opened while the LSM manager switches chunks and builds
    /// bloom filters, was seen to deadlock with them (the sampler blocked
    /// on the tree's lock, a switch on the same lock, a bloom filter's
    /// creation waiting on the log, the writer waiting for the switch).
    fn shape_counts(&self) -> ShapeCounts {
        ShapeCounts::default()
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let WiredTigerStore { conn, .. } = *self;
        conn.close()
    }
}
