//! WiredTiger's handles as the adapter holds them: the open connection
//! (`Connection`), a session on it (`SessionHandle`) with the calls the
//! store makes through it (create, metadata, cursors, checkpoint, compact,
//! statistics), a statistics cursor (`Statistics`), one table's names
//! (`Table`), and WiredTiger's return codes as errors (`Failure`, `call`).
//!
//! Thread-safety: the connection is shared by every thread; a session
//! handle belongs to one.

use std::ffi::{c_char, c_int, CStr, CString};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use super::ffi::{self, WT_NOTFOUND};
use crate::engine::{EngineError, EngineResult};
use crate::lineup::Engine;
use crate::BenchError;

/// Every session's configuration. Snapshot isolation (WiredTiger's default
/// is read-committed) makes two transactions that write the same key
/// conflict: the later gets WT_ROLLBACK and is retried, so concurrent
/// batches apply one after the other, as a commit log would order them.
/// Under read-committed WiredTiger checks no conflict, and two batches
/// writing the same keys could leave some keys with one batch's values and
/// others with the other's.
pub(super) const SESSION_CONFIG: &CStr = c"isolation=snapshot";

/// Bytes of table metadata the adapter reads (WiredTiger's are far shorter).
const METADATA_BYTES_MAX: usize = 4096;

/// WiredTiger's words for `code` in the call `what`, with the detail its
/// event handler gave this thread during that call. Called right after the
/// failing call, before any other call into the shim forgets the detail.
pub(super) fn failure_text(what: &str, code: c_int) -> String {
    // SAFETY: wiredtiger_strerror returns a NUL-terminated string: static
    // for WiredTiger's codes and the system's errnos, in a static buffer
    // for an unknown code, which is copied out at once.
    let words = unsafe {
        let text = ffi::wiredtiger_strerror(code);
        if text.is_null() {
            String::from("unknown error")
        } else {
            CStr::from_ptr(text).to_string_lossy().into_owned()
        }
    };
    let mut message = format!("{what}: {words} ({code})");
    // SAFETY: the shim returns NULL or its thread-local NUL-terminated
    // buffer, which only this thread's next call into the shim changes;
    // it is copied out at once.
    let detail = unsafe {
        let text = ffi::spinney_wt_last_message();
        (!text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned())
    };
    if let Some(detail) = detail {
        // WiredTiger opens its messages with "[time][process:thread], ":
        // noise in an error that is read once.
        let detail = match detail.strip_prefix('[') {
            Some(rest) => rest.split_once("], ").map_or(rest, |(_, text)| text),
            None => &detail,
        };
        message.push_str("; WiredTiger said: ");
        message.push_str(detail.trim_end());
    }
    message
}

/// A WiredTiger call that failed: its code and the message naming it.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) code: c_int,
    pub(super) message: String,
}

impl Failure {
    /// The failure of the call `what` with `code`.
    pub(super) fn of(code: c_int, what: &str) -> Failure {
        Failure {
            code,
            message: failure_text(what, code),
        }
    }

    pub(super) fn into_error(self, engine: Engine) -> EngineError {
        EngineError::peer(engine, self.message)
    }
}

/// `Ok` for 0, else the failure of the call `what` (named only on failure,
/// so that the hot paths allocate nothing).
pub(super) fn call(code: c_int, what: impl FnOnce() -> String) -> Result<(), Failure> {
    if code == 0 {
        Ok(())
    } else {
        Err(Failure::of(code, &what()))
    }
}

/// A path or name as a C string; a NUL in it is a usage error.
pub(super) fn c_string(what: &str, text: &[u8]) -> Result<CString, BenchError> {
    CString::new(text).map_err(|_| {
        BenchError::Config(format!(
            "{what} '{}' holds a NUL byte, which WiredTiger cannot take",
            String::from_utf8_lossy(text)
        ))
    })
}

/// One table of the store.
pub(super) struct Table {
    pub(super) name: String,
    /// `table:NAME`.
    pub(super) uri: CString,
    /// `statistics:table:NAME`.
    pub(super) statistics_uri: CString,
}

/// An open `WT_CONNECTION`. Closing it closes every session still open on
/// it; the borrow in `SessionHandle` makes sure there is none.
pub(super) struct Connection {
    pub(super) ptr: NonNull<ffi::Connection>,
    pub(super) engine: Engine,
}

// SAFETY: WiredTiger's WT_CONNECTION methods are thread-safe, and a
// connection handle may be shared by threads (its "Multithreading" page).
unsafe impl Send for Connection {}
// SAFETY: as for Send: every method used through `&Connection`
// (open_session) is thread-safe.
unsafe impl Sync for Connection {}

