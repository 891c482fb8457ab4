//! One thread's session on a WiredTiger store: its `WT_SESSION` and a
//! cursor per table, the batches it applies in a transaction (retried
//! while WiredTiger rolls one back for a conflict), point reads, seeks
//! and scans.
//!
//! Thread-safety: a session belongs to the thread that made it.

use std::ffi::{c_int, c_void};
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use super::ffi::{self, WT_NOTFOUND, WT_ROLLBACK};
use super::handles::{call, Failure, SessionHandle};
use super::WiredTigerStore;
use crate::engine::{Batch, EngineError, EngineResult, Op, Seek, Session};

/// How long a batch that WiredTiger rolls back (`WT_ROLLBACK`: a conflict
/// with a concurrent transaction writing the same key, under snapshot
/// isolation) is retried before the error is reported. WiredTiger's answer
/// to WT_ROLLBACK is to retry the transaction, and it retries a conflicting
/// auto-commit write (a batch of one) itself without limit; two of the
/// lab's batches collide for the time one takes to commit, far below this.
pub(super) const ROLLBACK_RETRY_WAIT_MAX: Duration = Duration::from_secs(10);

/// The longest pause between two retries of a rolled-back batch; the
/// pauses double from a microsecond up to it.
const ROLLBACK_PAUSE_MAX: Duration = Duration::from_millis(10);

/// One thread's session: a `WT_SESSION` and a cursor per table, opened at
/// first use and kept (WiredTiger caches them in the session anyway).
pub(super) struct WiredTigerSession<'a> {
    pub(super) store: &'a WiredTigerStore,
    pub(super) handle: SessionHandle<'a>,
    /// Closed with the session, never on their own.
    pub(super) cursors: Vec<Option<NonNull<ffi::Cursor>>>,
    /// `ROLLBACK_RETRY_WAIT_MAX`, shorter in a test.
    pub(super) rollback_wait_max: Duration,
}

