//! What the lab runs, by the names its flags take: the engines
//! (`--engine`, `--compare`) and the scenarios (`--scenario`).
//!
//! An `Engine` says what the configuration and the directories need to
//! know of it before anything is opened: its name, the structure of its
//! tables, the cargo feature that builds it in, the file that marks its
//! databases. Its adapter in `engine/` runs it, and `scenario/` runs the
//! scenarios. The configuration (`flags`), the adapters and the scenarios
//! all build on this list, so that the command line needs neither the
//! adapters nor the scenarios.
//!
//! Thread-safety: plain values.

use std::fmt;

use spinney::TableKind;

/// An engine the lab can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    /// A spinney LSM table, its log written with `write()` as every peer's
    /// is (`LogWrites::Write`): the like-for-like row.
    SpinneyLsm,
    /// A spinney B-tree table, its log written with `write()`.
    SpinneyBtree,
    /// A spinney LSM table with spinney's own default log, appended
    /// through a memory map (`LogWrites::Mapped`): no system call per
    /// commit, a design choice the peers do not make.
    SpinneyLsmMapped,
    /// A spinney B-tree table with the mapped log.
    SpinneyBtreeMapped,
    /// A spinney LSM table read through memory maps
    /// (`Options::mmap_reads`, off by default; as LevelDB reads), its log
    /// written with `write()`.
    SpinneyLsmMmap,
    /// A spinney B-tree table read through memory maps (as LMDB reads),
    /// its log written with `write()`.
    SpinneyBtreeMmap,
    /// RocksDB through its C API (Debian's librocksdb-dev).
    Rocksdb,
    /// RocksDB through the same adapter, a current release built from the
    /// source librocksdb-sys bundles (`--features rocksdb-current`).
    RocksdbCurrent,
    /// A WiredTiger row-store B-tree table (Debian's libwiredtiger-dev).
    WiredtigerBtree,
    /// A WiredTiger LSM table with bloom filters.
    WiredtigerLsm,
    /// LevelDB through its C API (Debian's libleveldb-dev).
    Leveldb,
    /// LMDB (Debian's liblmdb-dev).
    Lmdb,
    /// LMDB through the same adapter, the current mdb.master source that
    /// lmdb-master-sys bundles (`--features lmdb-current`).
    LmdbCurrent,
    /// fjall, the Rust LSM crate.
    Fjall,
    /// redb, the Rust B-tree crate.
    Redb,
}

impl Engine {
    /// Every engine, in the order tables list them.
    pub const ALL: [Engine; 15] = [
        Engine::SpinneyLsm,
        Engine::SpinneyBtree,
        Engine::SpinneyLsmMapped,
        Engine::SpinneyBtreeMapped,
        Engine::SpinneyLsmMmap,
        Engine::SpinneyBtreeMmap,
        Engine::Rocksdb,
        Engine::RocksdbCurrent,
        Engine::WiredtigerBtree,
        Engine::WiredtigerLsm,
        Engine::Leveldb,
        Engine::Lmdb,
        Engine::LmdbCurrent,
        Engine::Fjall,
        Engine::Redb,
    ];

