//! Runs of pages: a value too large for a leaf (overflow pages) and the
//! free map, each stored as consecutive pages of one kind, every page
//! framed and checksummed as a tree page is.
//!
//! ```text
//! run page := header(16, kind and zeros but the heap) data
//! ```
//! Thread-safety: a run is written once, before anything names it, and
//! read by any thread.

use super::pages::PageFile;
use crate::btree::format;
use crate::error::Result;

/// Writes `data` as a run of pages of `kind` starting at `first`, one
/// checksummed page per chunk, and empty pages of `kind` up to `pages` in
/// all. The run is read back whole (`read_run` checks every page's kind), and
/// a free map's run can be larger than its data needs: the run is sized
/// before it is allocated, and allocating it can take a whole free extent
/// off the list. Writing only the pages the data needs left the last page
/// of such a run with whatever the file held there, and the image failed
/// `verify` and could not be opened.
pub(crate) fn write_run(
    file: &PageFile,
    first: u64,
    data: &[u8],
    kind: u8,
    pages: u64,
) -> Result<()> {
    let chunk = file.image_len() - format::HEADER;
    let pages = (data.len().div_ceil(chunk) as u64).max(pages).max(1) as usize;
    for i in 0..pages {
        let mut image = vec![0u8; file.image_len()];
        format::init(&mut image, kind, 0);
        let part = data
            .get(i * chunk..((i + 1) * chunk).min(data.len()))
            .unwrap_or(&[]);
        if let Some(dst) = image.get_mut(format::HEADER..format::HEADER + part.len()) {
            dst.copy_from_slice(part);
        }
        file.write_page(first + i as u64, &image)?;
    }
    Ok(())
}

/// Reads `len` bytes stored by `write_run`.
pub(crate) fn read_run(
    file: &PageFile,
    first: u64,
    pages: u32,
    len: u32,
    kind: u8,
) -> Result<Vec<u8>> {
    let chunk = file.image_len() - format::HEADER;
    if (pages as usize) < (len as usize).div_ceil(chunk).max(1) {
        return Err(file.corrupt(
            first,
            format!("{pages} overflow pages cannot hold {len} bytes"),
        ));
    }
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..u64::from(pages) {
        let image = file.read_page(first + i)?;
        if format::kind(&image) != kind {
            return Err(file.corrupt(first + i, format!("expected a page of kind {kind}")));
        }
        let want = (len as usize - out.len()).min(chunk);
        out.extend_from_slice(
            image
                .get(format::HEADER..format::HEADER + want)
                .unwrap_or(&[]),
        );
    }
    Ok(out)
}
