//! LMDB as a `Store`, through its C API (Debian's liblmdb-dev, declared by
//! hand in `ffi.rs`; only the calls the lab makes).
//!
//! One environment in the run's directory (`data.mdb` and `lock.mdb`), one
//! named database per table. What the adapter sets, and why:
//! - Durability: LMDB has no log; a commit changes its pages in place and
//!   then syncs data and meta page. Without `--sync` the environment is
//!   opened with `MDB_NOSYNC`: each commit is still in the OS (it survives
//!   a crash of the process, as the others' unsynced logs do) but not
//!   synced, so a power loss may lose the last commits; with `--sync=1`
//!   every commit syncs. `--disable_wal=1` is the same as the default
//!   (there is no log to leave out).
//! - `MDB_WRITEMAP`: a write transaction changes its pages in the shared
//!   memory map, and a commit makes no `pwrite` of them (without it LMDB
//!   copies each dirty page from a malloc()ed buffer with `pwrite`). The
//!   setting LMDB's users choose for a write-heavy database that fits in
//!   memory (lmdb.h: "faster for DBs that fit entirely in RAM"), and the
//!   same kind of commit path as spinney's mapped log. LMDB then sets the
//!   file's length to the whole map at open: a sparse file, whose holes the
//!   lab's size leaves out (`measure::dir_size`). Its writes pass through
//!   no write call, so its w-amp (bytes passed to write calls) is not
//!   measured; its disk w-amp is.
//! - `MDB_NORDAHEAD`: no readahead on the map (lmdb.h: it "may help random
//!   read performance when the DB is larger than RAM"), as random reads of
//!   a map want.
//! - Cache: LMDB reads through a memory map of its file, so the OS page
//!   cache is its cache and `--cache_size` does not apply; its pages count
//!   in the process's resident set.
//! - Bloom filters, compression, write buffers and background threads do
//!   not exist in LMDB. Keys are at most 511 bytes (its compiled-in limit).
//! - `MDB_NOTLS`, so that a session's read transaction belongs to the
//!   session rather than to a thread; the map size is set far above any
//!   run (the map is address space; the file's blocks are allocated as
//!   pages are used). Everything else is LMDB's default (4 KiB pages).
//!
//! Each batch is one write transaction (LMDB serialises writers), so
//! `--batch_size` sets the entries per commit as for every engine. Each
//! read takes a fresh view: a session keeps one read transaction, renewed
//! before a get, seek or scan and reset after it, which is LMDB's own way
//! of reading without holding back the writer's page reuse.
//!
//! Operations: `flush` and `checkpoint` sync the environment
//! (`mdb_env_sync` forced: everything committed is then on disk, which is
//! all either means for LMDB); it has no compaction in place (its compacting
//! copy writes another file), so the compactions and `waitforcompaction` are
//! not supported. LMDB has no range delete: `deleterange` deletes each key
//! of the range with a cursor in the write transaction, as its users do.
//!
//! Thread-safety: the environment is shared; LMDB lets any thread begin
//! transactions on it. A session (one thread) owns its read transaction
//! and begins write transactions, which LMDB serialises.

#![deny(clippy::indexing_slicing)]

mod ffi;

