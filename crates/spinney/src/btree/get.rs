//! Point reads of a B-tree table: `get`, through the cache or, with
//! `Options::mmap_reads`, with the leaf read through the file's memory map
//! (`get_mapped`); `get_across_leaves` (iter.rs) reads on when a key's
//! versions run into the next leaf.
//!
//! Thread-safety: any number of readers beside the writer, as every descent
//! (read.rs).

use std::sync::atomic::{AtomicU64, Ordering};

use super::page;
use super::read::{give_back_leaf_buffer, take_leaf_buffer, Lookup, MapRead, Reached, Target};
use super::BtreeTable;
use crate::error::Result;
use crate::mvcc::key::{self, KeyRef, Kind, ParsedKey, SEQNO_MAX};
use crate::read_context::{self, ReadContext};

impl BtreeTable {
    /// The value of `user_key` as of `snapshot`, or as of now when None,
    /// appended to `value` when found. When the key's versions run into
    /// the next leaf, `Lookup::Continue` says so: the caller registers a
    /// snapshot and reads on with `get_across_leaves`.
    pub(crate) fn get(
        &self,
        user_key: &[u8],
        snapshot: Option<u64>,
        visible: &AtomicU64,
        value: &mut Vec<u8>,
    ) -> Result<Lookup> {
        let mut ctx = ReadContext {
            gets: 1,
            trees_searched: 1,
            ..ReadContext::default()
        };
        let result = self.get_counted(user_key, snapshot, visible, &mut ctx, value);
        read_context::add(&ctx);
        result
    }

    /// `get`'s descent and answer. On a file read through a memory map, a
    /// leaf no frame holds is read from the map into this thread's buffer
    /// and searched there, not cached (LMDB's reads: the OS's page cache
    /// is where it stays); its seqno is read while the leaf is as copied,
    /// as the latched path reads it under the leaf's latch (the writer
    /// prunes only under it, and keeps the newest version at or below the
    /// visible seqno of that moment).
    fn get_counted(
        &self,
        user_key: &[u8],
        snapshot: Option<u64>,
        visible: &AtomicU64,
        ctx: &mut ReadContext,
        value: &mut Vec<u8>,
    ) -> Result<Lookup> {
        let newest = KeyRef::seek(user_key, SEQNO_MAX);
        let epoch = crossbeam_epoch::pin();
        let mapped = self.store.file.is_mapped();
        let mut buf = if mapped {
            take_leaf_buffer()
        } else {
            Vec::new()
        };
        let seqno_now = || snapshot.unwrap_or_else(|| visible.load(Ordering::Acquire));
        let mut seqno = 0;
        let mut read_seqno = || seqno = seqno_now();
        let map = mapped.then_some(MapRead {
            buf: &mut buf,
            between: &mut read_seqno,
        });
        let result = match self.descend_or_map(Target::AtOrAfter(newest), None, ctx, &epoch, map) {
            Ok(None) => Ok(Lookup::Absent),
            Ok(Some(Reached::Leaf(leaf))) => {
                let (p, pgno) = (&leaf.guard.image, leaf.frame.pgno);
                self.look_up(p, pgno, user_key, seqno_now(), ctx, value)
            }
            Ok(Some(Reached::Mapped(_descent, pgno))) => {
                self.look_up(&buf, pgno, user_key, seqno, ctx, value)
            }
            Err(e) => Err(e),
        };
        if mapped {
            give_back_leaf_buffer(buf);
        }
        result
    }

    /// The answer for `user_key` at `seqno` in leaf image `p` (page
    /// `pgno`), the leaf a descent to the key's newest version reached.
    fn look_up(
        &self,
        p: &[u8],
        pgno: u64,
        user_key: &[u8],
        seqno: u64,
        ctx: &mut ReadContext,
        value: &mut Vec<u8>,
    ) -> Result<Lookup> {
        let pos = page::lower_bound(p, KeyRef::seek(user_key, seqno), &mut ctx.keys_compared);
        if pos < page::count(p) {
            let k = page::ikey(p, pos);
            return match ParsedKey::parse(k) {
                Some(pk) if pk.user_key == user_key => match pk.kind {
                    Kind::Put => {
                        self.read_value_into(page::value(p, pos), ctx, value)?;
                        Ok(Lookup::Value)
                    }
                    // (`parse` gives no range delete.)
                    Kind::Delete | Kind::RangeDelete => Ok(Lookup::Absent),
                },
                Some(_) => Ok(Lookup::Absent),
                None => Err(self.store.file.corrupt(pgno, "bad key trailer")),
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
}
