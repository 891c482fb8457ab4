//! Every size, count and depth limit of the engine, with the reason for it.
//!
//! A limit that a caller can reach is checked at the API and answered with
//! `Error::InvalidArgument`; a limit on bytes read from disk is checked by the
//! decoder and answered with `Error::Corruption`.
//!
//! ```
//! # fn main() -> spinney::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! use spinney::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
//! let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
//! let t = db.create_table("t", spinney::TableOptions::lsm())?;
//! // Checked at the call: a key or value past its limit is refused, and
//! // nothing is written.
//! assert!(t.put(&vec![0; KEY_BYTES_MAX + 1], b"").is_err());
//! assert!(t.put(b"k", &vec![0; VALUE_BYTES_MAX + 1]).is_err());
//! t.put(&vec![0; KEY_BYTES_MAX], b"")?; // at the limit: fine
//! # Ok(()) }
//! ```

/// Longest key: 64 KiB - 1. Keys are copied into index blocks and compared
/// on every step of a search; beyond this size a key/value store is the wrong
/// tool, and bounding it bounds every block's index entry.
pub const KEY_BYTES_MAX: usize = 65_535;

/// Largest value: 64 MiB. A value lives whole in a memtable and in one data
/// block, so it must fit comfortably in memory many times over.
pub const VALUE_BYTES_MAX: usize = 64 << 20;

/// Largest encoded write batch: 512 MiB. A batch is one log record and is
/// held whole in memory by the commit leader and by recovery.
pub const BATCH_BYTES_MAX: usize = 512 << 20;

/// Longest table name, in bytes.
pub const TABLE_NAME_BYTES_MAX: usize = 128;

/// Most tables in one database (live ones; ids of dropped tables are not reused).
pub const TABLES_MAX: usize = 4096;

/// Smallest and largest data-block target size of an SST.
pub const BLOCK_BYTES_MIN: usize = 256;
pub const BLOCK_BYTES_MAX: usize = 4 << 20;

/// Smallest and largest memtable size before it is frozen and flushed.
pub const WRITE_BUFFER_BYTES_MIN: usize = 64 << 10;
pub const WRITE_BUFFER_BYTES_MAX: usize = 1 << 30;

/// Largest bloom filter bits per key. Past 30 the false-positive rate is
/// already below one in a million and more bits only waste memory.
pub const BLOOM_BITS_PER_KEY_MAX: u32 = 30;

/// Size of one write-ahead-log block (records are framed inside blocks so
/// that recovery can resynchronise after a damaged region).
pub const WAL_BLOCK_BYTES: usize = 32 << 10;

/// A log segment is closed and a new one started past this size.
pub const WAL_SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;

/// Largest block (data, index, filter, properties) a decoder accepts from an
/// SST. Bounds the allocation a corrupt length can cause.
pub const SST_BLOCK_BYTES_MAX: u64 = 1 << 30;

/// Largest manifest record; bounds the allocation a corrupt length can cause.
pub const MANIFEST_RECORD_BYTES_MAX: usize = 64 << 20;

/// Largest L0 compaction trigger. Every L0 run is searched by every read;
/// beyond this a table is not an LSM tree a reader can afford.
pub const L0_TRIGGER_MAX: u32 = 64;

/// Default size at which the manifest is rolled (rewritten as one whole-state
/// record in a new file). Large enough that a roll is rare, small enough that
/// replaying the manifest at open takes no noticeable time.
pub const MANIFEST_BYTES_DEFAULT: u64 = 64 << 20;

/// Smallest `max_manifest_size`. The whole-state record of even a small
/// database is hundreds of bytes; below a few KiB the manifest would be
/// rewritten after every handful of edits, each time with four syncs.
pub const MANIFEST_BYTES_MIN: u64 = 4 << 10;

/// Largest level fanout.
pub const FANOUT_MAX: u32 = 1000;

/// Largest compaction output file target (a file's index and filter are
/// held in memory while it is open).
pub const TARGET_FILE_BYTES_MAX: u64 = 4 << 30;

/// Most background threads.
pub const BACKGROUND_THREADS_MAX: usize = 64;

/// Largest nice increment of the background threads (the kernel's lowest
/// priority is nice 19).
pub const BACKGROUND_NICE_MAX: i32 = 19;

/// Smallest B-tree page.
pub const PAGE_BYTES_MIN: usize = 4 << 10;

/// Largest B-tree page (page offsets are 16 bits).
pub const PAGE_BYTES_MAX: usize = 32 << 10;

/// Number of levels of an LSM table, L0 included.
pub const LSM_LEVELS: usize = 7;

/// Bytes of a B-tree page that hold no cell: its framing on disk and its
/// image's header (the layout in `btree/format.rs` is checked against it).
pub const BTREE_PAGE_HEADER_BYTES: usize = 28;

/// Bytes a B-tree leaf cell needs beside its user key, at most: its slot,
/// the key's length, a value kept in overflow pages (its length, first
/// page and page count) and the key's seqno trailer (checked in
/// `btree/format.rs`).
pub const BTREE_CELL_OVERHEAD_BYTES: usize = 32;

/// The largest user key a B-tree table with `page_size`-byte pages takes:
/// the room of a quarter of a page's cells, so that every page holds at
/// least four cells (`TableOptions::max_key_len`).
pub const fn btree_key_bytes_max(page_size: usize) -> usize {
    (page_size - BTREE_PAGE_HEADER_BYTES) / 4 - BTREE_CELL_OVERHEAD_BYTES
}

const _: () = assert!(KEY_BYTES_MAX + VALUE_BYTES_MAX < BATCH_BYTES_MAX);
const _: () = assert!(BLOCK_BYTES_MIN < BLOCK_BYTES_MAX);
const _: () = assert!(WRITE_BUFFER_BYTES_MIN < WRITE_BUFFER_BYTES_MAX);
const _: () = assert!(MANIFEST_BYTES_MIN <= MANIFEST_BYTES_DEFAULT);
const _: () = assert!(VALUE_BYTES_MAX as u64 + KEY_BYTES_MAX as u64 * 2 < SST_BLOCK_BYTES_MAX);
const _: () = assert!(btree_key_bytes_max(PAGE_BYTES_MAX) < KEY_BYTES_MAX);
const _: () = assert!(btree_key_bytes_max(PAGE_BYTES_MIN) >= 512);