use std::ffi::{c_int, c_uint, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

use super::{Batch, EngineError, EngineResult, Op, Seek, Session, Store, TableSpec};
use crate::{BenchError, Benchmark, Config, Engine, ShapeCounts};
use ffi::{
    mdb_cursor_close, mdb_cursor_del, mdb_cursor_get, mdb_cursor_open, mdb_cursor_renew,
    mdb_dbi_open, mdb_del, mdb_env_close, mdb_env_create, mdb_env_info, mdb_env_open,
    mdb_env_set_mapsize, mdb_env_set_maxdbs, mdb_env_set_maxreaders, mdb_env_stat, mdb_env_sync,
    mdb_get, mdb_put, mdb_stat, mdb_strerror, mdb_txn_abort, mdb_txn_begin, mdb_txn_commit,
    mdb_txn_renew, mdb_txn_reset, mdb_version, MdbCursor, MdbDbi, MdbEnv, MdbEnvInfo, MdbStat,
    MdbTxn, MdbVal, MDB_CREATE, MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_NORDAHEAD, MDB_NOSYNC,
    MDB_NOTFOUND, MDB_NOTLS, MDB_PREV, MDB_RDONLY, MDB_SET_RANGE, MDB_WRITEMAP,
};

/// The engine this build's LMDB stands behind: Debian's, or the current one
/// lmdb-master-sys bundles. The adapter is the same.
#[cfg(feature = "lmdb")]
const ENGINE: Engine = Engine::Lmdb;
#[cfg(not(feature = "lmdb"))]
const ENGINE: Engine = Engine::LmdbCurrent;

/// The map size: far beyond any run of the lab (1 TiB of address space;
/// the file itself only grows as pages are used).
const MAP_BYTES: usize = 1 << 40;

/// Reader slots: one per session of the most threads a run starts, plus
/// the writer and the lab's own reads.
const MAX_READERS: c_uint = crate::THREADS_MAX as c_uint + 8;

/// LMDB's message for a return code.
fn message(rc: c_int) -> String {
    // SAFETY: mdb_strerror returns a pointer to a static or thread-local
    // NUL-terminated string for any code.
    let text = unsafe { CStr::from_ptr(mdb_strerror(rc)) };
    format!("{} ({rc})", text.to_string_lossy())
}

/// `Ok` for LMDB's success code, an error naming `what` otherwise.
fn check(rc: c_int, what: &str) -> EngineResult<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(EngineError::peer(
            ENGINE,
            format!("{what}: {}", message(rc)),
        ))
    }
}

/// LMDB's version string.
pub(crate) fn version() -> String {
    // SAFETY: the out-pointers may be null; the result is a static string.
    let text = unsafe {
        CStr::from_ptr(mdb_version(
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        ))
    };
    text.to_string_lossy().into_owned()
}

/// The header's description of the run's options.
pub(crate) fn describe(config: &Config) -> String {
    format!(
        "lmdb, one named database per table, 4 KiB pages, MDB_WRITEMAP, MDB_NORDAHEAD, {}, the OS page cache as cache (--cache_size does not apply), no compression, no bloom filters",
        match config.durability {
            spinney::Durability::Full => "each commit synced",
            _ => "MDB_NOSYNC: each commit written to the OS, not synced",
        }
    )
}

/// The environment, closed when dropped.
struct Env(*mut MdbEnv);

// SAFETY: LMDB's environment handle may be used from any thread (its
// functions take their own locks); the lab never frees it while a session
// borrows it (sessions borrow the store).
unsafe impl Send for Env {}
// SAFETY: as above.
unsafe impl Sync for Env {}

impl Drop for Env {
    fn drop(&mut self) {
        // SAFETY: the handle came from mdb_env_create and is closed once;
        // every transaction and cursor ended with the sessions that
        // borrowed the store.
        unsafe { mdb_env_close(self.0) }
    }
}

/// A transaction this code began; aborted when dropped unless committed.
struct Txn(*mut MdbTxn);

impl Txn {
    fn begin(env: &Env, flags: c_uint) -> EngineResult<Txn> {
        let mut txn = ptr::null_mut();
        // SAFETY: env is open; txn is an out-pointer.
        check(
            unsafe { mdb_txn_begin(env.0, ptr::null_mut(), flags, &mut txn) },
            "begin a transaction",
        )?;
        Ok(Txn(txn))
    }

    fn commit(mut self) -> EngineResult<()> {
        let txn = std::mem::replace(&mut self.0, ptr::null_mut());
        // SAFETY: txn is live; commit frees it whatever it returns.
        check(unsafe { mdb_txn_commit(txn) }, "commit")
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a live transaction not yet committed.
            unsafe { mdb_txn_abort(self.0) }
        }
    }
}

pub(crate) struct LmdbStore {
    /// The named databases, in the order of the run's tables.
    dbis: Vec<MdbDbi>,
    env: Env,
}

