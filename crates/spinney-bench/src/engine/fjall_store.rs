//! fjall, the Rust LSM crate, as a `Store`: one fjall database in the run's
//! directory, one keyspace (fjall's column family) per table.
//!
//! What the adapter sets, and why:
//! - Cache: `--cache_size` bytes of fjall's block cache.
//! - Bloom filters: `--bloom_bits` bits per key in every level (fjall's
//!   default is a 0.01% false-positive rate in L0 and 10 bits per key
//!   below); 0 turns them off.
//! - Compression: none or lz4 in every level as `--compression_type` says
//!   (fjall's default is none in L0 and L1 and lz4 below); fjall has no
//!   zstd, so `--compression_type=zstd` is refused.
//! - Write buffer: `--write_buffer_size` is each keyspace's memtable size
//!   (fjall's default 64 MiB). The count of memtables is fjall's own and
//!   cannot be set: writes halt while a keyspace has 4 sealed memtables, so
//!   5 in all, whatever `--max_write_buffer_number` says (the header says
//!   so).
//! - Tree shape: leveled, with tables of `FILE_BYTES` (16 MiB; fjall's
//!   default is 64 MiB) and L0 compacted at 4 tables, which makes fjall's
//!   L1 (tables × L0 threshold) 64 MiB, spinney's base level. That is the
//!   nearest fjall offers to spinney's shape (8 MiB files, a 64 MiB base
//!   level, dynamic level sizes): its levels are sized statically, and 8
//!   MiB tables would make its L1 32 MiB.
//! - Background threads: fjall's worker threads (flushes and compactions);
//!   fjall needs at least one, so `--background_threads=0` gives one.
//! - Durability: fjall writes its journal through a buffer in the process.
//!   By default (`manual_journal_persist` off) every write and batch hands
//!   the journal to the OS before it returns, the same promise as the
//!   others' unsynced logs; `--sync=1` commits every write as a batch with
//!   `PersistMode::SyncAll`; `--disable_wal=1` turns on manual persistence,
//!   so that the journal stays in the process's buffer until it fills (a
//!   crash of the process loses it).
//!
//! Everything else is fjall's default (4 KiB blocks, 7 levels, ×10 per
//! level).
//!
//! Reads: a get is `Keyspace::get`; a seek is a new range iterator from the
//! key (a fresh view, as a new iterator per seek in db_bench); scans iterate
//! the keyspace both ways. A single write goes through `Keyspace::insert`
//! or `remove` (fjall's own single-write path); a batch of several through
//! one `Database::batch`, atomic across keyspaces.
//!
//! Operations: `flush` seals each keyspace's memtable and waits until no
//! sealed memtable is left unflushed, `compact` and `compactall` run a
//! major compaction of each keyspace (both are public but undocumented
//! calls of fjall's, the ones its own tests use); fjall cannot compact one level or wait for its
//! background work, and has no checkpoints, so those are not supported.
//!
//! Thread-safety: fjall's `Database` and `Keyspace` handles are shared by
//! every thread; a session is a borrowed reference.

use std::path::Path;
use std::time::{Duration, Instant};

