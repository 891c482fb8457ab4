//! Reading the manifest at open: the state it records (`Recovered`), its
//! format checked before anything else is decoded, and the two ways an
//! open meets a directory without `CURRENT` (refusing to make a new
//! database over an old one's files, and `recover_current`).

use std::collections::BTreeMap;
use std::path::Path;

use super::core::TableState;
use crate::error::{Error, Result};
use crate::file_names::{manifest_name, parse_manifest_name, parse_numbered, LOCK};
use crate::fs::Fs;
use crate::manifest::{
    check_format, parse_current, write_current, FileRecord, LogStart, VersionEdit, CURRENT,
    FORMAT_UNNUMBERED, FORMAT_VERSION,
};
use crate::options::{Options, WalRecovery};
use crate::wal::reader::{LogReader, Read};
use crate::wal::segment;

#[derive(Default)]
pub(super) struct Recovered {
    /// The database's format (`manifest::FORMAT_VERSION`), from the
    /// manifest's first record; 1 when it names none.
    pub format: u32,
    pub next_file_number: u64,
    pub last_seqno: u64,
    pub log_number: u64,
    /// Where the log starts, if the manifest says (manifests written
    /// before it did do not).
    pub log_start: Option<LogStart>,
    pub next_table_id: u32,
    pub tables: BTreeMap<u32, TableState>,
}

impl Recovered {
    /// The files of table `id` at `level`, for a file `done` ("added to",
    /// "deleted from") it; Err says why there is no such level.
    fn level_mut(
        &mut self,
        id: u32,
        level: u32,
        done: &str,
    ) -> std::result::Result<&mut BTreeMap<u64, FileRecord>, String> {
        self.tables
            .get_mut(&id)
            .ok_or_else(|| format!("file {done} unknown table {id}"))?
            .levels
            .get_mut(level as usize)
            .ok_or_else(|| format!("level {level} out of range"))
    }

    fn apply(&mut self, edit: VersionEdit, path: &Path, offset: u64) -> Result<()> {
        let bad = |detail: String| Error::corruption(path, offset, detail);
        if let Some(f) = edit.format {
            // Format 1 is the unnumbered one, and newer ones are refused
            // before the record is decoded (`read_manifest_numbered`).
            if offset != 0 || !(2..=FORMAT_VERSION).contains(&f) {
                return Err(bad(format!(
                    "the database format {f} in a record at offset {offset}: only the first \
                     record names it, and names 2 to {FORMAT_VERSION}"
                )));
            }
            self.format = f;
        }
        if let Some(n) = edit.next_file_number {
            self.next_file_number = self.next_file_number.max(n);
        }
        if let Some(s) = edit.last_seqno {
            self.last_seqno = self.last_seqno.max(s);
        }
        if let Some(l) = edit.log_number {
            self.log_number = self.log_number.max(l);
        }
        if let Some(l) = edit.log_start {
            self.log_start = self.log_start.max(Some(l));
        }
        if let Some(t) = edit.next_table_id {
            self.next_table_id = self.next_table_id.max(t);
        }
        for record in edit.created {
            let id = record.id;
            if self.tables.contains_key(&id) {
                return Err(bad(format!("table id {id} created twice")));
            }
            self.next_table_id = self.next_table_id.max(id + 1);
            let levels = vec![BTreeMap::new(); crate::limits::LSM_LEVELS];
            self.tables.insert(
                id,
                TableState {
                    record,
                    levels,
                    persisted_seqno: 0,
                    checkpoint_generation: 0,
                    range_dels: BTreeMap::new(),
                },
            );
        }
        for id in edit.dropped {
            self.tables.remove(&id);
        }
        for (id, level, number) in edit.deleted {
            let l = self.level_mut(id, level, "deleted from").map_err(bad)?;
            if l.remove(&number).is_none() {
                return Err(bad(format!(
                    "file {number} deleted from table {id} level {level} where it is not"
                )));
            }
        }
        for (id, level, file) in edit.added {
            self.next_file_number = self.next_file_number.max(file.number + 1);
            let l = self.level_mut(id, level, "added to").map_err(bad)?;
            l.insert(file.number, file);
        }
        for (id, seqno) in edit.flushed {
            if let Some(t) = self.tables.get_mut(&id) {
                t.persisted_seqno = t.persisted_seqno.max(seqno);
            }
        }
        for (id, t) in edit.range_dels_added {
            let table = self
                .tables
                .get_mut(&id)
                .ok_or_else(|| bad(format!("range tombstone added to unknown table {id}")))?;
            table.range_dels.insert(t.seqno, t);
        }
        for (id, seqno) in edit.range_dels_dropped {
            if let Some(t) = self.tables.get_mut(&id) {
                t.range_dels.remove(&seqno);
            }
        }
        for (id, generation) in edit.checkpointed {
            if let Some(t) = self.tables.get_mut(&id) {
                t.checkpoint_generation = t.checkpoint_generation.max(generation);
            }
        }
        Ok(())
    }
}