/// Opens (creating) the environment in `dir` and a named database per table.
pub(crate) fn open(
    config: &Config,
    dir: &Path,
    tables: &[TableSpec],
) -> Result<Box<dyn Store>, BenchError> {
    let setup = |e: EngineError| BenchError::Engine {
        context: "open the database".into(),
        error: e,
    };
    std::fs::create_dir_all(dir).map_err(BenchError::io(format!("create {}", dir.display())))?;
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| BenchError::Config(format!("{} holds a NUL byte", dir.display())))?;
    let mut raw = ptr::null_mut();
    // SAFETY: raw is an out-pointer.
    check(
        unsafe { mdb_env_create(&mut raw) },
        "create the environment",
    )
    .map_err(setup)?;
    let env = Env(raw);
    let max_dbs = MdbDbi::try_from(tables.len() + 1).unwrap_or(MdbDbi::MAX);
    let mut flags = MDB_NOTLS | MDB_WRITEMAP | MDB_NORDAHEAD;
    if config.durability != spinney::Durability::Full {
        flags |= MDB_NOSYNC;
    }
    // SAFETY: env is created and not yet open, as these calls require;
    // path is NUL-terminated and outlives the call.
    unsafe {
        check(mdb_env_set_mapsize(env.0, MAP_BYTES), "set the map size").map_err(setup)?;
        check(
            mdb_env_set_maxdbs(env.0, max_dbs),
            "set the named databases",
        )
        .map_err(setup)?;
        check(
            mdb_env_set_maxreaders(env.0, MAX_READERS),
            "set the readers",
        )
        .map_err(setup)?;
        check(
            mdb_env_open(env.0, path.as_ptr(), flags, 0o644),
            "open the environment",
        )
        .map_err(setup)?;
    }
    let txn = Txn::begin(&env, 0).map_err(setup)?;
    let mut dbis = Vec::with_capacity(tables.len());
    for spec in tables {
        let name = CString::new(spec.name.as_bytes()).map_err(|_| {
            BenchError::Config(format!("table name {:?} holds a NUL byte", spec.name))
        })?;
        let mut dbi = 0;
        // SAFETY: txn is a live write transaction; name outlives the call.
        check(
            unsafe { mdb_dbi_open(txn.0, name.as_ptr(), MDB_CREATE, &mut dbi) },
            "open a table",
        )
        .map_err(setup)?;
        dbis.push(dbi);
    }
    // Named database handles opened in a write transaction stay valid for
    // the environment's life once it commits.
    txn.commit().map_err(setup)?;
    Ok(Box::new(LmdbStore { dbis, env }))
}

impl LmdbStore {
    fn dbi(&self, table: usize) -> EngineResult<MdbDbi> {
        self.dbis
            .get(table)
            .copied()
            .ok_or_else(|| EngineError::peer(ENGINE, format!("no table number {table}")))
    }

    /// The statistics of table `table`.
    fn stat(&self, table: usize) -> EngineResult<MdbStat> {
        let dbi = self.dbi(table)?;
        let txn = Txn::begin(&self.env, MDB_RDONLY)?;
        let mut stat = MdbStat::default();
        // SAFETY: txn is live and dbi was opened in this environment.
        check(
            unsafe { mdb_stat(txn.0, dbi, &mut stat) },
            "read a table's statistics",
        )?;
        Ok(stat)
    }

    fn env_info(&self) -> EngineResult<(MdbStat, MdbEnvInfo)> {
        let mut stat = MdbStat::default();
        let mut info = MdbEnvInfo {
            _me_mapaddr: ptr::null_mut(),
            me_mapsize: 0,
            me_last_pgno: 0,
            me_last_txnid: 0,
            me_maxreaders: 0,
            me_numreaders: 0,
        };
        // SAFETY: the environment is open; both are out-pointers.
        unsafe {
            check(
                mdb_env_stat(self.env.0, &mut stat),
                "read the environment's statistics",
            )?;
            check(
                mdb_env_info(self.env.0, &mut info),
                "read the environment's information",
            )?;
        }
        Ok((stat, info))
    }
}

impl Store for LmdbStore {
    fn deletes_ranges(&self) -> bool {
        true
    }