impl Connection {
    pub(super) fn open(engine: Engine, home: &CStr, config: &CStr) -> Result<Connection, Failure> {
        let mut conn = ptr::null_mut();
        // SAFETY: both strings are NUL-terminated and live across the call;
        // on success WiredTiger stores a connection handle in `conn`.
        let code = unsafe { ffi::spinney_wt_open(home.as_ptr(), config.as_ptr(), &mut conn) };
        call(code, || {
            format!("wiredtiger_open with \"{}\"", config.to_string_lossy())
        })?;
        NonNull::new(conn)
            .map(|ptr| Connection { ptr, engine })
            .ok_or_else(|| Failure {
                code: 0,
                message: "wiredtiger_open succeeded without a connection".into(),
            })
    }

    /// A new session on the connection, with snapshot isolation (see
    /// `SESSION_CONFIG`).
    pub(super) fn session(&self) -> EngineResult<SessionHandle<'_>> {
        let mut session = ptr::null_mut();
        // SAFETY: the connection is open (it is closed only by consuming
        // `self`), WT_CONNECTION::open_session is thread-safe, and the
        // configuration is a NUL-terminated static string.
        let code = unsafe {
            ffi::spinney_wt_open_session(self.ptr.as_ptr(), SESSION_CONFIG.as_ptr(), &mut session)
        };
        call(code, || "open a WiredTiger session".into()).map_err(|f| f.into_error(self.engine))?;
        NonNull::new(session)
            .map(|ptr| SessionHandle {
                ptr,
                engine: self.engine,
                _connection: PhantomData,
            })
            .ok_or_else(|| EngineError::peer(self.engine, "open_session gave no session"))
    }

    /// Closes the connection (WiredTiger checkpoints every table and syncs
    /// the log first).
    pub(super) fn close(self) -> EngineResult<()> {
        let ptr = self.ptr;
        let engine = self.engine;
        std::mem::forget(self);
        // SAFETY: the connection is open, and `self` is forgotten, so it is
        // closed once; no session borrows it (they borrow `self`).
        let code = unsafe { ffi::spinney_wt_close(ptr.as_ptr()) };
        call(code, || "close the WiredTiger database".into()).map_err(|f| f.into_error(engine))
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // SAFETY: as in `close`, which forgets `self` so that this runs only
        // for a connection that was not closed. An error cannot be reported
        // from drop; the shim has written WiredTiger's message to stderr.
        let _ = unsafe { ffi::spinney_wt_close(self.ptr.as_ptr()) };
    }
}

/// An open `WT_SESSION`, closed (with its cursors) on drop. It must not be
/// used by two threads at once; `&mut self` on the calls that change it
/// and the absence of `Sync` see to that.
pub(super) struct SessionHandle<'c> {
    pub(super) ptr: NonNull<ffi::Session>,
    pub(super) engine: Engine,
    _connection: PhantomData<&'c Connection>,
}

