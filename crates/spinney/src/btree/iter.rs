//! `BtreeIter`: a B-tree table as an `InternalIterator`, so that the LSM
//! cursor (`lsm::cursor`) resolves versions, bounds and direction over it
//! exactly as over an LSM table.
//!
//! The iterator copies one leaf at a time under its latch (its image, and
//! the overflow values it points to) and holds no latch between calls. To
//! step past the leaf it descends again from the root with the separator
//! that bounds the leaf, so it never follows a page number that a writer
//! may have replaced. It must read under a registered snapshot: the writer
//! then keeps every version the snapshot sees, and what the iterator read
//! from one leaf stays consistent with what it reads from the next.

use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;

use super::page;
use super::read::Bounds;
use super::{BtreeTable, Target};
use crate::error::{Error, Result};
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::KeyRef;
use crate::read_context::{self, ReadContext};

thread_local! {
    /// Leaf buffers of this thread's dropped iterators, for its next ones:
    /// an iterator made for each seek (as db_bench's are) otherwise
    /// allocates and frees a page each time, and a page is past the sizes
    /// the allocator keeps per thread.
    static SPARE_IMAGES: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// The most leaf buffers a thread keeps for later iterators.
const SPARE_IMAGES_MAX: usize = 4;

pub(crate) struct BtreeIter {
    table: Arc<BtreeTable>,
    /// A copy of the current leaf's image (empty when none).
    image: Vec<u8>,
    /// Overflow values of the current leaf, by cell position, in order.
    overflow: Vec<(usize, Vec<u8>)>,
    pos: usize,
    valid: bool,
    /// Where the current entry's internal key lies in `image`, and its
    /// value if inline (None: in `overflow`), found once per position.
    key_at: Range<usize>,
    value_at: Option<Range<usize>>,
    /// The separators around the current leaf.
    bounds: Bounds,
    /// The separator the next leaf is looked up by (a buffer reused).
    edge: Vec<u8>,
    status: Result<()>,
}

impl BtreeIter {
    pub(crate) fn new(table: Arc<BtreeTable>) -> BtreeIter {
        let image = SPARE_IMAGES
            .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
            .ok()
            .flatten()
            .unwrap_or_default();
        BtreeIter {
            table,
            image,
            overflow: Vec::new(),
            pos: 0,
            valid: false,
            key_at: 0..0,
            value_at: None,
            bounds: Bounds::default(),
            edge: Vec::new(),
            status: Ok(()),
        }
    }

    fn count(&self) -> usize {
        if self.image.is_empty() {
            0
        } else {
            page::count(&self.image)
        }
    }

    /// Loads the leaf for `target`. False when the tree is empty or on error.
    fn load(&mut self, target: Target<'_>) -> bool {
        let mut ctx = ReadContext::default();
        let result = self.load_counted(target, &mut ctx);
        read_context::add(&ctx);
        match result {
            Ok(found) => found,
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    fn load_counted(&mut self, target: Target<'_>, ctx: &mut ReadContext) -> Result<bool> {
        let epoch = crossbeam_epoch::pin();
        let Some(leaf) = self
            .table
            .descend(target, Some(&mut self.bounds), ctx, &epoch)?
        else {
            self.image.clear();
            return Ok(false);
        };
        // Copy first, then look for overflow cells in the copy: one
        // sequential pass over the page, instead of a cache miss per cell.
        // The leaf stays latched (and its overflow runs unreused) until
        // their values are read.
        page::copy_used(&leaf.guard.image, &mut self.image);
        self.overflow.clear();
        for i in page::overflow_cells(&self.image) {
            let v = self.table.read_value(page::value(&self.image, i), ctx)?;
            self.overflow.push((i, v));
        }
        drop(leaf);
        Ok(true)
    }

    fn fail(&mut self, e: Error) {
        if self.status.is_ok() {
            self.status = Err(e);
        }
        self.valid = false;
    }

    /// Records where the entry at `pos` lies (the iterator is valid).
    fn locate(&mut self) {
        (self.key_at, self.value_at) = page::leaf_parts(&self.image, self.pos);
    }

    /// Moves forward from the current leaf until a leaf with entries.
    fn settle_forward(&mut self) {
        while self.pos >= self.count() {
            let Some(high) = self.bounds.high() else {
                self.valid = false;
                return;
            };
            Bounds::copy(&mut self.edge, high);
            let edge = std::mem::take(&mut self.edge);
            let loaded = self.load(Target::AtOrAfter(KeyRef::of(&edge)));
            if loaded {
                // The tree may have changed since the last leaf was read:
                // start at the first key not yet seen, wherever it now is.
                let mut compared = 0;
                self.pos = page::lower_bound(&self.image, KeyRef::of(&edge), &mut compared);
            }
            self.edge = edge;
            if !loaded {
                self.valid = false;
                return;
            }
        }
        self.valid = true;
        self.locate();
    }

    /// Sets `pos` on the last entry below `bound` (all entries when None),
    /// going back a leaf at a time while there is none.
    fn settle_backward(&mut self, mut bound: Option<Vec<u8>>) {
        loop {
            let mut compared = 0;
            let end = match &bound {
                Some(b) => page::lower_bound(&self.image, KeyRef::of(b), &mut compared),
                None => self.count(),
            };
            if end > 0 && self.count() > 0 {
                self.pos = end - 1;
                self.valid = true;
                self.locate();
                return;
            }
            let Some(low) = self.bounds.low().map(<[u8]>::to_vec) else {
                self.valid = false;
                return;
            };
            if !self.load(Target::Before(KeyRef::of(&low))) {
                self.valid = false;
                return;
            }
            bound = Some(low);
        }
    }
}

impl Drop for BtreeIter {
    fn drop(&mut self) {
        if self.image.capacity() == 0 {
            return;
        }
        let image = std::mem::take(&mut self.image);
        let _ = SPARE_IMAGES.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                if s.len() < SPARE_IMAGES_MAX {
                    s.push(image);
                }
            }
        });
    }
}