    fn session(&self) -> EngineResult<Box<dyn Session + '_>> {
        Ok(Box::new(LmdbSession {
            store: self,
            read: None,
            cursors: Vec::new(),
        }))
    }

    fn write_calls_count_writes(&self) -> bool {
        // MDB_WRITEMAP: pages change in the map, no write call carries them.
        false
    }

    fn operation(&self, op: Benchmark) -> EngineResult<bool> {
        match op {
            Benchmark::Flush | Benchmark::Checkpoint => {
                // SAFETY: the environment is open.
                check(
                    unsafe { mdb_env_sync(self.env.0, 1) },
                    "sync the environment",
                )?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn printout(&self, what: Benchmark) -> EngineResult<Option<String>> {
        let table = self.stat(0)?;
        let shape = format!(
            "lmdb table 0: height {}, {} branch pages, {} leaf pages, {} overflow pages of {} bytes, {} entries",
            table.ms_depth,
            table.ms_branch_pages,
            table.ms_leaf_pages,
            table.ms_overflow_pages,
            table.ms_psize,
            table.ms_entries
        );
        Ok(match what {
            Benchmark::Shape => Some(shape),
            Benchmark::Stats => {
                let (env, info) = self.env_info()?;
                Some(format!(
                    "{shape}\nlmdb environment: map {:.0} GB, last page {} ({:.1} MB used of the file), last transaction {}, readers {} of {}, main database height {} with {} entries",
                    info.me_mapsize as f64 / 1e9,
                    info.me_last_pgno,
                    (info.me_last_pgno + 1) as f64 * f64::from(env.ms_psize) / 1_048_576.0,
                    info.me_last_txnid,
                    info.me_numreaders,
                    info.me_maxreaders,
                    env.ms_depth,
                    env.ms_entries
                ))
            }
            _ => None,
        })
    }

    fn shape_counts(&self) -> ShapeCounts {
        match self.stat(0) {
            Ok(s) => ShapeCounts {
                btree_height: s.ms_depth,
                btree_pages: (s.ms_branch_pages + s.ms_leaf_pages + s.ms_overflow_pages) as u64,
                ..ShapeCounts::default()
            },
            Err(_) => ShapeCounts::default(),
        }
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        // With MDB_NOSYNC nothing forces the last commits to disk; a closing
        // database syncs, as the others do at close.
        // SAFETY: the environment is open; no session outlives the store.
        check(
            unsafe { mdb_env_sync(self.env.0, 1) },
            "sync the environment",
        )?;
        drop(self);
        Ok(())
    }
}

/// One thread's handle: a read transaction kept between reads (reset
/// while idle), and a cursor per table bound to it.
struct LmdbSession<'a> {
    store: &'a LmdbStore,
    read: Option<Txn>,
    /// A cursor per table, opened lazily in `read` (null until then).
    cursors: Vec<*mut MdbCursor>,
}

impl LmdbSession<'_> {
    /// The read transaction, renewed for a fresh view.
    fn begin_read(&mut self) -> EngineResult<*mut MdbTxn> {
        match &self.read {
            Some(txn) => {
                // SAFETY: the transaction was reset after its last use.
                check(unsafe { mdb_txn_renew(txn.0) }, "renew a read transaction")?;
                Ok(txn.0)
            }
            None => {
                let txn = Txn::begin(&self.store.env, MDB_RDONLY)?;
                let raw = txn.0;
                self.read = Some(txn);
                Ok(raw)
            }
        }
    }

    /// Ends the view: the transaction is reset, its snapshot released.
    fn end_read(&mut self) {
        if let Some(txn) = &self.read {
            // SAFETY: a live read transaction; reset keeps it for renewal.
            unsafe { mdb_txn_reset(txn.0) }
        }
    }

    /// The cursor of `table` in the (just renewed) read transaction `txn`.
    fn cursor(&mut self, txn: *mut MdbTxn, table: usize) -> EngineResult<*mut MdbCursor> {
        let dbi = self.store.dbi(table)?;
        if self.cursors.len() <= table {
            self.cursors.resize(table + 1, ptr::null_mut());
        }
        let slot = self
            .cursors
            .get_mut(table)
            .ok_or_else(|| EngineError::peer(ENGINE, "no cursor slot"))?;
        if slot.is_null() {
            // SAFETY: txn is live, dbi belongs to the environment.
            check(unsafe { mdb_cursor_open(txn, dbi, slot) }, "open a cursor")?;
        } else {
            // SAFETY: a read-only cursor may be renewed in a renewed read
            // transaction of the same environment.
            check(unsafe { mdb_cursor_renew(txn, *slot) }, "renew a cursor")?;
        }
        Ok(*slot)
    }

    fn read_get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        let dbi = self.store.dbi(table)?;
        let txn = self.begin_read()?;
        let mut k = MdbVal::of(key);
        let mut v = MdbVal::empty();
        // SAFETY: txn is live; k points at key, which outlives the call.
        let rc = unsafe { mdb_get(txn, dbi, &mut k, &mut v) };
        match rc {
            0 => Ok(Some(v.mv_size)),
            MDB_NOTFOUND => Ok(None),
            rc => check(rc, "get").map(|()| None),
        }
    }

    fn read_seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        let txn = self.begin_read()?;
        let cursor = self.cursor(txn, table)?;
        let mut k = MdbVal::of(key);
        let mut v = MdbVal::empty();
        // SAFETY: cursor is live in txn; k points at key for the call.
        let mut rc = unsafe { mdb_cursor_get(cursor, &mut k, &mut v, MDB_SET_RANGE) };
        let mut seek = Seek::default();
        if rc == 0 {
            // SAFETY: k now points into the map, valid while txn is open.
            seek.found = unsafe { k.bytes() } == key;
        }
        for _ in 0..steps {
            match rc {
                0 => {}
                MDB_NOTFOUND => break,
                rc => return check(rc, "seek").map(|()| seek),
            }
            seek.bytes += (k.mv_size + v.mv_size) as u64;
            // SAFETY: as above.
            rc = unsafe { mdb_cursor_get(cursor, &mut k, &mut v, MDB_NEXT) };
        }
        match rc {
            0 | MDB_NOTFOUND => Ok(seek),
            rc => check(rc, "step").map(|()| seek),
        }
    }

    fn read_scan(
        &mut self,
        table: usize,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> EngineResult<()> {
        let txn = self.begin_read()?;
        let cursor = self.cursor(txn, table)?;
        let mut k = MdbVal::empty();
        let mut v = MdbVal::empty();
        let (first, step) = if forward {
            (MDB_FIRST, MDB_NEXT)
        } else {
            (MDB_LAST, MDB_PREV)
        };
        // SAFETY: cursor is live in txn.
        let mut rc = unsafe { mdb_cursor_get(cursor, &mut k, &mut v, first) };
        while rc == 0 {
            if !visit((k.mv_size + v.mv_size) as u64) {
                return Ok(());
            }
            // SAFETY: as above.
            rc = unsafe { mdb_cursor_get(cursor, &mut k, &mut v, step) };
        }
        match rc {
            MDB_NOTFOUND => Ok(()),
            rc => check(rc, "scan"),
        }
    }
}

