//! The file cleaner: deleting the files no one needs any more. While the
//! database runs, SSTs that no live version references (after a flush or a
//! compaction, or a dropped table); at open, everything the recovered state
//! does not name. Log segments are let go of by `log.rs`, a dropped B-tree
//! table's file by `work.rs`. Names are `file_names`.
//!
//! The rule behind both: a file is deleted only when no durable manifest can
//! name it any more and no reader holds it, and nothing is deleted once the
//! database is poisoned (it is unknown then what the next open will read).
//!
//! Thread-safety: the running cleaner reads the catalog under the `vs` lock
//! and deletes outside it; any thread may run it.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::{Core, DbInner};
use crate::error::Result;
use crate::file_names::{manifest_name, parse_numbered, MANIFEST_PREFIX};
use crate::fs::Fs;

/// Deletes, at open, every file of the database the recovered state does
/// not name: table files (SSTs and B-tree files) not in `live`, log
/// segments before `wal_number`, and manifests other than
/// `manifest_number`. Files that are not the database's are left alone; a
/// failed removal is left for the next open.
pub(super) fn remove_garbage_at_open(
    fs: &dyn Fs,
    dir: &Path,
    live: &HashSet<String>,
    wal_number: u64,
    manifest_number: u64,
) -> Result<()> {
    for name in fs.list(dir)? {
        let table_file =
            parse_numbered(&name, "sst").is_some() || parse_numbered(&name, "btree").is_some();
        let garbage = if table_file {
            !live.contains(&name)
        } else if let Some(n) = parse_numbered(&name, "wal") {
            n < wal_number
        } else {
            name.starts_with(MANIFEST_PREFIX) && name != manifest_name(manifest_number)
        };
        if garbage {
            let _ = fs.remove(&dir.join(&name));
        }
    }
    Ok(())
}

/// Deletes SSTs that no live version references.
///
/// Nothing is deleted once the database is poisoned: after a failed manifest
/// write it is unknown whether the edit naming a new file reached the disk,
/// so every file may still be referenced by the manifest the next open reads.
pub(crate) fn delete_obsolete_ssts(db: &DbInner) {
    if db.poisoned.load(Ordering::Acquire) {
        return;
    }
    // Numbers handed out after this snapshot belong to files being written
    // now: `next` (read under the same lock that allocates) fences them off.
    let (live, pending, next) = {
        let mut vs = db.vs.lock();
        // Checked under the lock that a failed manifest write is recorded
        // under: the failed job releases its outputs, which the manifest may
        // name, before its caller poisons the database.
        if vs.manifest_failed.is_some() {
            return;
        }
        let mut live = HashSet::new();
        vs.live_versions.retain(|w| match w.upgrade() {
            Some(v) => {
                live.extend(v.files().map(|f| f.record.number));
                true
            }
            None => false,
        });
        for t in vs.tables.values().filter_map(Core::lsm) {
            live.extend(t.super_version().version.files().map(|f| f.record.number));
        }
        (
            live,
            vs.pending_outputs.clone(),
            db.next_file_number.load(Ordering::Acquire),
        )
    };
    let Ok(names) = db.fs.list(&db.dir) else {
        return;
    };
    for name in names {
        if let Some(n) = parse_numbered(&name, "sst") {
            if n < next
                && !live.contains(&n)
                && !pending.contains(&n)
                && db.fs.remove(&db.path(&name)).is_ok()
            {
                db.cache.erase_owner(n);
            }
        }
    }
}
