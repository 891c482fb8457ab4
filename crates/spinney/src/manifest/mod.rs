//! The manifest: the catalog of tables and the files of every LSM table, as a
//! log of version edits, plus the atomic switch to a new manifest.
//!
//! The manifest is a log file (`MANIFEST-NNNNNN`) in the WAL's record framing;
//! each record is one `VersionEdit`. `CURRENT` names the live manifest. At
//! every open, and when the live manifest reaches `Options::max_manifest_size`
//! (a *roll*), the database starts a new manifest whose first record describes
//! the whole state, makes `CURRENT` point to it (`start_manifest`), and deletes
//! the old manifest. An edit is durable once its record is synced; an edit
//! whose record is torn was never acknowledged.
//!
//! Byte layout: docs/format.md#manifest.
#![deny(clippy::indexing_slicing)]

use std::path::Path;

use crate::encoding::{
    put_length_prefixed, put_u8, put_varint32, put_varint64, DecodeError, Decoder,
};
use crate::error::{Error, Result};
use crate::file_names::{manifest_name, parse_manifest_name};
use crate::fs::Fs;
use crate::limits;
use crate::mvcc::range_del::RangeTombstone;
use crate::options::{CompactionOptions, CompactionStyle, Compression, TableKind, TableOptions};
use crate::wal::writer::LogWriter;

/// The file that names the live manifest.
pub(crate) const CURRENT: &str = "CURRENT";
/// A `CURRENT` being written; renamed over `CURRENT` once synced.
pub(crate) const CURRENT_TMP: &str = "CURRENT.tmp";

/// Field tags of a version edit. On disk: never renumber.
mod tag {
    pub const NEXT_FILE_NUMBER: u32 = 1;
    pub const LAST_SEQNO: u32 = 2;
    pub const LOG_NUMBER: u32 = 3;
    pub const NEXT_TABLE_ID: u32 = 4;
    pub const CREATE_TABLE: u32 = 5;
    pub const DROP_TABLE: u32 = 6;
    pub const ADD_FILE: u32 = 7;
    pub const DELETE_FILE: u32 = 8;
    pub const FLUSHED_SEQNO: u32 = 9;
    pub const CHECKPOINT: u32 = 10;
    pub const LOG_START: u32 = 11;
    pub const ADD_RANGE_DEL: u32 = 12;
    pub const DROP_RANGE_DEL: u32 = 13;
    pub const FORMAT: u32 = 14;
}

/// The database format this build writes for a new database, and the
/// newest it reads. It is the manifest's version, the first field of the
/// first record of every manifest of format 2 or later (tag 14, never
/// moved: `peek_format` reads it before anything else), and it says which
/// version of each kind of file the database's writers write
/// (docs/format.md, "Format versions"). A manifest without it is format 1.
///
/// - 1: log segments without a header, a manifest without its format.
/// - 2: log segments begin with a header naming their version
///   (`wal::segment`), and manifests with the format.
pub const FORMAT_VERSION: u32 = 2;

/// Refuses the record at `offset` of the manifest at `path` if it is the
/// first and names a newer format than this build reads (`peek_format`),
/// before anything else of it is decoded.
pub(crate) fn check_format(path: &Path, offset: u64, record: &[u8]) -> Result<()> {
    match peek_format(record).filter(|&f| offset == 0 && f > FORMAT_VERSION) {
        Some(found) => Err(Error::newer_format(path, "manifest", found, FORMAT_VERSION)),
        None => Ok(()),
    }
}

/// The format of a manifest written before formats were numbered.
pub(crate) const FORMAT_UNNUMBERED: u32 = 1;

/// The format a manifest's first record names, read from its first field
/// alone, so that a manifest of a newer format is refused by its number
/// before any field this build does not know is met. None: the record does
/// not begin with the format (a manifest of format 1, or bytes that the
/// full decoding will judge).
pub(crate) fn peek_format(first_record: &[u8]) -> Option<u32> {
    let mut d = Decoder::new(first_record);
    if d.varint32().ok()? != tag::FORMAT {
        return None;
    }
    let payload = d
        .length_prefixed(limits::MANIFEST_RECORD_BYTES_MAX, "manifest field length")
        .ok()?;
    Decoder::new(payload).varint32().ok()
}

/// A table as the catalog records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableRecord {
    pub id: u32,
    pub name: String,
    pub options: TableOptions,
}

