//! What the WiredTiger adapter sets: WiredTiger's ranges for the settings
//! it takes, the connection's configuration string (cache, eviction and
//! LSM threads, sessions, the log and its sync), each table's (a B-tree's,
//! or an LSM tree's with its chunk size and bloom filter), and the line
//! `describe` prints. The module header of `wiredtiger` names each setting
//! and why.

use spinney::{Compression, Durability};

use super::version;
use crate::engine::TableSpec;
use crate::lineup::Engine;
use crate::{BenchError, Config};

/// Bytes in a MiB, for the settings WiredTiger states in MB.
const MIB: u64 = 1 << 20;

/// WiredTiger's range of `cache_size` (1 MB to 10 TB).
const CACHE_SIZE_MIN: u64 = MIB;
const CACHE_SIZE_MAX: u64 = 10 << 40;

/// WiredTiger's range of an LSM tree's `chunk_size` (512 KB to 500 MB).
pub(super) const CHUNK_SIZE_MIN: u64 = 512 << 10;
const CHUNK_SIZE_MAX: u64 = 500 << 20;

/// WiredTiger's range of `bloom_bit_count`.
const BLOOM_BITS_MIN: u32 = 2;
const BLOOM_BITS_MAX: u32 = 1000;

/// WiredTiger's default `bloom_hash_count`, which the adapter keeps.
const BLOOM_HASHES: u32 = 8;

/// WiredTiger's range of `eviction=(threads_max)`.
const EVICTION_THREADS_MIN: usize = 1;
const EVICTION_THREADS_MAX: usize = 20;

/// WiredTiger's range of `lsm_manager=(worker_thread_max)`, which counts
/// the manager thread.
const LSM_THREADS_MIN: usize = 3;
const LSM_THREADS_MAX: usize = 20;

/// WiredTiger's default `session_max`, kept unless the run's threads need
/// more; the margin is for WiredTiger's own threads (the LSM manager alone
/// opens 20 sessions) and the adapter's short-lived sessions.
const SESSIONS_DEFAULT: usize = 100;
const SESSIONS_MARGIN: usize = 64;

/// One line naming what the adapter sets for `config`.
pub(crate) fn describe(config: &Config) -> String {
    let mut common = format!(
        "cache {}, {}, compression {}, eviction threads up to {}",
        megabytes(config.cache_size),
        durability_words(effective_durability(config.engine, config.durability)),
        config.compression.name(),
        eviction_threads(config.background_threads),
    );
    if config.direct_reads || config.direct_writes {
        common.push_str(", direct_io=[data] (reads and writes), mmap=false");
    }
    match config.engine {
        Engine::WiredtigerLsm => {
            let bloom = match config.bloom_bits {
                0 => "no bloom filters".to_string(),
                bits => format!("bloom {bits} bits/key ({BLOOM_HASHES} hashes)"),
            };
            let asked = config.write_buffer_size as u64;
            let chunk = match lsm_chunk_size(config) {
                Ok(chunk) if chunk < asked => format!(
                    "chunk {} (--write_buffer_size {} leaves too little of the cache for three chunks)",
                    megabytes(chunk),
                    megabytes(asked)
                ),
                _ => format!("chunk {}", megabytes(asked)),
            };
            format!(
                "wiredtiger lsm table, {bloom}, {chunk}, {common}, lsm workers {} + manager",
                lsm_threads(config.background_threads) - 1,
            )
        }
        _ => format!(
            "wiredtiger btree table (row store, leaf pages 32 KB, internal pages 4 KB: WiredTiger's defaults, --page_size not applied), {common}, a checkpoint every {} of log (log files as large)",
            megabytes(config.checkpoint_log_bytes)
        ),
    }
}

/// `bytes` as "64 MB" (or "1.5 MB"), in MiB as db_bench's MB are.
fn megabytes(bytes: u64) -> String {
    if bytes.is_multiple_of(MIB) {
        format!("{} MB", bytes / MIB)
    } else {
        format!("{:.1} MB", bytes as f64 / MIB as f64)
    }
}

