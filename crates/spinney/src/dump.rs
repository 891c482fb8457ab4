//! `dump`: any spinney file decoded for a person (SST, WAL segment,
//! manifest, CURRENT). The output is for reading, not a stable interface.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::fs::{Fs, OsFs};
use crate::lsm::sst;
use crate::manifest::VersionEdit;
use crate::wal::batch::DecodedBatch;
use crate::wal::reader::{LogReader, Read};

/// Writes a description of the file at `path` to `out`. The kind of file is
/// told by its name: `*.sst`, `*.btree`, `*.wal`, `MANIFEST-*`, `CURRENT`.
///
/// ```
/// # fn main() -> spinney::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spinney::Db::open(dir.path(), spinney::Options::default())?;
/// let t = db.create_table("t", spinney::TableOptions::lsm())?;
/// t.put(b"k", b"v")?;
/// db.flush()?;
/// let sst = std::fs::read_dir(dir.path()).unwrap()
///     .map(|e| e.unwrap().path())
///     .find(|p| p.extension().is_some_and(|x| x == "sst"))
///     .unwrap();
/// let mut out = Vec::new();
/// spinney::dump(&sst, &mut out)?;
/// assert!(String::from_utf8_lossy(&out).contains("\"k\""));
/// # Ok(()) }
/// ```
pub fn dump(path: &Path, out: &mut dyn Write) -> Result<()> {
    let fs = OsFs::new();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let w = |e: std::io::Error| Error::io("write", "<dump output>", e);
    if name.ends_with(".sst") {
        sst::dump(&fs, path, out)
    } else if name.ends_with(".btree") {
        crate::btree::verify::dump_file(&fs, path, out)
    } else if name.ends_with(".wal") {
        writeln!(out, "write-ahead log segment {}", path.display()).map_err(w)?;
        for_each_record(&fs, path, out, &mut |out, offset, data| {
            match crate::wal::segment::classify(data) {
                crate::wal::segment::Record::Mark { synced_seqno } => {
                    writeln!(
                        out,
                        "@{offset} sync mark: synced through seqno {synced_seqno}"
                    )
                    .map_err(w)?;
                    return Ok(());
                }
                crate::wal::segment::Record::Header { version } => {
                    crate::wal::segment::check_header(path, offset, version)?;
                    writeln!(
                        out,
                        "@{offset} segment header: log format version {version}"
                    )
                    .map_err(w)?;
                    return Ok(());
                }
                crate::wal::segment::Record::Batch => {}
            }
            let batch = DecodedBatch::parse(data).map_err(|e| e.corruption(path, offset))?;
            writeln!(
                out,
                "@{offset} batch seqno {} count {}",
                batch.seqno_first, batch.count
            )
            .map_err(w)?;
            for (i, entry) in batch.entries().enumerate() {
                let entry = entry.map_err(|e| e.corruption(path, offset))?;
                let seqno = batch.seqno_first + i as u64;
                match entry.kind {
                    crate::mvcc::key::Kind::Put => writeln!(
                        out,
                        "  {seqno} put table {} \"{}\" = \"{}\"",
                        entry.table_id,
                        entry.key.escape_ascii(),
                        shorten(entry.value)
                    ),
                    crate::mvcc::key::Kind::Delete => {
                        writeln!(
                            out,
                            "  {seqno} del table {} \"{}\"",
                            entry.table_id,
                            entry.key.escape_ascii()
                        )
                    }
                    crate::mvcc::key::Kind::RangeDelete => {
                        writeln!(
                            out,
                            "  {seqno} delete-range table {} \"{}\" .. \"{}\"{}",
                            entry.table_id,
                            entry.key.escape_ascii(),
                            entry.value.escape_ascii(),
                            if entry.value.is_empty() {
                                " (to the end)"
                            } else {
                                ""
                            }
                        )
                    }
                }
                .map_err(w)?;
            }
            Ok(())
        })
    } else if name.starts_with(crate::file_names::MANIFEST_PREFIX) {
        writeln!(out, "manifest {}", path.display()).map_err(w)?;
        for_each_record(&fs, path, out, &mut |out, offset, data| {
            crate::manifest::check_format(path, offset, data)?;
            let edit = VersionEdit::decode(data).map_err(|e| e.corruption(path, offset))?;
            writeln!(out, "@{offset} {}", describe_edit(&edit)).map_err(w)
        })
    } else if name == "CURRENT" {
        let bytes = fs.read_all(path)?;
        writeln!(out, "CURRENT -> {}", bytes.escape_ascii()).map_err(w)
    } else {
        Err(Error::invalid(format!(
            "{}: not a spinney file name (expected *.sst, *.wal, MANIFEST-* or CURRENT)",
            path.display()
        )))
    }
}