/// An SST as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileRecord {
    pub number: u64,
    pub size: u64,
    pub entries: u64,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub seqno_min: u64,
    pub seqno_max: u64,
    /// The file holds no version that a range tombstone at or below this
    /// seqno hides (its compaction dropped them); 0 if not known.
    pub range_dels_applied: u64,
}

/// Where the log starts: its oldest segment, and the seqno its records
/// follow (the first record there, or in the next segment if it holds none,
/// has the seqno after it). Manifests written before the seqno was recorded
/// have only the segment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LogStart {
    pub segment: u64,
    pub after_seqno: Option<u64>,
}

/// A change to the database's state. Applied in order, edits rebuild it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VersionEdit {
    /// The database's format (`FORMAT_VERSION`): only in a manifest's first
    /// record, as its first field; absent in format 1.
    pub format: Option<u32>,
    pub next_file_number: Option<u64>,
    pub last_seqno: Option<u64>,
    /// WAL segments numbered below this hold nothing that is not persisted.
    pub log_number: Option<u64>,
    /// The WAL segment the log starts at: it exists (it was made before
    /// this edit), and recovery needs every segment from it on.
    pub log_start: Option<LogStart>,
    pub next_table_id: Option<u32>,
    pub created: Vec<TableRecord>,
    pub dropped: Vec<u32>,
    /// (table id, level, file)
    pub added: Vec<(u32, u32, FileRecord)>,
    /// (table id, level, file number)
    pub deleted: Vec<(u32, u32, u64)>,
    /// (table id, seqno): every entry of the table up to seqno is in its SSTs.
    pub flushed: Vec<(u32, u64)>,
    /// (table id, generation): the B-tree table's checkpoint of this
    /// generation is durable, so an older header slot may not be used.
    pub checkpointed: Vec<(u32, u64)>,
    /// (table id, tombstone): a flushed range tombstone of an LSM table.
    pub range_dels_added: Vec<(u32, RangeTombstone)>,
    /// (table id, seqno): the range tombstone of that seqno hides nothing
    /// any more.
    pub range_dels_dropped: Vec<(u32, u64)>,
}

fn put_field(dst: &mut Vec<u8>, tag: u32, payload: &[u8]) {
    put_varint32(dst, tag);
    put_length_prefixed(dst, payload);
}

fn kind_code(kind: TableKind) -> u8 {
    // On disk: never renumber.
    match kind {
        TableKind::Lsm => 1,
        TableKind::Btree => 2,
    }
}

fn compression_code(c: Compression) -> u8 {
    // On disk: never renumber (the same codes as SST blocks).
    match c {
        Compression::None => 0,
        Compression::Lz4 => 1,
        Compression::Zstd => 2,
    }
}

fn style_code(s: CompactionStyle) -> u8 {
    // On disk: never renumber.
    match s {
        CompactionStyle::Leveled => 1,
        CompactionStyle::Tiered => 2,
    }
}

