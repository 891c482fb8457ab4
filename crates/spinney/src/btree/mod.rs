//! B-tree tables: a B+tree of slotted pages in one file per table, cached in
//! the database's one cache, made durable by the shared log plus
//! copy-on-write checkpoints.
//!
//! **Versions.** Leaves hold internal keys (user key + seqno + kind), as the
//! LSM tables do, so snapshots and cursors read a B-tree table exactly as
//! they read an LSM table (`mvcc::cursor` over `BtreeIter`). A write adds a
//! version; versions no reader can see are pruned whenever a leaf is copied
//! or fills up (`prune`): a version stays while it is the newest at or below
//! some live snapshot or the visible seqno, or is the newest not yet
//! visible (`mvcc::Horizon`, the rule LSM compaction drops versions by).
//! Leaves a commit group split to hold both versions of its keys
//! are pruned and packed again once it is published (`tidy`).
//!
//! **Concurrency.** One writer at a time (the commit leader, recovery, or a
//! checkpoint's freeze) holds `tree`; readers never take it. Readers descend
//! with latch coupling: a page's read latch is taken before its parent's is
//! released, starting from the `root` lock. The writer changes a page only
//! under its write latch, and takes latches top-down, so readers and the
//! writer cannot deadlock; a split or merge holds the write latches of the
//! whole path while it moves cells, so readers see a page before or after,
//! never between.
//!
//! **Copy-on-write.** A page the last checkpoint wrote is never written
//! over. The first change to such a page after a checkpoint's freeze copies
//! it to a newly allocated page (and so its parent, up to the root); pages
//! allocated since the freeze (`fresh`) are changed in place and may be
//! written any number of times, by eviction or by the checkpoint.
//!
//! **Checkpoint** (`checkpoint`): freeze (under the commit lock, so no batch
//! is half applied: record the root, the seqno, the fresh pages and the free
//! space, and start a new epoch), write the frozen dirty pages, write the
//! free map, sync, sync the log up to the seqno, write the header slot
//! (alternating, checksummed), sync. Pages the frozen image no longer uses
//! are reused once that header is durable. Recovery reads the newest valid
//! header and replays the log from its seqno.

pub(crate) mod iter;
pub(crate) mod page;
pub(crate) mod verify;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::lock_api::{ArcRwLockReadGuard, ArcRwLockWriteGuard};
use parking_lot::{Mutex, RawRwLock, RwLock};

use self::page::{Frame, PageBuf, PageCounters, PageFile, Value};
use crate::cache::Cache;
use crate::encoding::crc32c;
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::{self, internal_key, Kind, ParsedKey, KIND_SEEK, SEQNO_MAX};
use crate::mvcc::Horizon;
use crate::options::TableOptions;
use crate::read_context::{self, ReadContext};

pub(crate) type ReadGuard = ArcRwLockReadGuard<RawRwLock, PageBuf>;
type WriteGuard = ArcRwLockWriteGuard<RawRwLock, PageBuf>;

/// Pages 0 and 1 hold the two header slots; data pages start at 2.
const FIRST_DATA_PAGE: u64 = 2;
const HEADER_MAGIC: &[u8; 8] = b"SPNYBTR1";
const HEADER_VERSION: u32 = 1;
const HEADER_BYTES: usize = 88;

/// Bytes a page is charged in the cache beyond its size (frame, map entry).
const FRAME_OVERHEAD: u64 = 96;

pub(crate) fn file_name(table_id: u32) -> String {
    format!("{table_id:06}.btree")
}

/// The largest user key a B-tree table with `page_size` pages takes: a
/// quarter of a page, so that every page holds at least four cells.
pub(crate) fn max_key_len(page_size: usize) -> usize {
    max_cell_len(page_size) - 2 - 1 - 4 - 8 - 4 - key::TRAILER_BYTES
}

fn max_cell_len(page_size: usize) -> usize {
    (page_size - page::DISK_HEADER - page::HEADER) / 4 - 2
}

/// The durable state a header slot records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Checkpoint {
    pub generation: u64,
    pub root: u64,
    pub height: u32,
    pub page_count: u64,
    pub free_map_first: u64,
    pub free_map_pages: u32,
    pub free_map_len: u32,
    /// Every log entry up to this seqno is in the image.
    pub seqno: u64,
}

impl Checkpoint {
    fn encode(&self, page_size: usize, table_id: u32) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_BYTES);
        b.extend_from_slice(HEADER_MAGIC);
        b.extend_from_slice(&HEADER_VERSION.to_le_bytes());
        b.extend_from_slice(&(page_size as u32).to_le_bytes());
        b.extend_from_slice(&table_id.to_le_bytes());
        b.extend_from_slice(&self.generation.to_le_bytes());
        b.extend_from_slice(&self.root.to_le_bytes());
        b.extend_from_slice(&self.height.to_le_bytes());
        b.extend_from_slice(&self.page_count.to_le_bytes());
        b.extend_from_slice(&self.free_map_first.to_le_bytes());
        b.extend_from_slice(&self.free_map_pages.to_le_bytes());
        b.extend_from_slice(&self.free_map_len.to_le_bytes());
        b.extend_from_slice(&self.seqno.to_le_bytes());
        let crc = crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b.resize(HEADER_BYTES, 0);
        b
    }

    /// Decodes a header slot; Err says why it is not a valid one.
    pub(crate) fn decode(
        b: &[u8],
        page_size: usize,
        table_id: u32,
    ) -> std::result::Result<Checkpoint, String> {
        use page::{u32_at, u64_at};
        if b.get(..8) != Some(HEADER_MAGIC.as_slice()) {
            return Err("no header magic".into());
        }
        let body = b.get(..72).ok_or("short header")?;
        if crc32c(body) != u32_at(b, 72) {
            return Err("header checksum mismatch".into());
        }
        if u32_at(b, 8) != HEADER_VERSION {
            return Err(format!("unknown header version {}", u32_at(b, 8)));
        }
        if u32_at(b, 12) as usize != page_size || u32_at(b, 16) != table_id {
            return Err(format!(
                "header is for table {} with {}-byte pages, expected table {table_id} with {page_size}",
                u32_at(b, 16),
                u32_at(b, 12)
            ));
        }
        let c = Checkpoint {
            generation: u64_at(b, 20),
            root: u64_at(b, 28),
            height: u32_at(b, 36),
            page_count: u64_at(b, 40),
            free_map_first: u64_at(b, 48),
            free_map_pages: u32_at(b, 56),
            free_map_len: u32_at(b, 60),
            seqno: u64_at(b, 64),
        };
        let in_file = |p: u64| p >= FIRST_DATA_PAGE && p < c.page_count;
        if c.page_count < FIRST_DATA_PAGE
            || (c.root != 0 && !in_file(c.root))
            || (c.root == 0) != (c.height == 0)
            || (c.free_map_pages > 0
                && !(in_file(c.free_map_first)
                    && c.free_map_first + u64::from(c.free_map_pages) <= c.page_count))
            || c.seqno > SEQNO_MAX
        {
            return Err(format!("header fields out of range: {c:?}"));
        }
        Ok(c)
    }
}

#[derive(Debug, Clone, Copy)]
struct Root {
    pgno: u64,
    height: u32,
}

/// What only the writer touches: page allocation across checkpoint epochs.
#[derive(Debug, Default)]
pub(crate) struct TreeState {
    /// Pages in the file (the next page to extend it with).
    page_count: u64,
    /// Free extents (first page -> pages), allocatable now.
    free: BTreeMap<u64, u64>,
    /// Pages allocated since the last freeze: changed in place.
    fresh: HashSet<u64>,
    /// Pages of the last frozen image replaced since the freeze: free in
    /// the next image, allocatable once it is durable.
    retired: Vec<(u64, u64)>,
    /// Pages retired before the last freeze, waiting for that checkpoint to
    /// be durable.
    limbo: Vec<(u64, u64)>,
    /// Pages free in the durable image that a descent begun before they
    /// were freed may still be reading (see `reclaim`).
    unreachable: Vec<(u64, u64)>,
    /// The free map run of the last image.
    free_map: (u64, u64),
    /// Leaves split by the commit group being applied while they held
    /// versions that its publication makes invisible (see `tidy`), and a
    /// key in each.
    untidy: HashSet<u64>,
    untidy_keys: Vec<Vec<u8>>,
}

impl TreeState {
    fn alloc(&mut self, pages: u64) -> u64 {
        let found = self
            .free
            .iter()
            .find(|(_, &len)| len >= pages)
            .map(|(&s, &l)| (s, l));
        let first = match found {
            Some((start, len)) => {
                self.free.remove(&start);
                if len > pages {
                    self.free.insert(start + pages, len - pages);
                }
                start
            }
            None => {
                let start = self.page_count;
                self.page_count += pages;
                start
            }
        };
        self.fresh.extend(first..first + pages);
        first
    }

    /// Frees a run: at once if it was allocated since the freeze, else
    /// once the next checkpoint is durable.
    fn release(&mut self, first: u64, pages: u64) {
        if self.fresh.contains(&first) {
            for p in first..first + pages {
                self.fresh.remove(&p);
            }
            add_extent(&mut self.free, first, pages);
        } else {
            self.retired.push((first, pages));
        }
    }

