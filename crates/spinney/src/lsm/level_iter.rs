//! Iterates one sorted level (L1 and deeper): its files are non-overlapping
//! and sorted, so the level reads as one run, opening files as it reaches them.

use std::cmp::Ordering;
use std::sync::Arc;

use super::sst::SstIter;
use super::version::{FileMeta, Version};
use crate::error::{Error, Result};
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::compare;

/// The files a `LevelIter` walks: a level of a version (shared, so that
/// making a cursor copies no list), or a list of its own (a compaction's
/// inputs).
enum Files {
    Level(Arc<Version>, usize),
    List(Vec<Arc<FileMeta>>),
}

impl Files {
    fn get(&self) -> &[Arc<FileMeta>] {
        match self {
            Files::Level(version, n) => version.level(*n),
            Files::List(files) => files,
        }
    }
}

pub(crate) struct LevelIter {
    files: Files,
    index: usize,
    inner: Option<SstIter>,
    error: Option<Error>,
    /// Charge the file a seek positions in (`FileMeta::charge_read`).
    charge: bool,
    /// Put the blocks it reads into the cache (not for a compaction's
    /// input: `Sst::scan_iter`).
    fill_cache: bool,
}

impl LevelIter {
    /// Walks `files`, sorted and disjoint, as a compaction's input: the
    /// blocks it reads do not go into the cache.
    pub(crate) fn scanning(files: Vec<Arc<FileMeta>>) -> LevelIter {
        LevelIter {
            fill_cache: false,
            ..LevelIter::over(Files::List(files), false)
        }
    }

    /// Walks `files`, sorted and disjoint, charging the file each seek
    /// positions in (an L0 run read by a user's cursor beside other runs).
    pub(crate) fn charging(files: Vec<Arc<FileMeta>>) -> LevelIter {
        LevelIter::over(Files::List(files), true)
    }

    /// Walks level `n` (1 or deeper) of `version`; with `charge`, each seek
    /// charges the file it positions in.
    pub(crate) fn of_level(version: Arc<Version>, n: usize, charge: bool) -> LevelIter {
        LevelIter::over(Files::Level(version, n), charge)
    }

    fn over(files: Files, charge: bool) -> LevelIter {
        LevelIter {
            files,
            index: 0,
            inner: None,
            error: None,
            charge,
            fill_cache: true,
        }
    }

    /// Opens file `index` (or clears the position when out of range).
    fn open(&mut self, index: usize) -> bool {
        self.index = index;
        self.inner = None;
        let Some(file) = self.files.get().get(index) else {
            return false;
        };
        match file.sst() {
            Ok(sst) => {
                self.inner = Some(sst.iter_filling(self.fill_cache));
                true
            }
            Err(e) => {
                self.error.get_or_insert(e);
                false
            }
        }
    }

    fn inner_status(&mut self) {
        if let Some(inner) = &self.inner {
            if let Err(e) = inner.status() {
                self.error.get_or_insert(e);
                self.inner = None;
            }
        }
    }

    fn skip_forward(&mut self) {
        loop {
            self.inner_status();
            match &self.inner {
                Some(i) if i.valid() => return,
                Some(_) if self.error.is_none() => {
                    if !self.open(self.index + 1) {
                        return;
                    }
                    if let Some(i) = &mut self.inner {
                        i.seek_to_first();
                    }
                }
                _ => return,
            }
        }
    }

    fn skip_backward(&mut self) {
        loop {
            self.inner_status();
            match &self.inner {
                Some(i) if i.valid() => return,
                Some(_) if self.error.is_none() => {
                    let Some(prev) = self.index.checked_sub(1) else {
                        self.inner = None;
                        return;
                    };
                    if !self.open(prev) {
                        return;
                    }
                    if let Some(i) = &mut self.inner {
                        i.seek_to_last();
                    }
                }
                _ => return,
            }
        }
    }
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.error.is_none() && self.inner.as_ref().is_some_and(|i| i.valid())
    }

    fn seek_to_first(&mut self) {
        if self.open(0) {
            if let Some(i) = &mut self.inner {
                i.seek_to_first();
            }
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        if let Some(last) = self.files.get().len().checked_sub(1) {
            if self.open(last) {
                if let Some(i) = &mut self.inner {
                    i.seek_to_last();
                }
            }
        } else {
            self.inner = None;
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        // The first file whose largest key is >= target.
        let index = self
            .files
            .get()
            .partition_point(|f| compare(&f.record.largest, target) == Ordering::Less);
        if self.open(index) {
            if let Some(i) = &mut self.inner {
                i.seek(target);
            }
            if self.charge {
                if let Some(file) = self.files.get().get(index) {
                    file.charge_read();
                }
            }
        }
        self.skip_forward();
    }

    fn next(&mut self) {
        if let Some(i) = &mut self.inner {
            i.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(i) = &mut self.inner {
            i.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.inner.as_ref().map_or(&[], |i| i.key())
    }

    fn value(&self) -> &[u8] {
        self.inner.as_ref().map_or(&[], |i| i.value())
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