impl VersionEdit {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut p = Vec::new();
        let mut field = |out: &mut Vec<u8>, tag: u32, fill: &dyn Fn(&mut Vec<u8>)| {
            p.clear();
            fill(&mut p);
            put_field(out, tag, &p);
        };
        if let Some(v) = self.format {
            field(&mut out, tag::FORMAT, &|p| put_varint32(p, v));
        }
        if let Some(v) = self.next_file_number {
            field(&mut out, tag::NEXT_FILE_NUMBER, &|p| put_varint64(p, v));
        }
        if let Some(v) = self.last_seqno {
            field(&mut out, tag::LAST_SEQNO, &|p| put_varint64(p, v));
        }
        if let Some(v) = self.log_number {
            field(&mut out, tag::LOG_NUMBER, &|p| put_varint64(p, v));
        }
        if let Some(v) = self.log_start {
            field(&mut out, tag::LOG_START, &|p| {
                put_varint64(p, v.segment);
                if let Some(s) = v.after_seqno {
                    put_varint64(p, s);
                }
            });
        }
        if let Some(v) = self.next_table_id {
            field(&mut out, tag::NEXT_TABLE_ID, &|p| put_varint32(p, v));
        }
        for t in &self.created {
            field(&mut out, tag::CREATE_TABLE, &|p| {
                put_varint32(p, t.id);
                put_length_prefixed(p, t.name.as_bytes());
                put_u8(p, kind_code(t.options.kind));
                put_u8(p, compression_code(t.options.compression));
                put_varint32(p, t.options.bloom_bits_per_key);
                put_varint64(p, t.options.block_size as u64);
                put_varint64(p, t.options.write_buffer_size as u64);
                let c = &t.options.compaction;
                put_u8(p, style_code(c.style));
                put_varint32(p, c.l0_trigger);
                put_varint32(p, c.fanout);
                put_varint64(p, c.level_base_bytes);
                put_u8(p, u8::from(c.dynamic_level_bytes));
                put_varint64(p, c.target_file_size);
                put_varint32(p, c.size_ratio_percent);
                put_varint32(p, c.min_merge_width);
                put_varint32(p, c.max_merge_width);
                put_varint32(p, c.max_size_amplification_percent);
                put_varint64(p, t.options.page_size as u64);
            });
        }
        for &id in &self.dropped {
            field(&mut out, tag::DROP_TABLE, &|p| put_varint32(p, id));
        }
        for (table, level, f) in &self.added {
            field(&mut out, tag::ADD_FILE, &|p| {
                put_varint32(p, *table);
                put_varint32(p, *level);
                put_varint64(p, f.number);
                put_varint64(p, f.size);
                put_varint64(p, f.entries);
                put_length_prefixed(p, &f.smallest);
                put_length_prefixed(p, &f.largest);
                put_varint64(p, f.seqno_min);
                put_varint64(p, f.seqno_max);
                if f.range_dels_applied > 0 {
                    put_varint64(p, f.range_dels_applied);
                }
            });
        }
        for &(table, level, number) in &self.deleted {
            field(&mut out, tag::DELETE_FILE, &|p| {
                put_varint32(p, table);
                put_varint32(p, level);
                put_varint64(p, number);
            });
        }
        for &(table, seqno) in &self.flushed {
            field(&mut out, tag::FLUSHED_SEQNO, &|p| {
                put_varint32(p, table);
                put_varint64(p, seqno);
            });
        }
        for &(table, generation) in &self.checkpointed {
            field(&mut out, tag::CHECKPOINT, &|p| {
                put_varint32(p, table);
                put_varint64(p, generation);
            });
        }
        for (table, t) in &self.range_dels_added {
            field(&mut out, tag::ADD_RANGE_DEL, &|p| {
                put_varint32(p, *table);
                put_varint64(p, t.seqno);
                put_length_prefixed(p, &t.start);
                put_length_prefixed(p, &t.end);
            });
        }
        for &(table, seqno) in &self.range_dels_dropped {
            field(&mut out, tag::DROP_RANGE_DEL, &|p| {
                put_varint32(p, table);
                put_varint64(p, seqno);
            });
        }
        out
    }

    /// Decodes one edit. Errors carry offsets relative to `record`.
    pub(crate) fn decode(record: &[u8]) -> Result<VersionEdit, DecodeError> {
        let mut edit = VersionEdit::default();
        let mut d = Decoder::new(record);
        while !d.is_empty() {
            let field_start = d.pos();
            let t = d.varint32()?;
            let payload =
                d.length_prefixed(limits::MANIFEST_RECORD_BYTES_MAX, "manifest field length")?;
            let base = d.pos() - payload.len();
            let mut p = Decoder::new(payload);
            let shift = |e: DecodeError| DecodeError {
                offset: base + e.offset,
                what: e.what,
            };
            match t {
                tag::FORMAT if field_start == 0 => {
                    edit.format = Some(p.varint32().map_err(shift)?);
                }
                tag::FORMAT => {
                    return Err(DecodeError {
                        offset: field_start,
                        what: "the database format in a manifest field that is not the first",
                    })
                }
                tag::NEXT_FILE_NUMBER => edit.next_file_number = Some(p.varint64().map_err(shift)?),
                tag::LAST_SEQNO => edit.last_seqno = Some(p.varint64().map_err(shift)?),
                tag::LOG_NUMBER => edit.log_number = Some(p.varint64().map_err(shift)?),
                tag::LOG_START => {
                    let segment = p.varint64().map_err(shift)?;
                    let after_seqno = match p.is_empty() {
                        true => None,
                        false => Some(p.varint64().map_err(shift)?),
                    };
                    edit.log_start = Some(LogStart {
                        segment,
                        after_seqno,
                    });
                }
                tag::NEXT_TABLE_ID => edit.next_table_id = Some(p.varint32().map_err(shift)?),
                tag::CREATE_TABLE => edit.created.push(decode_table(&mut p).map_err(shift)?),
                tag::DROP_TABLE => edit.dropped.push(p.varint32().map_err(shift)?),
                tag::ADD_FILE => {
                    let table = p.varint32().map_err(shift)?;
                    let level = p.varint32().map_err(shift)?;
                    let file = decode_file(&mut p).map_err(shift)?;
                    edit.added.push((table, level, file));
                }
                tag::DELETE_FILE => {
                    let table = p.varint32().map_err(shift)?;
                    let level = p.varint32().map_err(shift)?;
                    let number = p.varint64().map_err(shift)?;
                    edit.deleted.push((table, level, number));
                }
                tag::FLUSHED_SEQNO => {
                    let table = p.varint32().map_err(shift)?;
                    let seqno = p.varint64().map_err(shift)?;
                    edit.flushed.push((table, seqno));
                }
                tag::CHECKPOINT => {
                    let table = p.varint32().map_err(shift)?;
                    let generation = p.varint64().map_err(shift)?;
                    edit.checkpointed.push((table, generation));
                }
                tag::ADD_RANGE_DEL => {
                    let table = p.varint32().map_err(shift)?;
                    let seqno = p.varint64().map_err(shift)?;
                    let start = p
                        .length_prefixed(limits::KEY_BYTES_MAX + 1, "range delete start")
                        .map_err(shift)?
                        .to_vec();
                    let end = p
                        .length_prefixed(limits::KEY_BYTES_MAX + 1, "range delete end")
                        .map_err(shift)?
                        .to_vec();
                    edit.range_dels_added
                        .push((table, RangeTombstone { seqno, start, end }));
                }
                tag::DROP_RANGE_DEL => {
                    let table = p.varint32().map_err(shift)?;
                    let seqno = p.varint64().map_err(shift)?;
                    edit.range_dels_dropped.push((table, seqno));
                }
                _ => {
                    return Err(DecodeError {
                        offset: field_start,
                        what: "unknown manifest field tag (written by a newer spinney?)",
                    })
                }
            }
            if !p.is_empty() {
                return Err(DecodeError {
                    offset: base + p.pos(),
                    what: "bytes after a manifest field",
                });
            }
        }
        Ok(edit)
    }
}