/// The durability WiredTiger runs `engine` with for `durability`. An LSM
/// tree cannot write its log at each commit without a sync: in WiredTiger
/// 3.2.1 `method=none` deadlocks a fast load (seen at 2,000,000 sequential
/// puts, every time within seconds: a bloom filter's creation waits on the
/// log write of its metadata change while the writer waits for a chunk
/// switch that waits on the tree's lock), so the LSM without `--sync`
/// buffers its log as with `--disable_wal`: the log server writes it out
/// within about 50 ms, a weaker promise than writing at each commit.
pub(super) fn effective_durability(engine: Engine, durability: Durability) -> Durability {
    match (engine, durability) {
        (Engine::WiredtigerLsm, Durability::Normal) => Durability::Off,
        (_, durability) => durability,
    }
}

/// The `transaction_sync` setting of a durability.
pub(super) fn transaction_sync(durability: Durability) -> &'static str {
    match durability {
        Durability::Off => "transaction_sync=(enabled=false)",
        Durability::Normal => "transaction_sync=(enabled=true,method=none)",
        Durability::Full => "transaction_sync=(enabled=true,method=fsync)",
    }
}

/// What `transaction_sync` makes of a commit, in the words of `describe`.
fn durability_words(durability: Durability) -> &'static str {
    match durability {
        Durability::Off => "log on, buffered and written within about 50 ms, not synced",
        Durability::Normal => "log on, written at each commit, not synced",
        Durability::Full => "log on, synced at each commit",
    }
}

/// `eviction=(threads_max)` for `--background_threads`.
fn eviction_threads(background_threads: usize) -> usize {
    background_threads.clamp(EVICTION_THREADS_MIN, EVICTION_THREADS_MAX)
}

/// `lsm_manager=(worker_thread_max)` for `--background_threads`: that many
/// workers plus the manager thread.
pub(super) fn lsm_threads(background_threads: usize) -> usize {
    background_threads
        .saturating_add(1)
        .clamp(LSM_THREADS_MIN, LSM_THREADS_MAX)
}

/// The `wiredtiger_open` configuration for `config`; an option WiredTiger
/// cannot honour is a usage error naming it.
pub(super) fn connection_config(engine: Engine, config: &Config) -> Result<String, BenchError> {
    match config.compression {
        Compression::None => {}
        other => {
            return Err(BenchError::Config(format!(
                "--compression_type={}: Debian's WiredTiger {} has only the snappy and zlib compressors (no lz4, no zstd); run {engine} with --compression_type=none",
                other.name(),
                version()
            )))
        }
    }
    if !(CACHE_SIZE_MIN..=CACHE_SIZE_MAX).contains(&config.cache_size) {
        return Err(BenchError::Config(format!(
            "--cache_size={}: WiredTiger's cache_size takes {CACHE_SIZE_MIN} bytes (1 MB) to 10 TB",
            config.cache_size
        )));
    }
    // A B-tree checkpoints after as many log bytes as spinney's does
    // (`--checkpoint_log_bytes`); WiredTiger checkpoints no more often than
    // once a log file, so its log files are made that large. The LSM tree
    // keeps WiredTiger's defaults: its chunks are written by its own
    // flushes, as spinney's memtables are.
    let log = match engine {
        Engine::WiredtigerBtree => format!(
            "log=(enabled=true,file_max={}),checkpoint=(log_size={})",
            config.checkpoint_log_bytes, config.checkpoint_log_bytes
        ),
        _ => "log=(enabled=true)".to_string(),
    };
    let mut text = format!(
        "create,cache_size={},session_max={},{log},{},eviction=(threads_min=1,threads_max={}),statistics=(fast)",
        config.cache_size,
        config
            .threads
            .saturating_add(SESSIONS_MARGIN)
            .max(SESSIONS_DEFAULT),
        transaction_sync(effective_durability(engine, config.durability)),
        eviction_threads(config.background_threads),
    );
    if config.direct_reads || config.direct_writes {
        // One setting for the data files' reads and writes. WiredTiger
        // 3.2.1 still maps an LSM tree's finished chunks for reads (a
        // direct run measured 2.4 KB read per 1,000 random reads of a
        // database 13 times its cache, its resident set past 300 MB), so
        // maps are turned off as well.
        text.push_str(",direct_io=[data],mmap=false");
    }
    if engine == Engine::WiredtigerLsm {
        text.push_str(&format!(
            ",lsm_manager=(worker_thread_max={})",
            lsm_threads(config.background_threads)
        ));
    }
    Ok(text)
}