/// Deletes every key in `[start, end)` in the write transaction `txn`, as
/// an LMDB user does (LMDB has no range delete): a cursor from `start`,
/// deleting the key it is on until it reaches `end`. After a delete the
/// cursor stands on the next key, which `MDB_NEXT` then returns.
fn delete_range(txn: &Txn, dbi: MdbDbi, start: &[u8], end: &[u8]) -> EngineResult<()> {
    let mut cursor = ptr::null_mut();
    // SAFETY: txn is a live write transaction and dbi one of its databases.
    check(
        unsafe { mdb_cursor_open(txn.0, dbi, &mut cursor) },
        "open a cursor",
    )?;
    let mut k = MdbVal::of(start);
    let mut v = MdbVal::empty();
    // SAFETY: the cursor is open in txn; k points at `start` for the call.
    let mut rc = unsafe { mdb_cursor_get(cursor, &mut k, &mut v, MDB_SET_RANGE) };
    let outcome = loop {
        if rc != 0 {
            break if rc == MDB_NOTFOUND {
                Ok(())
            } else {
                check(rc, "seek")
            };
        }
        // SAFETY: k is the key LMDB holds for the cursor, read before the
        // transaction changes again.
        let key = unsafe { k.bytes() };
        if key >= end {
            break Ok(());
        }
        // SAFETY: the cursor stands on a key of the write transaction.
        let del = unsafe { mdb_cursor_del(cursor, 0) };
        if del != 0 {
            break check(del, "delete");
        }
        // SAFETY: as above.
        rc = unsafe { mdb_cursor_get(cursor, &mut k, &mut v, MDB_NEXT) };
    };
    // SAFETY: opened above, in a write transaction (closed before it ends).
    unsafe { mdb_cursor_close(cursor) };
    outcome
}