pub(super) fn read_manifest(
    fs: &dyn Fs,
    dir: &Path,
    wal_recovery: WalRecovery,
) -> Result<(u64, Recovered)> {
    let current_path = dir.join(CURRENT);
    let number = parse_current(&current_path, &fs.read_all(&current_path)?)?;
    // CURRENT is written only once the manifest it names is durable: a
    // name of a manifest that is not there is a damaged CURRENT (or a
    // manifest lost), not a file the open should go looking for.
    if !fs.exists(&dir.join(manifest_name(number)))? {
        return Err(Error::corruption(
            &current_path,
            0,
            format!(
                "CURRENT names {}, which does not exist (with CURRENT moved aside, \
                 `spinney --db DIR recover-current` names the newest manifest that \
                 reads whole)",
                manifest_name(number)
            ),
        ));
    }
    Ok((
        number,
        read_manifest_numbered(fs, dir, number, wal_recovery)?,
    ))
}

/// The state manifest `number` records.
fn read_manifest_numbered(
    fs: &dyn Fs,
    dir: &Path,
    number: u64,
    wal_recovery: WalRecovery,
) -> Result<Recovered> {
    let path = dir.join(manifest_name(number));
    let mut reader = LogReader::new(fs.read_all(&path)?);
    let mut state = Recovered {
        format: FORMAT_UNNUMBERED,
        ..Recovered::default()
    };
    loop {
        match reader.next() {
            Read::Record { offset, data } => {
                check_format(&path, offset, &data)?;
                let edit = VersionEdit::decode(&data).map_err(|e| e.corruption(&path, offset))?;
                state.apply(edit, &path, offset)?;
            }
            Read::End => break,
            // The first record is synced before CURRENT names the manifest,
            // so it can never be torn: damage there is corruption.
            Read::Torn { offset, detail } if offset == 0 => {
                return Err(Error::corruption(&path, offset, detail));
            }
            // A torn last edit was never acknowledged.
            Read::Torn { .. } => break,
            // The first record is synced before CURRENT names the manifest,
            // and holds the whole catalog: damage there is corruption in
            // every mode (keeping the edits before it would open an empty
            // database over the old one's files).
            Read::Corrupt { offset, detail } if offset == 0 => {
                return Err(Error::corruption(&path, offset, detail));
            }
            Read::Corrupt { offset, detail } => {
                if wal_recovery == WalRecovery::PointInTime {
                    break;
                }
                // Each edit is synced, and then marked (`sync_and_mark`),
                // before the next is written: damage that no mark follows
                // is the edit a power loss interrupted (written in any
                // state), never acknowledged. Damage a mark follows is
                // corruption.
                if !reader.has_empty_record_from(offset as usize) {
                    break;
                }
                return Err(Error::corruption(&path, offset, detail));
            }
        }
    }
    Ok(state)
}

/// Refuses to make a new database in `dir`, which has no CURRENT, if it
/// holds a database's files: a log segment that holds a write, an SST, a
/// B-tree file, or a manifest that records a table. CURRENT lost, or
/// deleted, must not turn into a new empty database that deletes the old
/// files as garbage. A segment with no write (empty, or only its header)
/// and a manifest that records no table (or does not read) are what a
/// crash of the first open leaves (it makes the first segment, then the
/// manifest, then CURRENT): there is no data then, and the new database is
/// made over them.
/// Whether the log segment at `path` holds a batch (or bytes that may be
/// one): a segment with only its header and sync marks, or a torn start,
/// holds no write.
fn segment_holds_writes(fs: &dyn Fs, path: &Path) -> bool {
    let Ok(data) = fs.read_all(path) else {
        return true;
    };
    let mut reader = LogReader::new(data);
    loop {
        match reader.next() {
            Read::Record { data, .. } => {
                if segment::classify(&data) == segment::Record::Batch {
                    return true;
                }
            }
            Read::End | Read::Torn { .. } => return false,
            Read::Corrupt { .. } => return true,
        }
    }
}