fn decode_table(p: &mut Decoder<'_>) -> Result<TableRecord, DecodeError> {
    let id = p.varint32()?;
    let name_at = p.pos();
    let name = p.length_prefixed(limits::TABLE_NAME_BYTES_MAX, "table name")?;
    let name = std::str::from_utf8(name)
        .map_err(|_| DecodeError {
            offset: name_at,
            what: "table name is not UTF-8",
        })?
        .to_string();
    let kind_at = p.pos();
    let kind = decode_code(p, "table kind", "unknown table kind", |b| match b {
        1 => Some(TableKind::Lsm),
        2 => Some(TableKind::Btree),
        _ => None,
    })?;
    let compression = decode_code(p, "compression", "unknown compression", |b| match b {
        0 => Some(Compression::None),
        1 => Some(Compression::Lz4),
        2 => Some(Compression::Zstd),
        _ => None,
    })?;
    let bloom_bits_per_key = p.varint32()?;
    let block_size = usize::try_from(p.varint64()?).map_err(|_| p.error("block size"))?;
    let write_buffer_size =
        usize::try_from(p.varint64()?).map_err(|_| p.error("write buffer size"))?;
    // Catalogs written before tables had compaction options end here;
    // their tables are leveled with the defaults of that time's behaviour.
    let compaction = if p.is_empty() {
        CompactionOptions::leveled()
    } else {
        decode_compaction(p)?
    };
    // Records written before B-tree tables existed end here.
    let page_size = if p.is_empty() {
        TableOptions::default().page_size
    } else {
        usize::try_from(p.varint64()?).map_err(|_| p.error("page size"))?
    };
    let options = TableOptions {
        kind,
        compression,
        bloom_bits_per_key,
        block_size,
        write_buffer_size,
        compaction,
        page_size,
    };
    if options.validate().is_err() {
        return Err(DecodeError {
            offset: kind_at,
            what: "table options outside their limits",
        });
    }
    Ok(TableRecord { id, name, options })
}

