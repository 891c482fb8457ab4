//! The whole-state edit that begins every manifest, and the manifest roll.
//!
//! Open and the roll start a manifest the same way: one `VersionEdit` that
//! describes the whole database (`WholeState::edit`), written and made live
//! by `manifest::start_manifest`. Open does it once, after recovery; the roll
//! does it while the database runs, when the live manifest has reached
//! `Options::max_manifest_size`, so that a long-running process does not
//! append to one manifest without bound.
//!
//! Thread-safety: `roll` runs inside `VersionSet::log`, with the `vs` lock
//! held. Every caller of `log` installs the state its edit describes under
//! that same lock right after it, so the tables, files and flushed seqnos the
//! roll reads reflect every edit already logged and none that is not. Under
//! `vs` the roll takes the `wal` lock and the tables' super-version locks,
//! which come later in the lock order (db/mod.rs); never `bg` or `commit`.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use super::{Core, DbInner, VersionSet};
use crate::error::Result;
use crate::file_names::manifest_name;
use crate::manifest::{start_manifest, LogStart, VersionEdit, FORMAT_UNNUMBERED};

/// What the first record of a manifest holds: the counters of the database
/// and every table with its options, its flushed seqno and its files.
pub(crate) struct WholeState<'a> {
    /// The database's format, named by the record when it is 2 or later.
    pub format: u32,
    /// Every live table, by name.
    pub tables: &'a BTreeMap<String, Core>,
    pub next_table_id: u32,
    /// Above every file number in use, the new manifest's included.
    pub next_file_number: u64,
    pub last_seqno: u64,
    /// The oldest log segment that may hold an entry not yet in an SST (it
    /// exists: the log starts there), and the seqno its records follow.
    pub log_start: LogStart,
}

impl WholeState<'_> {
    /// The edit that, applied to an empty database, rebuilds this state.
    pub(crate) fn edit(&self) -> VersionEdit {
        let mut edit = VersionEdit {
            format: (self.format > FORMAT_UNNUMBERED).then_some(self.format),
            next_file_number: Some(self.next_file_number),
            last_seqno: Some(self.last_seqno),
            log_number: Some(self.log_start.segment),
            log_start: Some(self.log_start),
            next_table_id: Some(self.next_table_id),
            ..VersionEdit::default()
        };
        for t in self.tables.values() {
            t.add_to_whole_state(&mut edit);
        }
        edit.created.sort_by_key(|r| r.id);
        edit
    }
}

/// The roll policy: true when a manifest of `manifest_bytes`, whose
/// whole-state record took `snapshot_bytes`, must be rolled before its next
/// edit. It rolls at `max_manifest_size`, or at twice its whole-state record
/// when that is larger: a roll then always follows at least as many bytes of
/// edits as it rewrites, and a catalog larger than the limit is not rewritten
/// at every edit.
pub(crate) fn should_roll(
    manifest_bytes: u64,
    snapshot_bytes: u64,
    max_manifest_size: u64,
) -> bool {
    manifest_bytes >= max_manifest_size.max(snapshot_bytes.saturating_mul(2))
}

