//! An LSM table at open: the version its recorded files make, and what the
//! log replayed into its memtables made durable as L0 SSTs. The database's
//! recovery (`db/open.rs`) reads the manifest and replays the log; these
//! are the LSM's parts of it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::table::{file_record, write_memtable, LsmTable};
use super::version::{FileMeta, SstFiles, Version};
use crate::error::{Error, Result};
use crate::manifest::FileRecord;
use crate::mvcc::range_del::RangeTombstone;

/// The version of the files the manifest records for a table (by level
/// and file number) and its flushed range tombstones: L0 newest first,
/// the levels below by smallest key, checked. A version that fails its
/// check is `Corruption` in `manifest`, naming `table`.
pub(crate) fn recorded_version(
    ssts: &SstFiles<'_>,
    levels: &[BTreeMap<u64, FileRecord>],
    range_dels: &BTreeMap<u64, RangeTombstone>,
    manifest: &Path,
    table: &str,
) -> Result<Version> {
    let mut version = Version::empty();
    for (level, files) in levels.iter().enumerate() {
        let mut metas: Vec<Arc<FileMeta>> = files
            .values()
            .map(|r| Arc::new(ssts.meta(r.clone())))
            .collect();
        if level == 0 {
            metas.sort_by_key(|m| std::cmp::Reverse(m.record.seqno_max));
        } else {
            metas.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
        }
        if let Some(l) = version.levels.get_mut(level) {
            *l = metas;
        }
    }
    let tombstones: Vec<_> = range_dels.values().cloned().collect();
    version.change_range_dels(&tombstones, &[]);
    if let Err(detail) = version.check() {
        return Err(Error::corruption(
            manifest,
            0,
            format!("table {table:?}: {detail}"),
        ));
    }
    Ok(version)
}

/// Writes the memtables recovery replayed into `t` to L0 SSTs (numbered
/// from `next_file_number`, synced; the caller syncs the directory), so
/// that the table holds everything up to `last_seqno` in its files.
pub(crate) fn persist_replayed(
    t: &LsmTable,
    files: &SstFiles<'_>,
    last_seqno: u64,
    next_file_number: &mut u64,
) -> Result<()> {
    t.freeze_memtable();
    let sv = t.super_version();
    let mut version = (*sv.version).clone();
    for imm in &sv.imms {
        version.change_range_dels(&imm.range_dels(), &[]);
        let out = write_memtable(imm, &t.sst_options(), &mut || {
            let n = *next_file_number;
            *next_file_number += 1;
            Ok((n, files.create(n)?))
        })?;
        for (number, info) in &out.files {
            let meta = files.meta(file_record(*number, info, 0));
            if let Some(l0) = version.levels.get_mut(0) {
                l0.insert(0, Arc::new(meta));
            }
        }
    }
    t.install(version, sv.imms.len());
    t.persisted_seqno.store(last_seqno, Ordering::Release);
    Ok(())
}
