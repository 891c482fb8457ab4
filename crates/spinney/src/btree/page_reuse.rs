//! Tests of page reuse across checkpoints, through the tree: pages a
//! checkpoint frees are written over only once it is durable, a cursor
//! resuming through a stale page never reads a reused one, and copies made
//! while a checkpoint writes take the pages it frees.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::store::Frame;
use super::BtreeTable;
use crate::btree::iter::BtreeIter;
use crate::btree::read::Lookup;
use crate::btree::{reopen_scratch_table, scratch_table};
use crate::error::{Error, Result};
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::{self, internal_key, Kind, KIND_SEEK, SEQNO_MAX};
use crate::mvcc::Horizon;

const PAGE: usize = 4096;
const KEYS: u32 = 3000;

fn value(round: u8) -> Vec<u8> {
    vec![round; 100]
}

/// Every key put again at `seqno`, its value `value(seqno)`.
fn put_all(table: &BtreeTable, seqno: u64) {
    let mut st = table.writer();
    let horizon = Horizon::no_readers(seqno);
    for i in 0..KEYS {
        let key = format!("key{i:06}");
        table
            .apply(
                &mut st,
                seqno,
                Kind::Put,
                key.as_bytes(),
                &value(seqno as u8),
                &horizon,
            )
            .expect("apply");
    }
}

fn checkpoint(
    table: &BtreeTable,
    seqno: u64,
    sync_log: impl FnOnce(u64) -> Result<()>,
) -> Result<u64> {
    table.checkpoint(|| ((), seqno, 0), sync_log, |_| Ok(()))
}

/// Reads every key, expecting `value(seqno)`.
fn read_all(table: &BtreeTable, seqno: u64) {
    let visible = AtomicU64::new(seqno);
    for i in 0..KEYS {
        let mut got = Vec::new();
        let found = table
            .get(format!("key{i:06}").as_bytes(), None, &visible, &mut got)
            .expect("get");
        assert!(matches!(found, Lookup::Value), "key {i} is missing");
        assert_eq!(got, value(seqno as u8), "key {i}");
    }
}

/// Opens the table's durable image with a cache of its own and checks
/// it whole and every key at `value(seqno)`.
fn check_durable(dir: &std::path::Path, seqno: u64) {
    let table = reopen_scratch_table(dir, PAGE, 64 << 20);
    crate::btree::verify::verify(&table).expect("the durable image is whole");
    read_all(&table, seqno);
}

#[test]
fn pages_taken_from_limbo_reach_the_file_only_once_their_checkpoint_is_durable() {
    // Goal: a copy made while a checkpoint writes may take a page the
    // durable image still uses (`alloc_page`), but that page must not be
    // written before the checkpoint's header is: a crash in between
    // opens the durable image, one of whose pages would be overwritten.
    // Method: image 1 durable; every key put again (every leaf copied,
    // image 1's leaves retired); a checkpoint whose log sync (after its
    // pages, before its header) first puts every key again in a cache
    // small enough that it hands dirty pages back to be written, and
    // then fails, as a crash there would. Image 1, opened again, must
    // be whole and hold the first values. (Fails if the writer's state
    // does not keep a handle to each held frame: `install_page`.)
    let dir = tempfile::tempdir().expect("tempdir");
    drop(scratch_table(dir.path(), PAGE, 0));
    let table = reopen_scratch_table(dir.path(), PAGE, 96 << 10);
    put_all(&table, 1);
    checkpoint(&table, 1, |_| Ok(())).expect("checkpoint 1");
    put_all(&table, 2);
    let failed = checkpoint(&table, 2, |_| {
        put_all(&table, 3);
        assert!(
            !table.writer().space.held.is_empty(),
            "no copy took a page of the durable image"
        );
        // Reads that miss take the place of other pages and write the
        // dirty ones the cache hands back.
        read_all(&table, 3);
        Err(Error::io("sync", "log", std::io::Error::other("injected")))
    });
    assert!(failed.is_err(), "the checkpoint did not fail");
    drop(table);
    check_durable(dir.path(), 1);
}