    /// The name `--engine` and `--compare` take.
    pub fn name(self) -> &'static str {
        match self {
            Engine::SpinneyLsm => "spinney-lsm",
            Engine::SpinneyBtree => "spinney-btree",
            Engine::SpinneyLsmMapped => "spinney-lsm-mapped",
            Engine::SpinneyBtreeMapped => "spinney-btree-mapped",
            Engine::SpinneyLsmMmap => "spinney-lsm-mmap",
            Engine::SpinneyBtreeMmap => "spinney-btree-mmap",
            Engine::Rocksdb => "rocksdb",
            Engine::RocksdbCurrent => "rocksdb-current",
            Engine::WiredtigerBtree => "wiredtiger-btree",
            Engine::WiredtigerLsm => "wiredtiger-lsm",
            Engine::Leveldb => "leveldb",
            Engine::Lmdb => "lmdb",
            Engine::LmdbCurrent => "lmdb-current",
            Engine::Fjall => "fjall",
            Engine::Redb => "redb",
        }
    }

    /// The engine called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Every name, comma-separated, for messages.
    pub fn names() -> String {
        Engine::ALL.map(Engine::name).join(", ")
    }

    /// spinney's engine for a table kind (the like-for-like one, its log
    /// written with `write()`).
    pub fn spinney(kind: TableKind) -> Engine {
        match kind {
            TableKind::Lsm => Engine::SpinneyLsm,
            TableKind::Btree => Engine::SpinneyBtree,
        }
    }

    /// True for spinney's own kinds, either log.
    pub fn is_spinney(self) -> bool {
        matches!(
            self,
            Engine::SpinneyLsm
                | Engine::SpinneyBtree
                | Engine::SpinneyLsmMapped
                | Engine::SpinneyBtreeMapped
                | Engine::SpinneyLsmMmap
                | Engine::SpinneyBtreeMmap
        )
    }

    /// True when the engine can read and write its data files around the
    /// OS's page cache (`--use_direct_reads`,
    /// `--use_direct_io_for_flush_and_compaction`): spinney, RocksDB
    /// (`use_direct_reads`, `use_direct_io_for_flush_and_compaction`) and
    /// WiredTiger (`direct_io=[data]`). LevelDB, LMDB, fjall and redb have
    /// no such mode.
    pub fn direct_io(self) -> bool {
        (self.is_spinney() && !self.mmap_reads())
            || matches!(
                self,
                Engine::Rocksdb
                    | Engine::RocksdbCurrent
                    | Engine::WiredtigerBtree
                    | Engine::WiredtigerLsm
            )
    }

    /// True for the spinney engines that read through memory maps whatever
    /// `--mmap_read` says (`spinney-lsm-mmap`, `spinney-btree-mmap`); they
    /// have no direct I/O (`Options` refuses maps with direct reads).
    pub fn mmap_reads(self) -> bool {
        matches!(self, Engine::SpinneyLsmMmap | Engine::SpinneyBtreeMmap)
    }

    /// How a spinney engine writes its log (`None` for the peers).
    pub fn log_writes(self) -> Option<spinney::LogWrites> {
        match self {
            Engine::SpinneyLsm
            | Engine::SpinneyBtree
            | Engine::SpinneyLsmMmap
            | Engine::SpinneyBtreeMmap => Some(spinney::LogWrites::Write),
            Engine::SpinneyLsmMapped | Engine::SpinneyBtreeMapped => {
                Some(spinney::LogWrites::Mapped)
            }
            _ => None,
        }
    }

    /// The structure the engine's data lives in.
    pub fn kind(self) -> TableKind {
        match self {
            Engine::SpinneyLsm
            | Engine::SpinneyLsmMapped
            | Engine::SpinneyLsmMmap
            | Engine::Rocksdb
            | Engine::RocksdbCurrent
            | Engine::WiredtigerLsm
            | Engine::Leveldb
            | Engine::Fjall => TableKind::Lsm,
            Engine::SpinneyBtree
            | Engine::SpinneyBtreeMapped
            | Engine::SpinneyBtreeMmap
            | Engine::WiredtigerBtree
            | Engine::Lmdb
            | Engine::LmdbCurrent
            | Engine::Redb => TableKind::Btree,
        }
    }

    /// The cargo feature that builds the engine in (none for spinney's).
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Engine::SpinneyLsm
            | Engine::SpinneyBtree
            | Engine::SpinneyLsmMapped
            | Engine::SpinneyBtreeMapped
            | Engine::SpinneyLsmMmap
            | Engine::SpinneyBtreeMmap => None,
            Engine::Rocksdb => Some("rocksdb"),
            Engine::RocksdbCurrent => Some("rocksdb-current"),
            Engine::WiredtigerBtree | Engine::WiredtigerLsm => Some("wiredtiger"),
            Engine::Leveldb => Some("leveldb"),
            Engine::Lmdb => Some("lmdb"),
            Engine::LmdbCurrent => Some("lmdb-current"),
            Engine::Fjall => Some("fjall"),
            Engine::Redb => Some("redb"),
        }
    }

    /// True when this build of the lab can run the engine.
    pub fn is_built(self) -> bool {
        match self {
            Engine::SpinneyLsm
            | Engine::SpinneyBtree
            | Engine::SpinneyLsmMapped
            | Engine::SpinneyBtreeMapped
            | Engine::SpinneyLsmMmap
            | Engine::SpinneyBtreeMmap => true,
            Engine::Rocksdb => cfg!(feature = "rocksdb"),
            Engine::RocksdbCurrent => cfg!(feature = "rocksdb-current"),
            Engine::WiredtigerBtree | Engine::WiredtigerLsm => cfg!(feature = "wiredtiger"),
            Engine::Leveldb => cfg!(feature = "leveldb"),
            Engine::Lmdb => cfg!(feature = "lmdb"),
            Engine::LmdbCurrent => cfg!(feature = "lmdb-current"),
            Engine::Fjall => cfg!(feature = "fjall"),
            Engine::Redb => cfg!(feature = "redb"),
        }
    }

    /// True for the engines whose tables `open` can hold in a given LSM
    /// shape and give a memtable size of their own (`TableSpec`'s
    /// `hold_shape` and `write_buffer_bytes`).
    pub(crate) fn holds_shape(self) -> bool {
        matches!(
            self,
            Engine::SpinneyLsm
                | Engine::SpinneyLsmMapped
                | Engine::SpinneyLsmMmap
                | Engine::Rocksdb
                | Engine::RocksdbCurrent
        )
    }

    /// A file only this engine's databases hold, or one that marks a
    /// database of it: `destroy` deletes a directory only when it holds one.
    pub(crate) fn marker(self) -> &'static str {
        match self {
            Engine::SpinneyLsm
            | Engine::SpinneyBtree
            | Engine::SpinneyLsmMapped
            | Engine::SpinneyBtreeMapped
            | Engine::SpinneyLsmMmap
            | Engine::SpinneyBtreeMmap
            | Engine::Rocksdb
            | Engine::RocksdbCurrent
            | Engine::Leveldb => "CURRENT",
            Engine::WiredtigerBtree | Engine::WiredtigerLsm => "WiredTiger",
            Engine::Lmdb | Engine::LmdbCurrent => "data.mdb",
            Engine::Fjall => "fjall.lab",
            Engine::Redb => "data.redb",
        }
    }

    /// The smallest cache the engine takes (WiredTiger refuses less than
    /// 1 MB, and its LSM trees want room for three chunks of at least
    /// 512 KB and their merges); a scenario that sizes caches itself keeps
    /// to it.
    pub(crate) fn cache_bytes_min(self) -> u64 {
        match self {
            Engine::WiredtigerBtree => 1 << 20,
            Engine::WiredtigerLsm => 3 << 20,
            _ => 0,
        }
    }

    /// The other build of the same library (Debian's or the current one),
    /// for RocksDB and LMDB: the two define the same C symbols, so a build
    /// of the lab has at most one of them.
    pub(crate) fn twin(self) -> Option<Engine> {
        match self {
            Engine::Rocksdb => Some(Engine::RocksdbCurrent),
            Engine::RocksdbCurrent => Some(Engine::Rocksdb),
            Engine::Lmdb => Some(Engine::LmdbCurrent),
            Engine::LmdbCurrent => Some(Engine::Lmdb),
            _ => None,
        }
    }

    /// The error for an engine this build does not have.
    pub(crate) fn not_built(self) -> String {
        if let Some(twin) = self.twin().filter(|t| t.is_built()) {
            // The two share their C symbols, so a build has one of them.
            return format!(
                "this build of spinney-bench has {twin} in place of {}: the two define the same C symbols, so one binary holds one of them; {}",
                self.name(),
                if self.name().ends_with("-current") {
                    "scripts/build-current-peers.sh builds the lab with the current ones (`--features peers-current`)"
                } else {
                    "build the lab with `--features peers` for Debian's"
                }
            );
        }
        match self.feature() {
            Some(feature) if feature.ends_with("-current") => format!(
                "this build of spinney-bench has no {} engine; scripts/build-current-peers.sh builds it (`--features {feature}`, or `peers-current` for it and the other peers)",
                self.name()
            ),
            Some(feature) => format!(
                "this build of spinney-bench has no {} engine; build it with `--features {feature}` (or `--features peers` for all; scripts/install-peers.sh installs their libraries)",
                self.name()
            ),
            None => format!("{} is always built", self.name()),
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A lab scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// WiredTiger's "Btree vs LSM": one inserter and 1, 2, 4 point readers,
    /// the writer rate-limited and not, on both kinds.
    BtreeVsLsm,
    /// Read amplification by LSM shape: pre_flush, post_flush, compact_l0,
    /// compact_l1, compact_all.
    LsmShape,
    /// iibench: primary-key-order inserts into a table with three
    /// secondary indexes, at several cache sizes.
    Iibench,
    /// SQLite4's LSM buffer tests: 200 iterations of 50,000 random inserts
    /// then 50,000 reads.
    LsmBuffers,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 4] = [
        Scenario::BtreeVsLsm,
        Scenario::LsmShape,
        Scenario::Iibench,
        Scenario::LsmBuffers,
    ];

    /// The name `--scenario` takes.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::BtreeVsLsm => "btree-vs-lsm",
            Scenario::LsmShape => "lsm-shape",
            Scenario::Iibench => "iibench",
            Scenario::LsmBuffers => "lsm-buffers",
        }
    }

    /// The scenario of a name.
    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Every name, comma-separated.
    pub fn names() -> String {
        Scenario::ALL.map(Scenario::name).join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_kinds_are_set() {
        // Goal: every engine's name parses back to it, and each is one of
        // the two structures.
        for e in Engine::ALL {
            assert_eq!(Engine::from_name(e.name()), Some(e));
        }
        assert_eq!(Engine::from_name("sqlite"), None);
        assert_eq!(Engine::Rocksdb.kind(), TableKind::Lsm);
        assert_eq!(Engine::Lmdb.kind(), TableKind::Btree);
        assert!(Engine::SpinneyLsm.is_built() && Engine::SpinneyBtree.is_built());
        assert_eq!(Engine::spinney(TableKind::Btree), Engine::SpinneyBtree);
    }

    #[test]
    fn a_peer_and_its_current_build_are_never_in_one_binary() {
        // Goal: Debian's RocksDB or LMDB and the current one share their C
        // symbols, so a build has at most one of each pair, and asking for
        // the other says which one this build has in its place.
        for (debian, current) in [
            (Engine::Rocksdb, Engine::RocksdbCurrent),
            (Engine::Lmdb, Engine::LmdbCurrent),
        ] {
            assert_eq!(debian.twin(), Some(current));
            assert_eq!(current.twin(), Some(debian));
            assert!(!(debian.is_built() && current.is_built()), "{debian}");
            assert_eq!(debian.kind(), current.kind());
            assert_eq!(debian.marker(), current.marker());
            for (built, other) in [(debian, current), (current, debian)] {
                if built.is_built() {
                    let why = other.not_built();
                    assert!(
                        why.contains(&format!("has {built} in place of {other}")),
                        "{why}"
                    );
                }
            }
        }
    }
}
