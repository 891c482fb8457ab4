//! Opening a database: lock, read the manifest, replay the log, persist what
//! was recovered, and start a clean manifest and log segment.
//!
//! Recovery order, chosen so that a crash at any step leaves a database the
//! next open recovers the same way:
//! 1. replay the manifest named by CURRENT (a torn last record is dropped),
//!    and open each B-tree table's file at its newest valid header slot
//!    (one older than the generation the manifest records is accepted only
//!    while the log still covers the gap);
//! 2. replay every log segment numbered at or above the manifest's log
//!    number: LSM entries into memtables, B-tree entries into the tree
//!    (pruned as it goes: no reader exists yet), skipping entries a table
//!    already persisted;
//! 3. write the recovered memtables to L0 SSTs (synced), and checkpoint
//!    every B-tree table;
//! 4. write a new manifest holding the whole state, with a log number past
//!    every old segment, and switch CURRENT to it (`start_manifest`, which
//!    the manifest roll uses too);
//! 5. start a new log segment; delete old segments, the old manifest, and
//!    SSTs no table references. Before the new segment is made, the newest
//!    segment replayed is closed as a roll closes one: cut to its records
//!    and synced. Only the newest segment may end in a torn or unsynced
//!    tail (an older one is `Corruption` there), and an open that crashes
//!    before step 4 completes leaves the one it replayed older than the one
//!    it made.
//!
//! Until step 4 completes, the old manifest and segments still describe the
//! database; after it, the new ones do and the old files are garbage.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::core::{Applier, Opening};
use super::recovered::{read_manifest, refuse_files_without_current, Recovered};
use super::roll::WholeState;
use super::{cleaner, BgState, Core, Counters, DbInner, VersionSet, Wal};
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::file_names::{manifest_name, parse_numbered, sst_name, wal_name, LOCK};
use crate::fs::Fs;
use crate::lsm::version::SstReads;
use crate::manifest::{start_manifest, LogStart, CURRENT, FORMAT_VERSION};
use crate::mvcc::key::SEQNO_MAX;
use crate::mvcc::Horizon;
use crate::options::{Options, WalRecovery};
use crate::wal::batch::DecodedBatch;
use crate::wal::reader::{LogReader, Read};
use crate::wal::segment;

/// The seqno of the first batch in the log segments (in order), if any
/// holds one: every commit from it on is in the log. A first record that
/// does not parse gives None (the replay reports it).
/// A segment of a newer log format is refused here, before its records are
/// read as batches.
fn first_logged_seqno(fs: &dyn Fs, dir: &Path, segments: &[u64]) -> Result<Option<u64>> {
    for &number in segments {
        let path = dir.join(wal_name(number));
        let mut reader = LogReader::new(fs.read_all(&path)?);
        while let Read::Record { offset, data } = reader.next() {
            if segment::is_batch(&path, offset, &data)? {
                return Ok(DecodedBatch::parse(&data).ok().map(|b| b.seqno_first));
            }
        }
    }
    Ok(None)
}