impl Session for LmdbSession<'_> {
    fn write(&mut self, batch: &Batch) -> EngineResult<()> {
        let txn = Txn::begin(&self.store.env, 0)?;
        for op in batch.ops() {
            match op {
                Op::Put { table, key, value } => {
                    let dbi = self.store.dbi(table)?;
                    let mut k = MdbVal::of(key);
                    let mut v = MdbVal::of(value);
                    // SAFETY: txn is a live write transaction; LMDB copies
                    // the key and value.
                    check(unsafe { mdb_put(txn.0, dbi, &mut k, &mut v, 0) }, "put")?;
                }
                Op::Delete { table, key } => {
                    let dbi = self.store.dbi(table)?;
                    let mut k = MdbVal::of(key);
                    // SAFETY: as above; a null data deletes every value of
                    // the key.
                    let rc = unsafe { mdb_del(txn.0, dbi, &mut k, ptr::null_mut()) };
                    if rc != MDB_NOTFOUND {
                        check(rc, "delete")?;
                    }
                }
                Op::DeleteRange { table, start, end } => {
                    delete_range(&txn, self.store.dbi(table)?, start, end)?;
                }
            }
        }
        txn.commit()
    }

    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        let outcome = self.read_get(table, key);
        self.end_read();
        outcome
    }

    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        let outcome = self.read_seek(table, key, steps);
        self.end_read();
        outcome
    }

    fn scan(
        &mut self,
        table: usize,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> EngineResult<()> {
        let outcome = self.read_scan(table, forward, visit);
        self.end_read();
        outcome
    }
}

impl Drop for LmdbSession<'_> {
    fn drop(&mut self) {
        for &cursor in &self.cursors {
            if !cursor.is_null() {
                // SAFETY: a cursor of a read transaction may be closed after
                // the transaction is reset; each is closed once.
                unsafe { mdb_cursor_close(cursor) }
            }
        }
        // The read transaction (reset) is aborted by its own Drop.
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
        // Goal: the checks every adapter passes (see `conformance`).
        conformance::all(&open_two);
    }

    #[test]
    fn flush_syncs_and_compaction_is_not_supported() {
        // Goal: the operations LMDB has run; the ones it lacks say so; the
        // shape and statistics come from its own figures.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_two(dir.path());
        let mut s = store.session().expect("session");
        let mut b = Batch::new();
        for i in 0..1000u32 {
            b.put(0, format!("k{i:04}").as_bytes(), &[b'v'; 100]);
        }
        s.write(&b).expect("write");
        drop(s);
        assert!(store.operation(Benchmark::Flush).expect("flush"));
        assert!(store.operation(Benchmark::Checkpoint).expect("checkpoint"));
        for op in [
            Benchmark::Compact,
            Benchmark::Compact0,
            Benchmark::WaitForCompaction,
        ] {
            assert!(!store.operation(op).expect("operation"), "{op}");
        }
        let shape = store.shape_counts();
        assert!(
            shape.btree_height >= 2 && shape.btree_pages > 10,
            "{shape:?}"
        );
        let stats = store
            .printout(Benchmark::Stats)
            .expect("stats")
            .expect("some");
        assert!(stats.contains("1000 entries"), "{stats}");
        store.close().expect("close");
        assert!(dir.path().join(ENGINE.marker()).exists());
    }
}
