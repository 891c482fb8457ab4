//! A checkpoint's image in the file: the two header slots, opening at the
//! newest valid one, the free map it names, the writes that make an image
//! durable, and cutting the file's free tail.
//!
//! ```text
//! file := header_slot_0 (page 0) header_slot_1 (page 1) page{2 ..}
//! ```
//! The header slot of generation `g` is slot `g % 2`, written only after
//! everything its image holds is synced (`write_image`); a torn slot
//! falls back to the other. Byte layouts: `format.rs`.
//!
//! Thread-safety: `write_image` and `trim_file` run in a checkpoint, one
//! at a time per table (the tree's `ckpt` mutex); `trim_file` also under
//! the writer's lock, in the freeze.

use std::collections::HashSet;
use std::path::Path;

use super::pages::{Frame, PageCheck, PageFile};
use super::runs::{read_run, write_run};
use super::space::{add_extent, PageSet, Space};
use super::PageStore;
use crate::btree::format::{self, Checkpoint, FIRST_DATA_PAGE, HEADER_BYTES};
use crate::error::{Error, Result};
use crate::fs::{Fs, PagedFile, WRITEBACK_BYTES};
use crate::options::Compression;

/// Creates the file of a new table at `path`: an empty tree whose image
/// holds the log up to `seqno`. Synced; the caller syncs the directory.
pub(crate) fn create(
    fs: &dyn Fs,
    path: &Path,
    page_size: usize,
    table_id: u32,
    seqno: u64,
) -> Result<()> {
    // A file of this id can only be what a failed create left (the id
    // is the catalog's next, which no table holds): start it afresh.
    if fs.exists(path)? {
        fs.remove(path)?;
    }
    let file = fs.open_paged(path, true)?;
    let c = Checkpoint {
        generation: 1,
        page_count: FIRST_DATA_PAGE,
        seqno,
        ..Checkpoint::default()
    };
    // Generation 1 in slot 1 (the slot is the generation's parity), so
    // that the first checkpoint writes slot 0 and a torn write of it
    // falls back to this one.
    let mut slot = c.encode(page_size, table_id);
    slot.resize(page_size, 0);
    file.write_at(0, &vec![0; page_size])?;
    file.write_at(page_size as u64, &slot)?;
    file.sync()
}

/// The newest valid header slot of `file`, a file of pages of
/// `page_size` bytes of table `table_id` (None if neither is valid), and
/// what is wrong with each slot that is not.
///
/// A slot of a newer format (`Checkpoint::newer_version`) is
/// `Error::NewerFormat`, whatever the other holds: the file was written by
/// a newer spinney, and its older slot is not its newest state.
pub(crate) fn newest_header(
    file: &dyn PagedFile,
    path: &Path,
    page_size: usize,
    table_id: u32,
) -> Result<(Option<Checkpoint>, String)> {
    let mut best: Option<Checkpoint> = None;
    let mut why = Vec::new();
    for slot in 0..2u64 {
        let mut b = vec![0u8; HEADER_BYTES];
        let n = file.read_at(slot * page_size as u64, &mut b)?;
        refuse_newer(b.get(..n).unwrap_or(&[]), path)?;
        match Checkpoint::decode(b.get(..n).unwrap_or(&[]), page_size, table_id) {
            Ok(c) if best.is_none_or(|b| c.generation > b.generation) => best = Some(c),
            Ok(_) => {}
            Err(e) => why.push(format!("slot {slot}: {e}")),
        }
    }
    Ok((best, why.join("; ")))
}

/// `Error::NewerFormat` if the header slot `b` of the file at `path` is of
/// a newer format than this build reads (`Checkpoint::newer_version`).
fn refuse_newer(b: &[u8], path: &Path) -> Result<()> {
    match Checkpoint::newer_version(b) {
        Some(found) => Err(Error::newer_format(
            path,
            "B-tree file",
            found,
            format::HEADER_VERSION,
        )),
        None => Ok(()),
    }
}

/// Opens the file at `path` whatever its page size and table, taken from
/// its newest valid header (for `spinney dump`): its pages, checked by
/// `check`, and that header.
pub(crate) fn open_any(
    fs: &dyn Fs,
    path: &Path,
    check: PageCheck,
) -> Result<(PageFile, Checkpoint)> {
    let file = fs.open_paged(path, false)?;
    // The page size and table id come from whichever slot is valid: slot 0
    // is at offset 0, slot 1 one page in, for each possible page size.
    let mut best: Option<(Checkpoint, usize)> = None;
    for page_size in (12..=15).map(|bits| 1usize << bits) {
        for slot in 0..2u64 {
            let mut b = vec![0u8; HEADER_BYTES];
            let n = file.read_at(slot * page_size as u64, &mut b)?;
            let b = b.get(..n).unwrap_or(&[]);
            let (size, table_id) = (format::u32_at(b, 12) as usize, format::u32_at(b, 16));
            if size != page_size {
                continue;
            }
            refuse_newer(b, path)?;
            if let Ok(c) = Checkpoint::decode(b, page_size, table_id) {
                if best.is_none_or(|(b, _)| c.generation > b.generation) {
                    best = Some((c, page_size));
                }
            }
        }
    }
    let (c, page_size) =
        best.ok_or_else(|| Error::corruption(path, 0, "no valid checkpoint header"))?;
    let pf = PageFile::new(file, page_size, Compression::None, 0, false, check);
    Ok((pf, c))
}

