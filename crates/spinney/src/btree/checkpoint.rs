//! Checkpoints of a B-tree table, and opening a table at its newest one.
//!
//! A checkpoint (`checkpoint`): freeze (under the commit lock, so no batch
//! is half applied: record the root, the seqno, the fresh pages and the
//! free space, and start a new epoch), write the frozen dirty pages, write
//! the free map, sync, sync the log up to the seqno, write the header slot
//! (alternating, checksummed), sync. Pages the frozen image no longer uses
//! are reused once that header is durable. Opening (`open`) reads the
//! newest valid header slot and the free map; the log is replayed from the
//! header's seqno by the caller.
//!
//! Invariants: a page of the durable image is never written over; the
//! header slot of generation `g` (slot `g % 2`) is written only after
//! everything its image holds is synced, and the log is synced up to its
//! seqno first. A checkpoint that fails after its freeze marks the table
//! failed (the in-memory state is then ahead of the file).
//!
//! Thread-safety: one checkpoint at a time per table (the `ckpt` mutex,
//! held throughout); the freeze also holds the writer's `tree` mutex and,
//! through the caller, the commit lock. Writers and readers go on during
//! the rest.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::format::{Checkpoint, HEADER_BYTES};
use super::page;
use super::store::{image, write_handed_back, PageFile, PageStore, Space};
use super::verify::image_pages;
use super::{file_name, BtreeTable, Root, RootCell, TreeState};
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::fs::{DirectIo, Fs};
use crate::options::TableOptions;

/// Checkpoint figures.
#[derive(Debug, Default)]
pub(crate) struct CheckpointCounters {
    pub checkpoints: AtomicU64,
    pub micros: AtomicU64,
    pub pages: AtomicU64,
    pub bytes: AtomicU64,
    /// Vacuums the idle database ran (`Options::vacuum_after_idle`).
    pub idle_vacuums: AtomicU64,
}

impl BtreeTable {
    /// Creates the file of a new table: an empty tree whose image holds the
    /// log up to `seqno`. Synced; the caller syncs the directory.
    pub(crate) fn create_file(
        fs: &dyn Fs,
        dir: &Path,
        id: u32,
        options: &TableOptions,
        seqno: u64,
    ) -> Result<()> {
        image::create(fs, &dir.join(file_name(id)), options.page_size, id, seqno)
    }