impl WiredTigerSession<'_> {
    pub(super) fn cursor(&mut self, table: usize) -> EngineResult<NonNull<ffi::Cursor>> {
        match self.cursors.get(table) {
            Some(Some(cursor)) => Ok(*cursor),
            Some(None) => {
                let cursor = self.handle.open_cursor(&self.store.table(table)?.uri)?;
                if let Some(slot) = self.cursors.get_mut(table) {
                    *slot = Some(cursor);
                }
                Ok(cursor)
            }
            None => Err(EngineError::peer(
                self.store.engine,
                format!("no table number {table}"),
            )),
        }
    }

    pub(super) fn error(&self, failure: Failure) -> EngineError {
        failure.into_error(self.store.engine)
    }

    /// Releases the cursor's position (and the snapshot and page it pins).
    fn reset(&self, cursor: NonNull<ffi::Cursor>) -> Result<(), Failure> {
        // SAFETY: the cursor belongs to this thread's open session.
        call(unsafe { ffi::spinney_wt_reset(cursor.as_ptr()) }, || {
            "reset a cursor".into()
        })
    }

    /// The bytes of the key and value of the entry `cursor` is on.
    fn entry_bytes(&self, cursor: NonNull<ffi::Cursor>) -> Result<u64, Failure> {
        let (mut key, mut key_len, mut value, mut value_len) = (ptr::null(), 0, ptr::null(), 0);
        // SAFETY: the cursor belongs to this thread's open session and is
        // positioned; the shim sets the four outputs on success.
        let code = unsafe {
            ffi::spinney_wt_entry(
                cursor.as_ptr(),
                &mut key,
                &mut key_len,
                &mut value,
                &mut value_len,
            )
        };
        call(code, || "read the entry under a cursor".into())?;
        Ok((key_len + value_len) as u64)
    }

    /// Applies the batch once: one write in its own implicit transaction
    /// (`single`), or all of them in one explicit transaction.
    pub(super) fn apply(&mut self, batch: &Batch, single: bool) -> Result<(), Failure> {
        if !single {
            // SAFETY: the session is open and used by this thread only.
            call(
                unsafe { ffi::spinney_wt_begin(self.handle.ptr.as_ptr()) },
                || "begin a transaction".into(),
            )?;
        }
        for op in batch.ops() {
            if let Err(failure) = self.apply_one(op) {
                if single {
                    // The failed write's implicit transaction is rolled back
                    // by WiredTiger; only the cursor's hold on the key goes.
                    if let Ok(cursor) = self.cursor(op_table(op)) {
                        let _ = self.reset(cursor);
                    }
                } else {
                    // SAFETY: a transaction is running in this session.
                    let _ = unsafe { ffi::spinney_wt_rollback(self.handle.ptr.as_ptr()) };
                }
                return Err(failure);
            }
        }
        if !single {
            // SAFETY: a transaction is running in this session. When the
            // commit fails, WiredTiger has rolled the transaction back.
            call(
                unsafe { ffi::spinney_wt_commit(self.handle.ptr.as_ptr()) },
                || "commit a transaction".into(),
            )?;
        }
        Ok(())
    }

    pub(super) fn apply_one(&mut self, op: Op<'_>) -> Result<(), Failure> {
        let cursor = self.cursor(op_table(op)).map_err(|e| Failure {
            code: 0,
            message: e.to_string(),
        })?;
        match op {
            Op::Put { key: [], .. } => Err(Failure {
                code: 0,
                message: "insert: WiredTiger does not store an empty key".into(),
            }),
            // No empty key can be there to delete.
            Op::Delete { key: [], .. } => Ok(()),
            Op::DeleteRange { table, start, end } => {
                let uri = match self.store.table(table) {
                    Ok(t) => t.uri.clone(),
                    Err(e) => {
                        return Err(Failure {
                            code: 0,
                            message: e.to_string(),
                        })
                    }
                };
                // SAFETY: the session is open and used by this thread only;
                // `uri` is NUL-terminated and the keys live across the call.
                let code = unsafe {
                    ffi::spinney_wt_truncate_range(
                        self.handle.ptr.as_ptr(),
                        uri.as_ptr(),
                        start.as_ptr().cast::<c_void>(),
                        start.len(),
                        end.as_ptr().cast::<c_void>(),
                        end.len(),
                    )
                };
                call(code, || "truncate a range".into())
            }
            Op::Put { key, value, .. } => {
                // SAFETY: the cursor belongs to this thread's open session;
                // key and value live across the call, and WiredTiger is done
                // with them when it returns.
                let code = unsafe {
                    ffi::spinney_wt_insert(
                        cursor.as_ptr(),
                        key.as_ptr().cast::<c_void>(),
                        key.len(),
                        value.as_ptr().cast::<c_void>(),
                        value.len(),
                    )
                };
                call(code, || "insert".into())
            }
            Op::Delete { key, .. } => {
                // SAFETY: as for the insert.
                let code = unsafe {
                    ffi::spinney_wt_remove(
                        cursor.as_ptr(),
                        key.as_ptr().cast::<c_void>(),
                        key.len(),
                    )
                };
                // With overwrite=true a missing key is not an error; the
                // check is for safety should a cursor ever be opened without.
                if code == WT_NOTFOUND {
                    return Ok(());
                }
                call(code, || "remove".into())
            }
        }
    }

    /// The value of `key`, copied (the tests compare values).
    #[cfg(test)]
    pub(super) fn value(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<Vec<u8>>> {
        let cursor = self.cursor(table)?;
        let (mut value, mut value_len) = (ptr::null(), 0usize);
        // SAFETY: as in `get`.
        let code = unsafe {
            ffi::spinney_wt_search(
                cursor.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                &mut value,
                &mut value_len,
            )
        };
        let found = match code {
            0 if value_len == 0 => Some(Vec::new()),
            // SAFETY: on success the value is `value_len` bytes in
            // WiredTiger's memory, valid until the next call on the cursor.
            0 => {
                Some(unsafe { std::slice::from_raw_parts(value.cast::<u8>(), value_len) }.to_vec())
            }
            WT_NOTFOUND => None,
            code => return Err(self.error(Failure::of(code, "search"))),
        };
        self.reset(cursor).map_err(|f| self.error(f))?;
        Ok(found)
    }
}

fn op_table(op: Op<'_>) -> usize {
    match op {
        Op::Put { table, .. } | Op::Delete { table, .. } | Op::DeleteRange { table, .. } => table,
    }
}

