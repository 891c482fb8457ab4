//! What the RocksDB adapter sets, derived from the configuration alone so
//! that `open` and `describe` cannot disagree: the settings every column
//! family shares (`Settings`), what each is given beyond them
//! (`FamilySettings`), and the options handle built from both
//! (`family_options_of`). The module header of `rocksdb` names each
//! setting and why.

use std::ffi::c_int;

use spinney::{Compression, Durability};

use super::{ffi, peer, Cache, Options, TableOptions};
use crate::engine::{EngineResult, TableSpec};
use crate::Config;

/// What the adapter sets, derived from the configuration alone, so that
/// `open` and `describe` cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Settings {
    pub(super) cache_bytes: usize,
    pub(super) bloom_bits: u32,
    pub(super) compression: Compression,
    pub(super) write_buffer_bytes: usize,
    pub(super) background_jobs: c_int,
    /// RocksDB's share of the jobs for flushes (the HIGH pool).
    pub(super) flush_threads: c_int,
    /// And for compactions (the LOW pool).
    pub(super) compaction_threads: c_int,
    pub(super) durability: Durability,
    /// `allow_mmap_reads` (`--mmap_read`).
    pub(super) mmap_reads: bool,
    /// `use_direct_reads` (`--use_direct_reads`).
    pub(super) direct_reads: bool,
    /// `use_direct_io_for_flush_and_compaction`.
    pub(super) direct_writes: bool,
    /// `max_write_buffer_number`: memtables per column family.
    write_buffers: c_int,
    /// The tree's shape, as spinney's leveled tables have it.
    pub(super) shape: Shape,
}

/// A leveled tree's shape in RocksDB's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    /// `level_compaction_dynamic_level_bytes`.
    dynamic_level_bytes: bool,
    /// `max_bytes_for_level_base`.
    level_base_bytes: u64,
    /// `target_file_size_base`.
    target_file_size: u64,
}

impl Settings {
    pub(super) fn of(config: &Config) -> Settings {
        let background_jobs =
            c_int::try_from(config.background_threads.max(1)).unwrap_or(c_int::MAX);
        // RocksDB's own split of max_background_jobs (DBImpl::GetBGJobLimits):
        // a quarter, at least one, for flushes; the rest, at least one, for
        // compactions.
        let flush_threads = (background_jobs / 4).max(1);
        let compaction_threads = (background_jobs - flush_threads).max(1);
        Settings {
            cache_bytes: usize::try_from(config.cache_size).unwrap_or(usize::MAX),
            bloom_bits: config.bloom_bits,
            compression: config.compression,
            write_buffer_bytes: config.write_buffer_size,
            background_jobs,
            flush_threads,
            compaction_threads,
            durability: config.durability,
            mmap_reads: config.mmap_read,
            direct_reads: config.direct_reads,
            direct_writes: config.direct_writes,
            write_buffers: c_int::try_from(config.write_buffers).unwrap_or(c_int::MAX),
            shape: {
                let leveled = spinney::CompactionOptions::leveled();
                Shape {
                    dynamic_level_bytes: leveled.dynamic_level_bytes,
                    level_base_bytes: leveled.level_base_bytes,
                    target_file_size: leveled.target_file_size,
                }
            },
        }
    }

    fn compression_type(&self) -> c_int {
        match self.compression {
            Compression::None => ffi::NO_COMPRESSION,
            Compression::Lz4 => ffi::LZ4_COMPRESSION,
            Compression::Zstd => ffi::ZSTD_COMPRESSION,
        }
    }

    fn durability_text(&self) -> &'static str {
        match self.durability {
            Durability::Off => "WAL off (disableWAL, as db_bench --disable_wal)",
            Durability::Normal => "WAL on, sync=false (each commit written to the OS)",
            Durability::Full => "WAL on, sync=true",
        }
    }
}

/// One line naming what the adapter sets for `config`.
pub(crate) fn describe(config: &Config) -> String {
    let s = Settings::of(config);
    let bloom = if s.bloom_bits == 0 {
        "no bloom filter".to_string()
    } else {
        format!("full bloom filter {} bits/key", s.bloom_bits)
    };
    format!(
        "leveled LSM, a column family per table; LRU block cache {:.1} MB, {bloom}, compression {}, write_buffer_size {:.1} MB, max_write_buffer_number {}, level_compaction_dynamic_level_bytes {}, max_bytes_for_level_base {} MiB, target_file_size_base {} MiB, max_background_jobs {} ({} flush + {} compaction threads), allow_mmap_reads {}, use_direct_reads {}, use_direct_io_for_flush_and_compaction {}, {}; RocksDB's defaults otherwise",
        s.cache_bytes as f64 / 1_048_576.0,
        s.compression.name(),
        s.write_buffer_bytes as f64 / 1_048_576.0,
        s.write_buffers,
        s.shape.dynamic_level_bytes,
        s.shape.level_base_bytes >> 20,
        s.shape.target_file_size >> 20,
        s.background_jobs,
        s.flush_threads,
        s.compaction_threads,
        s.mmap_reads,
        s.direct_reads,
        s.direct_writes,
        s.durability_text(),
    )
}

