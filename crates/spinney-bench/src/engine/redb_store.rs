//! redb, the Rust B-tree crate, as a `Store`: one redb file
//! (`data.redb`) in the run's directory, one table per lab table, keys and
//! values as byte slices.
//!
//! What the adapter sets, and why:
//! - Cache: `--cache_size` bytes of redb's page cache (its default is
//!   1 GiB). Pages are redb's fixed 4 KiB.
//! - Durability: redb has no log, and no commit that reaches the OS
//!   without a sync: a `Durability::Immediate` commit syncs the file, a
//!   `Durability::None` commit stays in the process's memory until a later
//!   durable one (a crash of the process loses it). Without `--sync` the
//!   adapter commits with `None`, a weaker promise than the other engines'
//!   unsynced logs (which survive a crash of the process), so redb's write
//!   figures are flattered; with `--sync=1` every commit is `Immediate`,
//!   the same promise as the others'. Closing commits once more with
//!   `Immediate`, so that the database is whole on disk.
//! - Bloom filters, compression, write buffers and background threads do
//!   not exist in redb. Everything else is redb's default (one-phase
//!   commit, no quick repair, exclusive writer).
//!
//! Each batch is one write transaction (redb serialises writers), so
//! `--batch_size` sets the entries per commit as for every engine. Each
//! read begins its own read transaction, a fresh view, as a user reading
//! at the latest commit does.
//!
//! Operations: `compact` and `compactall` run `Database::compact`, which
//! moves pages to the front of the file and shrinks it; `flush` and
//! `checkpoint` commit an empty `Immediate` transaction, which makes every
//! earlier commit durable (all either means for redb). It has no levels
//! and no background work, so `compact0`, `compact1` and
//! `waitforcompaction` are not supported.
//!
//! Thread-safety: `Database` is shared by every thread; compaction needs it
//! alone, so it sits behind a read-write lock that reads and writes take
//! shared and compaction takes exclusive (the lab runs operations between
//! benchmarks, when no session works).

use std::path::Path;

use parking_lot::RwLock;
use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
};

use super::{Batch, EngineError, EngineResult, Op, Seek, Session, Store, TableSpec};
use crate::{BenchError, Benchmark, Config, Engine, ShapeCounts};

/// The crate version the lab is built with (pinned in Cargo.toml).
const VERSION: &str = "4.6.0";

/// redb's version.
pub(crate) fn version() -> String {
    format!("redb {VERSION}")
}

/// The header's description of the run's options.
pub(crate) fn describe(config: &Config) -> String {
    format!(
        "redb table, 4 KiB pages, cache {:.1} MB, {}, no compression, no bloom filters",
        config.cache_size as f64 / 1_048_576.0,
        match config.durability {
            spinney::Durability::Full => "each commit synced (Durability::Immediate)",
            _ => "commits kept in memory until a durable one (Durability::None)",
        }
    )
}

fn peer(what: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::peer(Engine::Redb, format!("{what}: {e}"))
}

type Definition<'a> = TableDefinition<'a, &'static [u8], &'static [u8]>;

pub(crate) struct RedbStore {
    db: RwLock<Database>,
    names: Vec<String>,
    durability: Durability,
}

/// Opens (creating) the database file in `dir` and its tables.
pub(crate) fn open(
    config: &Config,
    dir: &Path,
    tables: &[TableSpec],
) -> Result<Box<dyn Store>, BenchError> {
    let setup = |what: &'static str| {
        move |e: redb::Error| BenchError::Engine {
            context: "open the database".into(),
            error: peer(what, e),
        }
    };
    std::fs::create_dir_all(dir).map_err(BenchError::io(format!("create {}", dir.display())))?;
    let cache = usize::try_from(config.cache_size).unwrap_or(usize::MAX);
    let db = Database::builder()
        .set_cache_size(cache)
        .create(dir.join(Engine::Redb.marker()))
        .map_err(|e| setup("open the file")(e.into()))?;
    let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
    // Create the tables now, so that reads of an empty table find it.
    let txn = db
        .begin_write()
        .map_err(|e| setup("begin a transaction")(e.into()))?;
    for name in &names {
        txn.open_table(Definition::new(name))
            .map_err(|e| setup("create a table")(e.into()))?;
    }
    txn.commit()
        .map_err(|e| setup("commit the tables")(e.into()))?;
    Ok(Box::new(RedbStore {
        db: RwLock::new(db),
        names,
        durability: match config.durability {
            spinney::Durability::Full => Durability::Immediate,
            _ => Durability::None,
        },
    }))
}