/// Logs `edit` to a new manifest that begins with the whole state, makes it
/// the live manifest, and deletes the old one.
///
/// On success the edit is durable in the new manifest. On an error the old
/// manifest may still be the live one (without the edit) or the new one may
/// be (with it); `VersionSet::log` refuses every later edit, and its caller
/// poisons the database. The old manifest is deleted only once `CURRENT`
/// durably names the new one.
pub(super) fn roll(vs: &mut VersionSet, db: &DbInner, edit: &VersionEdit) -> Result<()> {
    let number = db.next_file_number.fetch_add(1, Ordering::AcqRel);
    // Segments no longer in `closed` hold only entries that every table has
    // flushed (the log cleaner drops a segment from `closed` before deleting
    // it), so recovery starts at the oldest closed one, or the open one.
    let log_start = { db.wal.lock().oldest_needed() };
    let snapshot = WholeState {
        format: db.format,
        tables: &vs.tables,
        next_table_id: vs.next_table_id,
        next_file_number: db.next_file_number.load(Ordering::Acquire),
        last_seqno: db.last_seqno.load(Ordering::Acquire),
        log_start,
    }
    .edit()
    .encode();
    let writer = start_manifest(&*db.fs, &db.dir, number, &[&snapshot, &edit.encode()])?;
    vs.manifest = Some(writer);
    vs.snapshot_bytes = snapshot.len() as u64;
    let old = std::mem::replace(&mut vs.manifest_number, number);
    db.counters.manifest_rolls.fetch_add(1, Ordering::Relaxed);
    // The new manifest is live and durable: the old one is garbage. A failed
    // removal leaves a file that the next open deletes.
    let _ = db.fs.remove(&db.path(&manifest_name(old)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn rolls_at_the_limit_or_at_twice_the_snapshot_whichever_is_larger() {
        // Goal: pin the policy at its edges, without files.
        let max = 4096;
        assert!(!should_roll(4095, 100, max));
        assert!(should_roll(4096, 100, max));
        assert!(should_roll(4096, 2048, max));
        // A whole state larger than half the limit moves the threshold.
        assert!(!should_roll(4096, 3000, max));
        assert!(!should_roll(5999, 3000, max));
        assert!(should_roll(6000, 3000, max));
        // No overflow with absurd inputs.
        assert!(!should_roll(u64::MAX - 1, u64::MAX, max));
        assert!(should_roll(u64::MAX, u64::MAX, max));
    }

    #[cfg(feature = "testing")]
    #[test]
    fn after_a_failed_roll_the_manifest_takes_no_more_edits() {
        // Goal: a roll that fails at any step leaves it unknown which
        // manifest the next open reads, so no later edit may be
        // acknowledged: it could sit in the manifest that is not read. The
        // database is poisoned by the caller, but only after it has dropped
        // the `vs` lock, so `log` itself must refuse in between.
        // Method: grow a manifest to the limit with small edits, fail each
        // operation of the roll in turn with EIO, and log again: refused,
        // without a file operation. Then the database opens.
        use std::path::Path;

        use crate::fs::{FaultFs, FaultKind};
        use crate::options::Options;

        let dir = Path::new("/db");
        let edit = VersionEdit {
            last_seqno: Some(0),
            ..VersionEdit::default()
        };
        let at_the_limit = |fs: &Arc<FaultFs>| {
            let options = Options {
                max_manifest_size: crate::limits::MANIFEST_BYTES_MIN,
                fs: fs.clone(),
                ..Options::default()
            };
            let db = super::super::open::open(dir, options).expect("open");
            loop {
                let mut vs = db.vs.lock();
                if vs.manifest.as_ref().map_or(0, |m| m.len()) >= crate::limits::MANIFEST_BYTES_MIN
                {
                    break;
                }
                vs.log(&db, &edit).expect("log");
            }
            db
        };
        let span = {
            let fs = FaultFs::new();
            let db = at_the_limit(&fs);
            let start = fs.mutating_ops();
            db.vs.lock().log(&db, &edit).expect("roll");
            assert_eq!(db.counters.manifest_rolls.load(Ordering::Relaxed), 1);
            fs.mutating_ops() - start
        };
        assert!(span >= 10, "a roll took only {span} operations");
        // The last operation removes the old manifest, after the switch; its
        // failure does not fail the edit.
        for k in 0..span - 1 {
            let fs = FaultFs::new();
            let db = at_the_limit(&fs);
            fs.inject(k, FaultKind::Eio);
            let mut vs = db.vs.lock();
            assert!(vs.log(&db, &edit).is_err(), "EIO at op {k}: roll succeeded");
            let before = fs.mutating_ops();
            match vs.log(&db, &edit) {
                Err(crate::Error::ReadOnly { reason }) => {
                    assert!(reason.contains("manifest"), "{reason}")
                }
                other => panic!("EIO at op {k}: the next edit got {other:?}"),
            }
            assert_eq!(fs.mutating_ops(), before, "EIO at op {k}: wrote after");
            drop(vs);
            drop(db);
            super::super::open::open(
                dir,
                Options {
                    fs: fs.clone(),
                    ..Options::default()
                },
            )
            .unwrap_or_else(|e| panic!("EIO at op {k}: reopen: {e}"));
        }
    }
}
