//! The C API of spinney: `include/spinney.h`, generated from this crate by
//! cbindgen, and a shared and a static library (`libspinney_c`).
//!
//! Each entry point checks its pointers, runs inside `catch_unwind` (no
//! panic crosses into C) and turns a `spinney::Error` into a status code
//! and a message the caller frees. The header's opening comment gives the
//! rules for ownership and threads; docs/bindings.md gives an example.
//!
//! Thread-safety: the handles wrap the engine's own types, whose rules are
//! the header's (`Db`, `Table`, `Snapshot` are `Send + Sync`; a batch, a
//! transaction and a cursor are used by one thread at a time).

#![allow(
    non_camel_case_types,
    reason = "the C API's names are C's: spinney_db_t, SPINNEY_OK"
)]
#![allow(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "the entry points are called from C, where `unsafe` means nothing: \
              their pointer contract is the header's (handles this API made and \
              not yet destroyed, buffers of the lengths given), checked for NULL \
              here (`handle`, `slice`, `put_out`)"
)]

mod cursor;
mod db;
mod write;

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub use cursor::*;
pub use db::*;
pub use write::*;

/// What a call did.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum spinney_status {
    /// Done.
    SPINNEY_OK = 0,
    /// The key is not in the table (get): not an error, no message.
    SPINNEY_NOT_FOUND = 1,
    /// The value is longer than the caller's buffer (spinney_get):
    /// *value_len says how long; nothing was copied. No message.
    SPINNEY_BUFFER_TOO_SMALL = 2,
    /// A bad argument: a NULL handle, a key too long, a name not valid.
    SPINNEY_INVALID_ARGUMENT = 3,
    /// A file is damaged; the message names it and the place.
    SPINNEY_CORRUPTION = 4,
    /// The operating system refused a read, write or sync.
    SPINNEY_IO = 5,
    /// No table of that name.
    SPINNEY_NO_SUCH_TABLE = 6,
    /// A table of that name exists.
    SPINNEY_TABLE_EXISTS = 7,
    /// Another process holds the database.
    SPINNEY_LOCKED = 8,
    /// The database refuses writes: opened read-only, or a write or sync
    /// failed (the message says which).
    SPINNEY_READ_ONLY = 9,
    /// Valid, but not supported by this build or table kind.
    SPINNEY_UNSUPPORTED = 10,
    /// A transaction's commit lost to an earlier commit of a key it wrote
    /// or read for update; nothing of it was written. Run it again.
    SPINNEY_CONFLICT = 11,
    /// The database is closed.
    SPINNEY_CLOSED = 12,
    /// A file was written by a newer spinney.
    SPINNEY_NEWER_FORMAT = 13,
    /// A bug in spinney: a panic, caught.
    SPINNEY_PANIC = 14,
    /// Any other error.
    SPINNEY_ERROR = 15,
}

/// A failure of an entry point, before it becomes a status and a message.
pub(crate) enum Failure {
    Engine(spinney::Error),
    Argument(String),
}

impl From<spinney::Error> for Failure {
    fn from(e: spinney::Error) -> Failure {
        Failure::Engine(e)
    }
}

pub(crate) type CResult<T> = Result<T, Failure>;

pub(crate) fn invalid<T>(why: impl Into<String>) -> CResult<T> {
    Err(Failure::Argument(why.into()))
}

fn status_of(e: &spinney::Error) -> spinney_status {
    use spinney::Error;
    match e {
        Error::Io { .. } => spinney_status::SPINNEY_IO,
        Error::Corruption { .. } => spinney_status::SPINNEY_CORRUPTION,
        Error::InvalidArgument(_) => spinney_status::SPINNEY_INVALID_ARGUMENT,
        Error::NoSuchTable(_) => spinney_status::SPINNEY_NO_SUCH_TABLE,
        Error::TableExists(_) => spinney_status::SPINNEY_TABLE_EXISTS,
        Error::Locked { .. } => spinney_status::SPINNEY_LOCKED,
        Error::ReadOnly { .. } => spinney_status::SPINNEY_READ_ONLY,
        Error::Unsupported(_) => spinney_status::SPINNEY_UNSUPPORTED,
        Error::Conflict { .. } => spinney_status::SPINNEY_CONFLICT,
        Error::Closed => spinney_status::SPINNEY_CLOSED,
        Error::NewerFormat { .. } => spinney_status::SPINNEY_NEWER_FORMAT,
        _ => spinney_status::SPINNEY_ERROR,
    }
}

/// Runs an entry point's body: its status, with `errptr` set to NULL or
/// to a message.
pub(crate) fn run(
    errptr: *mut *mut c_char,
    body: impl FnOnce() -> CResult<spinney_status>,
) -> spinney_status {
    let (status, message) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => (status, None),
        Ok(Err(Failure::Engine(e))) => (status_of(&e), Some(e.to_string())),
        Ok(Err(Failure::Argument(why))) => (spinney_status::SPINNEY_INVALID_ARGUMENT, Some(why)),
        Err(panic) => (
            spinney_status::SPINNEY_PANIC,
            Some(format!("spinney panicked: {}", panic_message(&*panic))),
        ),
    };
    if !errptr.is_null() {
        let m = message.map_or(std::ptr::null_mut(), |m| c_string(&m));
        // SAFETY: the caller passes NULL or a pointer it may write a
        // `char *` to (the header's rule).
        unsafe { *errptr = m };
    }
    status
}

