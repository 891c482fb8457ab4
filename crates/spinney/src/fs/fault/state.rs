//! The model `FaultFs` keeps: file nodes with their current and durable
//! bytes and the writes since their last sync, directories with their
//! current and durable entries, and the counters and faults every
//! operation consults (see the module comment of `fault`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::handles::Held;
use super::{FaultKind, ENOSPC};
use crate::error::{Error, Result};

/// Identifies a file node across renames, like an inode number.
pub(super) type FileId = u64;

#[derive(Debug, Default)]
pub(super) struct Node {
    /// What reads see now.
    pub(super) data: Vec<u8>,
    /// What survives a crash.
    pub(super) durable: Vec<u8>,
    /// True when `durable` is a prefix of `data`: the file has only grown
    /// since its last sync. Lets `sync` copy only the tail, and tells `crash`
    /// that the difference is an unsynced tail that may be torn.
    pub(super) durable_is_prefix: bool,
    /// Writes since the last sync, in order. A crash decides the fate of
    /// each (`PendingWrites`).
    pub(super) pending: Vec<Pending>,
    /// The shortest length the file was cut to (a truncating create,
    /// `set_len`) since its last sync: a pessimistic crash keeps the cut or
    /// not.
    pub(super) cut_to: Option<usize>,
}

/// A write since a file's last sync.
#[derive(Debug)]
pub(super) enum Pending {
    /// A positional write (paged files): where, and the bytes, which later
    /// writes may have overwritten in `data` since.
    At(usize, Vec<u8>),
    /// An append: where it began, and how long it was. Appended files are
    /// only appended to, so its bytes are still in `data` there.
    Appended(usize, usize),
}

impl Node {
    /// Makes every current byte durable, whatever was written where.
    pub(super) fn sync_whole(&mut self) {
        self.durable.clone_from(&self.data);
        self.durable_is_prefix = true;
        self.pending.clear();
        self.cut_to = None;
    }

    /// Records a cut to `len` bytes.
    pub(super) fn cut(&mut self, len: usize) {
        self.cut_to = Some(self.cut_to.map_or(len, |c| c.min(len)));
    }
}

/// A change of one directory entry since the directory's last sync: the
/// name now names `id`, or (None) nothing.
#[derive(Debug, Clone)]
pub(super) struct EntryChange {
    pub(super) dir: PathBuf,
    pub(super) name: OsString,
    pub(super) id: Option<FileId>,
    /// Changes with the same number happen together (a rename's two).
    pub(super) op: u64,
}

#[derive(Debug, Default)]
pub(super) struct Dir {
    /// File entries now (subdirectories are kept in `State::dirs`).
    pub(super) entries: BTreeMap<OsString, FileId>,
    /// File entries as of the last `sync_dir`.
    pub(super) durable: BTreeMap<OsString, FileId>,
}

#[derive(Debug)]
pub(super) struct State {
    /// Every node that a current or durable entry, or a live handle, may
    /// refer to. Nodes that no durable entry names are dropped at `crash`.
    pub(super) files: BTreeMap<FileId, Node>,
    /// Every directory, by normalised path. The roots "" and "/" always exist.
    pub(super) dirs: BTreeMap<PathBuf, Dir>,
    pub(super) next_file_id: FileId,
    /// Bumped at each `crash`; handles from an older generation are dead.
    pub(super) generation: u64,
    /// Mutating operations started so far.
    pub(super) mutating_ops: u64,
    /// Directory entry changes not yet made durable by a `sync_dir`, in
    /// the order they were made.
    pub(super) entry_changes: Vec<EntryChange>,
    /// Pending faults: (operation number, kind), in injection order.
    pub(super) faults: Vec<(u64, FaultKind)>,
    /// Faults by chance: (seed, one in how many operations, kind).
    pub(super) random: Option<(u64, u64, FaultKind)>,
    /// Read errors by chance: (seed, one in how many reads). Reads are
    /// `open`, and `read_at` of either kind of file.
    pub(super) read_faults: Option<(u64, u64)>,
    /// Reads started so far (numbering them for `read_faults`).
    pub(super) reads: u64,
    /// True between a `FaultKind::Crash` firing and `FaultFs::crash`.
    pub(super) crashed: bool,
    /// Held locks: path -> the tokens of the guards that hold it.
    pub(super) locks: BTreeMap<PathBuf, Held>,
    pub(super) next_lock_token: u64,
}

impl Default for State {
    fn default() -> Self {
        let mut dirs = BTreeMap::new();
        dirs.insert(PathBuf::new(), Dir::default());
        dirs.insert(PathBuf::from("/"), Dir::default());
        State {
            files: BTreeMap::new(),
            dirs,
            next_file_id: 0,
            generation: 0,
            mutating_ops: 0,
            entry_changes: Vec::new(),
            faults: Vec::new(),
            random: None,
            read_faults: None,
            reads: 0,
            crashed: false,
            locks: BTreeMap::new(),
            next_lock_token: 0,
        }
    }
}

/// Paths are map keys: drop `.` components and trailing slashes so that
/// "db/./x" and "db/x" name the same file. `..` is kept as written.
pub(super) fn normalise(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

pub(super) fn injected_eio() -> io::Error {
    io::Error::other("injected EIO")
}

pub(super) fn crashed_error() -> io::Error {
    io::Error::other("crashed: the simulated machine is down until FaultFs::crash")
}

pub(super) fn dead_handle_error() -> io::Error {
    io::Error::other("crashed: handle opened before a simulated crash")
}

pub(super) fn not_found(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, what.to_string())
}