impl Space {
    /// The free space of image `c` of `file`: its pages, its free map's
    /// run, and the free extents the map lists.
    pub(crate) fn open(file: &PageFile, c: &Checkpoint) -> Result<Space> {
        let mut space = Space {
            page_count: c.page_count,
            free_map: (c.free_map_first, u64::from(c.free_map_pages)),
            ..Space::default()
        };
        if c.free_map_pages > 0 {
            let blob = read_run(
                file,
                c.free_map_first,
                c.free_map_pages,
                c.free_map_len,
                format::KIND_FREE_MAP,
            )?;
            let extents = format::decode_free_map(&blob, c.page_count)
                .map_err(|d| file.corrupt(c.free_map_first, format!("free map: {d}")))?;
            for (first, pages) in extents {
                add_extent(&mut space.free, first, pages);
            }
        }
        Ok(space)
    }
}

impl PageStore {
    /// Cuts the file before the free pages that end it, so that a table
    /// gives space back (`Space::alloc` takes the lowest free pages, so the
    /// tree drifts toward the start of the file). Runs in the freeze, with
    /// writers held back: no page past the cut is allocated meanwhile.
    /// None of the pages cut is in the durable image or read by a descent,
    /// and until this checkpoint's header is durable that image lists them
    /// as free: opened after a crash, it names a longer file whose missing
    /// tail is free space. True if the file was cut.
    pub(crate) fn trim_file(&self, st: &mut Space) -> Result<bool> {
        let Some(tail) = st.trim_tail() else {
            return Ok(false);
        };
        let len = st.page_count * self.file.page_size as u64;
        if let Err(e) = self.file.cut(len) {
            st.untrim(tail);
            return Err(e);
        }
        Ok(true)
    }

    /// The file operations of a checkpoint: the frozen dirty pages, the
    /// free map `blob`, a sync, the log's sync up to the image's seqno
    /// (`sync_log`), the header slot of `c` for table `table_id`, a sync.
    /// `image_pages` names the pages of image `c` for the test builds'
    /// check (`durable.rs`). Returns the pages written.
    pub(crate) fn write_image(
        &self,
        frozen: PageSet,
        c: &Checkpoint,
        table_id: u32,
        blob: &[u8],
        image_pages: impl FnOnce() -> HashSet<u64>,
        sync_log: impl FnOnce(u64) -> Result<()>,
    ) -> Result<u64> {
        let mut written = 0u64;
        // In the file's order, each run of `WRITEBACK_BYTES` written handed
        // to the disk at once (`start_writeback`) rather than left to the
        // one sync at the end: a sync of hundreds of MB of dirty pages held
        // the file system's journal, and commits that waited on it (a log
        // page's first store, a reservation) were the slowest.
        let mut frozen: Vec<u64> = frozen.into_iter().collect();
        frozen.sort_unstable();
        let page_size = self.file.page_size as u64;
        let mut run: Option<(u64, u64)> = None;
        for pgno in frozen {
            let Some(frame) = self.cache.get::<Frame>(&(self.file.owner, pgno)) else {
                // Not cached: evicted, so written; or an overflow page,
                // written when its value was added.
                continue;
            };
            if frame.write_out(&frame.read())? {
                written += 1;
                let (first, pages) = run.get_or_insert((pgno, 0));
                *pages += 1;
                if *pages * page_size >= WRITEBACK_BYTES {
                    let len = (pgno + 1 - *first) * page_size;
                    self.file.file.start_writeback(*first * page_size, len);
                    run = None;
                }
            }
        }
        write_run(
            &self.file,
            c.free_map_first,
            blob,
            format::KIND_FREE_MAP,
            u64::from(c.free_map_pages),
        )?;
        self.file.file.sync()?;
        // From here a crash may leave either image durable.
        self.file.durable.add(image_pages);
        sync_log(c.seqno)?;
        let slot = c.generation % 2;
        self.file.file.write_at(
            slot * self.file.page_size as u64,
            &c.encode(self.file.page_size, table_id),
        )?;
        self.file.file.sync()?;
        self.file.durable.made_durable();
        Ok(written)
    }
}