    /// Opens a table's file at its newest valid checkpoint.
    #[expect(
        clippy::too_many_arguments,
        reason = "what open needs is the table's identity, its catalog state and the database's shared parts; a struct would only rename them"
    )]
    pub(crate) fn open(
        fs: &dyn Fs,
        dir: &Path,
        id: u32,
        name: String,
        options: TableOptions,
        cache: Arc<Cache>,
        owner: u64,
        min_generation: u64,
        log_start: u64,
        read_only: bool,
        direct: DirectIo,
        mapped_pages: bool,
    ) -> Result<BtreeTable> {
        let path = dir.join(file_name(id));
        if !fs.exists(&path)? {
            return Err(Error::corruption(
                &path,
                0,
                format!("the file of B-tree table {name:?} is missing"),
            ));
        }
        let file = fs.open_paged_direct(&path, false, direct)?;
        let page_size = options.page_size;
        let (best, why) = image::newest_header(&*file, &path, page_size, id)?;
        let Some(c) = best else {
            return Err(Error::corruption(
                &path,
                0,
                format!("no valid checkpoint header ({why})"),
            ));
        };
        // The manifest records each durable checkpoint after its header:
        // a valid header older than that is a fallback past a damaged newer
        // one (a torn header write is never recorded). It is used only if
        // the log still holds every commit after it (`log_start`: the first
        // seqno in the log); the log behind a durable checkpoint may be
        // deleted.
        if c.generation < min_generation && c.seqno.saturating_add(1) < log_start {
            let damaged = min_generation % 2;
            return Err(Error::corruption(
                &path,
                damaged * page_size as u64,
                format!(
                    "the header of checkpoint generation {min_generation} (slot {damaged}), \
                     durable by the manifest, is damaged ({}); the older checkpoint \
                     (generation {}) cannot be used, since the log after it may be gone",
                    why, c.generation
                ),
            ));
        }
        // Read through a map only where reads go through the OS's page cache
        // (`Options::validate` refuses maps with direct reads).
        let map = (mapped_pages && !direct.reads)
            .then(|| file.map_for_reads())
            .flatten();
        let pf = Arc::new(
            PageFile::new(
                file,
                page_size,
                options.compression,
                owner,
                read_only,
                page::check_structure,
            )
            .with_map(map),
        );
        pf.durable.set(|| image_pages(&pf, &c));
        let state = TreeState {
            space: Space::open(&pf, &c)?,
            ..TreeState::default()
        };
        Ok(BtreeTable {
            id,
            name,
            options,
            dropped: AtomicBool::new(false),
            path,
            store: PageStore::new(pf, cache),
            root: RootCell::new(Root::new(c.root, c.height)),
            tree: Mutex::new(state),
            persisted_seqno: AtomicU64::new(c.seqno),
            durable_generation: AtomicU64::new(c.generation),
            ckpt: Mutex::new(c),
            wal_bytes_at_checkpoint: AtomicU64::new(0),
            changes: AtomicU64::new(0),
            checkpointing: AtomicBool::new(false),
            vacuuming: AtomicBool::new(false),
            vacuumed_at_wal: AtomicU64::new(u64::MAX),
            counters: CheckpointCounters::default(),
        })
    }

    /// Writes a checkpoint (see the module comment). `freeze` runs with
    /// writers held back by the caller's lock guard `hold_writers` and
    /// returns the last seqno and the log bytes; `sync_log` makes the log
    /// durable up to a seqno; `record` records a durable generation in the
    /// manifest (after the header is durable, before the log behind it may
    /// be deleted). Returns the pages written (0 when nothing
    /// changed since the last checkpoint: then only the in-memory persisted
    /// seqno moves, since the log past it holds nothing of this table).
    pub(crate) fn checkpoint<G>(
        &self,
        hold_writers: impl FnOnce() -> (G, u64, u64),
        sync_log: impl FnOnce(u64) -> Result<()>,
        record: impl FnOnce(u64) -> Result<()>,
    ) -> Result<u64> {
        // Pages the cache handed back are written first: a checkpoint is a
        // B-tree write point even when no write comes (see
        // `store::write_handed_back`).
        write_handed_back(&self.store.cache);
        let mut durable = self.ckpt.lock();
        self.check_failed()?;
        let start = Instant::now();
        let (frozen, c, blob, limbo) = {
            let (guard, seqno, wal_bytes) = hold_writers();
            let mut st = self.tree.lock();
            // Again under the commit lock: a commit that failed while this
            // checkpoint waited for it may have left part of a batch.
            self.check_failed()?;
            self.store.reclaim(&mut st.space);
            let trimmed = self.store.trim_file(&mut st.space)?;
            if self.changes.load(Ordering::Acquire) == 0 && st.space.retired.is_empty() && !trimmed
            {
                self.persisted_seqno.fetch_max(seqno, Ordering::AcqRel);
                self.wal_bytes_at_checkpoint
                    .store(wal_bytes, Ordering::Release);
                return Ok(0);
            }
            self.changes.store(0, Ordering::Release);
            let (root, height) = self.root.read().place();
            let frozen = std::mem::take(&mut st.space.fresh);
            // Left by a recovery's replay, which publishes nothing: those
            // leaves were pruned against everything visible already.
            st.untidy.clear();
            st.untidy_keys.clear();
            st.range_deleted = false;
            let old_map = st.space.free_map;
            if old_map.1 > 0 {
                st.space.retired.push(old_map);
            }
            st.space.limbo = std::mem::take(&mut st.space.retired);
            self.store.limbo_dropped.store(false, Ordering::Release);
            let limbo = st.space.limbo.clone();
            let chunk = (self.store.file.image_len() - page::HEADER) as u64;
            let (first, pages, blob) = st.space.place_free_map(chunk);
            st.space.free_map = (first, pages);
            let c = Checkpoint {
                generation: durable.generation + 1,
                root,
                height,
                page_count: st.space.page_count,
                free_map_first: first,
                free_map_pages: pages as u32,
                free_map_len: blob.len() as u32,
                seqno,
            };
            self.wal_bytes_at_checkpoint
                .store(wal_bytes, Ordering::Release);
            drop(st);
            drop(guard);
            (frozen, c, blob, limbo)
        };
        // The frames of the pages this image frees, dropped from the cache
        // here where they may leave at once, without the descents' gate,
        // before any is reused: `reclaim` then drops, with the gate closed,
        // only the few left and those readers read back meanwhile, instead
        // of every one of them (5-23 ms with every reader and the writer
        // waiting, for a 2M-key overwrite's checkpoint). A page dropped is
        // read back from the durable image, which still holds it, by
        // whoever reads it still.
        self.store.drop_idle_frames(&limbo);
        self.store.limbo_dropped.store(true, Ordering::Release);
        // A checkpoint that fails after the freeze leaves the in-memory
        // state ahead of the file: the fresh set and the changes were taken
        // into the failed image, its retired pages moved to limbo, and its
        // free map allocated. A later checkpoint would write an image that
        // misses the failed one's unwritten pages and leaks its limbo, or
        // (finding no change) report the unwritten image durable. So the
        // table is marked failed: later checkpoints and writes of it are
        // refused, and reopening recovers from the durable image and the log.
        let written = self
            .store
            .write_image(
                frozen,
                &c,
                self.id,
                &blob,
                || image_pages(&self.store.file, &c),
                sync_log,
            )
            .and_then(|written| {
                // Durable: a manifest rolled from now on records it; the
                // edit records it in the live manifest.
                self.durable_generation
                    .store(c.generation, Ordering::Release);
                record(c.generation)?;
                Ok(written)
            })
            .inspect_err(|e| self.store.file.fail(&format!("a checkpoint failed: {e}")))?;
        // Durable: what only older images used is free now, once no
        // descent is reading it, and the pages taken from it early may be
        // written.
        // Dropped after the writer's lock is let go: the cache may write
        // and evict those frames from then on.
        let _held = self.store.after_durable(&mut self.tree.lock().space);
        *durable = c;
        self.persisted_seqno.fetch_max(c.seqno, Ordering::AcqRel);
        let pages = written + u64::from(c.free_map_pages);
        let bytes = pages * self.store.file.page_size as u64 + HEADER_BYTES as u64;
        self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.counters.pages.fetch_add(pages, Ordering::Relaxed);
        self.counters.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.counters
            .micros
            .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
        Ok(written.max(1))
    }

    /// Holds back checkpoints (for dropping the table).
    pub(crate) fn lock_checkpoints(&self) -> parking_lot::MutexGuard<'_, Checkpoint> {
        self.ckpt.lock()
    }

    /// When the table has not changed since its last checkpoint and none
    /// is running, its image holds everything up to `visible` (read by the
    /// caller before this call), so the log before that is not needed for
    /// it: moves the persisted seqno there, in memory only (after a crash,
    /// replay finds nothing of this table past the durable seqno).
    ///
    /// Not after a failed checkpoint: it took the changes into an image it
    /// never made durable (`changes` reads zero), and marked the table
    /// failed before it let go of the checkpoint lock. Moving the seqno
    /// then would let the log behind the durable image go, in the window
    /// before the failure poisons the database.
    pub(crate) fn mark_clean_upto(&self, visible: u64) {
        if let Some(_durable) = self.ckpt.try_lock() {
            // A change is counted before its seqno becomes visible.
            if self.changes.load(Ordering::Acquire) == 0 && self.store.file.failed.lock().is_none()
            {
                self.persisted_seqno.fetch_max(visible, Ordering::AcqRel);
            }
        }
    }

    /// Whether the table has changed since its last checkpoint.
    pub(crate) fn has_changes(&self) -> bool {
        self.changes.load(Ordering::Acquire) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mvcc::horizon::Horizon;
    use crate::mvcc::key::Kind;

    #[test]
    fn a_failed_checkpoint_never_lets_the_log_behind_its_image_go() {
        // Goal: after a checkpoint fails past its freeze, the table must not
        // report the log before the last seqno as unneeded: its image is the
        // older one. (Found racing two checkpoints in
        // `tests/crash_checkpoint.rs`: the one that succeeded let go of the
        // log between the other's failure and the database's poisoning.)
        // Method: one entry, a checkpoint whose log sync fails, then the
        // question `log::delete_obsolete` asks.
        let dir = tempfile::tempdir().expect("tempdir");
        let table = super::super::scratch_table(dir.path(), 4096, 3);
        {
            let mut st = table.writer();
            let horizon = Horizon::no_readers(4);
            table
                .apply(&mut st, 4, Kind::Put, b"key", b"value", &horizon)
                .expect("apply");
        }
        let failed = table.checkpoint(
            || ((), 4, 0),
            |_| Err(Error::io("sync", "log", std::io::Error::other("injected"))),
            |_| Ok(()),
        );
        assert!(failed.is_err(), "the checkpoint did not fail");
        table.mark_clean_upto(4);
        assert_eq!(
            table.persisted_seqno.load(Ordering::Acquire),
            3,
            "a failed checkpoint's table claimed the log up to its freeze"
        );
    }
}