#[test]
fn a_cursor_resuming_through_a_stale_page_never_reads_a_reused_one() {
    // Goal: a cursor that copied its window before the pages were
    // replaced may resume through a stale frame still cached and
    // unchanged (`beside` reads a child of the parent it recorded);
    // no page that frame names may be reused meanwhile, or the cursor
    // reads the reused page's new contents as the next leaf.
    // Method: image 1; an iterator at each key (its window ends at its
    // leaf's end where the key is its leaf's last); the root's stale
    // frame kept in the cache by a handle, as a reader holding it
    // would; every key put again (every page replaced); then, during
    // the next checkpoint's write, rounds of a few writes whose copies
    // may take replaced pages, after each of which every iterator steps
    // to the next key.
    // (Fails if limbo pages may be reused before all of them are out
    // of the cache: `reclaim`.)
    let dir = tempfile::tempdir().expect("tempdir");
    let table = Arc::new(scratch_table(dir.path(), PAGE, 0));
    put_all(&table, 1);
    checkpoint(&table, 1, |_| Ok(())).expect("checkpoint 1");
    let mut cursors: Vec<BtreeIter> = (0..KEYS)
        .map(|i| {
            let mut it = BtreeIter::new(Arc::clone(&table));
            let key = format!("key{i:06}");
            it.seek(&internal_key(key.as_bytes(), SEQNO_MAX, KIND_SEEK));
            assert!(it.valid(), "key {i} not found");
            it
        })
        .collect();
    let root = table.root.read().place().0;
    let stale_root = table
        .store
        .cache
        .get::<Frame>(&(table.store.file.owner, root));
    assert!(stale_root.is_some(), "the root is not cached");
    put_all(&table, 2);
    checkpoint(&table, 2, |_| {
        // Eight rounds of four writes: the replaced pages leave the
        // cache at the first write, and the copies take them.
        for round in 0..8 {
            {
                let mut st = table.writer();
                let horizon = Horizon::no_readers(3);
                for i in 0..4 {
                    let key = format!("key{:06}", round * 4 + i);
                    table
                        .apply(&mut st, 3, Kind::Put, key.as_bytes(), &value(3), &horizon)
                        .expect("apply");
                }
            }
            for (i, it) in cursors.iter_mut().enumerate() {
                let at = i as u32 + round + 1;
                if at > KEYS {
                    continue;
                }
                it.next();
                if at == KEYS {
                    assert!(!it.valid(), "a key after the last");
                    continue;
                }
                assert!(it.valid(), "cursor {i} ended early: {:?}", it.status());
                // Past the other versions of the key it was on.
                while key::user_key(it.key()) == format!("key{:06}", at - 1).as_bytes() {
                    it.next();
                }
                assert_eq!(
                    key::user_key(it.key()),
                    format!("key{at:06}").as_bytes(),
                    "cursor {i}, step {}",
                    round + 1
                );
            }
        }
        assert!(
            !table.writer().space.held.is_empty(),
            "no replaced page was reused"
        );
        Ok(())
    })
    .expect("checkpoint 2");
    drop(stale_root);
}

#[test]
fn copies_made_while_a_checkpoint_writes_take_the_pages_it_frees() {
    // Goal: the next epoch's copies, made while a checkpoint writes,
    // take the pages that checkpoint frees rather than growing the file
    // (a table overwritten at random had a file of 2.4 images of its
    // tree), and are written once it is durable.
    // Method: image 1, every key put again, a checkpoint during whose
    // write every key is put a third time; the file may grow only by
    // the few pages a write takes before the freed pages are out of the
    // cache. The next checkpoint's image holds the third values.
    let dir = tempfile::tempdir().expect("tempdir");
    let table = scratch_table(dir.path(), PAGE, 0);
    put_all(&table, 1);
    checkpoint(&table, 1, |_| Ok(())).expect("checkpoint 1");
    put_all(&table, 2);
    checkpoint(&table, 2, |_| {
        let before = table.writer().space.page_count;
        put_all(&table, 3);
        let st = table.writer();
        let grew = st.space.page_count - before;
        assert!(
            grew * 10 < st.space.held.len() as u64,
            "the file grew by {grew} pages, {} copies took freed ones",
            st.space.held.len()
        );
        Ok(())
    })
    .expect("checkpoint 2");
    {
        let st = table.writer();
        assert!(
            st.space.held.is_empty() && st.space.early.is_empty(),
            "pages held past durability"
        );
    }
    checkpoint(&table, 3, |_| Ok(())).expect("checkpoint 3");
    drop(table);
    check_durable(dir.path(), 3);
}