/// One byte that stands for one of a few values (`decode` maps it, None for
/// a byte no value has); `unknown` names the error, at the byte's offset.
fn decode_code<T>(
    p: &mut Decoder<'_>,
    what: &'static str,
    unknown: &'static str,
    decode: impl Fn(u8) -> Option<T>,
) -> Result<T, DecodeError> {
    let at = p.pos();
    decode(p.u8(what)?).ok_or(DecodeError {
        offset: at,
        what: unknown,
    })
}

fn decode_compaction(p: &mut Decoder<'_>) -> Result<CompactionOptions, DecodeError> {
    let style = decode_code(
        p,
        "compaction style",
        "unknown compaction style",
        |b| match b {
            1 => Some(CompactionStyle::Leveled),
            2 => Some(CompactionStyle::Tiered),
            _ => None,
        },
    )?;
    let l0_trigger = p.varint32()?;
    let fanout = p.varint32()?;
    let level_base_bytes = p.varint64()?;
    let dynamic_level_bytes = decode_code(
        p,
        "dynamic level bytes",
        "dynamic level bytes is neither 0 nor 1",
        |b| match b {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        },
    )?;
    Ok(CompactionOptions {
        style,
        l0_trigger,
        fanout,
        level_base_bytes,
        dynamic_level_bytes,
        target_file_size: p.varint64()?,
        size_ratio_percent: p.varint32()?,
        min_merge_width: p.varint32()?,
        max_merge_width: p.varint32()?,
        max_size_amplification_percent: p.varint32()?,
    })
}

fn decode_file(p: &mut Decoder<'_>) -> Result<FileRecord, DecodeError> {
    let number = p.varint64()?;
    let size = p.varint64()?;
    let entries = p.varint64()?;
    let smallest = p
        .length_prefixed(limits::KEY_BYTES_MAX + 8, "smallest key")?
        .to_vec();
    let largest = p
        .length_prefixed(limits::KEY_BYTES_MAX + 8, "largest key")?
        .to_vec();
    let seqno_min = p.varint64()?;
    let seqno_max = p.varint64()?;
    // Written only when known (and absent before range deletes existed).
    let range_dels_applied = if p.is_empty() { 0 } else { p.varint64()? };
    Ok(FileRecord {
        number,
        size,
        entries,
        smallest,
        largest,
        seqno_min,
        seqno_max,
        range_dels_applied,
    })
}

/// Writes manifest `number` in `dir` holding `records` (encoded edits; the
/// first must describe the whole state) and makes it the live manifest;
/// returns its writer, for the edits that follow. Used by open and by the
/// manifest roll.
///
/// Order of the steps, each durable before the next begins:
/// 1. the new manifest's records (file sync), then its directory entry
///    (directory sync), so that `CURRENT` can never name a missing or short
///    file, whatever order the file system persists entries in;
/// 2. `CURRENT.tmp` naming it (file sync);
/// 3. the rename of `CURRENT.tmp` over `CURRENT` (directory sync).
///
/// Until the rename is durable the previous manifest is the live one, whole
/// and unchanged; after it, the new one is. An error at any step leaves one of
/// the two live, and the caller cannot tell which: it must treat the edits as
/// neither written nor lost, and refuse further edits. The previous manifest
/// is the caller's to delete, once this returns.
pub(crate) fn start_manifest(
    fs: &dyn Fs,
    dir: &Path,
    number: u64,
    records: &[&[u8]],
) -> Result<LogWriter> {
    let name = manifest_name(number);
    let mut manifest = LogWriter::new(fs.create(&dir.join(&name))?);
    for record in records {
        manifest.add_record(record)?;
    }
    sync_and_mark(&mut manifest)?;
    fs.sync_dir(dir)?;
    write_current(fs, dir, &name)?;
    Ok(manifest)
}

/// Syncs a manifest, then appends its sync mark: an empty edit (a no-op to
/// every reader), not synced itself. A mark after a damaged edit proves
/// the edit had been synced, so that the damage is corruption rather than
/// an edit a power loss left half written (`db::open`).
pub(crate) fn sync_and_mark(manifest: &mut LogWriter) -> Result<()> {
    manifest.sync()?;
    manifest.add_record(&[])?;
    manifest.flush()
}

/// Points CURRENT at the manifest `name`, durably: a new file synced, then
/// renamed over the old one, then the directory synced.
pub(crate) fn write_current(fs: &dyn Fs, dir: &Path, name: &str) -> Result<()> {
    let tmp = dir.join(CURRENT_TMP);
    let mut current = fs.create(&tmp)?;
    current.append(format!("{name}\n").as_bytes())?;
    current.sync()?;
    drop(current);
    fs.rename(&tmp, &dir.join(CURRENT))?;
    fs.sync_dir(dir)
}

