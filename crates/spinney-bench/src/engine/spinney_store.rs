//! spinney's two kinds as a `Store`: one database, the run's tables all of
//! the engine's kind, the configuration's options as they are (but for
//! what a `TableSpec` sets: bloom bits, write buffer, a held shape).
//!
//! A table whose spec holds its shape (`TableSpec::hold_shape`, LSM only)
//! gets static leveled compaction with L0 never due (`l0_trigger` at
//! `limits::L0_TRIGGER_MAX`, `dynamic_level_bytes` off), and the database
//! is opened with no background threads and no autowork, so that nothing
//! flushes or compacts unless the run asks (a writer that fills the
//! memtable flushes it itself).
//!
//! Read counts are spinney's thread-local `ReadContext`, every column
//! exactly (`Session::start_read_counts`).
//!
//! Thread-safety: `Db` and `Table` are shared by every thread; a session is
//! a borrowed reference to them and a reusable batch.

use std::path::Path;

use spinney::{CompactionOptions, Db, ReadContext, Table, WriteBatch};

use super::{
    setup_error, Batch, Engine, EngineError, EngineResult, IoCounters, LsmShape, Op, ReadCounts,
    Seek, Session, Store, TableSpec,
};
use crate::{BenchError, Benchmark, Config, ShapeCounts};

pub(crate) struct SpinneyStore {
    db: Db,
    tables: Vec<Table>,
}

impl SpinneyStore {
    /// Opens the database in `dir` and its tables; a table that exists with
    /// the other kind is a usage error.
    pub fn open(
        engine: Engine,
        config: &Config,
        dir: &Path,
        specs: &[TableSpec],
    ) -> Result<SpinneyStore, BenchError> {
        let kind = engine.kind();
        let hold = specs.iter().any(|s| s.hold_shape);
        if hold && kind != spinney::TableKind::Lsm {
            return Err(BenchError::Config(format!(
                "{engine} tables have no LSM shape to hold still"
            )));
        }
        let options = if hold {
            spinney::Options {
                background_threads: 0,
                autowork: false,
                ..config.db_options()
            }
        } else {
            config.db_options()
        };
        let db = Db::open(dir, options).map_err(|e| setup_error("open the database", e))?;
        let mut tables = Vec::with_capacity(specs.len());
        for spec in specs {
            let table = match db.table(&spec.name) {
                Ok(t) => {
                    let found = t.options().kind;
                    if found != kind {
                        return Err(BenchError::Config(format!(
                            "the table '{}' in {} is a {} table; pass --engine=spinney-{}",
                            spec.name,
                            dir.display(),
                            found.name(),
                            found.name()
                        )));
                    }
                    t
                }
                Err(spinney::Error::NoSuchTable(_)) => {
                    let mut options = config.table_options_of(kind);
                    if let Some(bits) = spec.bloom_bits {
                        options.bloom_bits_per_key = bits;
                    }
                    if let Some(bytes) = spec.write_buffer_bytes {
                        options.write_buffer_size = bytes;
                    }
                    if spec.hold_shape {
                        options.compaction = CompactionOptions {
                            dynamic_level_bytes: false,
                            l0_trigger: spinney::limits::L0_TRIGGER_MAX,
                            ..CompactionOptions::leveled()
                        };
                    }
                    db.create_table(&spec.name, options)
                        .map_err(|e| setup_error("create the table", e))?
                }
                Err(e) => return Err(setup_error("open the table", e)),
            };
            tables.push(table);
        }
        Ok(SpinneyStore { db, tables })
    }

    fn table(&self, index: usize) -> EngineResult<&Table> {
        self.tables.get(index).ok_or_else(|| {
            spinney::Error::InvalidArgument(format!("no table number {index}")).into()
        })
    }
}

impl Store for SpinneyStore {
    fn deletes_ranges(&self) -> bool {
        true
    }