impl RedbStore {
    fn definition(&self, table: usize) -> EngineResult<Definition<'_>> {
        self.names
            .get(table)
            .map(|name| Definition::new(name))
            .ok_or_else(|| EngineError::peer(Engine::Redb, format!("no table number {table}")))
    }

    /// Table `table` in a new read transaction: a fresh view of the
    /// latest commit.
    fn read_table(
        &self,
        table: usize,
    ) -> EngineResult<redb::ReadOnlyTable<&'static [u8], &'static [u8]>> {
        let txn = self
            .db
            .read()
            .begin_read()
            .map_err(|e| peer("begin a read", e))?;
        txn.open_table(self.definition(table)?)
            .map_err(|e| peer("open a table", e))
    }

    /// Commits an empty durable transaction: every earlier commit is then
    /// on disk.
    fn make_durable(&self) -> EngineResult<()> {
        let mut txn = self
            .db
            .read()
            .begin_write()
            .map_err(|e| peer("begin a transaction", e))?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| peer("set durability", e))?;
        txn.commit().map_err(|e| peer("commit", e))
    }
}

impl Store for RedbStore {
    /// With `Table::retain_in` over the range (redb has no range delete).
    fn deletes_ranges(&self) -> bool {
        true
    }

    fn session(&self) -> EngineResult<Box<dyn Session + '_>> {
        Ok(Box::new(RedbSession { store: self }))
    }

    fn operation(&self, op: Benchmark) -> EngineResult<bool> {
        match op {
            Benchmark::Flush | Benchmark::Checkpoint => self.make_durable()?,
            Benchmark::Compact | Benchmark::CompactAll => {
                // Compaction wants every commit durable first.
                self.make_durable()?;
                let mut db = self.db.write();
                while db.compact().map_err(|e| peer("compact", e))? {}
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn printout(&self, what: Benchmark) -> EngineResult<Option<String>> {
        let db = self.db.read();
        let txn = db.begin_read().map_err(|e| peer("begin a read", e))?;
        let table = txn
            .open_table(self.definition(0)?)
            .map_err(|e| peer("open a table", e))?;
        let s = table.stats().map_err(|e| peer("table statistics", e))?;
        let shape = format!(
            "redb table {}: height {}, {} leaf pages, {} branch pages, {:.1} MB stored, {:.1} MB of metadata, {:.1} MB fragmented, {} entries",
            self.names.first().map_or("", String::as_str),
            s.tree_height(),
            s.leaf_pages(),
            s.branch_pages(),
            s.stored_bytes() as f64 / 1_048_576.0,
            s.metadata_bytes() as f64 / 1_048_576.0,
            s.fragmented_bytes() as f64 / 1_048_576.0,
            table.len().map_err(|e| peer("table length", e))?
        );
        Ok(match what {
            Benchmark::Shape => Some(shape),
            Benchmark::Stats => {
                let c = db.cache_stats();
                Some(format!(
                    "{shape}\nredb cache: {:.1} MB used, {} evictions, {} read hits, {} read misses, {} write hits, {} write misses",
                    c.used_bytes() as f64 / 1_048_576.0,
                    c.evictions(),
                    c.read_hits(),
                    c.read_misses(),
                    c.write_hits(),
                    c.write_misses()
                ))
            }
            _ => None,
        })
    }

    fn shape_counts(&self) -> ShapeCounts {
        let db = self.db.read();
        let stats = db.begin_read().ok().and_then(|txn| {
            let table = txn.open_table(self.definition(0).ok()?).ok()?;
            table.stats().ok()
        });
        match stats {
            Some(s) => ShapeCounts {
                btree_height: s.tree_height(),
                btree_pages: s.leaf_pages() + s.branch_pages(),
                ..ShapeCounts::default()
            },
            None => ShapeCounts::default(),
        }
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        self.make_durable()?;
        drop(self);
        Ok(())
    }
}

struct RedbSession<'a> {
    store: &'a RedbStore,
}

impl Session for RedbSession<'_> {
    fn write(&mut self, batch: &Batch) -> EngineResult<()> {
        let store = self.store;
        let mut txn = store
            .db
            .read()
            .begin_write()
            .map_err(|e| peer("begin a transaction", e))?;
        txn.set_durability(store.durability)
            .map_err(|e| peer("set durability", e))?;
        {
            // Tables stay open across the batch's entries of the same table.
            let mut open: Vec<Option<redb::Table<'_, &'static [u8], &'static [u8]>>> =
                (0..store.names.len()).map(|_| None).collect();
            for op in batch.ops() {
                let (table, key, value, end) = match op {
                    Op::Put { table, key, value } => (table, key, Some(value), None),
                    Op::Delete { table, key } => (table, key, None, None),
                    Op::DeleteRange { table, start, end } => (table, start, None, Some(end)),
                };
                let slot = open
                    .get_mut(table)
                    .ok_or_else(|| peer("write", format!("no table number {table}")))?;
                if slot.is_none() {
                    *slot = Some(
                        txn.open_table(store.definition(table)?)
                            .map_err(|e| peer("open a table", e))?,
                    );
                }
                let Some(t) = slot.as_mut() else {
                    continue;
                };
                match (value, end) {
                    (Some(value), _) => {
                        t.insert(key, value).map_err(|e| peer("insert", e))?;
                    }
                    // redb has no range delete: `retain_in` drops every
                    // entry of the range in the write transaction.
                    (None, Some(end)) => {
                        t.retain_in(key..end, |_, _| false)
                            .map_err(|e| peer("delete a range", e))?;
                    }
                    (None, None) => {
                        t.remove(key).map_err(|e| peer("remove", e))?;
                    }
                }
            }
        }
        txn.commit().map_err(|e| peer("commit", e))
    }

    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        let t = self.store.read_table(table)?;
        let value = t.get(key).map_err(|e| peer("get", e))?;
        Ok(value.map(|v| v.value().len()))
    }

    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        let t = self.store.read_table(table)?;
        let mut range = t.range(key..).map_err(|e| peer("seek", e))?;
        let mut seek = Seek::default();
        for i in 0..steps.max(1) {
            let Some(entry) = range.next() else { break };
            let (k, v) = entry.map_err(|e| peer("step", e))?;
            if i == 0 {
                seek.found = k.value() == key;
            }
            if i < steps {
                seek.bytes += (k.value().len() + v.value().len()) as u64;
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
        let t = self.store.read_table(table)?;
        let iter = t.iter().map_err(|e| peer("scan", e))?;
        let entries: Box<dyn Iterator<Item = _>> = if forward {
            Box::new(iter)
        } else {
            Box::new(iter.rev())
        };
        for entry in entries {
            let (k, v) = entry.map_err(|e| peer("scan", e))?;
            if !visit((k.value().len() + v.value().len()) as u64) {
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

    fn open_two(dir: &Path) -> Box<dyn Store> {
        let specs = [TableSpec::named("a"), TableSpec::named("b")];
        open(&Config::default(), dir, &specs).expect("open")
    }

    #[test]
    fn does_what_every_engine_does() {
        // Goal: the checks every adapter passes (see `conformance`): with
        // commits that are not durable, the reopen also shows that closing
        // makes them so.
        conformance::all(&open_two);
    }

    #[test]
    fn compaction_shrinks_the_file_and_keeps_the_data() {
        // Goal: after most keys are deleted, compact gives space back and
        // the rest still reads back; what redb lacks says so.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_two(dir.path());
        let mut s = store.session().expect("session");
        let mut b = Batch::new();
        for i in 0..20_000u32 {
            b.put(0, format!("k{i:05}").as_bytes(), &[b'v'; 100]);
        }
        s.write(&b).expect("write");
        b.clear();
        for i in 100..20_000u32 {
            b.delete(0, format!("k{i:05}").as_bytes());
        }
        s.write(&b).expect("delete");
        assert!(store.operation(Benchmark::Flush).expect("flush"));
        let file = dir.path().join(Engine::Redb.marker());
        let before = std::fs::metadata(&file).expect("file").len();
        assert!(store.operation(Benchmark::Compact).expect("compact"));
        let after = std::fs::metadata(&file).expect("file").len();
        assert!(after < before, "{before} -> {after}");
        assert_eq!(s.get(0, b"k00099").expect("get"), Some(100));
        assert_eq!(s.get(0, b"k00100").expect("get"), None);
        drop(s);
        assert!(!store.operation(Benchmark::Compact0).expect("compact0"));
        assert!(store.shape_counts().btree_height >= 1);
        assert!(store.printout(Benchmark::Stats).expect("stats").is_some());
        store.close().expect("close");
    }
}