use fjall::config::{BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::{Batch, EngineError, EngineResult, Op, Seek, Session, Store, TableSpec};
use crate::{BenchError, Benchmark, Config, Engine, ShapeCounts};

/// The crate version the lab is built with (pinned in Cargo.toml).
const VERSION: &str = "3.1.13";

/// fjall's version.
pub(crate) fn version() -> String {
    format!("fjall {VERSION}")
}

/// The header's description of the run's options.
pub(crate) fn describe(config: &Config) -> String {
    format!(
        "fjall keyspace, leveled ({} MiB tables, L1 {} MiB), bloom filter {} bits/key, memtable {:.1} MB, 5 memtables (fjall's fixed), compression {}, {} worker threads, {}",
        FILE_BYTES >> 20,
        (FILE_BYTES * L0_TABLES) >> 20,
        config.bloom_bits,
        config.write_buffer_size as f64 / 1_048_576.0,
        config.compression.name(),
        config.background_threads.max(1),
        match config.durability {
            spinney::Durability::Full => "each commit synced",
            spinney::Durability::Normal => "journal handed to the OS at each commit, not synced",
            spinney::Durability::Off => "journal kept in the process's buffer (manual persistence)",
        }
    )
}

/// Bytes of a table (SST): with `L0_TABLES`, an L1 of spinney's base level
/// size (fjall's L1 is the two multiplied).
const FILE_BYTES: u64 = 16 << 20;

/// Tables in L0 that start a compaction into L1 (fjall's default, and
/// every engine's in the lab).
const L0_TABLES: u64 = 4;

/// The longest a flush waits for fjall's sealed memtables to be written.
const FLUSH_WAIT_MAX: Duration = Duration::from_secs(600);

fn peer(what: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::peer(Engine::Fjall, format!("{what}: {e}"))
}

pub(crate) struct FjallStore {
    keyspaces: Vec<Keyspace>,
    db: Database,
    sync: bool,
}

/// Opens (creating) the database in `dir` with a keyspace per table.
pub(crate) fn open(
    config: &Config,
    dir: &Path,
    tables: &[TableSpec],
) -> Result<Box<dyn Store>, BenchError> {
    let compression = match config.compression {
        spinney::Compression::None => CompressionType::None,
        spinney::Compression::Lz4 => CompressionType::Lz4,
        spinney::Compression::Zstd => {
            return Err(BenchError::Config(
                "fjall has no zstd compression (none or lz4)".into(),
            ))
        }
    };
    let setup = |what: &str| {
        let what = what.to_string();
        move |e: fjall::Error| BenchError::Engine {
            context: format!("open the database: {what}"),
            error: peer(&what, e),
        }
    };
    std::fs::create_dir_all(dir).map_err(BenchError::io(format!("create {}", dir.display())))?;
    // The lab recognises (and may delete) a directory by this file.
    std::fs::write(
        dir.join(Engine::Fjall.marker()),
        b"a fjall database of spinney-bench\n",
    )
    .map_err(BenchError::io(format!(
        "write the marker in {}",
        dir.display()
    )))?;
    let db = Database::builder(dir)
        .cache_size(config.cache_size)
        .worker_threads(config.background_threads.max(1))
        .manual_journal_persist(config.durability == spinney::Durability::Off)
        .open()
        .map_err(setup("open"))?;
    let mut keyspaces = Vec::with_capacity(tables.len());
    for spec in tables {
        let bits = spec.bloom_bits.unwrap_or(config.bloom_bits);
        let filter = if bits == 0 {
            FilterPolicy::disabled()
        } else {
            FilterPolicy::all(FilterPolicyEntry::Bloom(
                BloomConstructionPolicy::BitsPerKey(bits as f32),
            ))
        };
        let write_buffer = config.write_buffer_size as u64;
        let options = move || {
            KeyspaceCreateOptions::default()
                .filter_policy(filter)
                .data_block_compression_policy(CompressionPolicy::all(compression))
                .max_memtable_size(write_buffer)
                .compaction_strategy(std::sync::Arc::new(
                    fjall::compaction::Leveled::default()
                        .with_table_target_size(FILE_BYTES)
                        .with_l0_threshold(L0_TABLES as u8),
                ))
        };
        keyspaces.push(
            db.keyspace(&spec.name, options)
                .map_err(setup("open a keyspace"))?,
        );
    }
    Ok(Box::new(FjallStore {
        keyspaces,
        db,
        sync: config.durability == spinney::Durability::Full,
    }))
}

impl FjallStore {
    fn keyspace(&self, table: usize) -> EngineResult<&Keyspace> {
        self.keyspaces
            .get(table)
            .ok_or_else(|| EngineError::peer(Engine::Fjall, format!("no table number {table}")))
    }
}

impl Store for FjallStore {
    /// By deleting each key of the range (the engine has none).
    fn deletes_ranges(&self) -> bool {
        true
    }

    fn session(&self) -> EngineResult<Box<dyn Session + '_>> {
        Ok(Box::new(FjallSession { store: self }))
    }

    fn operation(&self, op: Benchmark) -> EngineResult<bool> {
        match op {
            Benchmark::Flush => {
                for k in &self.keyspaces {
                    k.rotate_memtable_and_wait().map_err(|e| peer("flush", e))?;
                    // That waits only when it sealed the memtable itself. A
                    // write past the write buffer has fjall's worker seal it
                    // on its own; if the worker was first, this found the
                    // new memtable empty and returned while the sealed one
                    // was still being flushed (the test below failed once
                    // in a full run: no table after the flush and the
                    // compaction).
                    let deadline = Instant::now() + FLUSH_WAIT_MAX;
                    while k.sealed_memtable_count() > 0 {
                        if Instant::now() > deadline {
                            return Err(peer(
                                "flush",
                                format!(
                                    "sealed memtables still unflushed after {FLUSH_WAIT_MAX:?}"
                                ),
                            ));
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            }
            Benchmark::Compact | Benchmark::CompactAll => {
                for k in &self.keyspaces {
                    k.major_compact().map_err(|e| peer("compact", e))?;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn printout(&self, what: Benchmark) -> EngineResult<Option<String>> {
        let k = self.keyspace(0)?;
        let shape = format!(
            "fjall keyspace {}: {} tables ({} in L0), {} sealed memtables, {:.1} MB on disk",
            self.keyspace(0)?.name().as_ref(),
            k.table_count(),
            k.l0_table_count(),
            k.sealed_memtable_count(),
            k.disk_space() as f64 / 1_048_576.0
        );
        Ok(match what {
            Benchmark::Shape => Some(shape),
            Benchmark::Stats => Some(format!(
                "{shape}\nfjall database: {} journals, {:.1} MB of write buffers, {} flushes outstanding, {} compactions running, {} completed, {:.1} s compacting, cache {:.1} of {:.1} MB",
                self.db.journal_count(),
                self.db.write_buffer_size() as f64 / 1_048_576.0,
                self.db.outstanding_flushes(),
                self.db.active_compactions(),
                self.db.compactions_completed(),
                self.db.time_compacting().as_secs_f64(),
                self.db.cache_size() as f64 / 1_048_576.0,
                self.db.cache_capacity() as f64 / 1_048_576.0
            )),
            _ => None,
        })
    }

    fn shape_counts(&self) -> ShapeCounts {
        match self.keyspaces.first() {
            Some(k) => ShapeCounts {
                immutable_memtables: k.sealed_memtable_count(),
                l0_runs: k.l0_table_count(),
                sst_files: k.table_count(),
                ..ShapeCounts::default()
            },
            None => ShapeCounts::default(),
        }
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        // fjall syncs its journal when the database is dropped; persisting
        // first reports a failure instead of ignoring it.
        self.db
            .persist(PersistMode::SyncAll)
            .map_err(|e| peer("persist at close", e))?;
        drop(self);
        Ok(())
    }
}

struct FjallSession<'a> {
    store: &'a FjallStore,
}

impl Session for FjallSession<'_> {
    fn write(&mut self, batch: &Batch) -> EngineResult<()> {
        let store = self.store;
        let mut ops = batch.ops();
        let (first, second) = (ops.next(), ops.next());
        let single = !matches!(first, Some(Op::DeleteRange { .. }));
        if let (Some(op), None, false, true) = (first, second, store.sync, single) {
            return match op {
                Op::Put { table, key, value } => store.keyspace(table)?.insert(key, value),
                Op::Delete { table, key } => store.keyspace(table)?.remove(key),
                Op::DeleteRange { .. } => Ok(()),
            }
            .map_err(|e| peer("write", e));
        }
        let mut b = store.db.batch();
        if store.sync {
            b = b.durability(Some(PersistMode::SyncAll));
        }
        for op in batch.ops() {
            match op {
                Op::Put { table, key, value } => b.insert(store.keyspace(table)?, key, value),
                Op::Delete { table, key } => b.remove(store.keyspace(table)?, key),
                Op::DeleteRange { table, start, end } => {
                    // fjall has no range delete: the keys of the range as
                    // the database holds them now, each removed in the batch.
                    let keyspace = store.keyspace(table)?;
                    for guard in keyspace.range(start..end) {
                        let k = guard.key().map_err(|e| peer("read a range", e))?;
                        b.remove(keyspace, k);
                    }
                }
            }
        }
        b.commit().map_err(|e| peer("commit a batch", e))
    }

    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        let value = self
            .store
            .keyspace(table)?
            .get(key)
            .map_err(|e| peer("get", e))?;
        Ok(value.map(|v| v.len()))
    }

    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        let mut iter = self.store.keyspace(table)?.range(key..);
        let mut seek = Seek::default();
        for i in 0..steps.max(1) {
            let Some(guard) = iter.next() else { break };
            let (k, v) = guard.into_inner().map_err(|e| peer("seek", e))?;
            if i == 0 {
                seek.found = &*k == key;
            }
            if i < steps {
                seek.bytes += (k.len() + v.len()) as u64;
            }
        }
        Ok(seek)
    }

    fn scan(
        &mut self,
        table: usize,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> EngineResult<()> {
        let iter = self.store.keyspace(table)?.iter();
        let mut entries: Box<dyn Iterator<Item = fjall::Guard>> = if forward {
            Box::new(iter)
        } else {
            Box::new(iter.rev())
        };
        for guard in &mut entries {
            let (k, v) = guard.into_inner().map_err(|e| peer("scan", e))?;
            if !visit((k.len() + v.len()) as u64) {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::conformance;

    /// Small memtables, so that the checks see flushed tables too.
    fn config() -> Config {
        Config {
            write_buffer_size: 64 << 10,
            ..Config::default()
        }
    }

    fn open_two(dir: &Path) -> Box<dyn Store> {
        let specs = [TableSpec::named("a"), TableSpec::named("b")];
        open(&config(), dir, &specs).expect("open")
    }

    #[test]
    fn does_what_every_engine_does() {
        // Goal: the checks every adapter passes (see `conformance`).
        conformance::all(&open_two);
    }

    #[test]
    fn flush_and_compaction_keep_the_data_and_the_rest_is_not_supported() {
        // Goal: after a flush and a major compaction every key still reads
        // back, the shape shows tables, and what fjall lacks says so.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_two(dir.path());
        let mut s = store.session().expect("session");
        let mut b = Batch::new();
        for i in 0..2000u32 {
            b.put(0, format!("k{i:04}").as_bytes(), &[b'v'; 100]);
        }
        s.write(&b).expect("write");
        for op in [Benchmark::Flush, Benchmark::Compact] {
            assert!(store.operation(op).expect("operation"), "{op}");
            for i in (0..2000u32).step_by(97) {
                assert_eq!(
                    s.get(0, format!("k{i:04}").as_bytes()).expect("get"),
                    Some(100)
                );
            }
        }
        drop(s);
        assert!(store.shape_counts().sst_files >= 1);
        for op in [
            Benchmark::Compact0,
            Benchmark::Checkpoint,
            Benchmark::WaitForCompaction,
        ] {
            assert!(!store.operation(op).expect("operation"), "{op}");
        }
        assert!(store.printout(Benchmark::Stats).expect("stats").is_some());
        store.close().expect("close");
    }

    #[test]
    fn zstd_is_refused() {
        // Goal: an option fjall lacks is a usage error, not a silent swap.
        let dir = tempfile::tempdir().expect("tempdir");
        let config = Config {
            compression: spinney::Compression::Zstd,
            ..Config::default()
        };
        let err = open(&config, dir.path(), &[TableSpec::named("a")])
            .err()
            .expect("refused");
        assert!(matches!(err, BenchError::Config(_)), "{err}");
    }
}