/// Cache a WiredTiger LSM tree wants beside three chunks: a leaf page for
/// each participant of up to three concurrent merges of `merge_max` (15)
/// chunks, with 32 KB leaf pages (lsm_tree.c, `__lsm_tree_open_check`).
pub(super) const LSM_MERGE_CACHE_BYTES: u64 = 3 * 15 * 32 * 1024;

/// The LSM chunk size for `config`: `--write_buffer_size`, made smaller
/// when the cache cannot hold three chunks and the merges' pages (which
/// WiredTiger requires), as a WiredTiger user with that cache would have
/// to. A cache too small for three chunks of WiredTiger's smallest size is
/// a usage error.
pub(super) fn lsm_chunk_size(config: &Config) -> Result<u64, BenchError> {
    let asked = config.write_buffer_size as u64;
    if !(CHUNK_SIZE_MIN..=CHUNK_SIZE_MAX).contains(&asked) {
        return Err(BenchError::Config(format!(
            "--write_buffer_size={asked}: WiredTiger's LSM chunk_size takes {CHUNK_SIZE_MIN} bytes (512 KB) to {CHUNK_SIZE_MAX} bytes (500 MB)"
        )));
    }
    // Whole 64 KiB units, so that the figure reads well in the header.
    let fits =
        config.cache_size.saturating_sub(LSM_MERGE_CACHE_BYTES) / 3 / (64 << 10) * (64 << 10);
    if fits < CHUNK_SIZE_MIN {
        return Err(BenchError::Config(format!(
            "--cache_size={}: a WiredTiger LSM tree needs a cache of at least {} bytes (three chunks of 512 KB and {LSM_MERGE_CACHE_BYTES} bytes for merges)",
            config.cache_size,
            3 * CHUNK_SIZE_MIN + LSM_MERGE_CACHE_BYTES
        )));
    }
    Ok(asked.min(fits))
}

/// The `WT_SESSION::create` configuration of a table.
pub(super) fn table_config(
    engine: Engine,
    config: &Config,
    spec: &TableSpec,
) -> Result<String, BenchError> {
    const FORMATS: &str = "key_format=u,value_format=u";
    if engine != Engine::WiredtigerLsm {
        return Ok(FORMATS.to_string());
    }
    let chunk = lsm_chunk_size(config)?;
    let bloom = match spec.bloom_bits.unwrap_or(config.bloom_bits) {
        0 => "bloom=false".to_string(),
        bits if (BLOOM_BITS_MIN..=BLOOM_BITS_MAX).contains(&bits) => {
            format!("bloom=true,bloom_bit_count={bits}")
        }
        bits => {
            return Err(BenchError::Config(format!(
                "--bloom_bits={bits} (table '{}'): WiredTiger's LSM bloom filters take {BLOOM_BITS_MIN} to {BLOOM_BITS_MAX} bits per key, or 0 for none",
                spec.name
            )))
        }
    };
    Ok(format!(
        "{FORMATS},type=lsm,lsm=(chunk_size={chunk},{bloom})"
    ))
}