/// splitmix64: a tiny, good-enough mixer for deterministic tear lengths.
pub(super) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl State {
    /// Numbers a mutating operation and decides whether it fails: because
    /// the machine is down, or because a fault was injected for it.
    pub(super) fn begin_mutation(&mut self, op: &'static str, path: &Path) -> Result<()> {
        let number = self.mutating_ops;
        self.mutating_ops += 1;
        if self.crashed {
            return Err(Error::io(op, path, crashed_error()));
        }
        // A Crash aimed at this operation wins over an Eio or NoSpace aimed
        // at it too; otherwise the earliest injected fault wins.
        let mut fired: Option<FaultKind> = None;
        for &(at, kind) in &self.faults {
            if at == number && (fired.is_none() || kind == FaultKind::Crash) {
                fired = Some(kind);
            }
        }
        self.faults.retain(|&(at, _)| at > number);
        if let (None, Some((seed, one_in, kind))) = (fired, self.random) {
            if mix(seed ^ mix(number)).is_multiple_of(one_in.max(1)) {
                fired = Some(kind);
            }
        }
        match fired {
            None => Ok(()),
            Some(FaultKind::Eio) => Err(Error::io(op, path, injected_eio())),
            Some(FaultKind::NoSpace) => {
                Err(Error::io(op, path, io::Error::from_raw_os_error(ENOSPC)))
            }
            Some(FaultKind::Crash) => {
                self.crashed = true;
                Err(Error::io(op, path, crashed_error()))
            }
        }
    }

    /// Reads do not count as operations but fail while the machine is down.
    pub(super) fn check_up(&self, op: &'static str, path: &Path) -> Result<()> {
        if self.crashed {
            return Err(Error::io(op, path, crashed_error()));
        }
        Ok(())
    }

    /// A read (`open`, `read_at`): fails while the machine is down, or by
    /// chance when read errors are injected.
    pub(super) fn begin_read(&mut self, op: &'static str, path: &Path) -> Result<()> {
        self.check_up(op, path)?;
        let number = self.reads;
        self.reads += 1;
        if let Some((seed, one_in)) = self.read_faults {
            if mix(seed ^ mix(number) ^ 0x5eed).is_multiple_of(one_in.max(1)) {
                return Err(Error::io(op, path, injected_eio()));
            }
        }
        Ok(())
    }

    pub(super) fn check_generation(
        &self,
        generation: u64,
        op: &'static str,
        path: &Path,
    ) -> Result<()> {
        if generation != self.generation {
            return Err(Error::io(op, path, dead_handle_error()));
        }
        Ok(())
    }

    /// The parent directory and file name of a normalised path.
    pub(super) fn split<'p>(
        &self,
        op: &'static str,
        path: &'p Path,
    ) -> Result<(&'p Path, OsString)> {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => Ok((parent, name.to_os_string())),
            _ => Err(Error::io(
                op,
                path,
                io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"),
            )),
        }
    }

    /// The node a path names now, if it names a file.
    pub(super) fn lookup(&self, path: &Path) -> Option<FileId> {
        let parent = path.parent()?;
        let name = path.file_name()?;
        self.dirs.get(parent)?.entries.get(name).copied()
    }

    pub(super) fn node(&self, id: FileId, op: &'static str, path: &Path) -> Result<&Node> {
        self.files
            .get(&id)
            .ok_or_else(|| Error::io(op, path, not_found("file node is gone")))
    }

    pub(super) fn node_mut(
        &mut self,
        id: FileId,
        op: &'static str,
        path: &Path,
    ) -> Result<&mut Node> {
        self.files
            .get_mut(&id)
            .ok_or_else(|| Error::io(op, path, not_found("file node is gone")))
    }

    /// Creates the file entry `path` if missing, else truncates its node (as
    /// `O_TRUNC` keeps the inode). Returns the node.
    pub(super) fn create_or_truncate(
        &mut self,
        op: &'static str,
        path: &Path,
        truncate: bool,
    ) -> Result<FileId> {
        if self.dirs.contains_key(path) {
            return Err(Error::io(
                op,
                path,
                io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
            ));
        }
        let (parent, name) = self.split(op, path)?;
        if let Some(id) = self.lookup(path) {
            if truncate {
                let node = self.node_mut(id, op, path)?;
                node.data.clear();
                node.pending.clear();
                node.cut(0);
                node.durable_is_prefix = node.durable.is_empty();
            }
            return Ok(id);
        }
        let id = self.next_file_id;
        let dir = self
            .dirs
            .get_mut(parent)
            .ok_or_else(|| Error::io(op, path, not_found("parent directory does not exist")))?;
        dir.entries.insert(name.clone(), id);
        self.next_file_id += 1;
        let op_number = self.mutating_ops;
        self.entry_changed(parent, &name, Some(id), op_number);
        self.files.insert(
            id,
            Node {
                data: Vec::new(),
                durable: Vec::new(),
                durable_is_prefix: true,
                pending: Vec::new(),
                cut_to: None,
            },
        );
        Ok(id)
    }

    /// Records that `name` in `dir` now names `id` (or nothing), as part of
    /// operation `op`, for a pessimistic crash to keep or not.
    pub(super) fn entry_changed(
        &mut self,
        dir: &Path,
        name: &OsString,
        id: Option<FileId>,
        op: u64,
    ) {
        self.entry_changes.push(EntryChange {
            dir: dir.to_path_buf(),
            name: name.clone(),
            id,
            op,
        });
    }
}