/// Parses the contents of `CURRENT`.
pub(crate) fn parse_current(path: &Path, contents: &[u8]) -> Result<u64> {
    let text = std::str::from_utf8(contents)
        .map_err(|_| Error::corruption(path, 0, "CURRENT is not UTF-8"))?;
    let name = text.strip_suffix('\n').unwrap_or(text);
    parse_manifest_name(name).ok_or_else(|| {
        Error::corruption(
            path,
            0,
            format!("CURRENT does not name a manifest: {name:?}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> VersionEdit {
        VersionEdit {
            format: Some(FORMAT_VERSION),
            next_file_number: Some(12),
            last_seqno: Some(1 << 40),
            log_number: Some(9),
            log_start: Some(LogStart {
                segment: 9,
                after_seqno: Some(1 << 40),
            }),
            next_table_id: Some(3),
            created: vec![TableRecord {
                id: 2,
                name: "users".into(),
                options: TableOptions::default(),
            }],
            dropped: vec![1],
            added: vec![(
                2,
                0,
                FileRecord {
                    number: 11,
                    size: 4096,
                    entries: 10,
                    smallest: b"a\0\0\0\0\0\0\0\0".to_vec(),
                    largest: b"z\0\0\0\0\0\0\0\0".to_vec(),
                    seqno_min: 1,
                    seqno_max: 10,
                    range_dels_applied: 8,
                },
            )],
            deleted: vec![(2, 1, 5)],
            flushed: vec![(2, 10)],
            checkpointed: vec![(3, 7)],
            range_dels_added: vec![(
                2,
                RangeTombstone {
                    seqno: 9,
                    start: b"b".to_vec(),
                    end: Vec::new(),
                },
            )],
            range_dels_dropped: vec![(2, 4)],
        }
    }

    #[test]
    fn edit_round_trips() {
        let e = sample();
        assert_eq!(VersionEdit::decode(&e.encode()).expect("decodes"), e);
        assert_eq!(
            VersionEdit::decode(&[]).expect("empty"),
            VersionEdit::default()
        );
    }

    #[test]
    fn golden_bytes_of_the_format_and_its_place() {
        // Goal: the format is the first field (tag 14), readable alone
        // before anything a newer build may add after it, and nowhere else.
        let e = VersionEdit {
            format: Some(2),
            next_file_number: Some(5),
            ..VersionEdit::default()
        };
        let bytes = e.encode();
        assert_eq!(bytes, [0x0E, 0x01, 0x02, 0x01, 0x01, 0x05]);
        assert_eq!(peek_format(&bytes), Some(2));
        // A newer format is read from its first field even when a field this
        // build does not know follows.
        assert_eq!(peek_format(&[0x0E, 0x01, 0x09, 0x63, 0x00]), Some(9));
        let (format_field, rest) = bytes.split_at(3);
        assert_eq!(peek_format(rest), None);
        assert_eq!(peek_format(&[]), None);
        let later = [rest, format_field].concat();
        let err = VersionEdit::decode(&later).expect_err("refused");
        assert_eq!(err.offset, 3, "{err:?}");
    }

    #[test]
    fn golden_bytes_of_a_small_edit() {
        let e = VersionEdit {
            next_file_number: Some(5),
            flushed: vec![(1, 300)],
            ..VersionEdit::default()
        };
        assert_eq!(e.encode(), [1, 1, 5, 9, 3, 1, 0xAC, 0x02]);
        let c = VersionEdit {
            checkpointed: vec![(2, 300)],
            ..VersionEdit::default()
        };
        assert_eq!(c.encode(), [10, 3, 2, 0xAC, 0x02]);
        // The log's start: its segment, then the seqno its records follow.
        let l = VersionEdit {
            log_start: Some(LogStart {
                segment: 7,
                after_seqno: Some(300),
            }),
            ..VersionEdit::default()
        };
        assert_eq!(l.encode(), [11, 3, 7, 0xAC, 0x02]);
    }

    #[test]
    fn golden_bytes_of_range_tombstone_fields() {
        let e = VersionEdit {
            range_dels_added: vec![(
                1,
                RangeTombstone {
                    seqno: 300,
                    start: b"a".to_vec(),
                    end: Vec::new(),
                },
            )],
            range_dels_dropped: vec![(1, 300)],
            ..VersionEdit::default()
        };
        let want = [12, 6, 1, 0xAC, 0x02, 1, b'a', 0, 13, 3, 1, 0xAC, 0x02];
        assert_eq!(e.encode(), want);
        assert_eq!(VersionEdit::decode(&want).expect("decodes"), e);
    }

    #[test]
    fn a_log_start_without_its_seqno_reads_as_the_segment_alone() {
        // Goal: manifests written before the log's start recorded the seqno
        // its records follow still open; they are checked as before.
        let edit = VersionEdit::decode(&[11, 1, 7]).expect("decodes");
        assert_eq!(
            edit.log_start,
            Some(LogStart {
                segment: 7,
                after_seqno: None
            })
        );
    }

    #[test]
    fn damaged_edits_are_errors_never_panics() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            let _ = VersionEdit::decode(bytes.get(..cut).expect("in range"));
        }
        for pos in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                if let Some(x) = b.get_mut(pos) {
                    *x ^= 1 << bit;
                }
                let _ = VersionEdit::decode(&b);
            }
        }
        assert!(VersionEdit::decode(&[99, 0]).is_err());
    }

    #[test]
    fn golden_bytes_of_a_create_table_record() {
        // Pins docs/format.md's create_table field, compaction options and
        // page size included.
        let e = VersionEdit {
            created: vec![TableRecord {
                id: 1,
                name: "t".into(),
                options: TableOptions {
                    write_buffer_size: 64 << 10,
                    ..TableOptions::tiered()
                },
            }],
            ..VersionEdit::default()
        };
        #[rustfmt::skip]
        let want = [
            5, 30, // tag create_table, payload length
            1, 1, b't', // id, name
            1, 0, 10, // kind lsm, no compression, bloom bits
            0x80, 0x20, // block size 4096
            0x80, 0x80, 0x04, // write buffer 65536
            2, 4, 10, // tiered, l0 trigger, fanout
            0x80, 0x80, 0x80, 0x20, // level base 64 MiB
            1, // dynamic level bytes
            0x80, 0x80, 0x80, 0x04, // target file 8 MiB
            1, 2, 32, // size ratio %, min and max merge width
            0xC8, 0x01, // max size amplification 200%
            0x80, 0x40, // page size 8192
        ];
        assert_eq!(e.encode(), want);
        assert_eq!(VersionEdit::decode(&want).expect("decodes"), e);
    }

    #[test]
    fn a_table_record_without_compaction_options_is_leveled() {
        // The create-table record as written before tables had compaction
        // options: id 1, name "t", lsm, no compression, 10 bloom bits,
        // 4096-byte blocks, 64 KiB write buffer.
        let mut payload = Vec::new();
        put_varint32(&mut payload, 1);
        put_length_prefixed(&mut payload, b"t");
        put_u8(&mut payload, 1);
        put_u8(&mut payload, 0);
        put_varint32(&mut payload, 10);
        put_varint64(&mut payload, 4096);
        put_varint64(&mut payload, 64 << 10);
        let mut record = Vec::new();
        put_field(&mut record, tag::CREATE_TABLE, &payload);
        let edit = VersionEdit::decode(&record).expect("decodes");
        let t = edit.created.first().expect("one table");
        assert_eq!(t.options.compaction, CompactionOptions::leveled());
        assert_eq!(t.options.write_buffer_size, 64 << 10);
        // A record cut inside the compaction options is still an error.
        let mut full = Vec::new();
        let options = TableOptions::tiered();
        VersionEdit {
            created: vec![TableRecord {
                id: 1,
                name: "t".into(),
                options,
            }],
            ..VersionEdit::default()
        }
        .encode()
        .clone_into(&mut full);
        assert!(VersionEdit::decode(&full).is_ok());
        let cut_payload_len = payload.len() + 3;
        let mut cut = Vec::new();
        put_field(
            &mut cut,
            tag::CREATE_TABLE,
            full.get(2..2 + cut_payload_len).expect("in range"),
        );
        assert!(VersionEdit::decode(&cut).is_err());
    }

    #[test]
    fn current_parsing() {
        let p = Path::new("CURRENT");
        assert_eq!(parse_current(p, b"MANIFEST-000007\n").expect("ok"), 7);
        assert!(parse_current(p, b"garbage").is_err());
        assert!(parse_current(p, &[0xFF]).is_err());
    }
}
