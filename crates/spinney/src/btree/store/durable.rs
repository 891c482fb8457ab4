//! The check that no write lands on the durable image, in test builds.

use std::collections::HashSet;
use std::path::Path;

/// The rule the copy-on-write checkpoint rests on, checked in test builds
/// (feature `testing`): no page of the durable image is written over. It
/// holds the pages of the durable image (tree, overflow runs, free map),
/// and from a checkpoint's data sync until its header is synced those of
/// the image it makes durable as well, since a crash may leave either;
/// `check` panics when a page write lands on one. Each image is walked
/// from the file once, at open or at its checkpoint's data sync (a cost
/// for tests only: without the feature this is empty and does nothing). The crash tests meet a
/// violation only when a crash garbles that very write; this meets every
/// one (a write-back writing a page again after the checkpoint that wrote
/// it had synced, two or three times a run of `crash_commit`).
#[derive(Debug, Default)]
pub(crate) struct DurableGuard {
    /// The pages no write may touch.
    #[cfg(feature = "testing")]
    pages: parking_lot::Mutex<HashSet<u64>>,
    /// The pages of the image being made durable (`add`).
    #[cfg(feature = "testing")]
    next: parking_lot::Mutex<HashSet<u64>>,
}

impl DurableGuard {
    /// The durable image uses `pages` (at open). Called only in test
    /// builds: the pages above the store walk the image to name them.
    pub(crate) fn set(&self, _pages: impl FnOnce() -> HashSet<u64>) {
        #[cfg(feature = "testing")]
        {
            *self.pages.lock() = _pages();
        }
    }

    /// An image that uses `pages` may be durable too (its pages are
    /// synced, its header not yet).
    pub(crate) fn add(&self, _pages: impl FnOnce() -> HashSet<u64>) {
        #[cfg(feature = "testing")]
        {
            let next = _pages();
            self.pages.lock().extend(&next);
            *self.next.lock() = next;
        }
    }

    /// The image `add` named is the durable one (its header is synced).
    pub(crate) fn made_durable(&self) {
        #[cfg(feature = "testing")]
        {
            *self.pages.lock() = std::mem::take(&mut *self.next.lock());
        }
    }

    /// Panics if page `pgno`, just written, is one of the durable image.
    pub(crate) fn check(&self, _path: &Path, _pgno: u64) {
        #[cfg(feature = "testing")]
        assert!(
            !self.pages.lock().contains(&_pgno),
            "{}: page {_pgno} of the durable image was written over",
            _path.display()
        );
    }
}
