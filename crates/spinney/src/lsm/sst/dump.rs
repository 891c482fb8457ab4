//! A human-readable dump of an SST: footer, properties, index and every
//! entry. For `spinney dump` and for debugging; the output is for people,
//! not a stable interface.
//!
//! Keys print as the escaped user key, then `@seqno` and the kind; values
//! print escaped and cut to 64 bytes.
#![deny(clippy::indexing_slicing)]

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use super::format::BlockHandle;
use super::reader::Sst;
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::mvcc::iter::InternalIterator;
use crate::mvcc::key::{Kind, ParsedKey};

/// Values longer than this are cut in dumps.
const VALUE_SHOWN_BYTES_MAX: usize = 64;

pub(crate) fn escape(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// `"user key" @seqno kind`, or the escaped bytes if the key is malformed.
pub(crate) fn format_key(ikey: &[u8]) -> String {
    match ParsedKey::parse(ikey) {
        Some(p) => format!(
            "\"{}\" @{} {}",
            escape(p.user_key),
            p.seqno,
            match p.kind {
                Kind::Put => "put",
                Kind::Delete | Kind::RangeDelete => "del",
            }
        ),
        None => format!("<malformed key \"{}\">", escape(ikey)),
    }
}

pub(crate) fn format_value(value: &[u8]) -> String {
    match value.get(..VALUE_SHOWN_BYTES_MAX) {
        Some(head) if value.len() > VALUE_SHOWN_BYTES_MAX => {
            format!("\"{}\"... ({} bytes)", escape(head), value.len())
        }
        _ => format!("\"{}\"", escape(value)),
    }
}

fn handle(h: &BlockHandle) -> String {
    format!("offset {}, size {}", h.offset, h.size)
}

/// Writes a human-readable description of the SST at `path` to `out`.
pub(crate) fn dump(fs: &dyn Fs, path: &Path, out: &mut dyn Write) -> Result<()> {
    let file = fs.open(path)?;
    // A private, empty cache: a dump reads each block once.
    let sst = Sst::open(file, 0, Arc::new(Cache::new(0)))?;
    let w = |e: std::io::Error| Error::io("write", "<dump output>", e);

    let f = sst.footer();
    writeln!(out, "SST {}", path.display()).map_err(w)?;
    writeln!(out, "file size: {} bytes", sst.file_size()).map_err(w)?;
    writeln!(
        out,
        "footer (format version {}):",
        super::format::FORMAT_VERSION
    )
    .map_err(w)?;
    if f.filter.size == 0 {
        writeln!(out, "  filter:     none").map_err(w)?;
    } else {
        writeln!(out, "  filter:     {}", handle(&f.filter)).map_err(w)?;
    }
    writeln!(out, "  properties: {}", handle(&f.properties)).map_err(w)?;
    writeln!(out, "  index:      {}", handle(&f.index)).map_err(w)?;

    let p = sst.properties();
    writeln!(out, "properties:").map_err(w)?;
    writeln!(out, "  entries:         {}", p.entries).map_err(w)?;
    writeln!(out, "  deletions:       {}", p.deletions).map_err(w)?;
    writeln!(out, "  raw key bytes:   {}", p.raw_key_bytes).map_err(w)?;
    writeln!(out, "  raw value bytes: {}", p.raw_value_bytes).map_err(w)?;
    writeln!(out, "  data blocks:     {}", p.data_blocks).map_err(w)?;
    writeln!(out, "  smallest:        {}", format_key(&p.smallest)).map_err(w)?;
    writeln!(out, "  largest:         {}", format_key(&p.largest)).map_err(w)?;
    writeln!(out, "  seqno:           {}..={}", p.seqno_min, p.seqno_max).map_err(w)?;
    writeln!(out, "  compression:     {}", p.compression.name()).map_err(w)?;
    writeln!(out, "  bloom bits/key:  {}", p.bloom_bits_per_key).map_err(w)?;
    if let Some(filter) = sst.filter() {
        writeln!(
            out,
            "  filter:          {} bytes, {} probes, {}",
            filter.bytes(),
            filter.num_probes(),
            filter.form()
        )
        .map_err(w)?;
    }

    writeln!(out, "index:").map_err(w)?;
    let mut index = sst.index_iter();
    index.seek_to_first();
    while index.valid() {
        let h = sst.decode_handle(&index)?;
        writeln!(out, "  {} -> {}", format_key(index.key()), handle(&h)).map_err(w)?;
        index.next();
    }
    if let Some(e) = index.error(sst.path()) {
        return Err(e);
    }

    writeln!(out, "entries:").map_err(w)?;
    let mut it = sst.iter();
    it.seek_to_first();
    while it.valid() {
        writeln!(
            out,
            "  {} => {}",
            format_key(it.key()),
            format_value(it.value())
        )
        .map_err(w)?;
        it.next();
    }
    it.status()
}
