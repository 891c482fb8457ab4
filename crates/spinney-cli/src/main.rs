//! `spinney`: create, load, read, scan, check and inspect spinney databases
//! from a shell.
//!
//! Keys and values are text; with `--hex` they are given and printed as
//! hexadecimal. Exit codes: 0 success, 1 key not found (`get`), 2 bad usage,
//! 3 any other error (I/O, corruption, no such table, ...).

use std::io::{self, Write};
use std::ops::Bound;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use spinney::{CompactionOptions, Compression, Db, Options, ReadOptions, TableKind, TableOptions};

#[derive(Parser)]
#[command(name = "spinney", version, about = "Inspect and use spinney databases")]
struct Cli {
    /// The database directory.
    #[arg(long, global = true)]
    db: Option<PathBuf>,
    /// Keys and values are hexadecimal, on input and output.
    #[arg(long, global = true)]
    hex: bool,
    /// Background threads for flushes, compactions and checkpoints (0: the
    /// writer does the work).
    #[arg(long, global = true, default_value_t = 2)]
    background_threads: usize,
    /// Block cache size in bytes.
    #[arg(long, global = true, default_value_t = 64 << 20)]
    cache_size: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum KindArg {
    Lsm,
    Btree,
}

#[derive(Clone, Copy, ValueEnum)]
enum CompactionArg {
    Leveled,
    Tiered,
}

#[derive(Clone, Copy, ValueEnum)]
enum CompressionArg {
    None,
    Lz4,
    Zstd,
}

#[derive(Subcommand)]
enum Command {
    /// Create a table.
    Create {
        table: String,
        #[arg(long, value_enum, default_value = "lsm")]
        kind: KindArg,
        #[arg(long, value_enum, default_value = "none")]
        compression: CompressionArg,
        /// Bloom filter bits per key; 0 for no filter.
        #[arg(long, default_value_t = 10)]
        bloom_bits: u32,
        /// Target data block size in bytes.
        #[arg(long, default_value_t = 4096)]
        block_size: usize,
        /// Memtable size before a flush, in bytes.
        #[arg(long, default_value_t = 8 << 20)]
        write_buffer_size: usize,
        /// Compaction style of an LSM table.
        #[arg(long, value_enum, default_value = "leveled")]
        compaction: CompactionArg,
        /// L0 runs (tiered: sorted runs) that start a compaction.
        #[arg(long, default_value_t = 4)]
        l0_trigger: u32,
        /// Leveled: size ratio between adjacent levels.
        #[arg(long, default_value_t = 10)]
        fanout: u32,
        /// Leveled: compaction output files are cut near this size, in bytes.
        #[arg(long, default_value_t = 8 << 20)]
        target_file_size: u64,
        /// Leveled: fixed level targets from L1 down instead of sizing the
        /// levels from the last one up.
        #[arg(long)]
        static_levels: bool,
        /// B-tree page size in bytes: a power of two from 4096 to 32768
        /// (default 8192). A user key may be up to about a quarter of it.
        #[arg(long)]
        page_size: Option<usize>,
    },
    /// List the tables.
    Tables,
    /// Drop a table and its data.
    Drop { table: String },
    /// Set a key.
    Put {
        table: String,
        key: String,
        value: String,
    },
    /// Print a key's value; exit 1 when absent.
    Get { table: String, key: String },
    /// Delete a key.
    Delete { table: String, key: String },
    /// Print `key<TAB>value` lines in key order.
    Scan {
        table: String,
        /// First key shown (inclusive).
        #[arg(long)]
        from: Option<String>,
        /// Keys shown are below this one (exclusive).
        #[arg(long)]
        to: Option<String>,
        /// Largest key first.
        #[arg(long)]
        reverse: bool,
        /// At most this many lines.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Write `count` sample entries (16-byte keys key0000000000001 ...) and
    /// read them back; prints the rates and the peak resident memory. The
    /// table is created if it does not exist (an LSM table unless `--kind
    /// btree`).
    Load {
        table: String,
        /// The kind of table to create if it does not exist; an existing
        /// table of another kind is an error.
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// B-tree page size of a table created here (see `create`); an
        /// existing B-tree table with other pages is an error.
        #[arg(long)]
        page_size: Option<usize>,
        #[arg(long, default_value_t = 100_000)]
        count: u64,
        #[arg(long, default_value_t = 100)]
        value_size: usize,
        /// Write the keys in a scattered order instead of ascending.
        #[arg(long)]
        random: bool,
        /// Print the database's stats after the load (before close).
        #[arg(long)]
        stats: bool,
    },
    /// Flush every LSM table's memtables to files and checkpoint every
    /// B-tree table.
    Flush,
    /// Checkpoint every B-tree table: write its changed pages and make the
    /// new image durable, so the log before it is no longer needed.
    Checkpoint,
    /// Compact a level into the one below it, or everything into the last level.
    #[command(group(clap::ArgGroup::new("which").required(true).args(["level", "all"])))]
    Compact {
        table: String,
        /// Compact this level into the level below it (0: L0 into the level L0 compacts into).
        #[arg(long)]
        level: Option<usize>,
        /// Flush, then merge every file into one sorted run in the last level.
        #[arg(long)]
        all: bool,
    },
    /// Print a table's shape: memtables, L0 runs, each level's files and
    /// bytes; for a B-tree table its height, pages, entries, fill and file
    /// size.
    Shape {
        table: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Read and check every file (SSTs, and the durable image of every B-tree
    /// table); exit non-zero on corruption.
    Verify,
    /// Print counters, and per table the level table (files, bytes, score,
    /// compaction reads and writes, write amplification) and bloom figures;
    /// for a B-tree table its pages, page reads and writes, evictions and
    /// checkpoints.
    Stats {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Decode any spinney file (SST, B-tree file, WAL segment, MANIFEST,
    /// CURRENT). A B-tree file is checked too: its last line says whether
    /// its image verifies.
    Dump { file: PathBuf },
    /// Write a lost CURRENT file, naming the newest manifest that reads
    /// whole (a database whose CURRENT is gone does not open). Run verify
    /// after.
    RecoverCurrent,
    /// Raise the database's format to the newest this build writes
    /// (`Options::upgrade_format`): its new manifest and log segments are
    /// written in it, and builds that do not read it refuse the database
    /// after. Without it a database keeps its format. Prints the format
    /// before and after.
    Upgrade,
}

enum Failure {
    NotFound,
    Usage(String),
    Error(spinney::Error),
}

impl From<spinney::Error> for Failure {
    fn from(e: spinney::Error) -> Self {
        Failure::Error(e)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::NotFound) => ExitCode::from(1),
        Err(Failure::Usage(msg)) => {
            eprintln!("spinney: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Error(e)) => {
            eprintln!("spinney: {e}");
            ExitCode::from(3)
        }
    }
}

fn decode_arg(hex: bool, s: &str) -> Result<Vec<u8>, Failure> {
    if !hex {
        return Ok(s.as_bytes().to_vec());
    }
    if !s.len().is_multiple_of(2) {
        return Err(Failure::Usage(format!(
            "{s:?} is not hexadecimal (odd length)"
        )));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| Failure::Usage(format!("{s:?} is not hexadecimal")))
        })
        .collect()
}

fn encode_out(hex: bool, b: &[u8]) -> String {
    if hex {
        b.iter().map(|x| format!("{x:02x}")).collect()
    } else {
        // Text as it is; bytes that are not printable are escaped.
        b.escape_ascii().to_string()
    }
}

fn write_out(out: &mut impl Write, line: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    match out.write_fmt(line) {
        Ok(()) => Ok(()),
        // A closed pipe (`spinney scan t | head`) ends the output quietly.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::Usage(format!("writing output failed: {e}"))),
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The process's peak resident set size (Linux: VmHWM), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, Failure> {
    serde_json::to_string_pretty(value).map_err(|e| {
        Failure::Error(spinney::Error::InvalidArgument(format!(
            "JSON output failed: {e}"
        )))
    })
}

/// Per B-tree table: (checkpoints, pages they wrote), from the stats.
fn checkpoint_figures(db: &Db) -> std::collections::BTreeMap<String, (u64, u64)> {
    db.stats()
        .tables
        .into_iter()
        .filter_map(|t| {
            let b = t.btree?;
            Some((t.name, (b.checkpoints, b.checkpoint_pages)))
        })
        .collect()
}

fn kind_of(kind: KindArg) -> TableKind {
    match kind {
        KindArg::Lsm => TableKind::Lsm,
        KindArg::Btree => TableKind::Btree,
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    let hex = cli.hex;
    if let Command::Dump { file } = &cli.command {
        let stdout = io::stdout();
        let mut out = stdout.lock();
        return match spinney::dump(file, &mut out) {
            // A closed pipe (`spinney dump F | head`) ends the output quietly.
            Err(spinney::Error::Io { source, .. })
                if source.kind() == io::ErrorKind::BrokenPipe =>
            {
                Ok(())
            }
            other => other.map_err(Failure::from),
        };
    }
    let Some(dir) = cli.db else {
        return Err(Failure::Usage(
            "--db DIR is required for this command".into(),
        ));
    };
    if let Command::RecoverCurrent = cli.command {
        let manifest = Db::recover_current(&dir, &Options::default())?;
        let stdout = io::stdout();
        write_out(
            &mut stdout.lock(),
            format_args!("CURRENT now names {manifest}\n"),
        )?;
        return Ok(());
    }
    if let Command::Upgrade = cli.command {
        let before = Db::open(
            &dir,
            Options {
                read_only: true,
                background_threads: 0,
                ..Options::default()
            },
        )?;
        let from = before.format_version();
        before.close()?;
        drop(before);
        let db = Db::open(
            &dir,
            Options {
                create_if_missing: false,
                upgrade_format: true,
                background_threads: 0,
                cache_size: cli.cache_size,
                ..Options::default()
            },
        )?;
        let to = db.format_version();
        db.close()?;
        let stdout = io::stdout();
        let line = match from == to {
            true => format!("the database is in format {to}, the newest this build writes\n"),
            false => format!("the database's format went from {from} to {to}\n"),
        };
        write_out(&mut stdout.lock(), format_args!("{line}"))?;
        return Ok(());
    }
    let must_exist = !matches!(cli.command, Command::Create { .. } | Command::Load { .. });
    // The commands that only read open the database read-only: they never
    // change the directory, and run beside each other (not beside a
    // writer, which holds the lock).
    let read_only = matches!(
        cli.command,
        Command::Tables
            | Command::Get { .. }
            | Command::Scan { .. }
            | Command::Shape { .. }
            | Command::Verify
            | Command::Stats { .. }
    );
    let options = Options {
        read_only,
        create_if_missing: !must_exist,
        background_threads: cli.background_threads,
        cache_size: cli.cache_size,
        ..Options::default()
    };
    let db = Db::open(&dir, options)?;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match cli.command {
        Command::Create {
            table,
            kind,
            compression,
            bloom_bits,
            block_size,
            write_buffer_size,
            compaction,
            l0_trigger,
            fanout,
            target_file_size,
            static_levels,
            page_size,
        } => {
            let mut c = match compaction {
                CompactionArg::Leveled => CompactionOptions::leveled(),
                CompactionArg::Tiered => CompactionOptions::tiered(),
            };
            c.l0_trigger = l0_trigger;
            c.fanout = fanout;
            c.target_file_size = target_file_size;
            c.dynamic_level_bytes = !static_levels;
            let options = TableOptions {
                kind: kind_of(kind),
                compression: match compression {
                    CompressionArg::None => Compression::None,
                    CompressionArg::Lz4 => Compression::Lz4,
                    CompressionArg::Zstd => Compression::Zstd,
                },
                bloom_bits_per_key: bloom_bits,
                block_size,
                write_buffer_size,
                compaction: c,
                page_size: page_size.unwrap_or(TableOptions::default().page_size),
            };
            db.create_table(&table, options)?;
        }
        Command::Tables => {
            for t in db.tables() {
                let o = &t.options;
                if o.kind == TableKind::Btree {
                    // The LSM options (filter, blocks, memtable) do not apply.
                    write_out(
                        &mut out,
                        format_args!(
                            "{}\t{}\tcompression={} page_size={} max_key_len={}\n",
                            t.name,
                            o.kind.name(),
                            o.compression.name(),
                            o.page_size,
                            o.max_key_len()
                        ),
                    )?;
                    continue;
                }
                write_out(
                    &mut out,
                    format_args!(
                        "{}\t{}\tcompression={} bloom_bits={} block_size={} write_buffer_size={}\n",
                        t.name,
                        o.kind.name(),
                        o.compression.name(),
                        o.bloom_bits_per_key,
                        o.block_size,
                        o.write_buffer_size
                    ),
                )?;
            }
        }
        Command::Drop { table } => db.drop_table(&table)?,
        Command::Put { table, key, value } => {
            db.table(&table)?
                .put(&decode_arg(hex, &key)?, &decode_arg(hex, &value)?)?;
        }
        Command::Get { table, key } => match db.table(&table)?.get(&decode_arg(hex, &key)?)? {
            Some(v) => write_out(&mut out, format_args!("{}\n", encode_out(hex, &v)))?,
            None => {
                db.close()?;
                return Err(Failure::NotFound);
            }
        },
        Command::Delete { table, key } => db.table(&table)?.delete(&decode_arg(hex, &key)?)?,
        Command::Scan {
            table,
            from,
            to,
            reverse,
            limit,
        } => {
            let t = db.table(&table)?;
            let lower = match from {
                Some(k) => Bound::Included(decode_arg(hex, &k)?),
                None => Bound::Unbounded,
            };
            let upper = match to {
                Some(k) => Bound::Excluded(decode_arg(hex, &k)?),
                None => Bound::Unbounded,
            };
            let mut cursor = t.cursor_with(&ReadOptions {
                snapshot: None,
                lower,
                upper,
            })?;
            if reverse {
                cursor.seek_to_last();
            } else {
                cursor.seek_to_first();
            }
            let mut shown = 0u64;
            while cursor.valid() && limit.is_none_or(|l| shown < l) {
                write_out(
                    &mut out,
                    format_args!(
                        "{}\t{}\n",
                        encode_out(hex, cursor.key()),
                        encode_out(hex, cursor.value())
                    ),
                )?;
                shown += 1;
                if reverse {
                    cursor.prev();
                } else {
                    cursor.next();
                }
            }
            cursor.status()?;
        }
        Command::Load {
            table,
            kind,
            page_size,
            count,
            value_size,
            random,
            stats,
        } => {
            let t = match db.table(&table) {
                Ok(t) => {
                    if let Some(k) = kind.map(kind_of).filter(|&k| k != t.options().kind) {
                        return Err(Failure::Usage(format!(
                            "table {table:?} exists and is a {} table, not {}",
                            t.options().kind.name(),
                            k.name()
                        )));
                    }
                    let existing = t.options();
                    if let Some(size) = page_size
                        .filter(|&s| existing.kind == TableKind::Btree && s != existing.page_size)
                    {
                        return Err(Failure::Usage(format!(
                            "table {table:?} exists with {}-byte pages, not {size}",
                            existing.page_size
                        )));
                    }
                    t
                }
                Err(spinney::Error::NoSuchTable(_)) => {
                    let defaults = TableOptions::default();
                    db.create_table(
                        &table,
                        TableOptions {
                            kind: kind.map_or(defaults.kind, kind_of),
                            page_size: page_size.unwrap_or(defaults.page_size),
                            ..defaults
                        },
                    )?
                }
                Err(e) => return Err(e.into()),
            };
            // Random order: a fixed permutation of 0..count (i * step + 1 mod
            // count, with step coprime to count), so every key is written once.
            let step = (0x9E37_79B9_7F4A_7C15u64 % count.max(1)..)
                .find(|s| gcd(*s, count) == 1)
                .unwrap_or(1);
            let key_of = |i: u64| -> String {
                let n = if random && count > 0 {
                    ((u128::from(i) * u128::from(step) + 1) % u128::from(count)) as u64
                } else {
                    i
                };
                format!("key{n:013}")
            };
            let start = std::time::Instant::now();
            let value = vec![b'v'; value_size];
            let mut batch = spinney::WriteBatch::new();
            for i in 0..count {
                batch.put(&t, key_of(i).as_bytes(), &value);
                if batch.len() >= 1000 {
                    db.write(std::mem::take(&mut batch))?;
                }
            }
            db.write(batch)?;
            let wrote = start.elapsed();
            let start = std::time::Instant::now();
            let mut found = 0u64;
            for i in 0..count {
                if t.get(key_of(i).as_bytes())?.is_some() {
                    found += 1;
                }
            }
            let read = start.elapsed();
            let scanned = t.iter()?.count();
            write_out(
                &mut out,
                format_args!(
                    "wrote {count} entries in {:.3} s ({:.0} ops/s); read back {found} of {count} in {:.3} s ({:.0} ops/s); a scan sees {scanned}\n",
                    wrote.as_secs_f64(),
                    count as f64 / wrote.as_secs_f64().max(1e-9),
                    read.as_secs_f64(),
                    count as f64 / read.as_secs_f64().max(1e-9)
                ),
            )?;
            if stats {
                write_out(&mut out, format_args!("{}", db.stats()))?;
            }
            if let Some(peak) = peak_rss_kib() {
                write_out(
                    &mut out,
                    format_args!("peak resident memory {:.1} MiB\n", peak as f64 / 1024.0),
                )?;
            }
            if found != count {
                return Err(Failure::Usage(format!(
                    "only {found} of {count} entries read back"
                )));
            }
        }
        Command::Flush => db.flush()?,
        Command::Checkpoint => {
            let before = checkpoint_figures(&db);
            db.checkpoint()?;
            let after = checkpoint_figures(&db);
            if after.is_empty() {
                write_out(&mut out, format_args!("no B-tree tables\n"))?;
            }
            for (name, &(count, pages)) in &after {
                let (count0, pages0) = before.get(name).copied().unwrap_or_default();
                let note = if count > count0 {
                    format!("{} pages written", pages.saturating_sub(pages0))
                } else {
                    "up to date, nothing written".to_string()
                };
                write_out(&mut out, format_args!("checkpoint {name}: {note}\n"))?;
            }
        }
        Command::Compact { table, level, all } => {
            let t = db.table(&table)?;
            match (level, all) {
                (_, true) => t.compact_all()?,
                (Some(n), false) => t.compact_level(n)?,
                (None, false) => return Err(Failure::Usage("give --level N or --all".into())),
            }
        }
        Command::Shape { table, json } => {
            let shape = db.table(&table)?.shape()?;
            if json {
                write_out(&mut out, format_args!("{}\n", to_json(&shape)?))?;
            } else {
                write_out(&mut out, format_args!("{shape}"))?;
            }
        }
        Command::Verify => {
            let entries = db.verify()?;
            write_out(
                &mut out,
                format_args!(
                    "ok: {entries} entries in {} tables checked\n",
                    db.tables().len()
                ),
            )?;
        }
        Command::Stats { json } => {
            let stats = db.stats();
            if json {
                write_out(&mut out, format_args!("{}\n", to_json(&stats)?))?;
            } else {
                write_out(&mut out, format_args!("{stats}"))?;
            }
        }
        Command::Dump { .. } | Command::RecoverCurrent | Command::Upgrade => {}
    }
    drop(out);
    db.close()?;
    Ok(())
}
