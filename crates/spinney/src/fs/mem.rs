//! Files in memory, for tests and the fuzz targets: a file read at offsets
//! (`MemFile`) and one appended to (`MemWritable`), without a file system
//! around them, so that thousands of damaged copies are cheap.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// A file held in memory, read at offsets.
pub(crate) struct MemFile {
    pub data: Vec<u8>,
    pub path: PathBuf,
}

impl RandomAccessFile for MemFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start
            .checked_add(len)
            .and_then(|end| self.data.get(start..end))
        {
            Some(b) => Ok(b.to_vec()),
            None => Err(Error::io(
                "read",
                &self.path,
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "read past the end"),
            )),
        }
    }
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

/// A file appended to in memory; `data` is shared with whoever made it.
pub(crate) struct MemWritable {
    pub data: Arc<Mutex<Vec<u8>>>,
    pub path: PathBuf,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.data.lock().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.lock().len() as u64
    }
    fn path(&self) -> &Path {
        &self.path
    }
}