    /// The free extents of the image being frozen: free now, or used only
    /// by older images.
    fn image_free(&self) -> BTreeMap<u64, u64> {
        let mut extents = self.free.clone();
        for &(f, n) in self.limbo.iter().chain(&self.unreachable) {
            add_extent(&mut extents, f, n);
        }
        extents
    }

    /// Whether no leaf waits for `BtreeTable::tidy`.
    pub(crate) fn is_tidy(&self) -> bool {
        self.untidy_keys.is_empty()
    }

    fn free_pages(&self) -> u64 {
        self.free.values().sum::<u64>()
            + self.retired.iter().map(|r| r.1).sum::<u64>()
            + self.limbo.iter().map(|r| r.1).sum::<u64>()
            + self.unreachable.iter().map(|r| r.1).sum::<u64>()
    }
}

fn add_extent(map: &mut BTreeMap<u64, u64>, mut first: u64, mut pages: u64) {
    if pages == 0 {
        return;
    }
    if let Some((&s, &l)) = map.range(..first).next_back() {
        if s + l == first {
            map.remove(&s);
            first = s;
            pages += l;
        }
    }
    if let Some(&l) = map.get(&(first + pages)) {
        map.remove(&(first + pages));
        pages += l;
    }
    map.insert(first, pages);
}

/// Checkpoint figures.
#[derive(Debug, Default)]
pub(crate) struct CheckpointCounters {
    pub checkpoints: AtomicU64,
    pub micros: AtomicU64,
    pub pages: AtomicU64,
    pub bytes: AtomicU64,
}

pub(crate) struct BtreeTable {
    pub id: u32,
    pub name: String,
    pub options: TableOptions,
    pub dropped: AtomicBool,
    pub path: PathBuf,
    pub file: Arc<PageFile>,
    cache: Arc<Cache>,
    root: RwLock<Root>,
    tree: Mutex<TreeState>,
    /// Held for a whole checkpoint; guards `durable`.
    ckpt: Mutex<Checkpoint>,
    /// The seqno of the durable checkpoint: the log before it is not needed.
    pub persisted_seqno: AtomicU64,
    /// The generation of the durable checkpoint.
    pub durable_generation: AtomicU64,
    /// Log bytes written when the last checkpoint froze.
    pub wal_bytes_at_checkpoint: AtomicU64,
    /// Entries applied since the last freeze (whether a checkpoint has work).
    pub changes: AtomicU64,
    /// A background checkpoint of this table is claimed (under `bg`).
    pub checkpointing: AtomicBool,
    pub counters: CheckpointCounters,
    /// Held shared by every descent for as long as it reads pages it found
    /// through the tree, and taken exclusively (`try_write`, never waited
    /// for) to reuse the pages of an older image (`reclaim`).
    descents: RwLock<()>,
}

impl std::fmt::Debug for BtreeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BtreeTable")
            .field("id", &self.id)
            .field("name", &self.name)
            .finish()
    }
}

