//! The handles `FaultFs` gives out: locks, appended files, read-only files
//! and paged files. Each holds the shared state and the generation it was
//! opened in; after a crash every call on it fails.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use std::io;

use super::state::{FileId, Pending, State};
use crate::error::{Error, Result};
use crate::fs::{read_past_end, FileLock, IoStats, PagedFile, RandomAccessFile, WritableFile};

/// Who holds a lock: one exclusive guard, or shared guards.
#[derive(Debug)]
pub(super) enum Held {
    Exclusive(u64),
    Shared(BTreeSet<u64>),
}

/// Releases its lock on drop, unless a crash already did (and someone else
/// may hold the path since).
pub(super) struct FaultLock {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) path: PathBuf,
    pub(super) token: u64,
}

impl fmt::Debug for FaultLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultLock")
            .field("path", &self.path)
            .field("token", &self.token)
            .finish()
    }
}

impl FileLock for FaultLock {}

impl Drop for FaultLock {
    fn drop(&mut self) {
        let mut state = self.state.lock();
        let released = match state.locks.get_mut(&self.path) {
            Some(Held::Exclusive(token)) => *token == self.token,
            Some(Held::Shared(tokens)) => {
                tokens.remove(&self.token);
                tokens.is_empty()
            }
            None => false,
        };
        if released {
            state.locks.remove(&self.path);
        }
    }
}

/// Appends go straight into the node's current bytes: there is no
/// user-space buffer, so `flush` only counts as an operation.
pub(super) struct FaultWritableFile {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) stats: Arc<IoStats>,
    pub(super) id: FileId,
    pub(super) generation: u64,
    pub(super) path: PathBuf,
    pub(super) len: u64,
}

impl WritableFile for FaultWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("write", &self.path)?;
        state.check_generation(self.generation, "write", &self.path)?;
        let node = state.node_mut(self.id, "write", &self.path)?;
        node.pending
            .push(Pending::Appended(node.data.len(), data.len()));
        node.data.extend_from_slice(data);
        self.len += data.len() as u64;
        self.stats.record_write(data.len());
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("write", &self.path)?;
        state.check_generation(self.generation, "write", &self.path)
    }

    fn sync(&mut self) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("sync", &self.path)?;
        state.check_generation(self.generation, "sync", &self.path)?;
        let node = state.node_mut(self.id, "sync", &self.path)?;
        if node.durable_is_prefix {
            // Append-only since the last sync: copy only the new tail, so
            // that a log synced after every write costs linear time.
            let synced = node.durable.len();
            if let Some(tail) = node.data.get(synced..) {
                node.durable.extend_from_slice(tail);
            }
            node.pending.clear();
            node.cut_to = None;
        } else {
            node.sync_whole();
        }
        self.stats.record_sync();
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads the node's current bytes, so a reader of a file still being
/// appended sees the appends. `len` stays the length at open.
pub(super) struct FaultRandomAccessFile {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) stats: Arc<IoStats>,
    pub(super) id: FileId,
    pub(super) generation: u64,
    pub(super) path: PathBuf,
    pub(super) len: u64,
}

impl RandomAccessFile for FaultRandomAccessFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut state = self.state.lock();
        state.begin_read("read", &self.path)?;
        state.check_generation(self.generation, "read", &self.path)?;
        let data = &state.node(self.id, "read", &self.path)?.data;
        let bytes = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(len)?))
            .and_then(|range| data.get(range));
        let Some(bytes) = bytes else {
            return Err(read_past_end(&self.path, offset, len, data.len() as u64));
        };
        let bytes = bytes.to_vec();
        self.stats.record_read(len);
        Ok(bytes)
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// Positional reads and writes of a node's current bytes; writes are
/// remembered until `sync` so that a crash can reorder and tear them.
pub(super) struct FaultPagedFile {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) stats: Arc<IoStats>,
    pub(super) id: FileId,
    pub(super) generation: u64,
    pub(super) path: PathBuf,
}

impl PagedFile for FaultPagedFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut state = self.state.lock();
        state.begin_read("read", &self.path)?;
        state.check_generation(self.generation, "read", &self.path)?;
        let data = &state.node(self.id, "read", &self.path)?.data;
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let end = start.saturating_add(buf.len()).min(data.len());
        let n = end - start;
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), data.get(start..end)) {
            dst.copy_from_slice(src);
        }
        self.stats.record_read(n);
        Ok(n)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("write", &self.path)?;
        state.check_generation(self.generation, "write", &self.path)?;
        let start = usize::try_from(offset).map_err(|_| {
            Error::io(
                "write",
                &self.path,
                io::Error::new(io::ErrorKind::InvalidInput, "offset too large"),
            )
        })?;
        let end = start + data.len();
        let node = state.node_mut(self.id, "write", &self.path)?;
        if node.data.len() < end {
            node.data.resize(end, 0);
        }
        if let Some(dst) = node.data.get_mut(start..end) {
            dst.copy_from_slice(data);
        }
        node.durable_is_prefix = false;
        node.pending.push(Pending::At(start, data.to_vec()));
        self.stats.record_write(data.len());
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("sync", &self.path)?;
        state.check_generation(self.generation, "sync", &self.path)?;
        state.node_mut(self.id, "sync", &self.path)?.sync_whole();
        self.stats.record_sync();
        Ok(())
    }

    /// Reads see the new length at once; the durable length changes only
    /// at the next sync, so a crash before it keeps the old length (with
    /// whatever pending writes it keeps below it).
    fn set_len(&self, len: u64) -> Result<()> {
        let mut state = self.state.lock();
        state.begin_mutation("truncate", &self.path)?;
        state.check_generation(self.generation, "truncate", &self.path)?;
        let len = usize::try_from(len).map_err(|_| {
            Error::io(
                "truncate",
                &self.path,
                io::Error::new(io::ErrorKind::InvalidInput, "length too large"),
            )
        })?;
        let node = state.node_mut(self.id, "truncate", &self.path)?;
        if node.data.len() > len {
            node.cut(len);
        }
        node.data.resize(len, 0);
        if node.durable.len() > len {
            node.durable_is_prefix = false;
        }
        Ok(())
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
