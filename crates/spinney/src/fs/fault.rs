//! STUB — to be replaced by the in-memory fault-injecting file system.

use std::path::Path;
use std::sync::Arc;

use super::{FileLock, Fs, IoStats, RandomAccessFile, WritableFile};
use crate::error::Result;

/// How an injected fault fails an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The operation fails with EIO; later operations proceed.
    Eio,
    /// The operation fails with ENOSPC; later operations proceed.
    NoSpace,
    /// The machine dies at this operation: it and every later operation fail
    /// with EIO until `crash` is called.
    Crash,
}

/// An in-memory file system that simulates crashes and I/O errors.
#[derive(Debug, Default)]
pub struct FaultFs {
    stats: IoStats,
}

impl FaultFs {
    pub fn new() -> Arc<FaultFs> {
        todo!()
    }
    pub fn crash(&self, _tear_seed: Option<u64>) {
        todo!()
    }
    pub fn inject(&self, _after_ops: u64, _kind: FaultKind) {
        todo!()
    }
    pub fn mutating_ops(&self) -> u64 {
        todo!()
    }
    pub fn clear_faults(&self) {
        todo!()
    }
}

impl Fs for FaultFs {
    fn create(&self, _path: &Path) -> Result<Box<dyn WritableFile>> {
        todo!()
    }
    fn open(&self, _path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        todo!()
    }
    fn rename(&self, _from: &Path, _to: &Path) -> Result<()> {
        todo!()
    }
    fn remove(&self, _path: &Path) -> Result<()> {
        todo!()
    }
    fn list(&self, _dir: &Path) -> Result<Vec<String>> {
        todo!()
    }
    fn create_dir_all(&self, _dir: &Path) -> Result<()> {
        todo!()
    }
    fn sync_dir(&self, _dir: &Path) -> Result<()> {
        todo!()
    }
    fn exists(&self, _path: &Path) -> Result<bool> {
        todo!()
    }
    fn lock(&self, _path: &Path) -> Result<Box<dyn FileLock>> {
        todo!()
    }
    fn io_stats(&self) -> &IoStats {
        &self.stats
    }
}