/// Which leaf a descent looks for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    First,
    Last,
    /// The leaf that holds the first key >= this one.
    AtOrAfter(&'a [u8]),
    /// The leaf that holds the last key < this one.
    Before(&'a [u8]),
}

/// A leaf found by a read descent, latched, with the separators around it.
pub(crate) struct Leaf<'a> {
    pub guard: ReadGuard,
    pub low: Option<Vec<u8>>,
    pub high: Option<Vec<u8>>,
    /// Keeps the pages of the tree this descent went through (and the
    /// overflow runs they name) from being reused while the leaf is read.
    _descent: parking_lot::RwLockReadGuard<'a, ()>,
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
        let path = dir.join(file_name(id));
        let file = fs.open_paged(&path, true)?;
        let c = Checkpoint {
            generation: 1,
            page_count: FIRST_DATA_PAGE,
            seqno,
            ..Checkpoint::default()
        };
        // Generation 1 in slot 1 (the slot is the generation's parity), so
        // that the first checkpoint writes slot 0 and a torn write of it
        // falls back to this one.
        let mut slot = c.encode(options.page_size, id);
        slot.resize(options.page_size, 0);
        file.write_at(0, &vec![0; options.page_size])?;
        file.write_at(options.page_size as u64, &slot)?;
        file.sync()
    }

    /// Opens a table's file at its newest valid checkpoint.
    #[allow(clippy::too_many_arguments)]
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
    ) -> Result<BtreeTable> {
        let path = dir.join(file_name(id));
        if !fs.exists(&path)? {
            return Err(Error::corruption(
                &path,
                0,
                format!("the file of B-tree table {name:?} is missing"),
            ));
        }
        let file = fs.open_paged(&path, false)?;
        let page_size = options.page_size;
        let mut best: Option<Checkpoint> = None;
        let mut why = Vec::new();
        for slot in 0..2u64 {
            let mut b = vec![0u8; HEADER_BYTES];
            let n = file.read_at(slot * page_size as u64, &mut b)?;
            match Checkpoint::decode(b.get(..n).unwrap_or(&[]), page_size, id) {
                Ok(c) if best.is_none_or(|b| c.generation > b.generation) => best = Some(c),
                Ok(_) => {}
                Err(e) => why.push(format!("slot {slot}: {e}")),
            }
        }
        let Some(c) = best else {
            return Err(Error::corruption(
                &path,
                0,
                format!("no valid checkpoint header ({})", why.join("; ")),
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
                    "the header of checkpoint generation {min_generation} (slot {damaged}),                      durable by the manifest, is damaged ({}); the older checkpoint                      (generation {}) cannot be used, since the log after it may be gone",
                    why.join("; "),
                    c.generation
                ),
            ));
        }
        let pf = Arc::new(PageFile {
            file,
            page_size,
            compression: options.compression,
            owner,
            counters: PageCounters::default(),
            failed: Mutex::new(None),
            loading: Mutex::default(),
        });
        let mut state = TreeState {
            page_count: c.page_count,
            free_map: (c.free_map_first, u64::from(c.free_map_pages)),
            ..TreeState::default()
        };
        if c.free_map_pages > 0 {
            let blob = read_run(
                &pf,
                c.free_map_first,
                c.free_map_pages,
                c.free_map_len,
                page::KIND_FREE_MAP,
            )?;
            let bad = |d: &str| pf.corrupt(c.free_map_first, format!("free map: {d}"));
            if blob.len() % 16 != 0 {
                return Err(bad("length is not a whole number of extents"));
            }
            for e in blob.chunks_exact(16) {
                let (first, pages) = (page::u64_at(e, 0), page::u64_at(e, 8));
                let end = first.checked_add(pages);
                if first < FIRST_DATA_PAGE || end.is_none_or(|end| end > c.page_count) {
                    return Err(bad(&format!("extent {first}+{pages} outside the file")));
                }
                add_extent(&mut state.free, first, pages);
            }
        }
        Ok(BtreeTable {
            id,
            name,
            options,
            dropped: AtomicBool::new(false),
            path,
            file: pf,
            cache,
            root: RwLock::new(Root {
                pgno: c.root,
                height: c.height,
            }),
            tree: Mutex::new(state),
            persisted_seqno: AtomicU64::new(c.seqno),
            durable_generation: AtomicU64::new(c.generation),
            ckpt: Mutex::new(c),
            wal_bytes_at_checkpoint: AtomicU64::new(0),
            changes: AtomicU64::new(0),
            descents: RwLock::new(()),
            checkpointing: AtomicBool::new(false),
            counters: CheckpointCounters::default(),
        })
    }

    fn charge(&self) -> u64 {
        self.file.page_size as u64 + FRAME_OVERHEAD
    }

    /// Whether a page write failed (in an eviction); the table takes no
    /// more writes then.
    pub(crate) fn check_failed(&self) -> Result<()> {
        match &*self.file.failed.lock() {
            Some(reason) => Err(Error::ReadOnly {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The frame of page `pgno`, from the cache or read from the file.
    fn fetch(&self, pgno: u64, ctx: &mut ReadContext) -> Result<Arc<Frame>> {
        let key = (self.file.owner, pgno);
        let hit = |f: Arc<Frame>, ctx: &mut ReadContext| {
            self.file
                .counters
                .from_cache
                .fetch_add(1, Ordering::Relaxed);
            ctx.blocks_from_cache += 1;
            f
        };
        if let Some(f) = self.cache.get_page(&key) {
            return Ok(hit(f, ctx));
        }
        // A read from the file must not put back an image older than one
        // the cache held meanwhile: while this read ran, a writer could
        // load the page, change it, and have it evicted (written), and the
        // image read here then replaced the newer one in the cache, losing
        // the change. So the load is registered, and `page::write_back`
        // keeps a page in the cache while it is loading; looking again after
        // registering catches an eviction that came before it (its write is
        // then in the file).
        let _loading = page::Loading::start(&self.file, pgno);
        if let Some(f) = self.cache.get_page(&key) {
            return Ok(hit(f, ctx));
        }
        let image = self.file.read_page(pgno)?;
        if !matches!(page::kind(&image), page::KIND_LEAF | page::KIND_BRANCH) {
            return Err(self
                .file
                .corrupt(pgno, "a tree points at a page that is not a leaf or branch"));
        }
        ctx.blocks_from_storage += 1;
        ctx.bytes_read += self.file.page_size as u64;
        let frame = Arc::new(RwLock::new(PageBuf {
            file: Arc::clone(&self.file),
            pgno,
            dirty: AtomicBool::new(false),
            image,
        }));
        Ok(self.cache.insert_page(key, frame, self.charge(), false))
    }

    /// Descends to a leaf with latch coupling. None when the tree is empty.
    /// The separators around the leaf are copied out only if `bounds`.
    pub(crate) fn descend(
        &self,
        target: Target<'_>,
        bounds: bool,
        ctx: &mut ReadContext,
    ) -> Result<Option<Leaf<'_>>> {
        let descent = self.descents.read();
        let root = self.root.read();
        if root.pgno == 0 {
            return Ok(None);
        }
        let height = root.height;
        let mut guard = self.fetch(root.pgno, ctx)?.read_arc();
        drop(root);
        let (mut low, mut high) = (None, None);
        let mut depth = 1;
        loop {
            let p = &guard.image;
            match page::kind(p) {
                page::KIND_LEAF => {
                    return Ok(Some(Leaf {
                        guard,
                        low,
                        high,
                        _descent: descent,
                    }));
                }
                page::KIND_BRANCH if depth < height => {}
                _ => {
                    return Err(self.file.corrupt(
                        guard.pgno,
                        "tree is deeper than its height or not a tree page",
                    ))
                }
            }
            let n = page::count(p);
            let pos = match target {
                Target::First => 0,
                Target::Last => n,
                Target::AtOrAfter(t) => page::branch_position(p, t, &mut ctx.keys_compared),
                Target::Before(t) => page::lower_bound(p, t, &mut ctx.keys_compared),
            };
            if bounds && pos > 0 {
                low = Some(page::ikey(p, pos - 1).to_vec());
            }
            if bounds && pos < n {
                high = Some(page::ikey(p, pos).to_vec());
            }
            let child = page::child_at(p, pos);
            let next = self.fetch(child, ctx)?.read_arc();
            guard = next;
            depth += 1;
        }
    }

    /// Reads a value out of its overflow run.
    pub(crate) fn read_value(&self, v: Value<'_>, ctx: &mut ReadContext) -> Result<Vec<u8>> {
        match v {
            Value::Inline(b) => Ok(b.to_vec()),
            Value::Overflow { len, first, pages } => {
                ctx.blocks_from_storage += u64::from(pages);
                ctx.bytes_read += u64::from(pages) * self.file.page_size as u64;
                read_run(&self.file, first, pages, len, page::KIND_OVERFLOW)
            }
        }
    }

    /// The value of `user_key` read with an iterator at `seqno`: the
    /// answer to a `Lookup::Continue`, for a key whose versions run into the
    /// next leaf. The caller holds a registered snapshot at `seqno` (so
    /// that no version the read needs is pruned while it walks the leaves).
    pub(crate) fn get_across_leaves(
        self: &Arc<Self>,
        user_key: &[u8],
        seqno: u64,
    ) -> Result<Option<Vec<u8>>> {
        let mut it = iter::BtreeIter::new(Arc::clone(self));
        it.seek(&internal_key(user_key, seqno, KIND_SEEK));
        if !it.valid() {
            it.status()?;
            return Ok(None);
        }
        match ParsedKey::parse(it.key()) {
            Some(k) if k.user_key == user_key && k.kind == Kind::Put => {
                Ok(Some(it.value().to_vec()))
            }
            _ => Ok(None),
        }
    }

    /// The value of `user_key` as of `snapshot`, or as of now when None.
    /// When the key's versions run into the next leaf, `Lookup::Continue`
    /// says so: the caller registers a snapshot and reads on with
    /// `get_across_leaves`.
    pub(crate) fn get(
        &self,
        user_key: &[u8],
        snapshot: Option<u64>,
        visible: &AtomicU64,
    ) -> Result<Lookup> {
        let mut ctx = ReadContext {
            gets: 1,
            trees_searched: 1,
            ..ReadContext::default()
        };
        let result = self.get_counted(user_key, snapshot, visible, &mut ctx);
        read_context::add(&ctx);
        result
    }

    fn get_counted(
        &self,
        user_key: &[u8],
        snapshot: Option<u64>,
        visible: &AtomicU64,
        ctx: &mut ReadContext,
    ) -> Result<Lookup> {
        let newest = internal_key(user_key, SEQNO_MAX, KIND_SEEK);
        let Some(leaf) = self.descend(Target::AtOrAfter(&newest), false, ctx)? else {
            return Ok(Lookup::Absent);
        };
        // Without a snapshot the seqno is read under the leaf's latch: the
        // writer prunes only under it, and keeps the newest version at or
        // below the visible seqno of that moment.
        let seqno = snapshot.unwrap_or_else(|| visible.load(Ordering::Acquire));
        let p = &leaf.guard.image;
        let seek = internal_key(user_key, seqno, KIND_SEEK);
        let pos = page::lower_bound(p, &seek, &mut ctx.keys_compared);
        if pos < page::count(p) {
            let k = page::ikey(p, pos);
            return match ParsedKey::parse(k) {
                Some(pk) if pk.user_key == user_key => match pk.kind {
                    Kind::Put => Ok(Lookup::Value(self.read_value(page::value(p, pos), ctx)?)),
                    Kind::Delete => Ok(Lookup::Absent),
                },
                Some(_) => Ok(Lookup::Absent),
                None => Err(self.file.corrupt(leaf.guard.pgno, "bad key trailer")),
            };
        }
        // Past the leaf's last key. The descent went to the leaf that holds
        // the key's newest versions, so if the last key is another (smaller)
        // key, this key is absent; if it is this key, its older versions may
        // go on in the next leaf, and an iterator reads on.
        let n = page::count(p);
        match (n > 0).then(|| key::user_key(page::ikey(p, n - 1))) {
            Some(last) if last != user_key => Ok(Lookup::Absent),
            _ => Ok(Lookup::Continue(seqno)),
        }
    }

    /// Starts a write: the writer's state, held until the caller is done.
    pub(crate) fn writer(&self) -> parking_lot::MutexGuard<'_, TreeState> {
        self.tree.lock()
    }

    /// Applies one entry. The caller holds `writer()`.
    pub(crate) fn apply(
        &self,
        st: &mut TreeState,
        seqno: u64,
        kind: Kind,
        user_key: &[u8],
        value: &[u8],
        horizon: &Horizon,
    ) -> Result<()> {
        self.check_failed()?;
        // A failed entry may leave part of its batch in the pages, or pages
        // allocated and never used (a failed overflow write): the tree no
        // longer matches its page accounting. Mark the table failed, so
        // that no checkpoint (one waiting for the commit lock included)
        // writes that state as an image; the log replays it at reopen.
        self.apply_entry(st, seqno, kind, user_key, value, horizon)
            .inspect_err(|e| self.file.fail(&format!("applying a write failed: {e}")))
    }

    fn apply_entry(
        &self,
        st: &mut TreeState,
        seqno: u64,
        kind: Kind,
        user_key: &[u8],
        value: &[u8],
        horizon: &Horizon,
    ) -> Result<()> {
        self.reclaim(st);
        self.changes.fetch_add(1, Ordering::Relaxed);
        let ik = internal_key(user_key, seqno, kind);
        let inline = page::leaf_cell(&ik, Value::Inline(value));
        let cell = if inline.len() <= max_cell_len(self.file.page_size) {
            inline
        } else {
            let (first, pages) = self.write_overflow(st, value)?;
            page::leaf_cell(
                &ik,
                Value::Overflow {
                    len: value.len() as u32,
                    first,
                    pages,
                },
            )
        };
        let path = self.write_path(st, &ik, horizon)?;
        let Some((leaf, _)) = path.last() else {
            return self.new_root(st, &cell);
        };
        let mut g = leaf.write();
        let p = &mut g.image;
        let mut unused = 0;
        let pos = page::lower_bound(p, &ik, &mut unused);
        if pos < page::count(p) && page::ikey(p, pos) == ik.as_slice() {
            // The same version again: a replay of the log over a page that
            // already holds it.
            let old = page::value(p, pos);
            self.release_value(st, old);
            page::remove(p, pos);
        }
        if page::insert(p, pos, &cell) {
            g.dirty.store(true, Ordering::Release);
            let small = page::used(&g.image) < g.image.len() / 4;
            let continues = last_version(&g.image)
                .filter(|(k, _)| k.as_slice() == user_key)
                .map(|(_, seqno)| seqno);
            drop(g);
            if let Some(seqno) = continues {
                self.prune_continuation(st, user_key, seqno, horizon)?;
            }
            if small && path.len() > 1 {
                self.merge(st, &path, horizon)?;
            }
            return Ok(());
        }
        self.prune(st, &mut g.image, horizon);
        g.dirty.store(true, Ordering::Release);
        let p = &mut g.image;
        let pos = page::lower_bound(p, &ik, &mut unused);
        // Split unless pruning left 1/32 of the page free (a little more
        // than the cell, so that a page of live data one cell from full is
        // not pruned again by every insert). A larger margin splits leaves
        // whose live data fills most of the page: 400,000 random
        // overwrites of 400,000 keys left a tree of 9,932 pages with a
        // quarter, 8,289 with 1/32 (docs/design.md).
        if page::free_space(p) >= p.len() / 32 && page::insert(p, pos, &cell) {
            return Ok(());
        }
        drop(g);
        self.split(st, &path, &ik, cell)
    }

    fn new_root(&self, st: &mut TreeState, cell: &[u8]) -> Result<()> {
        let pgno = st.alloc(1);
        let mut image = vec![0u8; self.file.image_len()];
        page::init(&mut image, page::KIND_LEAF, 0);
        page::insert(&mut image, 0, cell);
        self.install_page(pgno, image);
        *self.root.write() = Root { pgno, height: 1 };
        Ok(())
    }

    /// Caches a new page, dirty, replacing any stale frame of its number.
    fn install_page(&self, pgno: u64, image: Vec<u8>) -> Arc<Frame> {
        let frame = Arc::new(RwLock::new(PageBuf {
            file: Arc::clone(&self.file),
            pgno,
            dirty: AtomicBool::new(true),
            image,
        }));
        self.cache
            .insert_page((self.file.owner, pgno), frame, self.charge(), true)
    }

    /// The path from the root to the leaf for `ik`, every page on it fresh
    /// (copied if the last checkpoint wrote it). Each element is a page and
    /// its position in its parent.
    fn write_path(
        &self,
        st: &mut TreeState,
        ik: &[u8],
        horizon: &Horizon,
    ) -> Result<Vec<(Arc<Frame>, usize)>> {
        let mut ctx = ReadContext::default();
        let root = *self.root.read();
        let mut path: Vec<(Arc<Frame>, usize)> = Vec::with_capacity(root.height as usize);
        if root.pgno == 0 {
            return Ok(path);
        }
        let mut pgno = root.pgno;
        let mut pos_in_parent = 0;
        loop {
            let mut frame = self.fetch(pgno, &mut ctx)?;
            if !st.fresh.contains(&pgno) {
                frame = self.copy_page(
                    st,
                    &frame,
                    path.last().map(|(f, _)| f),
                    pos_in_parent,
                    horizon,
                )?;
            }
            let (is_leaf, child, pos) = {
                let g = frame.read();
                let p = &g.image;
                match page::kind(p) {
                    page::KIND_LEAF => (true, 0, 0),
                    page::KIND_BRANCH if path.len() + 1 < root.height as usize => {
                        let pos = page::branch_position(p, ik, &mut ctx.keys_compared);
                        (false, page::child_at(p, pos), pos)
                    }
                    _ => return Err(self.file.corrupt(g.pgno, "tree is deeper than its height")),
                }
            };
            path.push((frame, pos_in_parent));
            if is_leaf {
                return Ok(path);
            }
            pgno = child;
            pos_in_parent = pos;
        }
    }

    /// Copies a page the last checkpoint wrote to a new page (pruning a
    /// leaf on the way), and points its parent (or the root) at the copy.
    fn copy_page(
        &self,
        st: &mut TreeState,
        old: &Arc<Frame>,
        parent: Option<&Arc<Frame>>,
        pos: usize,
        horizon: &Horizon,
    ) -> Result<Arc<Frame>> {
        let (old_pgno, mut image) = {
            let g = old.read();
            (g.pgno, g.image.clone())
        };
        if page::kind(&image) == page::KIND_LEAF {
            self.prune(st, &mut image, horizon);
        }
        let pgno = st.alloc(1);
        let frame = self.install_page(pgno, image);
        match parent {
            None => self.root.write().pgno = pgno,
            Some(parent) => {
                let mut pg = parent.write();
                page::set_child_at(&mut pg.image, pos, pgno);
                pg.dirty.store(true, Ordering::Release);
            }
        }
        st.release(old_pgno, 1);
        Ok(frame)
    }

    /// Drops the versions of a leaf that no reader can see (`Horizon`), and
    /// frees their overflow runs.
    fn prune(&self, st: &mut TreeState, p: &mut [u8], horizon: &Horizon) {
        self.prune_after(st, p, horizon, None);
    }

    /// `prune`, for a leaf whose first versions go on from the previous
    /// leaf, where `newer` is the (user key, seqno) of the last version
    /// there: the first group's newest version is then weighed against it
    /// instead of being kept as the newest.
    fn prune_after(
        &self,
        st: &mut TreeState,
        p: &mut [u8],
        horizon: &Horizon,
        newer_before: Option<(&[u8], u64)>,
    ) {
        let n = page::count(p);
        let ikeys: Vec<&[u8]> = (0..n).map(|i| page::ikey(p, i)).collect();
        let keep = versions_kept(&ikeys, horizon, newer_before);
        if keep.iter().all(|&k| k) {
            return;
        }
        let mut cells = Vec::with_capacity(n);
        for (v, &k) in keep.iter().enumerate() {
            if k {
                cells.push(page::cell_bytes(p, v).to_vec());
            } else {
                let dropped = page::value(p, v);
                self.release_value(st, dropped);
            }
        }
        page::rebuild(p, &cells);
    }

    /// A key whose versions fill more than a leaf goes on in the next
    /// leaves, which writes to the key never reach: after a write to it,
    /// prune those leaves too, one after the other, each weighed against
    /// the last version before it. `seqno` is the last version in the
    /// leaf just written.
    fn prune_continuation(
        &self,
        st: &mut TreeState,
        user_key: &[u8],
        mut seqno: u64,
        horizon: &Horizon,
    ) -> Result<()> {
        // Bounded: each step moves to an older version; a key has at most
        // as many leaves of versions as there are live snapshots to pin them.
        for _ in 0..1024 {
            if seqno == 0 {
                break;
            }
            let target = internal_key(user_key, seqno - 1, KIND_SEEK);
            let path = self.write_path(st, &target, horizon)?;
            let Some((leaf, _)) = path.last() else {
                break;
            };
            let mut g = leaf.write();
            let first = (page::count(&g.image) > 0)
                .then(|| ParsedKey::parse(page::ikey(&g.image, 0)))
                .flatten();
            if !first.is_some_and(|k| k.user_key == user_key && k.seqno < seqno) {
                break;
            }
            // Where this leaf's versions end, before pruning may empty it.
            let last = last_version(&g.image);
            self.prune_after(st, &mut g.image, horizon, Some((user_key, seqno)));
            g.dirty.store(true, Ordering::Release);
            let small = page::used(&g.image) < g.image.len() / 4;
            drop(g);
            if small && path.len() > 1 {
                self.merge(st, &path, horizon)?;
            }
            match last {
                Some((k, s)) if k.as_slice() == user_key && s < seqno => seqno = s,
                _ => break,
            }
        }
        Ok(())
    }

    /// Frees a page the tree no longer uses. Its cached frame is dropped
    /// only if it was allocated since the freeze: a page of the frozen image
    /// may be dirty and not yet written by the running checkpoint, which
    /// finds it in the cache (it leaves the cache once the checkpoint is
    /// durable and the page is reused).
    fn forget_page(&self, st: &mut TreeState, pgno: u64) {
        st.untidy.remove(&pgno);
        if st.fresh.contains(&pgno) {
            self.cache.remove(&(self.file.owner, pgno));
        }
        st.release(pgno, 1);
    }

    fn release_value(&self, st: &mut TreeState, v: Value<'_>) {
        if let Value::Overflow { first, pages, .. } = v {
            st.release(first, u64::from(pages));
        }
    }

    /// Writes a value too large for a page to a run of overflow pages.
    fn write_overflow(&self, st: &mut TreeState, value: &[u8]) -> Result<(u64, u32)> {
        let chunk = self.file.image_len() - page::HEADER;
        let pages = value.len().div_ceil(chunk).max(1);
        let first = st.alloc(pages as u64);
        write_run(&self.file, first, value, page::KIND_OVERFLOW, pages as u64)?;
        Ok((first, pages as u32))
    }

    /// Splits the full leaf at the end of `path` around the new `cell`, and
    /// its ancestors as needed, with the whole path write-latched.
    fn split(
        &self,
        st: &mut TreeState,
        path: &[(Arc<Frame>, usize)],
        ik: &[u8],
        cell: Vec<u8>,
    ) -> Result<()> {
        let mut root = self.root.write();
        let mut guards: Vec<WriteGuard> = path.iter().map(|(f, _)| f.write_arc()).collect();
        let mut carry: Option<(Vec<u8>, u64)> = None;
        for level in (0..guards.len()).rev() {
            let Some(g) = guards.get_mut(level) else {
                break;
            };
            g.dirty.store(true, Ordering::Release);
            let this_pgno = g.pgno;
            let p = &mut g.image;
            let is_leaf = page::kind(p) == page::KIND_LEAF;
            let mut unused = 0;
            let (pos, new_cell) = if is_leaf {
                (page::lower_bound(p, ik, &mut unused), cell.clone())
            } else {
                let Some((sep, right)) = carry.take() else {
                    break;
                };
                let child_pos = path.get(level + 1).map_or(0, |(_, pos)| *pos);
                (child_pos, page::branch_cell(&sep, right))
            };
            if !is_leaf && page::insert(p, pos, &new_cell) {
                return Ok(());
            }
            let mut cells: Vec<Vec<u8>> = (0..page::count(p))
                .map(|i| page::cell_bytes(p, i).to_vec())
                .collect();
            cells.insert(pos, new_cell);
            let right_pgno = st.alloc(1);
            let mut right = vec![0u8; p.len()];
            let sep = if is_leaf {
                let m = leaf_split_point(&cells, pos + 1 == cells.len(), p.len() - page::HEADER);
                let (left, right_cells) = cells.split_at(m);
                // A split full of versions that publishing the group makes
                // invisible: `tidy` packs the halves again once it is
                // published.
                let repeated = cells.windows(2).any(|w| {
                    key::user_key(cell_key(&w[0], true)) == key::user_key(cell_key(&w[1], true))
                });
                if repeated {
                    st.untidy.insert(this_pgno);
                    st.untidy.insert(right_pgno);
                    st.untidy_keys.push(ik.to_vec());
                }
                page::init(&mut right, page::KIND_LEAF, 0);
                page::rebuild(&mut right, right_cells);
                page::rebuild(p, left);
                let last = left.last().map(|c| cell_key(c, true)).unwrap_or_default();
                let first = right_cells
                    .first()
                    .map(|c| cell_key(c, true))
                    .unwrap_or_default();
                separator(last, first)
            } else {
                // The middle cell moves up; its child leads the right page.
                // Appending (the new cell is the last): leave the left page
                // full and start the right one, as for leaves (the left
                // keeps cells of the page, so it fits). Otherwise the middle
                // by bytes, not by count: separators differ in length (up to
                // a quarter page), and halving the count put more than a
                // page of long separators on one side, where `page::rebuild`
                // dropped the cells that did not fit, and with them whole
                // subtrees.
                let m = if pos + 1 == cells.len() && cells.len() >= 3 {
                    cells.len() - 2
                } else {
                    let total: usize = cells.iter().map(Vec::len).sum();
                    let mut acc = 0;
                    let mut m = cells.len() / 2;
                    for (i, c) in cells.iter().enumerate() {
                        acc += c.len();
                        if acc >= total / 2 {
                            m = i.min(cells.len().saturating_sub(2)).max(1);
                            break;
                        }
                    }
                    m
                };
                let mid = cells.get(m).cloned().unwrap_or_default();
                page::init(&mut right, page::KIND_BRANCH, page::u64_at(&mid, 2));
                page::rebuild(&mut right, cells.get(m + 1..).unwrap_or(&[]));
                page::rebuild(p, cells.get(..m).unwrap_or(&[]));
                cell_key(&mid, false).to_vec()
            };
            self.install_page(right_pgno, right);
            carry = Some((sep, right_pgno));
        }
        if let Some((sep, right)) = carry {
            // The root split: a new root over the two halves.
            let pgno = st.alloc(1);
            let mut image = vec![0u8; self.file.image_len()];
            page::init(&mut image, page::KIND_BRANCH, root.pgno);
            page::insert(&mut image, 0, &page::branch_cell(&sep, right));
            self.install_page(pgno, image);
            *root = Root {
                pgno,
                height: root.height + 1,
            };
        }
        Ok(())
    }

    /// Merges the small leaf at the end of `path` with a sibling when both
    /// fit in three quarters of a page; removes a root left with one child.
    fn merge(
        &self,
        st: &mut TreeState,
        path: &[(Arc<Frame>, usize)],
        horizon: &Horizon,
    ) -> Result<()> {
        let (Some((parent, _)), Some((_, pos))) = (path.get(path.len() - 2), path.last()) else {
            return Ok(());
        };
        let pos = *pos;
        let n = page::count(&parent.read().image);
        if n == 0 {
            return Ok(());
        }
        // Merge the pair (left, right) = (pos-1, pos) or (pos, pos+1).
        let left_pos = if pos > 0 { pos - 1 } else { 0 };
        let mut ctx = ReadContext::default();
        let (left_pgno, right_pgno) = {
            let g = parent.read();
            (
                page::child_at(&g.image, left_pos),
                page::child_at(&g.image, left_pos + 1),
            )
        };
        let mut left = self.fetch(left_pgno, &mut ctx)?;
        if !st.fresh.contains(&left_pgno) {
            left = self.copy_page(st, &left, Some(parent), left_pos, horizon)?;
        }
        let right = self.fetch(right_pgno, &mut ctx)?;
        let limit = self.file.image_len() * 3 / 4;
        let mut root = self.root.write();
        let mut guards: Vec<WriteGuard> = path
            .iter()
            .take(path.len() - 1)
            .map(|(f, _)| f.write_arc())
            .collect();
        let mut lg = left.write_arc();
        let rg = right.write_arc();
        if page::kind(&lg.image) != page::KIND_LEAF
            || page::kind(&rg.image) != page::KIND_LEAF
            || page::used(&lg.image) + page::used(&rg.image) > limit
        {
            return Ok(());
        }
        let mut cells: Vec<Vec<u8>> = (0..page::count(&lg.image))
            .map(|i| page::cell_bytes(&lg.image, i).to_vec())
            .collect();
        cells.extend((0..page::count(&rg.image)).map(|i| page::cell_bytes(&rg.image, i).to_vec()));
        page::rebuild(&mut lg.image, &cells);
        lg.dirty.store(true, Ordering::Release);
        let Some(pg) = guards.last_mut() else {
            return Ok(());
        };
        // Drop the separator of the right page (cell left_pos).
        page::remove(&mut pg.image, left_pos);
        pg.dirty.store(true, Ordering::Release);
        drop(rg);
        self.forget_page(st, right_pgno);
        self.collapse_root(st, &mut root, guards);
        Ok(())
    }

    /// After a merge or a packing under the parent at the end of `guards`
    /// (the write-latched path above the leaves): a root branch left with
    /// a single child is replaced by that child, and the tree loses a level.
    fn collapse_root(&self, st: &mut TreeState, root: &mut Root, guards: Vec<WriteGuard>) {
        let collapse = match guards.first() {
            Some(rootg)
                if guards.len() == 1 && root.height > 1 && page::count(&rootg.image) == 0 =>
            {
                Some((rootg.pgno, page::link(&rootg.image)))
            }
            _ => None,
        };
        drop(guards);
        if let Some((old, child)) = collapse {
            *root = Root {
                pgno: child,
                height: root.height - 1,
            };
            self.forget_page(st, old);
        }
    }

    /// Packs, once a commit group is published (`horizon` sees it), the
    /// leaves it split while they held versions its publication hides.
    /// Rewriting a whole leaf in one group needs room for two versions of
    /// each key, so the leaf splits; once the group is visible the older
    /// versions are not, and the pieces are pruned and packed back into as
    /// few pages as hold them. Without this, a workload that rewrites keys
    /// in order in large batches leaves the tree half empty for good.
    pub(crate) fn tidy(&self, st: &mut TreeState, horizon: &Horizon) -> Result<()> {
        if st.untidy_keys.is_empty() {
            return Ok(());
        }
        self.check_failed()?;
        let mut keys = std::mem::take(&mut st.untidy_keys);
        keys.sort_unstable();
        keys.dedup();
        let packed = keys.iter().try_for_each(|ik| self.repack(st, ik, horizon));
        st.untidy.clear();
        packed.inspect_err(|e| self.file.fail(&format!("packing leaves failed: {e}")))
    }

    /// Prunes and packs the run of untidy leaves around the leaf of `ik`,
    /// under one parent (see `tidy`).
    fn repack(&self, st: &mut TreeState, ik: &[u8], horizon: &Horizon) -> Result<()> {
        let path = self.write_path(st, ik, horizon)?;
        let Some((leaf, pos)) = path.last() else {
            return Ok(());
        };
        let pos = *pos;
        if !st.untidy.contains(&leaf.read().pgno) {
            return Ok(());
        }
        let Some((parent, _)) = path.len().checked_sub(2).and_then(|i| path.get(i)) else {
            // The root is a leaf: prune it where it is.
            let mut g = leaf.write();
            self.prune(st, &mut g.image, horizon);
            g.dirty.store(true, Ordering::Release);
            st.untidy.remove(&g.pgno);
            return Ok(());
        };
        let (lo, children, before) = {
            let g = parent.read();
            let n = page::count(&g.image);
            let untidy = |i: usize| {
                let c = page::child_at(&g.image, i);
                st.untidy.contains(&c) && st.fresh.contains(&c)
            };
            let mut lo = pos;
            while lo > 0 && untidy(lo - 1) {
                lo -= 1;
            }
            // A leaf this epoch wrote just before the run is taken in: it is
            // often the partly empty last page of the run packed before.
            if lo > 0 && st.fresh.contains(&page::child_at(&g.image, lo - 1)) {
                lo -= 1;
            }
            let mut hi = pos;
            while hi < n && untidy(hi + 1) {
                hi += 1;
            }
            let children: Vec<u64> = (lo..=hi).map(|i| page::child_at(&g.image, i)).collect();
            let before = lo.checked_sub(1).map(|i| page::child_at(&g.image, i));
            (lo, children, before)
        };
        for c in &children {
            st.untidy.remove(c);
        }
        let mut ctx = ReadContext::default();
        let frames = children
            .iter()
            .map(|&c| self.fetch(c, &mut ctx))
            .collect::<Result<Vec<_>>>()?;
        // The last version in the leaf before the run: a key's versions may
        // begin there. (Before a run that starts a parent's children it is
        // not looked up; pruning then keeps a little more than it could.)
        let newer_before = match before {
            Some(c) => last_version(&self.fetch(c, &mut ctx)?.read().image),
            None => None,
        };

        let mut root = self.root.write();
        let mut guards: Vec<WriteGuard> = path
            .iter()
            .take(path.len() - 1)
            .map(|(f, _)| f.write_arc())
            .collect();
        let mut leaves: Vec<WriteGuard> = frames.iter().map(|f| f.write_arc()).collect();
        if leaves
            .iter()
            .any(|g| page::kind(&g.image) != page::KIND_LEAF)
        {
            return Ok(());
        }
        let cells: Vec<Vec<u8>> = leaves
            .iter()
            .flat_map(|g| {
                (0..page::count(&g.image)).map(|i| page::cell_bytes(&g.image, i).to_vec())
            })
            .collect();
        let keep = {
            let ikeys: Vec<&[u8]> = cells.iter().map(|c| cell_key(c, true)).collect();
            let newer_before = newer_before.as_ref().map(|(k, s)| (k.as_slice(), *s));
            versions_kept(&ikeys, horizon, newer_before)
        };
        let (mut kept, mut dropped) = (Vec::with_capacity(cells.len()), Vec::new());
        let mut kept_per_leaf = vec![0usize; leaves.len()];
        let leaf_of = leaves
            .iter()
            .enumerate()
            .flat_map(|(l, g)| std::iter::repeat_n(l, page::count(&g.image)));
        for ((c, k), l) in cells.into_iter().zip(keep).zip(leaf_of) {
            if k {
                kept.push(c);
                if let Some(n) = kept_per_leaf.get_mut(l) {
                    *n += 1;
                }
            } else {
                dropped.push(c);
            }
        }
        let room = self.file.image_len() - page::HEADER;
        let cuts = match pack(&kept, room, leaves.len()) {
            Some(cuts) => cuts,
            // Pruned where they are, unless that empties one.
            None if kept_per_leaf.iter().all(|&n| n > 0) => {
                let mut cuts = vec![0];
                for n in &kept_per_leaf {
                    cuts.push(cuts.last().copied().unwrap_or(0) + n);
                }
                cuts
            }
            None => return Ok(()),
        };
        // The parent: the run's separators replaced by the new pages'.
        let Some(pg) = guards.last_mut() else {
            return Ok(());
        };
        let mut parent_cells: Vec<Vec<u8>> = (0..page::count(&pg.image))
            .map(|i| page::cell_bytes(&pg.image, i).to_vec())
            .collect();
        let new_separators = cuts.windows(3).zip(&children[1..]).map(|(w, &child)| {
            let last = kept
                .get(w[1] - 1)
                .map(|c| cell_key(c, true))
                .unwrap_or_default();
            let first = kept
                .get(w[1])
                .map(|c| cell_key(c, true))
                .unwrap_or_default();
            page::branch_cell(&separator(last, first), child)
        });
        let run_separators = lo..lo + children.len() - 1;
        parent_cells.splice(run_separators, new_separators);
        if parent_cells.iter().map(|c| c.len() + 2).sum::<usize>() > room {
            return Ok(());
        }
        page::rebuild(&mut pg.image, &parent_cells);
        pg.dirty.store(true, Ordering::Release);
        for (g, w) in leaves.iter_mut().zip(cuts.windows(2)) {
            page::rebuild(&mut g.image, &kept[w[0]..w[1]]);
            g.dirty.store(true, Ordering::Release);
        }
        let used = cuts.len() - 1;
        drop(leaves);
        for &c in &children[used..] {
            self.forget_page(st, c);
        }
        for c in &dropped {
            self.release_value(st, page::cell_value(c));
        }
        self.collapse_root(st, &mut root, guards);
        Ok(())
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
        let mut durable = self.ckpt.lock();
        self.check_failed()?;
        let start = Instant::now();
        let (frozen, c, blob) = {
            let (guard, seqno, wal_bytes) = hold_writers();
            let mut st = self.tree.lock();
            // Again under the commit lock: a commit that failed while this
            // checkpoint waited for it may have left part of a batch.
            self.check_failed()?;
            if self.changes.load(Ordering::Acquire) == 0 && st.retired.is_empty() {
                self.reclaim(&mut st);
                self.persisted_seqno.fetch_max(seqno, Ordering::AcqRel);
                self.wal_bytes_at_checkpoint
                    .store(wal_bytes, Ordering::Release);
                return Ok(0);
            }
            self.changes.store(0, Ordering::Release);
            let root = *self.root.read();
            let frozen = std::mem::take(&mut st.fresh);
            // Left by a recovery's replay, which publishes nothing: those
            // leaves were pruned against everything visible already.
            st.untidy.clear();
            st.untidy_keys.clear();
            let old_map = st.free_map;
            if old_map.1 > 0 {
                st.retired.push(old_map);
            }
            st.limbo = std::mem::take(&mut st.retired);
            // The free map lists the free pages of the image: free now, or
            // used only by older images. Its own pages come out of the free
            // list first, so the loop settles once the run is large enough.
            let chunk = (self.file.image_len() - page::HEADER) as u64;
            let mut pages = 1u64;
            let (first, blob) = loop {
                let need = ((st.image_free().len() as u64 * 16).div_ceil(chunk)).max(1);
                if need > pages {
                    pages = need;
                    continue;
                }
                let first = st.alloc(pages);
                for p in first..first + pages {
                    st.fresh.remove(&p);
                }
                let image_free = st.image_free();
                let mut blob = Vec::with_capacity(image_free.len() * 16);
                for (f, n) in image_free {
                    blob.extend_from_slice(&f.to_le_bytes());
                    blob.extend_from_slice(&n.to_le_bytes());
                }
                if (blob.len() as u64).div_ceil(chunk).max(1) <= pages {
                    break (first, blob);
                }
                // Cannot happen (allocating only shrinks the list); retry larger.
                add_extent(&mut st.free, first, pages);
                pages += 1;
            };
            st.free_map = (first, pages);
            let c = Checkpoint {
                generation: durable.generation + 1,
                root: root.pgno,
                height: root.height,
                page_count: st.page_count,
                free_map_first: first,
                free_map_pages: pages as u32,
                free_map_len: blob.len() as u32,
                seqno,
            };
            self.wal_bytes_at_checkpoint
                .store(wal_bytes, Ordering::Release);
            drop(st);
            drop(guard);
            (frozen, c, blob)
        };
        // A checkpoint that fails after the freeze leaves the in-memory
        // state ahead of the file: the fresh set and the changes were taken
        // into the failed image, its retired pages moved to limbo, and its
        // free map allocated. A later checkpoint would write an image that
        // misses the failed one's unwritten pages and leaks its limbo, or
        // (finding no change) report the unwritten image durable. So the
        // table is marked failed: later checkpoints and writes of it are
        // refused, and reopening recovers from the durable image and the log.
        let written = self
            .write_image(frozen, &c, &blob, sync_log)
            .and_then(|written| {
                // Durable: a manifest rolled from now on records it; the
                // edit records it in the live manifest.
                self.durable_generation
                    .store(c.generation, Ordering::Release);
                record(c.generation)?;
                Ok(written)
            })
            .inspect_err(|e| self.file.fail(&format!("a checkpoint failed: {e}")))?;
        // Durable: what only older images used is free now, once no
        // descent is reading it.
        {
            let mut st = self.tree.lock();
            let limbo = std::mem::take(&mut st.limbo);
            st.unreachable.extend(limbo);
            self.reclaim(&mut st);
        }
        *durable = c;
        self.persisted_seqno.fetch_max(c.seqno, Ordering::AcqRel);
        let pages = written + u64::from(c.free_map_pages);
        let bytes = pages * self.file.page_size as u64 + HEADER_BYTES as u64;
        self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.counters.pages.fetch_add(pages, Ordering::Relaxed);
        self.counters.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.counters
            .micros
            .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
        Ok(written.max(1))
    }

    /// The file operations of a checkpoint: the frozen dirty pages, the
    /// free map, a sync, the log's sync up to the image's seqno, the header
    /// slot, a sync. Returns the pages written.
    fn write_image(
        &self,
        frozen: HashSet<u64>,
        c: &Checkpoint,
        blob: &[u8],
        sync_log: impl FnOnce(u64) -> Result<()>,
    ) -> Result<u64> {
        let mut written = 0u64;
        for pgno in frozen {
            let Some(frame) = self.cache.get_page(&(self.file.owner, pgno)) else {
                // Not cached: evicted, so written; or an overflow page,
                // written when its value was added.
                continue;
            };
            let g = frame.read();
            if g.dirty.load(Ordering::Acquire) {
                self.file.write_page(pgno, &g.image)?;
                g.dirty.store(false, Ordering::Release);
                written += 1;
            }
        }
        write_run(
            &self.file,
            c.free_map_first,
            blob,
            page::KIND_FREE_MAP,
            u64::from(c.free_map_pages),
        )?;
        self.file.file.sync()?;
        sync_log(c.seqno)?;
        let slot = c.generation % 2;
        self.file.file.write_at(
            slot * self.file.page_size as u64,
            &c.encode(self.file.page_size, self.id),
        )?;
        self.file.file.sync()?;
        Ok(written)
    }

    /// Makes the pages older images used (`unreachable`) allocatable, if
    /// no descent is in flight. No descent begun from now on can reach
    /// them: the tree has not pointed at them since before the last
    /// checkpoint's freeze. One begun earlier can (latch coupling protects
    /// a descent from the writer's changes, not from a checkpoint freeing
    /// the pages of the tree it started in), and reusing a page under it
    /// made a get answer "absent" for a key that was there all along.
    /// So this does not wait: the pages stay aside until a call finds no
    /// descent in flight (each write and each checkpoint tries).
    fn reclaim(&self, st: &mut TreeState) {
        if st.unreachable.is_empty() {
            return;
        }
        let Some(_quiet) = self.descents.try_write() else {
            return;
        };
        for (f, n) in std::mem::take(&mut st.unreachable) {
            for p in f..f + n {
                self.cache.remove(&(self.file.owner, p));
            }
            add_extent(&mut st.free, f, n);
        }
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
    pub(crate) fn mark_clean_upto(&self, visible: u64) {
        if let Some(_durable) = self.ckpt.try_lock() {
            // A change is counted before its seqno becomes visible.
            if self.changes.load(Ordering::Acquire) == 0 {
                self.persisted_seqno.fetch_max(visible, Ordering::AcqRel);
            }
        }
    }

    /// Whether the table has changed since its last checkpoint.
    pub(crate) fn has_changes(&self) -> bool {
        self.changes.load(Ordering::Acquire) > 0
    }

    /// Height, pages and fill, and the file's size.
    pub(crate) fn shape(&self) -> Result<BtreeShape> {
        let mut shape = {
            let st = self.tree.lock();
            let root = *self.root.read();
            BtreeShape {
                height: root.height,
                file_bytes: st.page_count * self.file.page_size as u64,
                free_pages: st.free_pages(),
                page_size: self.file.page_size as u64,
                ..BtreeShape::default()
            }
        };
        let mut used_bytes = 0u64;
        let mut ctx = ReadContext::default();
        let mut stack = Vec::new();
        let _descent = self.descents.read();
        let root = self.root.read().pgno;
        if root != 0 {
            stack.push(root);
        }
        while let Some(pgno) = stack.pop() {
            let frame = self.fetch(pgno, &mut ctx)?;
            let g = frame.read();
            let p = &g.image;
            used_bytes += page::used(p) as u64;
            match page::kind(p) {
                page::KIND_BRANCH => {
                    shape.branch_pages += 1;
                    for pos in 0..=page::count(p) {
                        stack.push(page::child_at(p, pos));
                    }
                }
                _ => {
                    shape.leaf_pages += 1;
                    shape.entries += page::count(p) as u64;
                    for i in 0..page::count(p) {
                        if let Value::Overflow { pages, .. } = page::value(p, i) {
                            shape.overflow_pages += u64::from(pages);
                        }
                    }
                }
            }
        }
        let pages = shape.leaf_pages + shape.branch_pages;
        if pages > 0 {
            shape.fill = used_bytes as f64 / (pages * self.file.image_len() as u64) as f64;
        }
        Ok(shape)
    }

    /// Cheap figures for stats, without walking the tree.
    pub(crate) fn quick_shape(&self) -> (u32, u64, u64) {
        let st = self.tree.lock();
        let root = *self.root.read();
        (root.height, st.page_count, st.free_pages())
    }
}

/// The shape of a B-tree table.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BtreeShape {
    /// Levels from the root to the leaves (0 for an empty tree).
    pub height: u32,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Branch (internal) pages.
    pub branch_pages: u64,
    /// Pages holding values too large for a leaf.
    pub overflow_pages: u64,
    /// Free pages (reusable now or after the next checkpoint).
    pub free_pages: u64,
    /// Versions in the leaves (a key may have several while snapshots or
    /// recent writes need them).
    pub entries: u64,
    /// Bytes in use over bytes available, over leaf and branch pages.
    pub fill: f64,
    /// The page size.
    pub page_size: u64,
    /// The file's size in pages times the page size.
    pub file_bytes: u64,
}

/// What a point read found.
#[derive(Debug)]
pub(crate) enum Lookup {
    Value(Vec<u8>),
    Absent,
    /// The key's versions go on in the next leaf: read it with an iterator
    /// at this seqno under a registered snapshot.
    Continue(u64),
}

/// The user key and seqno of a leaf's last cell.
/// Which versions of a leaf (or of a run of adjacent leaves), given by
/// their internal keys in order, a reader can still see (`Horizon`). A
/// version is kept while it is the newest at or below some live snapshot
/// or the visible seqno, or is the newest of its key not yet visible.
/// `newer_before` is the (user key, seqno) of the last version before the
/// first one, when that key's versions begin in an earlier leaf: the first
/// group's newest version is then weighed against it instead of being kept
/// as the newest.
fn versions_kept(
    ikeys: &[&[u8]],
    horizon: &Horizon,
    newer_before: Option<(&[u8], u64)>,
) -> Vec<bool> {
    let n = ikeys.len();
    let mut keep = vec![true; n];
    let mut i = 0;
    while i < n {
        let uk = key::user_key(ikeys[i]);
        let mut j = i;
        while j < n && key::user_key(ikeys[j]) == uk {
            j += 1;
        }
        // Versions i..j, newest first.
        let mut newer = match newer_before {
            Some((k, seqno)) if i == 0 && k == uk => seqno,
            _ => u64::MAX,
        };
        for v in i..j {
            let seqno = ParsedKey::parse(ikeys[v]).map_or(u64::MAX, |k| k.seqno);
            keep[v] = horizon.needed(seqno, newer);
            newer = seqno;
        }
        // A tombstone that is the oldest version kept hides nothing,
        // unless older versions of its key may go on in the next leaf (a
        // key whose versions fill more than a page is split between
        // leaves): a group that reaches the end keeps it.
        if j < n {
            for v in (i..j).rev() {
                if !keep[v] {
                    continue;
                }
                match ParsedKey::parse(ikeys[v]) {
                    Some(k) if k.kind == Kind::Delete && k.seqno <= horizon.visible => {
                        keep[v] = false;
                    }
                    _ => break,
                }
            }
        }
        i = j;
    }
    keep
}

fn last_version(p: &[u8]) -> Option<(Vec<u8>, u64)> {
    let n = page::count(p);
    let k = ParsedKey::parse(page::ikey(p, n.checked_sub(1)?))?;
    Some((k.user_key.to_vec(), k.seqno))
}

/// The key of a raw cell.
fn cell_key(c: &[u8], leaf: bool) -> &[u8] {
    let klen = page::u16_at(c, 0);
    let start = if leaf { 3 } else { 10 };
    c.get(start..start + klen).unwrap_or(&[])
}

/// Where to split a leaf's cells: near half of the bytes, at a change of
/// user key if there is one, so that a key's versions stay in one leaf.
/// When the new cell is the last one (`append`: keys arriving in order),
/// near the end instead, so that a sequential load leaves full pages
/// behind rather than half-full ones.
/// `room` is what a page holds for cells and their slots.
fn leaf_split_point(cells: &[Vec<u8>], append: bool, room: usize) -> usize {
    let total: usize = cells.iter().map(Vec::len).sum();
    let mut acc = 0;
    let mut mid = 1;
    let goal = if append {
        total - total / 16
    } else {
        total / 2
    };
    for (i, c) in cells.iter().enumerate() {
        acc += c.len();
        if acc >= goal {
            mid = (i + 1).clamp(1, cells.len() - 1);
            break;
        }
    }
    // Bytes (cells and slots) before each position. A change of user key
    // far from the middle would leave one half larger than a page, and
    // `page::rebuild` would silently drop the cells that do not fit (a
    // key's many versions, pinned by snapshots or written in one batch,
    // lost versions that way): such a boundary is not taken.
    let mut before = Vec::with_capacity(cells.len() + 1);
    before.push(0usize);
    for c in cells {
        before.push(before.last().copied().unwrap_or(0) + c.len() + 2);
    }
    let all = before.last().copied().unwrap_or(0);
    let fits = |i: usize| {
        let left = before.get(i).copied().unwrap_or(all);
        left <= room && all - left <= room
    };
    let boundary = |i: usize| {
        i > 0
            && i < cells.len()
            && key::user_key(cell_key(&cells[i - 1], true))
                != key::user_key(cell_key(&cells[i], true))
            && fits(i)
    };
    for d in 0..cells.len() {
        if boundary(mid + d) {
            return mid + d;
        }
        if d <= mid && boundary(mid - d) {
            return mid - d;
        }
    }
    mid
}

/// Where to cut `cells` (a run of `pages` leaves' cells, pruned) into
/// fewer pages: the cut positions, from 0 to `cells.len()`, or None when
/// the run cannot be packed into fewer pages than it has. Pages are filled
/// up, at a change of user key within the last few cells if there is one;
/// the run's last page may be partly empty (the run packed after it, if
/// one follows in the same group, takes it in). But a run that fits in one
/// page only more than 15/16 full is cut in two halves instead, so that a
/// page of live data one write from full is not split and packed again by
/// every write to it.
fn pack(cells: &[Vec<u8>], room: usize, pages: usize) -> Option<Vec<usize>> {
    let mut before = Vec::with_capacity(cells.len() + 1);
    before.push(0usize);
    for c in cells {
        before.push(before.last().copied().unwrap_or(0) + c.len() + 2);
    }
    let total = before.last().copied().unwrap_or(0);
    let key_change = |i: usize| {
        key::user_key(cell_key(&cells[i - 1], true)) != key::user_key(cell_key(&cells[i], true))
    };
    let mut cuts = vec![0usize];
    if cells.len() >= 2 && total <= room && total > room / 16 * 15 {
        let half = before
            .partition_point(|&b| b < total / 2)
            .clamp(1, cells.len() - 1);
        cuts.push(half);
    } else {
        let mut start = 0;
        while total - before[start] > room {
            // The last cut that fits, or a change of user key just before it.
            let mut i = start + 1;
            while i < cells.len() && before[i + 1] - before[start] <= room {
                i += 1;
            }
            let cut = (i.saturating_sub(4).max(start + 1)..=i)
                .rev()
                .find(|&j| key_change(j))
                .unwrap_or(i);
            cuts.push(cut);
            start = cut;
        }
    }
    cuts.push(cells.len());
    (cuts.len() - 1 < pages).then_some(cuts)
}

/// The separator between two adjacent leaves: the shortest user-key prefix
/// of `first` above `last`'s user key, as the smallest internal key of that
/// prefix; or, within one user key, `first` itself.
fn separator(last: &[u8], first: &[u8]) -> Vec<u8> {
    let (a, b) = (key::user_key(last), key::user_key(first));
    if a == b {
        return first.to_vec();
    }
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let prefix = b.get(..(common + 1).min(b.len())).unwrap_or(b);
    internal_key(prefix, SEQNO_MAX, KIND_SEEK)
}

/// Writes `data` as a run of pages of `kind` starting at `first`, one
/// checksummed page per chunk, and empty pages of `kind` up to `pages` in
/// all. The run is read back whole (`read_run` checks every page's kind), and
/// a free map's run can be larger than its data needs: the run is sized
/// before it is allocated, and allocating it can take a whole free extent
/// off the list. Writing only the pages the data needs left the last page
/// of such a run with whatever the file held there, and the image failed
/// `verify` and could not be opened.
fn write_run(file: &PageFile, first: u64, data: &[u8], kind: u8, pages: u64) -> Result<()> {
    let chunk = file.image_len() - page::HEADER;
    let pages = (data.len().div_ceil(chunk) as u64).max(pages).max(1) as usize;
    for i in 0..pages {
        let mut image = vec![0u8; file.image_len()];
        page::init(&mut image, kind, 0);
        let part = data
            .get(i * chunk..((i + 1) * chunk).min(data.len()))
            .unwrap_or(&[]);
        if let Some(dst) = image.get_mut(page::HEADER..page::HEADER + part.len()) {
            dst.copy_from_slice(part);
        }
        file.write_page(first + i as u64, &image)?;
    }
    Ok(())
}

/// Reads `len` bytes stored by `write_run`.
fn read_run(file: &PageFile, first: u64, pages: u32, len: u32, kind: u8) -> Result<Vec<u8>> {
    let chunk = file.image_len() - page::HEADER;
    if (pages as usize) < (len as usize).div_ceil(chunk).max(1) {
        return Err(file.corrupt(
            first,
            format!("{pages} overflow pages cannot hold {len} bytes"),
        ));
    }
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..u64::from(pages) {
        let image = file.read_page(first + i)?;
        if page::kind(&image) != kind {
            return Err(file.corrupt(first + i, format!("expected a page of kind {kind}")));
        }
        let want = (len as usize - out.len()).min(chunk);
        out.extend_from_slice(image.get(page::HEADER..page::HEADER + want).unwrap_or(&[]));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let c = Checkpoint {
            generation: 7,
            root: 5,
            height: 2,
            page_count: 10,
            free_map_first: 8,
            free_map_pages: 1,
            free_map_len: 32,
            seqno: 99,
        };
        let b = c.encode(8192, 3);
        assert_eq!(Checkpoint::decode(&b, 8192, 3), Ok(c));
        assert!(Checkpoint::decode(&b, 4096, 3).is_err());
        assert!(Checkpoint::decode(&b, 8192, 4).is_err());
        for i in 0..76 {
            let mut bad = b.clone();
            bad[i] ^= 1;
            assert!(Checkpoint::decode(&bad, 8192, 3).is_err(), "flip at {i}");
        }
    }

    #[test]
    fn extents_coalesce() {
        let mut m = BTreeMap::new();
        add_extent(&mut m, 10, 2);
        add_extent(&mut m, 14, 1);
        add_extent(&mut m, 12, 2);
        assert_eq!(m.into_iter().collect::<Vec<_>>(), [(10, 5)]);
    }

    #[test]
    fn separators_are_short_and_between() {
        let a = internal_key(b"apple", 3, Kind::Put);
        let b = internal_key(b"apricot", 9, Kind::Put);
        let s = separator(&a, &b);
        assert_eq!(key::user_key(&s), b"apr");
        assert!(key::compare(&a, &s).is_lt() && key::compare(&s, &b).is_le());
        let b2 = internal_key(b"apple", 1, Kind::Put);
        assert_eq!(separator(&a, &b2), b2);
    }

    fn cells_of(keys: &[(&str, u64)], value: usize) -> Vec<Vec<u8>> {
        keys.iter()
            .map(|&(k, seqno)| {
                let ik = internal_key(k.as_bytes(), seqno, Kind::Put);
                page::leaf_cell(&ik, Value::Inline(&vec![b'v'; value]))
            })
            .collect()
    }

    fn page_bytes(cells: &[Vec<u8>]) -> usize {
        cells.iter().map(|c| c.len() + 2).sum()
    }

    #[test]
    fn a_run_packs_into_full_pages_cut_between_keys() {
        // Goal: `pack` puts a run's cells into as few pages as hold them,
        // each within the page, cutting between user keys when one is near.
        let names: Vec<String> = (0..100).map(|i| format!("key{i:03}")).collect();
        let mut keys: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 5)).collect();
        // Two versions of key050: a cut should not fall between them.
        keys.insert(51, ("key050", 4));
        let cells = cells_of(&keys, 100);
        let room = 4096 - page::DISK_HEADER - page::HEADER;
        let cuts = pack(&cells, room, 6).expect("fewer pages");
        assert_eq!(cuts.first(), Some(&0));
        assert_eq!(cuts.last(), Some(&cells.len()));
        assert_eq!(cuts.len() - 1, page_bytes(&cells).div_ceil(room));
        for w in cuts.windows(2) {
            assert!(
                w[0] < w[1] && page_bytes(&cells[w[0]..w[1]]) <= room,
                "{cuts:?}"
            );
            assert!(
                w[1] == cells.len() || w[1] != 51,
                "cut inside a key: {cuts:?}"
            );
        }
        // Already as few pages as it can be: left alone.
        assert_eq!(pack(&cells, room, cuts.len() - 1), None);
    }

    #[test]
    fn a_run_that_would_fill_one_page_is_cut_in_two() {
        // Goal: a run that fits one page only more than 15/16 full becomes
        // two half pages (or stays as it is, if it is two pages already),
        // so that the next write to it does not split it again at once.
        let room = 4096 - page::DISK_HEADER - page::HEADER;
        let names: Vec<String> = (0..100).map(|i| format!("key{i:03}")).collect();
        let keys: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 5)).collect();
        let per = cells_of(&keys[..1], 100)[0].len() + 2;
        let n = room / per;
        let cells = cells_of(&keys[..n], 100);
        assert!(page_bytes(&cells) > room / 16 * 15);
        assert_eq!(pack(&cells, room, 2), None);
        let cuts = pack(&cells, room, 3).expect("two pages");
        assert_eq!(cuts.len(), 3);
        assert!(cuts[1].abs_diff(n / 2) <= 1, "{cuts:?}");
        let few = cells_of(&keys[..n / 2], 100);
        assert_eq!(pack(&few, room, 2), Some(vec![0, few.len()]));
    }
}