impl SessionHandle<'_> {
    pub(super) fn create(&mut self, uri: &CStr, config: &CStr) -> EngineResult<()> {
        // SAFETY: the session is open and used by this thread only; both
        // strings are NUL-terminated and live across the call.
        let code =
            unsafe { ffi::spinney_wt_create(self.ptr.as_ptr(), uri.as_ptr(), config.as_ptr()) };
        call(code, || {
            format!(
                "create {} with \"{}\"",
                uri.to_string_lossy(),
                config.to_string_lossy()
            )
        })
        .map_err(|f| f.into_error(self.engine))
    }

    /// The metadata WiredTiger keeps for `key`, if it has the object.
    pub(super) fn metadata(&mut self, key: &CStr) -> EngineResult<Option<String>> {
        let mut out = vec![0u8; METADATA_BYTES_MAX];
        // SAFETY: the session is open and used by this thread only; `key`
        // is NUL-terminated; the shim writes at most `out.len()` bytes into
        // `out`, NUL included.
        let code = unsafe {
            ffi::spinney_wt_metadata(
                self.ptr.as_ptr(),
                key.as_ptr(),
                out.as_mut_ptr().cast(),
                out.len(),
            )
        };
        if code == WT_NOTFOUND {
            return Ok(None);
        }
        call(code, || {
            format!("read the metadata of {}", key.to_string_lossy())
        })
        .map_err(|f| f.into_error(self.engine))?;
        let text = CStr::from_bytes_until_nul(&out)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Some(text))
    }

    pub(super) fn open_cursor(&mut self, uri: &CStr) -> EngineResult<NonNull<ffi::Cursor>> {
        let mut cursor = ptr::null_mut();
        // SAFETY: the session is open and used by this thread only; `uri` is
        // NUL-terminated. The cursor lives until the session closes.
        let code =
            unsafe { ffi::spinney_wt_open_cursor(self.ptr.as_ptr(), uri.as_ptr(), &mut cursor) };
        call(code, || {
            format!("open a cursor on {}", uri.to_string_lossy())
        })
        .map_err(|f| f.into_error(self.engine))?;
        NonNull::new(cursor)
            .ok_or_else(|| EngineError::peer(self.engine, "open_cursor gave no cursor"))
    }

    pub(super) fn checkpoint(&mut self) -> EngineResult<()> {
        // SAFETY: the session is open and used by this thread only.
        let code = unsafe { ffi::spinney_wt_checkpoint(self.ptr.as_ptr()) };
        call(code, || "checkpoint".into()).map_err(|f| f.into_error(self.engine))
    }

    pub(super) fn compact(&mut self, uri: &CStr) -> EngineResult<()> {
        // SAFETY: the session is open and used by this thread only; `uri` is
        // NUL-terminated.
        let code = unsafe { ffi::spinney_wt_compact(self.ptr.as_ptr(), uri.as_ptr()) };
        call(code, || format!("compact {}", uri.to_string_lossy()))
            .map_err(|f| f.into_error(self.engine))
    }

    /// A statistics cursor on `uri` ("statistics:" or
    /// "statistics:table:NAME"), holding the values of this moment.
    pub(super) fn statistics(&mut self, uri: &CStr) -> EngineResult<Statistics<'_>> {
        let mut cursor = ptr::null_mut();
        // SAFETY: the session is open and used by this thread only; `uri` is
        // NUL-terminated.
        let code = unsafe {
            ffi::spinney_wt_open_statistics(self.ptr.as_ptr(), uri.as_ptr(), &mut cursor)
        };
        call(code, || {
            format!("open a statistics cursor on {}", uri.to_string_lossy())
        })
        .map_err(|f| f.into_error(self.engine))?;
        let ptr = NonNull::new(cursor)
            .ok_or_else(|| EngineError::peer(self.engine, "open_cursor gave no cursor"))?;
        Ok(Statistics {
            ptr,
            engine: self.engine,
            _session: PhantomData,
        })
    }
}

impl Drop for SessionHandle<'_> {
    fn drop(&mut self) {
        // SAFETY: the session is open, and the connection outlives it (the
        // borrow 'c). Closing it closes its cursors, which nothing uses
        // afterwards: they are kept only beside this handle. An error cannot
        // be reported from drop; the shim has written it to stderr.
        let _ = unsafe { ffi::spinney_wt_close_session(self.ptr.as_ptr()) };
    }
}

/// A statistics cursor, closed on drop; it borrows its session mutably,
/// so the session does nothing else meanwhile.
pub(super) struct Statistics<'s> {
    ptr: NonNull<ffi::Cursor>,
    engine: Engine,
    _session: PhantomData<&'s mut ()>,
}

impl Statistics<'_> {
    /// The description and value of the statistic `key`; `None` when this
    /// cursor has no such key (a B-tree has no LSM statistics).
    pub(super) fn get(&mut self, key: i32) -> EngineResult<Option<(String, i64)>> {
        let mut description = ptr::null();
        let mut value = 0i64;
        // SAFETY: the cursor is open and its session is borrowed by `self`;
        // the shim sets the two outputs on success.
        let code = unsafe {
            ffi::spinney_wt_statistic(self.ptr.as_ptr(), key, &mut description, &mut value)
        };
        if code == WT_NOTFOUND {
            return Ok(None);
        }
        call(code, || format!("read statistic {key}")).map_err(|f| f.into_error(self.engine))?;
        Ok(Some((self.text(description), value)))
    }

    /// The value of the statistic `key` (0 when the cursor lacks it).
    pub(super) fn value(&mut self, key: i32) -> EngineResult<i64> {
        Ok(self.get(key)?.map_or(0, |(_, v)| v))
    }

    fn text(&self, description: *const c_char) -> String {
        if description.is_null() {
            return String::new();
        }
        // SAFETY: WiredTiger's descriptions are static NUL-terminated strings.
        unsafe { CStr::from_ptr(description) }
            .to_string_lossy()
            .into_owned()
    }
}

impl Drop for Statistics<'_> {
    fn drop(&mut self) {
        // SAFETY: the cursor is open and its session outlives it (borrowed).
        let _ = unsafe { ffi::spinney_wt_close_cursor(self.ptr.as_ptr()) };
    }
}