    fn session(&self) -> EngineResult<Box<dyn Session + '_>> {
        Ok(Box::new(SpinneySession {
            store: self,
            counting: false,
            value: Vec::new(),
            cursors: Vec::new(),
        }))
    }

    fn operation(&self, op: Benchmark) -> EngineResult<bool> {
        match op {
            Benchmark::Flush => self.db.flush()?,
            Benchmark::WaitForCompaction => self.db.wait_for_compaction()?,
            Benchmark::Checkpoint => self.db.checkpoint()?,
            Benchmark::Compact | Benchmark::CompactAll => {
                for t in &self.tables {
                    t.compact_all()?;
                }
            }
            Benchmark::Compact0 | Benchmark::Compact1 => {
                let level = usize::from(op == Benchmark::Compact1);
                for t in &self.tables {
                    t.compact_level(level)?;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn printout(&self, what: Benchmark) -> EngineResult<Option<String>> {
        Ok(match what {
            Benchmark::Stats => Some(self.db.stats().to_string()),
            Benchmark::Shape => Some(self.table(0)?.shape()?.to_string()),
            _ => None,
        })
    }

    fn shape_counts(&self) -> ShapeCounts {
        match self.tables.first() {
            Some(t) => ShapeCounts::of(&self.db, t.name()),
            None => ShapeCounts::default(),
        }
    }

    /// A B-tree's pages in use (its file's pages less the free ones, which
    /// copy-on-write checkpoints leave behind: the pages that compete for
    /// the cache), an LSM table's SSTs.
    fn table_bytes(&self, tables: &[usize]) -> Option<u64> {
        let names: Vec<&str> = tables
            .iter()
            .filter_map(|&t| self.tables.get(t).map(Table::name))
            .collect();
        Some(
            self.db
                .stats()
                .tables
                .iter()
                .filter(|t| names.contains(&t.name.as_str()))
                .map(|t| match &t.btree {
                    Some(b) => b.file_pages.saturating_sub(b.free_pages) * b.page_size,
                    None => t.levels.iter().map(|l| l.bytes).sum(),
                })
                .sum(),
        )
    }

    fn io_counters(&self) -> Option<IoCounters> {
        Some(IoCounters::of(&self.db))
    }

    fn wait_for_background(&self) -> EngineResult<()> {
        Ok(self.db.wait_for_compaction()?)
    }

    fn counts_reads(&self) -> bool {
        true
    }

    fn lsm_shape(&self, table: usize) -> EngineResult<Option<LsmShape>> {
        let shape = self.table(table)?.shape()?;
        if shape.btree.is_some() {
            return Ok(None);
        }
        // Levels are numbered from 1; place each by its number.
        let deepest = shape.levels.iter().map(|l| l.level).max().unwrap_or(0);
        let mut level_files = vec![0; deepest];
        for l in &shape.levels {
            if let Some(files) = l.level.checked_sub(1).and_then(|i| level_files.get_mut(i)) {
                *files = l.files;
            }
        }
        Ok(Some(LsmShape {
            memtable_entries: shape.memtable_entries,
            memtable_bytes: shape.memtable_bytes,
            immutable_memtables: shape.immutable_memtables,
            l0_runs: shape.l0_runs,
            level_files,
        }))
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let SpinneyStore { db, tables, .. } = *self;
        drop(tables);
        Ok(db.close()?)
    }
}

struct SpinneySession<'a> {
    store: &'a SpinneyStore,
    /// Counting this thread's `ReadContext` for `take_read_counts`.
    counting: bool,
    /// The buffer gets read values into (`Table::get_into`), as an
    /// application reading in a loop would.
    value: Vec<u8>,
    /// A cursor per table, kept from seek to seek and refreshed before
    /// each (`Cursor::refresh`), as the WiredTiger and LMDB adapters keep
    /// theirs.
    cursors: Vec<Option<spinney::Cursor>>,
}

impl Drop for SpinneySession<'_> {
    fn drop(&mut self) {
        // A session dropped while counting leaves its thread as it found it.
        if self.counting {
            ReadContext::disable();
        }
    }
}

impl Session for SpinneySession<'_> {
    fn write(&mut self, batch: &Batch) -> EngineResult<()> {
        let mut b = WriteBatch::new();
        for op in batch.ops() {
            match op {
                Op::Put { table, key, value } => b.put(self.store.table(table)?, key, value),
                Op::Delete { table, key } => b.delete(self.store.table(table)?, key),
                Op::DeleteRange { table, start, end } => {
                    b.delete_range(self.store.table(table)?, start..end)
                }
            }
        }
        Ok(self.store.db.write(b)?)
    }

    fn write_after_reads(&mut self, batch: &Batch) -> EngineResult<()> {
        let mut tx = self.store.db.begin();
        for op in batch.ops() {
            match op {
                Op::Put { table, key, value } => {
                    let t = self.store.table(table)?;
                    if tx.get(t, key)?.is_some() {
                        return Err(EngineError::Present {
                            table,
                            key: key.to_vec(),
                        });
                    }
                    tx.put(t, key, value)?;
                }
                Op::Delete { table, key } => tx.delete(self.store.table(table)?, key)?,
                Op::DeleteRange { .. } => {
                    return Err(EngineError::Spinney(spinney::Error::InvalidArgument(
                        "a read-modify-write batch holds no range delete".into(),
                    )))
                }
            }
        }
        Ok(tx.commit()?)
    }

    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        let found = self.store.table(table)?.get_into(key, &mut self.value)?;
        Ok(found.then_some(self.value.len()))
    }

    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        if self.cursors.len() <= table {
            self.cursors.resize_with(table + 1, || None);
        }
        let cursor = match &mut self.cursors[table] {
            Some(cursor) => {
                cursor.refresh()?;
                cursor
            }
            slot => slot.insert(self.store.table(table)?.cursor()?),
        };
        cursor.seek(key);
        let mut seek = Seek {
            found: cursor.valid() && cursor.key() == key,
            bytes: 0,
        };
        for _ in 0..steps {
            if !cursor.valid() {
                break;
            }
            seek.bytes += (cursor.key().len() + cursor.value().len()) as u64;
            cursor.next();
        }
        cursor.status()?;
        Ok(seek)
    }

    fn scan(
        &mut self,
        table: usize,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> EngineResult<()> {
        let mut cursor = self.store.table(table)?.cursor()?;
        if forward {
            cursor.seek_to_first();
        } else {
            cursor.seek_to_last();
        }
        while cursor.valid() {
            if !visit((cursor.key().len() + cursor.value().len()) as u64) {
                break;
            }
            if forward {
                cursor.next();
            } else {
                cursor.prev();
            }
        }
        Ok(cursor.status()?)
    }

    fn start_read_counts(&mut self) -> EngineResult<bool> {
        ReadContext::enable();
        ReadContext::reset();
        self.counting = true;
        Ok(true)
    }

    fn take_read_counts(&mut self) -> EngineResult<Option<ReadCounts>> {
        if !self.counting {
            return Ok(None);
        }
        let c = ReadContext::take();
        ReadContext::disable();
        self.counting = false;
        Ok(Some(ReadCounts {
            trees_searched: Some(c.trees_searched),
            bloom_checks: Some(c.bloom_checks),
            bloom_negatives: Some(c.bloom_negatives),
            keys_compared: Some(c.keys_compared),
            blocks_from_cache: Some(c.blocks_from_cache),
            blocks_from_storage: Some(c.blocks_from_storage),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::conformance;

    fn open_two(engine: Engine, dir: &Path) -> Box<dyn Store> {
        let specs = [TableSpec::named("a"), TableSpec::named("b")];
        let config = Config {
            engine,
            write_buffer_size: spinney::limits::WRITE_BUFFER_BYTES_MIN,
            ..Config::default()
        };
        Box::new(SpinneyStore::open(engine, &config, dir, &specs).expect("open"))
    }

    #[test]
    fn both_kinds_do_what_every_engine_does() {
        // Goal: the checks every adapter passes (see `conformance`), on
        // each of spinney's kinds.
        conformance::all(&|dir| open_two(Engine::SpinneyLsm, dir));
        conformance::all(&|dir| open_two(Engine::SpinneyBtree, dir));
    }
}