/// What one column family is given beyond the settings all share: its
/// table's spec, or the configuration's options for a column family the
/// run did not ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FamilySettings {
    pub(super) bloom_bits: u32,
    pub(super) write_buffer_bytes: usize,
    pub(super) hold_shape: bool,
}

impl FamilySettings {
    pub(super) fn of(s: &Settings, spec: Option<&TableSpec>) -> FamilySettings {
        FamilySettings {
            bloom_bits: spec.and_then(|t| t.bloom_bits).unwrap_or(s.bloom_bits),
            write_buffer_bytes: spec
                .and_then(|t| t.write_buffer_bytes)
                .unwrap_or(s.write_buffer_bytes),
            hold_shape: spec.is_some_and(|t| t.hold_shape),
        }
    }
}

/// The L0 triggers of a held shape: spinney's largest L0 trigger, which its
/// held tables get too, for compaction, slowdown and stop alike (RocksDB
/// wants slowdown >= compaction and stop >= slowdown).
const HELD_L0_TRIGGER: c_int = spinney::limits::L0_TRIGGER_MAX as c_int;
const _: () = assert!(HELD_L0_TRIGGER > 0);

/// The options of one column family: the shared cache, the bloom filter,
/// the write buffer and the compression, and a held shape's compaction
/// settings.
pub(super) fn family_options_of(
    s: &Settings,
    cache: &Cache,
    family: &FamilySettings,
) -> EngineResult<Options> {
    let bloom_bits = family.bloom_bits;
    // SAFETY: plain constructors.
    let options = Options::new(unsafe { ffi::rocksdb_options_create() }, "create options")?;
    // SAFETY: a plain constructor.
    let table = TableOptions::new(
        unsafe { ffi::rocksdb_block_based_options_create() },
        "create block-based table options",
    )?;
    if bloom_bits > 0 {
        // SAFETY: a plain constructor.
        let policy = unsafe { ffi::rocksdb_filterpolicy_create_bloom_full(f64::from(bloom_bits)) };
        if policy.is_null() {
            return Err(peer(
                "create the bloom filter policy: the C API returned NULL".into(),
            ));
        }
        // SAFETY: `table` is live; the call takes ownership of `policy`
        // (c.cc resets the options' shared_ptr with it), so it is never
        // destroyed here.
        unsafe { ffi::rocksdb_block_based_options_set_filter_policy(table.ptr(), policy) };
    }
    // SAFETY: all handles are live; the block cache is shared (the table
    // options keep their own reference), and the table factory copies the
    // table options, which are destroyed when `table` drops.
    unsafe {
        ffi::rocksdb_block_based_options_set_block_cache(table.ptr(), cache.ptr());
        ffi::rocksdb_options_set_block_based_table_factory(options.ptr(), table.ptr());
        ffi::rocksdb_options_set_write_buffer_size(options.ptr(), family.write_buffer_bytes);
        ffi::rocksdb_options_set_compression(options.ptr(), s.compression_type());
        ffi::rocksdb_options_set_max_write_buffer_number(options.ptr(), s.write_buffers);
    }
    if !family.hold_shape {
        // The tree's shape is spinney's (`--level_base_bytes` and the
        // others: RocksDB's names), not 7.8's defaults for far larger
        // databases (a 256 MiB L1, 64 MiB files, static levels).
        // SAFETY: `options` is live; the setters take plain values.
        unsafe {
            ffi::rocksdb_options_set_level_compaction_dynamic_level_bytes(
                options.ptr(),
                u8::from(s.shape.dynamic_level_bytes),
            );
            ffi::rocksdb_options_set_max_bytes_for_level_base(
                options.ptr(),
                s.shape.level_base_bytes,
            );
            ffi::rocksdb_options_set_target_file_size_base(options.ptr(), s.shape.target_file_size);
        }
    }
    if family.hold_shape {
        // SAFETY: `options` is live; the setters take plain values.
        unsafe {
            ffi::rocksdb_options_set_disable_auto_compactions(options.ptr(), 1);
            ffi::rocksdb_options_set_level0_file_num_compaction_trigger(
                options.ptr(),
                HELD_L0_TRIGGER,
            );
            ffi::rocksdb_options_set_level0_slowdown_writes_trigger(options.ptr(), HELD_L0_TRIGGER);
            ffi::rocksdb_options_set_level0_stop_writes_trigger(options.ptr(), HELD_L0_TRIGGER);
            ffi::rocksdb_options_set_level_compaction_dynamic_level_bytes(options.ptr(), 0);
        }
    }
    Ok(options)
}