pub(super) fn refuse_files_without_current(
    fs: &dyn Fs,
    dir: &Path,
    options: &Options,
) -> Result<()> {
    let mut names = fs.list(dir)?;
    names.sort_unstable();
    let found: Vec<&String> = names
        .iter()
        .filter(|name| match parse_manifest_name(name) {
            Some(n) => read_manifest_numbered(fs, dir, n, options.wal_recovery)
                .is_ok_and(|state| !state.tables.is_empty()),
            None if parse_numbered(name, "wal").is_some() => {
                segment_holds_writes(fs, &dir.join(name))
            }
            None => ["sst", "btree"]
                .iter()
                .any(|ext| parse_numbered(name, ext).is_some()),
        })
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    const SHOWN: usize = 8;
    let mut listed = found
        .iter()
        .take(SHOWN)
        .map(|n| n.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if found.len() > SHOWN {
        listed.push_str(&format!(" and {} more", found.len() - SHOWN));
    }
    Err(Error::corruption(
        dir.join(CURRENT),
        0,
        format!(
            "CURRENT is missing, but the directory holds a database's files ({listed}): no new \
             database is made over them. If only CURRENT was lost, `spinney --db {} \
             recover-current` (`Db::recover_current`) points it at the newest manifest that \
             reads whole",
            dir.display()
        ),
    ))
}

/// Writes a lost CURRENT: it names the newest manifest in `dir` that reads
/// whole. Refused if `dir` has a CURRENT, or no manifest reads.
pub(super) fn recover_current(dir: &Path, options: &Options) -> Result<String> {
    let fs = &*options.fs;
    let _lock = fs.lock(&dir.join(LOCK))?;
    if fs.exists(&dir.join(CURRENT))? {
        return Err(Error::invalid(format!(
            "{} has a CURRENT: there is nothing to recover",
            dir.display()
        )));
    }
    let mut manifests: Vec<u64> = fs
        .list(dir)?
        .iter()
        .filter_map(|n| parse_manifest_name(n))
        .collect();
    manifests.sort_unstable_by(|a, b| b.cmp(a));
    let mut why = Vec::new();
    for number in manifests {
        let name = manifest_name(number);
        match read_manifest_numbered(fs, dir, number, WalRecovery::TornTailOnly) {
            Ok(_) => {
                write_current(fs, dir, &name)?;
                return Ok(name);
            }
            Err(e) => why.push(format!("{name}: {e}")),
        }
    }
    if why.is_empty() {
        why.push("there is none".into());
    }
    Err(Error::corruption(
        dir.join(CURRENT),
        0,
        format!(
            "no manifest reads whole to name in CURRENT: {}",
            why.join("; ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::OsFs;
    use crate::wal::writer::LogWriter;
    use crate::{Db, TableOptions};

    fn newer(result: Result<Db>) -> (String, &'static str, u32, u32) {
        match result {
            Err(e @ Error::NewerFormat { .. }) => {
                let text = e.to_string();
                let Error::NewerFormat {
                    what,
                    found,
                    supported,
                    ..
                } = e
                else {
                    unreachable!()
                };
                (text, what, found, supported)
            }
            Err(other) => panic!("not a newer format: {other}"),
            Ok(_) => panic!("opened a file of a newer format"),
        }
    }

    /// A closed database with an LSM and a B-tree table, one write in each.
    fn database() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        for (name, options) in [("l", TableOptions::lsm()), ("b", TableOptions::btree())] {
            db.create_table(name, options)
                .expect("table")
                .put(b"k", b"v")
                .expect("put");
        }
        db.close().expect("close");
        dir
    }

    #[test]
    fn a_manifest_of_a_newer_format_is_refused_naming_both_versions() {
        // Goal: a manifest a newer build wrote is refused by its number,
        // even when fields this build does not know follow it, in every
        // open mode.
        let dir = database();
        let mut first = VersionEdit {
            format: Some(FORMAT_VERSION + 1),
            ..VersionEdit::default()
        }
        .encode();
        first.extend_from_slice(&[99, 1, 0]); // a field of tag 99
        crate::manifest::start_manifest(&OsFs::new(), dir.path(), 900, &[&first])
            .expect("manifest");
        for read_only in [false, true] {
            let options = Options {
                read_only,
                ..Options::default()
            };
            let (text, what, found, supported) = newer(Db::open(dir.path(), options));
            assert_eq!(
                (what, found, supported),
                ("manifest", FORMAT_VERSION + 1, FORMAT_VERSION)
            );
            assert!(text.contains("MANIFEST-000900"), "{text}");
            let both = [FORMAT_VERSION + 1, FORMAT_VERSION].map(|v| format!("version {v}"));
            assert!(text.contains(&both[0]), "{text}");
            assert!(text.contains(&format!("up to {FORMAT_VERSION}")), "{text}");
        }
    }

    #[test]
    fn an_upgrade_is_refused_beside_read_only() {
        let dir = database();
        let options = Options {
            read_only: true,
            upgrade_format: true,
            ..Options::default()
        };
        match Db::open(dir.path(), options) {
            Err(Error::InvalidArgument(why)) => assert!(why.contains("upgrade_format"), "{why}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn the_format_named_anywhere_but_the_first_record_is_corruption() {
        let dir = database();
        let first = VersionEdit::default().encode();
        let later = VersionEdit {
            format: Some(FORMAT_VERSION),
            ..VersionEdit::default()
        }
        .encode();
        crate::manifest::start_manifest(&OsFs::new(), dir.path(), 900, &[&first, &later])
            .expect("manifest");
        match Db::open(dir.path(), Options::default()) {
            Err(Error::Corruption { detail, .. }) => {
                assert!(detail.contains("only the first record"), "{detail}")
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    /// Writes log segment `number` of `dir` holding `records`.
    fn segment(dir: &Path, number: u64, records: &[&[u8]]) {
        let fs = OsFs::new();
        let path = dir.join(crate::file_names::wal_name(number));
        let mut w = LogWriter::new(fs.create(&path).expect("create"));
        for r in records {
            w.add_record(r).expect("append");
        }
        w.sync().expect("sync");
    }

    #[test]
    fn a_log_segment_of_a_newer_format_is_refused_naming_both_versions() {
        // Goal: the records after a newer header are never read as batches,
        // whatever the recovery mode.
        let dir = database();
        let header = segment::encode_header(segment::LOG_VERSION + 1);
        segment(
            dir.path(),
            999_999,
            &[&header, b"not a batch of this format"],
        );
        for wal_recovery in [WalRecovery::TornTailOnly, WalRecovery::PointInTime] {
            let options = Options {
                wal_recovery,
                ..Options::default()
            };
            let (text, what, found, supported) = newer(Db::open(dir.path(), options));
            assert_eq!(
                (what, found, supported),
                (
                    "log segment",
                    segment::LOG_VERSION + 1,
                    segment::LOG_VERSION
                )
            );
            assert!(text.contains("999999.wal"), "{text}");
        }
    }

    #[test]
    fn a_segment_header_inside_a_segment_is_corruption() {
        let dir = database();
        let mut batch = crate::wal::batch::BatchRep::default();
        batch.push(crate::mvcc::key::Kind::Put, 0, b"x", b"y");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let next = db.snapshot().seqno() + 1;
        db.close().expect("close");
        let header = segment::encode_header(segment::LOG_VERSION);
        segment(dir.path(), 999_999, &[&header, batch.encode(next), &header]);
        match Db::open(dir.path(), Options::default()) {
            Err(Error::Corruption { file, detail, .. }) => {
                assert!(file.ends_with("999999.wal"), "{file:?}");
                assert!(detail.contains("header inside"), "{detail}");
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn a_btree_file_of_a_newer_format_is_refused_naming_both_versions() {
        // Goal: a header slot a newer build wrote is not passed over for the
        // older slot (which is not the file's newest state): the file is
        // refused, by its number. A damaged slot still falls back.
        let dir = database();
        let path = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .find(|p| p.extension().is_some_and(|x| x == "btree"))
            .expect("a B-tree file");
        let original = std::fs::read(&path).expect("read");
        let page = TableOptions::btree().page_size;
        let mut patched = 0;
        for slot in 0..2 {
            let mut bytes = original.clone();
            let at = slot * page;
            let header = &mut bytes[at..at + 76];
            if &header[..8] != b"SPNYBTR1" {
                continue; // a slot never written
            }
            patched += 1;
            header[8..12].copy_from_slice(&3u32.to_le_bytes());
            let crc = crate::encoding::crc32c(&header[..72]);
            header[72..76].copy_from_slice(&crc.to_le_bytes());
            std::fs::write(&path, &bytes).expect("write");
            let (text, what, found, supported) = newer(Db::open(dir.path(), Options::default()));
            assert_eq!(
                (what, found, supported),
                ("B-tree file", 3, 2),
                "slot {slot}"
            );
            assert!(text.contains(".btree"), "{text}");
        }
        assert!(patched > 0, "no header slot written");
        std::fs::write(&path, &original).expect("write");
        let db = Db::open(dir.path(), Options::default()).expect("reopen");
        assert_eq!(
            db.table("b").expect("b").get(b"k").expect("get"),
            Some(b"v".to_vec())
        );
    }
}
