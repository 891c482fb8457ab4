//! Checking and dumping a B-tree file's durable image.
//!
//! `verify` reads the image the durable header names straight from the
//! file (not the cache): every page's checksum and structure, key order
//! within and across pages (each child's keys lie between its parent's
//! separators), the height, and that every page of the file is used exactly
//! once: by the tree, an overflow value, the free map, or the free list.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use super::format::{Checkpoint, FIRST_DATA_PAGE};
use super::page::{self, Value};
use super::store::{image, read_run, PageFile};
use super::BtreeTable;
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::mvcc::key::{self, ParsedKey};

/// Pages of the file, each claimed once.
struct Claims<'a> {
    file: &'a PageFile,
    page_count: u64,
    seen: HashSet<u64>,
}

impl Claims<'_> {
    fn claim(&mut self, first: u64, pages: u64, what: &str) -> Result<()> {
        for p in first..first.saturating_add(pages) {
            if p < FIRST_DATA_PAGE || p >= self.page_count {
                return Err(self
                    .file
                    .corrupt(p, format!("{what} names a page outside the file")));
            }
            if !self.seen.insert(p) {
                return Err(self
                    .file
                    .corrupt(p, format!("{what} uses a page already in use")));
            }
        }
        Ok(())
    }
}

/// Verifies the durable image of `table`; returns the versions checked.
pub(crate) fn verify(table: &BtreeTable) -> Result<u64> {
    // Held throughout: no checkpoint frees a page of this image meanwhile.
    let durable = table.ckpt.lock();
    verify_image(&table.store.file, &durable)
}

fn verify_image(file: &PageFile, c: &Checkpoint) -> Result<u64> {
    let mut claims = Claims {
        file,
        page_count: c.page_count,
        seen: HashSet::new(),
    };
    let mut entries = 0u64;
    if c.root != 0 {
        // (page, depth, low bound, high bound)
        let mut stack = vec![(c.root, 1u32, None::<Vec<u8>>, None::<Vec<u8>>)];
        while let Some((pgno, depth, low, high)) = stack.pop() {
            claims.claim(pgno, 1, "the tree")?;
            let p = file.read_page(pgno)?;
            let n = page::count(&p);
            for i in 0..n {
                let k = page::ikey(&p, i);
                let below = low.as_deref().is_some_and(|l| key::compare(k, l).is_lt());
                let above = high.as_deref().is_some_and(|h| key::compare(k, h).is_ge());
                if below || above {
                    return Err(file.corrupt(
                        pgno,
                        format!("key {i} lies outside the separators of its parent"),
                    ));
                }
            }
            match page::kind(&p) {
                page::KIND_LEAF if depth == c.height => {
                    for i in 0..n {
                        if ParsedKey::parse(page::ikey(&p, i)).is_none() {
                            return Err(file.corrupt(pgno, format!("cell {i} has a bad key")));
                        }
                        if let Value::Overflow { len, first, pages } = page::value(&p, i) {
                            claims.claim(first, u64::from(pages), "an overflow value")?;
                            read_run(file, first, pages, len, page::KIND_OVERFLOW)?;
                        }
                    }
                    entries += n as u64;
                }
                page::KIND_BRANCH if depth < c.height => {
                    for pos in 0..=n {
                        let lo = if pos == 0 {
                            low.clone()
                        } else {
                            Some(page::ikey(&p, pos - 1).to_vec())
                        };
                        let hi = if pos == n {
                            high.clone()
                        } else {
                            Some(page::ikey(&p, pos).to_vec())
                        };
                        stack.push((page::child_at(&p, pos), depth + 1, lo, hi));
                    }
                }
                k => {
                    return Err(file.corrupt(
                        pgno,
                        format!(
                            "page of kind {k} at depth {depth} of a tree of height {}",
                            c.height
                        ),
                    ))
                }
            }
        }
    }
    if c.free_map_pages > 0 {
        claims.claim(
            c.free_map_first,
            u64::from(c.free_map_pages),
            "the free map",
        )?;
        let blob = read_run(
            file,
            c.free_map_first,
            c.free_map_pages,
            c.free_map_len,
            page::KIND_FREE_MAP,
        )?;
        for e in blob.chunks_exact(16) {
            claims.claim(page::u64_at(e, 0), page::u64_at(e, 8), "the free list")?;
        }
    }
    let total = c.page_count - FIRST_DATA_PAGE;
    if claims.seen.len() as u64 != total {
        let lost = (FIRST_DATA_PAGE..c.page_count)
            .find(|p| !claims.seen.contains(p))
            .unwrap_or(0);
        return Err(file.corrupt(
            lost,
            format!(
                "{} of {total} pages are neither in the tree nor free (first: page {lost})",
                total - claims.seen.len() as u64
            ),
        ));
    }
    Ok(entries)
}