pub(super) fn open(dir: &Path, options: Options) -> Result<DbInner> {
    options.validate()?;
    let fs = Arc::clone(&options.fs);
    if options.read_only {
        // Nothing is made: the database must be there, whole.
        if !fs.exists(&dir.join(CURRENT))? {
            return Err(Error::invalid(format!(
                "no database at {} to open read-only",
                dir.display()
            )));
        }
    }
    if !fs.exists(dir)? {
        if !options.create_if_missing {
            return Err(Error::invalid(format!(
                "no database at {} (set create_if_missing to create one)",
                dir.display()
            )));
        }
        fs.create_dir_all(dir)?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs.sync_dir(parent)?;
        }
    }
    let lock = if options.read_only {
        fs.lock_shared(&dir.join(LOCK))?
    } else {
        fs.lock(&dir.join(LOCK))?
    };
    if options.direct_reads || options.direct_writes {
        // A file system without O_DIRECT is refused here, by opening the
        // lock file (there in every mode) as the tables' files would be,
        // rather than at the first flush or table.
        fs.open_direct(&dir.join(LOCK))?;
    }
    let exists = fs.exists(&dir.join(CURRENT))?;
    let (old_manifest, mut state) = if exists {
        if options.error_if_exists {
            return Err(Error::invalid(format!(
                "a database already exists at {}",
                dir.display()
            )));
        }
        let (n, s) = read_manifest(&*fs, dir, options.wal_recovery)?;
        (Some(n), s)
    } else {
        refuse_files_without_current(&*fs, dir, &options)?;
        if !options.create_if_missing {
            return Err(Error::invalid(format!(
                "no database at {} (set create_if_missing to create one)",
                dir.display()
            )));
        }
        (
            None,
            Recovered {
                format: FORMAT_VERSION,
                next_file_number: 1,
                ..Recovered::default()
            },
        )
    };
    // A database keeps its format until the user asks for the newest
    // (`Options::upgrade_format`): the build that wrote it can still open it.
    let format = if options.upgrade_format {
        FORMAT_VERSION
    } else {
        state.format
    };
    state.next_file_number = state
        .next_file_number
        .max(old_manifest.map_or(1, |n| n + 1));

    let cache = Arc::new(Cache::new(options.cache_size));
    let names = fs.list(dir)?;
    for name in &names {
        if let Some(n) = parse_numbered(name, "sst").or_else(|| parse_numbered(name, "wal")) {
            state.next_file_number = state.next_file_number.max(n + 1);
        }
    }

    // Every SST the manifest names must be there: one missing was deleted
    // after an edit that replaced it, which the manifest no longer holds
    // (its last edit damaged and ignored), or lost; its entries are gone.
    let present: HashSet<&str> = names.iter().map(String::as_str).collect();
    for t in state.tables.values() {
        for (level, files) in t.levels.iter().enumerate() {
            for file in files.values() {
                let name = sst_name(file.number);
                if !present.contains(name.as_str()) {
                    return Err(Error::corruption(
                        dir.join(&name),
                        0,
                        format!(
                            "table {:?} has this SST at level {level}, but it is missing",
                            t.record.name
                        ),
                    ));
                }
            }
        }
    }

    let mut segments: Vec<u64> = names
        .iter()
        .filter_map(|n| parse_numbered(n, "wal"))
        .filter(|&n| n >= state.log_number)
        .collect();
    segments.sort_unstable();
    // The segment the log starts at was made before the manifest named it,
    // and is removed only after a later edit names a newer one: if it is
    // gone, so are writes that nothing else holds.
    if let Some(start) = state.log_start {
        if !segments.contains(&start.segment) {
            return Err(Error::corruption(
                dir.join(wal_name(start.segment)),
                0,
                "the log segment the manifest says the log starts at is missing: \
                 writes it held are lost",
            ));
        }
    }
    let first_logged = first_logged_seqno(&*fs, dir, &segments)?.unwrap_or(state.last_seqno + 1);

    // Open the tables the manifest records, once this build is known to
    // read what each is compressed with.
    for t in state.tables.values() {
        t.record.options.compression.check_built(&t.record.name)?;
    }
    let manifest_path = dir.join(manifest_name(old_manifest.unwrap_or(0)));
    let opening = Opening {
        fs: &fs,
        dir,
        cache: &cache,
        manifest: &manifest_path,
        log_start: first_logged,
        read_only: options.read_only,
        sst_reads: SstReads::of(&options),
        direct: options.direct_io(),
        mapped_pages: options.mmap_reads,
    };
    let mut catalog: BTreeMap<String, Core> = BTreeMap::new();
    for t in state.tables.values() {
        let core = Core::open_recovered(t, &opening, &mut state.next_file_number)?;
        catalog.insert(t.record.name.clone(), core);
    }

    // Replay the log.
    let mut by_id: HashMap<u32, Applier> = catalog
        .values()
        .map(|t| (t.id(), t.applier(true)))
        .collect();
    // No reader exists yet: every version but the newest may be pruned.
    let horizon = Horizon::no_readers(SEQNO_MAX);
    // The last seqno is the newest of what the manifest records, what any
    // table holds in its files, and what the log holds (below). A B-tree
    // checkpoint does not edit the manifest's last seqno, and the log
    // behind it may be gone: its versions must stay visible, and no new
    // write may take their seqnos again.
    let mut last_seqno = catalog
        .values()
        .map(Core::persisted_seqno)
        .fold(state.last_seqno, u64::max);
    // The seqno the next record must start at: commit groups log their
    // batches in seqno order, each starting where the last one ended, from
    // one segment to the next. A jump means records are missing before the
    // one that jumps: a segment between others deleted, or emptied.
    let mut next_seqno: Option<u64> = None;
    // Entries the log held that no table's files hold (a read-only open's
    // `verify` counts them: their records were checked here).
    let mut replayed = 0u64;
    // Whether `next_seqno` comes from the manifest (no record read yet).
    let mut expected_from_manifest = false;
    // Where the replay of the newest segment ended before its last byte
    // (a torn or unproven tail): the open cuts it there (below).
    let mut newest_cut: Option<u64> = None;
    let mut reached_newest = false;
    'segments: for (i, &number) in segments.iter().enumerate() {
        let path = dir.join(wal_name(number));
        let is_last = i + 1 == segments.len();
        reached_newest |= is_last;
        // The records of the segment the log starts at follow the seqno the
        // manifest recorded with it: a first segment emptied or cut short
        // shows as a jump from there to the first record found.
        if let Some(LogStart {
            segment,
            after_seqno: Some(after),
        }) = state.log_start
        {
            if segment == number && next_seqno.is_none() {
                next_seqno = Some(after.saturating_add(1));
                expected_from_manifest = true;
            }
        }
        let mut reader = LogReader::new(fs.read_all(&path)?);
        loop {
            match reader.next() {
                Read::Record { offset, data } => {
                    if !segment::is_batch(&path, offset, &data)? {
                        continue;
                    }
                    let batch = DecodedBatch::parse(&data)
                        .and_then(|b| b.validate().map(|()| b))
                        .map_err(|e| e.corruption(&path, offset));
                    let batch = match batch {
                        Ok(b) => b,
                        Err(e) if options.wal_recovery == WalRecovery::PointInTime => {
                            let _ = e;
                            break 'segments;
                        }
                        Err(e) => return Err(e),
                    };
                    let in_range = batch
                        .seqno_first
                        .checked_add(u64::from(batch.count))
                        .is_some_and(|end| batch.seqno_first > 0 && end <= SEQNO_MAX);
                    if !in_range {
                        return Err(Error::corruption(
                            &path,
                            offset,
                            "batch seqnos outside the valid range",
                        ));
                    }
                    if let Some(expected) = next_seqno.filter(|&e| e != batch.seqno_first) {
                        // At the log's start no write of the log can be kept,
                        // in either mode (as with the segment deleted).
                        if let Some(start) = state.log_start.filter(|_| expected_from_manifest) {
                            return Err(Error::corruption(
                                dir.join(wal_name(start.segment)),
                                0,
                                format!(
                                    "the log starts in this segment after seqno {}, but its \
                                     first record is seqno {} in {}: records before it are \
                                     missing (the segment emptied or cut short?)",
                                    expected - 1,
                                    batch.seqno_first,
                                    wal_name(number)
                                ),
                            ));
                        }
                        if options.wal_recovery == WalRecovery::PointInTime {
                            break 'segments;
                        }
                        return Err(Error::corruption(
                            &path,
                            offset,
                            format!(
                                "the log goes from seqno {} to {}: the records between are \
                                 missing (a log segment before this one deleted or emptied?)",
                                expected - 1,
                                batch.seqno_first
                            ),
                        ));
                    }
                    next_seqno = Some(batch.seqno_first + u64::from(batch.count));
                    expected_from_manifest = false;
                    let mut seqno = batch.seqno_first;
                    for entry in batch.entries() {
                        let entry = entry.map_err(|e| e.corruption(&path, offset))?;
                        if let Some(t) = by_id.get_mut(&entry.table_id) {
                            replayed += u64::from(!t.skips(seqno));
                            t.apply(seqno, entry.kind, entry.key, entry.value, &horizon)?;
                        }
                        seqno += 1;
                    }
                    last_seqno = last_seqno.max(seqno - 1);
                }
                Read::End => break,
                Read::Torn { offset, detail } => {
                    if is_last || options.wal_recovery == WalRecovery::PointInTime {
                        // A crash in the middle of the last append: that commit was never acknowledged.
                        if !is_last {
                            break 'segments;
                        }
                        newest_cut = Some(offset);
                        break;
                    }
                    return Err(Error::corruption(
                        &path,
                        offset,
                        format!("{detail}, in a log segment that is not the newest (it was synced when closed)"),
                    ));
                }
                Read::Corrupt { offset, detail } => {
                    if options.wal_recovery == WalRecovery::PointInTime {
                        break 'segments;
                    }
                    // Damage in the newest segment that no sync mark after
                    // it proves synced lies in what a power loss may leave
                    // in any state (a later write kept and an earlier one
                    // lost, torn or filled with garbage): the log ends
                    // before it, as at a torn tail. Damage a mark proves
                    // synced is corruption.
                    let unproven = is_last
                        && next_seqno.is_some_and(|next| {
                            let read_through = next.saturating_sub(1);
                            reader
                                .newest_sync_mark_from(offset as usize)
                                .is_none_or(|synced| synced <= read_through)
                        });
                    if unproven {
                        newest_cut = Some(offset);
                        break;
                    }
                    return Err(Error::corruption(&path, offset, detail));
                }
            }
        }
    }

    drop(by_id);
    if options.read_only {
        let db = inner(
            dir,
            options,
            cache,
            lock,
            last_seqno,
            state.next_file_number,
            format,
            VersionSet {
                manifest: None,
                manifest_number: old_manifest.unwrap_or(0),
                snapshot_bytes: 0,
                manifest_failed: None,
                next_table_id: state.next_table_id,
                tables: catalog,
                pending_outputs: HashSet::new(),
                live_versions: Vec::new(),
            },
            Wal {
                writer: None,
                number: segments.last().copied().unwrap_or(state.log_number),
                after_seqno: last_seqno,
                closed: Vec::new(),
                last_seqno,
                synced_seqno: last_seqno,
                marked_seqno: last_seqno,
            },
        );
        db.counters
            .log_entries_replayed
            .store(replayed, Ordering::Relaxed);
        return Ok(db);
    }
    // Persist what the log held, so the old segments can go.
    let mut next_file_number = state.next_file_number;
    for t in catalog.values() {
        t.persist_recovered(&opening, last_seqno, &mut next_file_number)?;
    }
    fs.sync_dir(dir)?;

    // A new manifest holding the whole state (every table is flushed up to
    // `last_seqno` now), then CURRENT.
    let manifest_number = next_file_number;
    let wal_number = next_file_number + 1;
    next_file_number += 2;
    let snapshot = WholeState {
        format,
        tables: &catalog,
        next_table_id: state.next_table_id,
        next_file_number,
        last_seqno,
        log_start: LogStart {
            segment: wal_number,
            after_seqno: Some(last_seqno),
        },
    }
    .edit()
    .encode();
    // The newest segment replayed is closed as a roll closes one, cut to
    // its records and synced, before a newer segment exists: only the
    // newest may end in a torn or unsynced tail, even if this open crashes
    // before CURRENT names its manifest (the next open reads these
    // segments again, and the one made below after them).
    if reached_newest {
        if let Some(&newest) = segments.last() {
            let file = fs.open_paged(&dir.join(wal_name(newest)), false)?;
            if let Some(at) = newest_cut {
                file.set_len(at)?;
            }
            file.sync()?;
        }
    }
    // The new segment first: a manifest names only a segment that exists.
    let wal_writer =
        super::log::create_segment(&*fs, &dir.join(wal_name(wal_number)), &options, format)?;
    fs.sync_dir(dir)?;
    let manifest = start_manifest(&*fs, dir, manifest_number, &[&snapshot])?;

    // The old manifest, old segments and unreferenced SSTs are garbage now.
    let live: HashSet<String> = catalog.values().flat_map(Core::file_names).collect();
    cleaner::remove_garbage_at_open(&*fs, dir, &live, wal_number, manifest_number)?;

    let live_versions = catalog.values().filter_map(Core::live_version).collect();
    let vs = VersionSet {
        manifest: Some(manifest),
        manifest_number,
        snapshot_bytes: snapshot.len() as u64,
        manifest_failed: None,
        next_table_id: state.next_table_id,
        tables: catalog,
        pending_outputs: HashSet::new(),
        live_versions,
    };
    let wal = Wal {
        writer: Some(wal_writer),
        number: wal_number,
        after_seqno: last_seqno,
        closed: Vec::new(),
        last_seqno,
        synced_seqno: last_seqno,
        marked_seqno: last_seqno,
    };
    Ok(inner(
        dir,
        options,
        cache,
        lock,
        last_seqno,
        next_file_number,
        format,
        vs,
        wal,
    ))
}

