//! Writes a compatibility corpus: one small database in the formats this
//! build writes (`db/`), and what it must read back (`expected.txt`).
//! `scripts/make-compat-corpus.sh` runs it at a given commit into
//! `crates/spinney/tests/compat/<name>/`, and `tests/compat.rs` opens a
//! copy of every corpus there with the current build and compares.
//!
//! The database holds every kind of table with every codec and both
//! compaction styles, and the states a reader must handle: SSTs from two
//! flushes, a B-tree checkpointed and then changed, values larger than a
//! quarter of a B-tree page (overflow runs), deletes and range deletes in
//! files, and a transaction across every table whose writes (a range
//! delete among them) are only in the log.
//!
//! Usage: `cargo run -p spinney --example compat_corpus -- <empty directory>`

use std::fmt::Write as _;
use std::path::Path;

use spinney::{Compression, Db, LogWrites, Options, TableOptions};

/// The key of entry `i`.
fn key(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// A value of `len` bytes that differs by `seed`.
fn value(seed: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|j| (seed as usize * 31 + (j * 7) % 251) as u8)
        .collect()
}

fn tables() -> Vec<(&'static str, TableOptions)> {
    let btree = |compression| TableOptions {
        compression,
        page_size: 4096,
        ..TableOptions::btree()
    };
    vec![
        ("lsm_leveled", TableOptions::lsm()),
        (
            "lsm_tiered_lz4",
            TableOptions {
                compression: Compression::Lz4,
                ..TableOptions::tiered()
            },
        ),
        (
            "lsm_leveled_zstd",
            TableOptions {
                compression: Compression::Zstd,
                ..TableOptions::lsm()
            },
        ),
        ("btree", btree(Compression::None)),
        ("btree_lz4", btree(Compression::Lz4)),
        ("btree_zstd", btree(Compression::Zstd)),
    ]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: compat_corpus <empty directory>");
        std::process::exit(2);
    };
    let out = Path::new(&out);
    let options = Options {
        // Segments grow as they are written (a mapped segment reserves its
        // whole size on disk), so the corpus stays small.
        log_writes: LogWrites::Write,
        ..Options::default()
    };
    let db = Db::open(out.join("db"), options)?;
    let tables: Vec<_> = tables()
        .into_iter()
        .map(|(name, options)| db.create_table(name, options).map(|t| (name, t)))
        .collect::<spinney::Result<_>>()?;

    // First flush: puts, two values over a quarter of a page (1 KiB of
    // the B-trees' 4 KiB), deletes and a range delete.
    for (_, t) in &tables {
        for i in 0..300 {
            t.put(&key(i), &value(i, 20 + (i as usize % 50)))?;
        }
        t.put(&key(1000), &value(1000, 1500))?;
        t.put(&key(1001), &value(1001, 3000))?;
        for i in 10..20 {
            t.delete(&key(i))?;
        }
        t.delete_range(key(100)..key(120))?;
    }
    db.flush()?;
    db.checkpoint()?;

    // Second flush: overwrites, and a range delete over keys of the first.
    for (_, t) in &tables {
        for i in 50..80 {
            t.put(&key(i), &value(i + 7, 33))?;
        }
        t.delete_range(key(200)..key(210))?;
    }
    db.flush()?;
    db.checkpoint()?;

    // Only in the log: a transaction across every table.
    let mut tx = db.begin();
    for (_, t) in &tables {
        tx.put(t, b"tx-key", b"tx-value")?;
        tx.put(t, &key(1000), &value(2000, 2000))?;
        tx.delete(t, &key(1))?;
        tx.delete_range(t, key(150)..key(160))?;
    }
    tx.commit()?;

    let mut expected = String::from(
        "# What db/ reads back: per table, its name, kind and codec, then each\n\
         # key and value in key order, in hex.\n",
    );
    writeln!(expected, "# format {}", db.format_version()).expect("a String");
    for (name, t) in &tables {
        let o = t.options();
        writeln!(
            expected,
            "table {name} {} {}",
            o.kind.name(),
            o.compression.name()
        )
        .expect("a String");
        for entry in t.iter()? {
            let (k, v) = entry?;
            writeln!(expected, "{} {}", hex(&k), hex(&v)).expect("a String");
        }
    }
    db.close()?;
    std::fs::write(out.join("expected.txt"), expected)?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