/// Describes a B-tree file for `spinney dump`: its checkpoint header, then
/// every page of the tree, level by level, with its keys.
pub(crate) fn dump_file(fs: &dyn Fs, path: &Path, out: &mut dyn Write) -> Result<()> {
    let w = |e: std::io::Error| Error::io("write", "<dump output>", e);
    let (file, c) = image::open_any(fs, path, page::check_structure)?;
    writeln!(
        out,
        "B-tree file {}: page size {}, checkpoint {} (log seqno {}), root page {}, height {}, {} pages, free map at {} ({} pages)",
        path.display(),
        file.page_size,
        c.generation,
        c.seqno,
        c.root,
        c.height,
        c.page_count,
        c.free_map_first,
        c.free_map_pages
    )
    .map_err(w)?;
    let mut level = if c.root == 0 { vec![] } else { vec![c.root] };
    let mut depth = 1;
    while !level.is_empty() && depth <= c.height {
        let mut next = Vec::new();
        for pgno in level {
            let p = file.read_page(pgno)?;
            let n = page::count(&p);
            let is_branch = page::kind(&p) == page::KIND_BRANCH;
            writeln!(
                out,
                "page {pgno} {} {} cells, {} bytes used",
                if is_branch { "branch" } else { "leaf" },
                n,
                page::used(&p)
            )
            .map_err(w)?;
            if is_branch {
                writeln!(out, "  -> {}", page::link(&p)).map_err(w)?;
                next.push(page::link(&p));
            }
            for i in 0..n {
                let k = page::ikey(&p, i);
                let (uk, seqno, kind) = match ParsedKey::parse(k) {
                    Some(pk) => (pk.user_key, pk.seqno, format!("{:?}", pk.kind)),
                    None => (k, 0, "?".into()),
                };
                if is_branch {
                    let child = page::child(&p, i);
                    writeln!(out, "  \"{}\" @{seqno} -> {child}", uk.escape_ascii()).map_err(w)?;
                    next.push(child);
                } else {
                    let v = match page::value(&p, i) {
                        Value::Inline(v) => format!("{} bytes", v.len()),
                        Value::Overflow { len, first, pages } => {
                            format!(
                                "{len} bytes in overflow pages {first}..{}",
                                first + u64::from(pages)
                            )
                        }
                    };
                    writeln!(out, "  \"{}\" @{seqno} {kind} {v}", uk.escape_ascii()).map_err(w)?;
                }
            }
        }
        level = next;
        depth += 1;
    }
    match verify_image(&file, &c) {
        Ok(n) => writeln!(out, "verified: {n} versions, every page used once").map_err(w),
        Err(e) => writeln!(out, "verify failed: {e}").map_err(w),
    }
}

/// The pages image `c` uses, read from the file without the counters: as
/// many as can be read (a page that fails to read is left out; a page
/// named twice is walked once). For the store's check that no write lands
/// on the durable image, in test builds (`store::durable`).
pub(super) fn image_pages(file: &PageFile, c: &Checkpoint) -> HashSet<u64> {
    let mut pages: HashSet<u64> = (0..u64::from(c.free_map_pages))
        .map(|i| c.free_map_first.saturating_add(i))
        .collect();
    let mut stack = if c.root == 0 { vec![] } else { vec![c.root] };
    while let Some(pgno) = stack.pop() {
        if !pages.insert(pgno) {
            continue;
        }
        let mut raw = vec![0u8; file.page_size];
        let Ok(n) = file.file.read_at(file.offset(pgno), &mut raw) else {
            continue;
        };
        raw.truncate(n);
        let Ok(p) = super::format::decode_page(pgno, raw, file.image_len()) else {
            continue;
        };
        if page::check_structure(&p).is_err() {
            continue;
        }
        let n = page::count(&p);
        match page::kind(&p) {
            page::KIND_LEAF => {
                for i in 0..n {
                    if let Value::Overflow {
                        first, pages: run, ..
                    } = page::value(&p, i)
                    {
                        pages.extend((0..u64::from(run)).map(|i| first.saturating_add(i)));
                    }
                }
            }
            page::KIND_BRANCH => stack.extend((0..=n).map(|pos| page::child_at(&p, pos))),
            _ => {}
        }
    }
    pages
}