/// The opened database's shared state.
#[expect(
    clippy::too_many_arguments,
    reason = "the parts an open recovered; a struct would only rename them"
)]
fn inner(
    dir: &Path,
    options: Options,
    cache: Arc<Cache>,
    lock: Box<dyn crate::fs::FileLock>,
    last_seqno: u64,
    next_file_number: u64,
    format: u32,
    vs: VersionSet,
    wal: Wal,
) -> DbInner {
    let read_only_open = options.read_only;
    DbInner {
        id: super::NEXT_DB_ID.fetch_add(1, Ordering::Relaxed),
        dir: dir.to_path_buf(),
        fs: Arc::clone(&options.fs),
        options,
        cache,
        lock: Mutex::new(Some(lock)),
        last_seqno: AtomicU64::new(last_seqno),
        next_file_number: AtomicU64::new(next_file_number),
        format,
        visible_seqno: AtomicU64::new(last_seqno),
        writers: Mutex::new(VecDeque::new()),
        commit: Mutex::new(()),
        wal: Mutex::new(wal),
        wal_removal: Mutex::new(()),
        vs: Mutex::new(vs),
        bg: Mutex::new(BgState::default()),
        bg_work: Condvar::new(),
        bg_done: Condvar::new(),
        read_only: Mutex::new(read_only_open.then(|| super::READ_ONLY_OPEN.to_string())),
        poisoned: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        snapshots: Mutex::new(BTreeMap::new()),
        counters: Counters::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::OsFs;
    use crate::mvcc::key::Kind;
    use crate::wal::batch::BatchRep;
    use crate::wal::writer::LogWriter;

    #[test]
    fn a_well_framed_batch_with_seqnos_out_of_range_is_corruption_not_a_panic() {
        // Goal: bytes with a valid checksum can still be wrong; a batch whose
        // seqnos pass the 56-bit limit must be refused, not fed to a memtable.
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::Db::open(dir.path(), Options::default()).expect("open");
        db.create_table("t", crate::TableOptions::default())
            .expect("table");
        db.close().expect("close");
        let mut rep = BatchRep::default();
        rep.push(Kind::Put, 0, b"k", b"v");
        rep.push(Kind::Put, 0, b"k2", b"v");
        let fs = OsFs::new();
        let mut w = LogWriter::new(
            fs.create(&dir.path().join(wal_name(999_999)))
                .expect("create"),
        );
        w.add_record(rep.encode(SEQNO_MAX)).expect("append");
        w.sync().expect("sync");
        drop(w);
        match crate::Db::open(dir.path(), Options::default()) {
            Err(Error::Corruption { file, detail, .. }) => {
                assert!(file.ends_with(wal_name(999_999)), "{file:?} {detail}");
                assert!(detail.contains("seqnos"), "{detail}");
            }
            Err(other) => panic!("wrong error: {other}"),
            Ok(_) => panic!("opened a log with impossible seqnos"),
        }
    }
}