impl InternalIterator for BtreeIter {
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek_to_first(&mut self) {
        self.valid = false;
        if self.status.is_err() || !self.load(Target::First) {
            return;
        }
        self.pos = 0;
        self.settle_forward();
    }

    fn seek_to_last(&mut self) {
        self.valid = false;
        if self.status.is_err() || !self.load(Target::Last) {
            return;
        }
        self.settle_backward(None);
    }

    fn seek(&mut self, target: &[u8]) {
        self.valid = false;
        if self.status.is_err() || !self.load(Target::AtOrAfter(KeyRef::of(target))) {
            return;
        }
        let mut compared = 0;
        self.pos = page::lower_bound(&self.image, KeyRef::of(target), &mut compared);
        read_context::add(&ReadContext {
            keys_compared: compared,
            ..ReadContext::default()
        });
        self.settle_forward();
    }

    fn next(&mut self) {
        if !self.valid {
            return;
        }
        self.pos += 1;
        self.settle_forward();
    }

    fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.pos > 0 {
            self.pos -= 1;
            self.locate();
            return;
        }
        // The last entry below this one: in an earlier leaf.
        let first = page::ikey(&self.image, 0).to_vec();
        self.settle_backward(Some(first));
    }

    fn key(&self) -> &[u8] {
        if self.valid {
            self.image.get(self.key_at.clone()).unwrap_or_default()
        } else {
            &[]
        }
    }

    fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match &self.value_at {
            Some(inline) => self.image.get(inline.clone()).unwrap_or_default(),
            None => self
                .overflow
                .binary_search_by_key(&self.pos, |o| o.0)
                .ok()
                .and_then(|i| self.overflow.get(i))
                .map_or(&[], |o| o.1.as_slice()),
        }
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            Ok(()) => Ok(()),
            Err(e) => Err(e.duplicate()),
        }
    }
}