impl Session for WiredTigerSession<'_> {
    fn write(&mut self, batch: &Batch) -> EngineResult<()> {
        let mut ops = batch.ops();
        let single = match (ops.next(), ops.next()) {
            (None, _) => return Ok(()),
            (Some(_), None) => true,
            (Some(_), Some(_)) => false,
        };
        let start = Instant::now();
        let mut retries = 0u32;
        loop {
            match self.apply(batch, single) {
                Ok(()) => return Ok(()),
                Err(f) if f.code == WT_ROLLBACK && start.elapsed() < self.rollback_wait_max => {
                    let pause = Duration::from_micros(1 << retries.min(20));
                    std::thread::sleep(pause.min(ROLLBACK_PAUSE_MAX));
                    retries += 1;
                }
                Err(mut f) => {
                    if retries > 0 {
                        f.message.push_str(&format!(
                            " (retried {retries} times over {:.1} s)",
                            start.elapsed().as_secs_f64()
                        ));
                    }
                    return Err(self.error(f));
                }
            }
        }
    }

    fn get(&mut self, table: usize, key: &[u8]) -> EngineResult<Option<usize>> {
        let cursor = self.cursor(table)?;
        if key.is_empty() {
            // WiredTiger refuses empty keys, so it holds none.
            return Ok(None);
        }
        let (mut value, mut value_len) = (ptr::null(), 0usize);
        // SAFETY: the cursor belongs to this thread's open session; the key
        // lives across the call; the shim sets the outputs on success.
        let code = unsafe {
            ffi::spinney_wt_search(
                cursor.as_ptr(),
                key.as_ptr().cast::<c_void>(),
                key.len(),
                &mut value,
                &mut value_len,
            )
        };
        let found = match code {
            0 => Some(value_len),
            WT_NOTFOUND => None,
            code => {
                let failure = Failure::of(code, "search");
                let _ = self.reset(cursor);
                return Err(self.error(failure));
            }
        };
        // The next read takes a fresh snapshot, and this one pins nothing.
        self.reset(cursor).map_err(|f| self.error(f))?;
        Ok(found)
    }

    fn seek(&mut self, table: usize, key: &[u8], steps: usize) -> EngineResult<Seek> {
        let cursor = self.cursor(table)?;
        let result = self.seek_from(cursor, key, steps);
        let reset = self.reset(cursor);
        let seek = result.map_err(|f| self.error(f))?;
        reset.map_err(|f| self.error(f))?;
        Ok(seek)
    }

    fn scan(
        &mut self,
        table: usize,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> EngineResult<()> {
        let cursor = self.cursor(table)?;
        let result = self.scan_from(cursor, forward, visit);
        let reset = self.reset(cursor);
        result.map_err(|f| self.error(f))?;
        reset.map_err(|f| self.error(f))
    }
}

impl WiredTigerSession<'_> {
    /// `seek` on a cursor with no position; the caller resets it.
    fn seek_from(
        &self,
        cursor: NonNull<ffi::Cursor>,
        key: &[u8],
        steps: usize,
    ) -> Result<Seek, Failure> {
        let mut exact: c_int = 0;
        // WiredTiger refuses empty keys; the first key at or after the
        // empty one is the first key, which cannot be it.
        let code = if key.is_empty() {
            exact = 1;
            // SAFETY: the cursor belongs to this thread's open session; it
            // has no position, so next goes to the first entry.
            unsafe { ffi::spinney_wt_next(cursor.as_ptr()) }
        } else {
            // SAFETY: the cursor belongs to this thread's open session; the
            // key lives across the call.
            unsafe {
                ffi::spinney_wt_search_near(
                    cursor.as_ptr(),
                    key.as_ptr().cast::<c_void>(),
                    key.len(),
                    &mut exact,
                )
            }
        };
        let mut valid = match code {
            0 => true,
            // An empty table.
            WT_NOTFOUND => false,
            code => return Err(Failure::of(code, "search_near")),
        };
        // search_near may land on the largest smaller key: the first key at
        // or after `key` is then the next one.
        if valid && exact < 0 {
            valid = self.step(cursor, true)?;
        }
        let mut seek = Seek {
            found: valid && exact == 0,
            bytes: 0,
        };
        for _ in 0..steps {
            if !valid {
                break;
            }
            seek.bytes += self.entry_bytes(cursor)?;
            valid = self.step(cursor, true)?;
        }
        Ok(seek)
    }

    /// `scan`: from no position, next and prev start at the first and the
    /// last entry; the caller resets the cursor after.
    fn scan_from(
        &self,
        cursor: NonNull<ffi::Cursor>,
        forward: bool,
        visit: &mut dyn FnMut(u64) -> bool,
    ) -> Result<(), Failure> {
        // A cursor left positioned would make the walk start from there.
        self.reset(cursor)?;
        while self.step(cursor, forward)? {
            if !visit(self.entry_bytes(cursor)?) {
                break;
            }
        }
        Ok(())
    }

    /// Moves the cursor one entry; false past the end (or the start).
    fn step(&self, cursor: NonNull<ffi::Cursor>, forward: bool) -> Result<bool, Failure> {
        // SAFETY: the cursor belongs to this thread's open session.
        let code = unsafe {
            if forward {
                ffi::spinney_wt_next(cursor.as_ptr())
            } else {
                ffi::spinney_wt_prev(cursor.as_ptr())
            }
        };
        match code {
            0 => Ok(true),
            WT_NOTFOUND => Ok(false),
            code => Err(Failure::of(code, if forward { "next" } else { "prev" })),
        }
    }
}