/// Runs a body that cannot report an error (a constructor returning a
/// handle): a panic gives `fallback`.
pub(crate) fn run_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

/// `bytes` copied into memory from malloc, NUL after them (not counted):
/// what the caller frees with `spinney_free`. NULL if malloc fails.
pub(crate) fn c_bytes(bytes: &[u8]) -> *mut c_char {
    // SAFETY: malloc of len + 1 bytes (never 0); the copy writes within it.
    unsafe {
        let p = libc::malloc(bytes.len() + 1).cast::<u8>();
        if !p.is_null() {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
            *p.add(bytes.len()) = 0;
        }
        p.cast()
    }
}

/// A message as a C string (a NUL inside it ends it early).
pub(crate) fn c_string(s: &str) -> *mut c_char {
    c_bytes(s.as_bytes())
}

/// The `len` bytes at `ptr` (NULL allowed when `len` is 0).
///
/// The caller promises that `ptr` points to `len` readable bytes that
/// outlive the call (the header's rule for every key and value).
pub(crate) fn slice<'a>(ptr: *const c_char, len: usize, what: &str) -> CResult<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return invalid(format!("{what} is NULL with a length of {len}"));
    }
    // SAFETY: non-NULL, and the caller's promise above.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// The handle behind `ptr`, or an argument error naming it.
pub(crate) fn handle<'a, T>(ptr: *const T, what: &str) -> CResult<&'a T> {
    // SAFETY: a handle pointer is NULL or one this API made and the
    // caller has not destroyed (the header's rule).
    unsafe { ptr.as_ref() }.map_or_else(|| invalid(format!("{what} is NULL")), Ok)
}

/// As `handle`, for a handle the call changes.
pub(crate) fn handle_mut<'a, T>(ptr: *mut T, what: &str) -> CResult<&'a mut T> {
    // SAFETY: as `handle`; the handle is used by one thread at a time.
    unsafe { ptr.as_mut() }.map_or_else(|| invalid(format!("{what} is NULL")), Ok)
}

/// Writes `value` through an out-pointer, if it is not NULL.
pub(crate) fn put_out<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: the caller passes NULL or a pointer it may write a T to.
        unsafe { out.write(value) };
    }
}

/// Frees what this API allocated for the caller: a message, a value, a
/// JSON text. NULL is ignored.
#[no_mangle]
pub extern "C" fn spinney_free(ptr: *mut std::ffi::c_void) {
    // SAFETY: NULL or memory from malloc (`c_bytes`), freed once.
    unsafe { libc::free(ptr) }
}

/// The name of a status ("SPINNEY_OK", ...; "SPINNEY_UNKNOWN_STATUS" for
/// another number): a static string, not freed.
#[no_mangle]
pub extern "C" fn spinney_status_name(status: i32) -> *const c_char {
    use spinney_status::*;
    let all = [
        SPINNEY_OK,
        SPINNEY_NOT_FOUND,
        SPINNEY_BUFFER_TOO_SMALL,
        SPINNEY_INVALID_ARGUMENT,
        SPINNEY_CORRUPTION,
        SPINNEY_IO,
        SPINNEY_NO_SUCH_TABLE,
        SPINNEY_TABLE_EXISTS,
        SPINNEY_LOCKED,
        SPINNEY_READ_ONLY,
        SPINNEY_UNSUPPORTED,
        SPINNEY_CONFLICT,
        SPINNEY_CLOSED,
        SPINNEY_NEWER_FORMAT,
        SPINNEY_PANIC,
        SPINNEY_ERROR,
    ];
    let Some(&status) = all.iter().find(|&&s| s as i32 == status) else {
        return c"SPINNEY_UNKNOWN_STATUS".as_ptr();
    };
    let name: &'static std::ffi::CStr = match status {
        spinney_status::SPINNEY_OK => c"SPINNEY_OK",
        spinney_status::SPINNEY_NOT_FOUND => c"SPINNEY_NOT_FOUND",
        spinney_status::SPINNEY_BUFFER_TOO_SMALL => c"SPINNEY_BUFFER_TOO_SMALL",
        spinney_status::SPINNEY_INVALID_ARGUMENT => c"SPINNEY_INVALID_ARGUMENT",
        spinney_status::SPINNEY_CORRUPTION => c"SPINNEY_CORRUPTION",
        spinney_status::SPINNEY_IO => c"SPINNEY_IO",
        spinney_status::SPINNEY_NO_SUCH_TABLE => c"SPINNEY_NO_SUCH_TABLE",
        spinney_status::SPINNEY_TABLE_EXISTS => c"SPINNEY_TABLE_EXISTS",
        spinney_status::SPINNEY_LOCKED => c"SPINNEY_LOCKED",
        spinney_status::SPINNEY_READ_ONLY => c"SPINNEY_READ_ONLY",
        spinney_status::SPINNEY_UNSUPPORTED => c"SPINNEY_UNSUPPORTED",
        spinney_status::SPINNEY_CONFLICT => c"SPINNEY_CONFLICT",
        spinney_status::SPINNEY_CLOSED => c"SPINNEY_CLOSED",
        spinney_status::SPINNEY_NEWER_FORMAT => c"SPINNEY_NEWER_FORMAT",
        spinney_status::SPINNEY_PANIC => c"SPINNEY_PANIC",
        spinney_status::SPINNEY_ERROR => c"SPINNEY_ERROR",
    };
    name.as_ptr()
}