fn shorten(v: &[u8]) -> String {
    const SHOWN: usize = 64;
    match v.get(..SHOWN) {
        Some(head) if v.len() > SHOWN => format!("{}... ({} bytes)", head.escape_ascii(), v.len()),
        _ => v.escape_ascii().to_string(),
    }
}

type RecordFn<'a> = dyn FnMut(&mut dyn Write, u64, &[u8]) -> Result<()> + 'a;

fn for_each_record(
    fs: &dyn Fs,
    path: &Path,
    out: &mut dyn Write,
    f: &mut RecordFn<'_>,
) -> Result<()> {
    let w = |e: std::io::Error| Error::io("write", "<dump output>", e);
    let mut reader = LogReader::new(fs.read_all(path)?);
    let mut records = 0u64;
    loop {
        match reader.next() {
            Read::Record { offset, data } => {
                f(out, offset, &data)?;
                records += 1;
            }
            Read::End => {
                writeln!(out, "{records} records, clean end").map_err(w)?;
                return Ok(());
            }
            Read::Torn { offset, detail } => {
                writeln!(
                    out,
                    "{records} records, then a torn tail at offset {offset}: {detail}"
                )
                .map_err(w)?;
                return Ok(());
            }
            Read::Corrupt { offset, detail } => {
                return Err(Error::corruption(path, offset, detail))
            }
        }
    }
}

fn describe_edit(e: &VersionEdit) -> String {
    let mut parts = Vec::new();
    if let Some(f) = e.format {
        parts.push(format!("format={f}"));
    }
    if let Some(n) = e.next_file_number {
        parts.push(format!("next_file={n}"));
    }
    if let Some(n) = e.last_seqno {
        parts.push(format!("last_seqno={n}"));
    }
    if let Some(n) = e.log_number {
        parts.push(format!("log_number={n}"));
    }
    if let Some(l) = e.log_start {
        parts.push(format!("log_start={}", l.segment));
        if let Some(s) = l.after_seqno {
            parts.push(format!("log_start_after_seqno={s}"));
        }
    }
    if let Some(n) = e.next_table_id {
        parts.push(format!("next_table_id={n}"));
    }
    for t in &e.created {
        parts.push(format!(
            "create table {} {:?} kind={} compression={} bloom_bits={} block_size={} write_buffer={}",
            t.id,
            t.name,
            t.options.kind.name(),
            t.options.compression.name(),
            t.options.bloom_bits_per_key,
            t.options.block_size,
            t.options.write_buffer_size
        ));
    }
    for id in &e.dropped {
        parts.push(format!("drop table {id}"));
    }
    for (t, l, f) in &e.added {
        parts.push(format!(
            "add table {t} L{l} file {} ({} bytes, {} entries, seqnos {}..={}, keys {} .. {})",
            f.number,
            f.size,
            f.entries,
            f.seqno_min,
            f.seqno_max,
            sst::format_key(&f.smallest),
            sst::format_key(&f.largest)
        ));
    }
    for (t, l, n) in &e.deleted {
        parts.push(format!("delete table {t} L{l} file {n}"));
    }
    for (t, s) in &e.flushed {
        parts.push(format!("table {t} flushed to seqno {s}"));
    }
    for (t, g) in &e.checkpointed {
        parts.push(format!("table {t} checkpointed at generation {g}"));
    }
    for (t, r) in &e.range_dels_added {
        parts.push(format!(
            "add table {t} range tombstone @{} \"{}\" .. {}",
            r.seqno,
            r.start.escape_ascii(),
            if r.end.is_empty() {
                "the end".to_string()
            } else {
                format!("\"{}\"", r.end.escape_ascii())
            }
        ));
    }
    for (t, s) in &e.range_dels_dropped {
        parts.push(format!("drop table {t} range tombstone @{s}"));
    }
    parts.join("; ")
}
