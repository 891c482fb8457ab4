//! The C API of LevelDB's shape, which LevelDB and RocksDB both export
//! (RocksDB's `c.h` began as a copy of LevelDB's): the same calls under the
//! prefixes `leveldb_` and `rocksdb_`, handles made by `*_create` and freed
//! by `*_destroy`, errors left in an `errptr` as strings the library
//! malloc()ed and the caller frees with the library's `*_free`, and
//! iterators stepped one entry at a time. The two adapters share what they
//! build on it: opaque handle types (`opaque!`) and owning handles
//! (`owned!`), error conversion (`check`), the library's strings
//! (`take_string`), the iterator (`Iter`), and the seek and scan loops
//! every session runs over it (`seek_steps`, `scan`), so that both count
//! the bytes a seek steps over alike. Their tests share `checks`.
//!
//! A library says which of its functions is which by implementing
//! `Library`, whose constants are the C functions themselves, one a line
//! as in a header: `L::ITER_NEXT` is `leveldb_iter_next` or
//! `rocksdb_iter_next`, known at compile time, so a call through it is a
//! direct call once optimised. A trait rather than a macro stamping the
//! wrappers per prefix: the shared code is plain generic Rust, compiled
//! and checked once, and the table of functions states what each library
//! provides (a macro would be handed every name anyway, stable Rust
//! having no way to paste `leveldb_` onto `iter_next`). Only the handles'
//! types and wrappers are macros, each handle having its own destroy
//! function.
//!
//! What differs stays with each adapter: LevelDB's one key space (its
//! tables are key prefixes) against RocksDB's column families, their
//! write batches and point reads (`leveldb_get` returns a copy, RocksDB's
//! `rocksdb_get_pinned_cf` a pinned slice), and their options. So do the
//! declarations of the C functions (each adapter's `ffi.rs`): the two
//! libraries' symbols differ, and so does how each is linked (RocksDB's
//! `#[link]` is for Debian's library only).
//!
//! Thread-safety: an `Iter` belongs to the thread that made it (it is
//! neither `Send` nor `Sync`); the functions here hold no state.

#[cfg(test)]
pub(crate) mod checks;

use std::ffi::{c_char, c_void, CStr, CString};
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};

use super::{EngineError, EngineResult, Seek};
use crate::{BenchError, Engine};

/// A library of LevelDB's shape: the engine it stands behind, and its C
/// functions that the shared code calls.
pub(crate) trait Library {
    /// The engine whose errors these are.
    const ENGINE: Engine;

    /// The iterator handle (`leveldb_iterator_t`, `rocksdb_iterator_t`).
    type Iterator;

    /// `*_free`: frees what the library malloc()ed for the caller.
    const FREE: Free;
    const ITER_DESTROY: IterMove<Self::Iterator>;
    const ITER_VALID: IterValid<Self::Iterator>;
    const ITER_SEEK_TO_FIRST: IterMove<Self::Iterator>;
    const ITER_SEEK_TO_LAST: IterMove<Self::Iterator>;
    const ITER_SEEK: IterSeek<Self::Iterator>;
    const ITER_NEXT: IterMove<Self::Iterator>;
    const ITER_PREV: IterMove<Self::Iterator>;
    const ITER_KEY: IterBytes<Self::Iterator>;
    const ITER_VALUE: IterBytes<Self::Iterator>;
    const ITER_GET_ERROR: IterError<Self::Iterator>;
}

/// `*_free`.
pub(crate) type Free = unsafe extern "C" fn(ptr: *mut c_void);
/// `*_iter_valid`.
pub(crate) type IterValid<I> = unsafe extern "C" fn(iter: *const I) -> u8;
/// `*_iter_next` and the others that take the iterator alone.
pub(crate) type IterMove<I> = unsafe extern "C" fn(iter: *mut I);
/// `*_iter_seek`.
pub(crate) type IterSeek<I> = unsafe extern "C" fn(iter: *mut I, k: *const c_char, klen: usize);
/// `*_iter_key` and `*_iter_value`.
pub(crate) type IterBytes<I> =
    unsafe extern "C" fn(iter: *const I, len: *mut usize) -> *const c_char;
/// `*_iter_get_error`.
pub(crate) type IterError<I> = unsafe extern "C" fn(iter: *const I, errptr: *mut *mut c_char);

/// Declares the C API's handle types (`leveldb_t`, `rocksdb_iterator_t`,
/// ...): structs Rust never looks inside nor makes, met only behind the
/// pointers the library hands out.
macro_rules! opaque {
    ($($name:ident),* $(,)?) => {
        $(
            /// An opaque handle of the C API.
            #[repr(C)]
            pub struct $name {
                _private: [u8; 0],
            }
        )*
    };
}
pub(crate) use opaque;

/// Declares an owning wrapper of a C handle of library `$library`,
/// destroyed once in `Drop`; `new` takes a just-created handle, `ptr`
/// lends it to calls.
macro_rules! owned {
    ($library:ty; $(#[$doc:meta])* $name:ident, $raw:ty, $destroy:path) => {
        $(#[$doc])*
        struct $name(::std::ptr::NonNull<$raw>);

        impl $name {
            /// Takes ownership of `raw`, just returned by a create call;
            /// NULL (which the C API never returns short of a crash) is an
            /// error naming `what`.
            fn new(raw: *mut $raw, what: &str) -> $crate::engine::EngineResult<$name> {
                ::std::ptr::NonNull::new(raw)
                    .map($name)
                    .ok_or_else(|| $crate::engine::leveldb_shape::null::<$library>(what))
            }

            fn ptr(&self) -> *mut $raw {
                self.0.as_ptr()
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: the pointer came from the matching create call,
                // this value is its only owner, and it is destroyed here
                // once.
                unsafe { $destroy(self.0.as_ptr()) }
            }
        }
    };
}
pub(crate) use owned;

/// The error of a create call of `L` that returned NULL, naming `what`.
pub(crate) fn null<L: Library>(what: &str) -> EngineError {
    EngineError::peer(L::ENGINE, format!("{what}: the C API returned NULL"))
}

/// Turns what the C API of `L` left in an `errptr` into an error naming
/// `what` failed, freeing the library's string; `Ok` when it left NULL.
pub(crate) fn check<L: Library>(err: *mut c_char, what: &str) -> EngineResult<()> {
    match take_string::<L>(err) {
        None => Ok(()),
        Some(message) => Err(EngineError::peer(L::ENGINE, format!("{what}: {message}"))),
    }
}

/// The text of a string `L` malloc()ed for the caller (an error, a
/// property's value), which is freed; `None` for NULL.
pub(crate) fn take_string<L: Library>(text: *mut c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: a non-NULL result of the C API is a NUL-terminated string
    // the library malloc()ed for the caller; it is read here and freed
    // once, with the library's own free.
    let owned = unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: as above; nothing reads `text` after this.
    unsafe { (L::FREE)(text.cast::<c_void>()) };
    Some(owned)
}

/// The database directory `dir` as the C string the open calls take.
pub(crate) fn c_path(dir: &Path) -> Result<CString, BenchError> {
    CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| BenchError::Config(format!("the path {} holds a NUL byte", dir.display())))
}

/// The `len` bytes at `data`, or none when the library gave no pointer.
///
/// # Safety
/// A non-NULL `data` must point at `len` readable bytes that stay put for
/// `'a`.
unsafe fn bytes<'a>(data: *const c_char, len: usize) -> &'a [u8] {
    if data.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller vouches for `data` and `len`.
    unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
}

/// What the seek and scan loops need of an iterator: an `Iter` as it is,
/// or a view of part of it (LevelDB's tables, each a key prefix).
pub(crate) trait Cursor {
    /// To the first entry.
    fn seek_to_first(&mut self);
    /// To the last entry.
    fn seek_to_last(&mut self);
    /// The user key and value the cursor is on; `None` past either end.
    /// They borrow the cursor, so they are gone before it moves.
    fn entry(&self) -> Option<(&[u8], &[u8])>;
    /// To the next entry; past the end stays there.
    fn next(&mut self);
    /// To the previous entry; past the start stays there.
    fn prev(&mut self);
    /// The iterator's error, if reading failed, as an error of `what`.
    fn status(&self, what: &str) -> EngineResult<()>;
}

/// A `Session::seek` once the cursor has been moved to `key` (or past
/// it): whether it found `key`, and the bytes of the user keys and values
/// of the up to `steps` entries it then steps over.
pub(crate) fn seek_steps(cursor: &mut impl Cursor, key: &[u8], steps: usize) -> EngineResult<Seek> {
    let mut seek = Seek {
        found: cursor.entry().is_some_and(|(k, _)| k == key),
        bytes: 0,
    };
    for _ in 0..steps {
        let Some((k, v)) = cursor.entry() else {
            break;
        };
        seek.bytes += (k.len() + v.len()) as u64;
        cursor.next();
    }
    cursor.status("seek")?;
    Ok(seek)
}

/// A `Session::scan`: every entry from the first forward (or the last
/// backward), each entry's key and value bytes given to `visit` until it
/// returns false.
pub(crate) fn scan(
    cursor: &mut impl Cursor,
    forward: bool,
    visit: &mut dyn FnMut(u64) -> bool,
) -> EngineResult<()> {
    if forward {
        cursor.seek_to_first();
    } else {
        cursor.seek_to_last();
    }
    while let Some((k, v)) = cursor.entry() {
        if !visit((k.len() + v.len()) as u64) {
            break;
        }
        if forward {
            cursor.next();
        } else {
            cursor.prev();
        }
    }
    cursor.status("scan")
}

/// An iterator of library `L`, destroyed on drop; it reads a database of
/// the store it borrows for `'a`, so it cannot outlive it.
pub(crate) struct Iter<'a, L: Library> {
    ptr: NonNull<L::Iterator>,
    _store: PhantomData<&'a L>,
}

impl<L: Library> Iter<'_, L> {
    /// Takes ownership of `raw`, just returned by a create-iterator call of
    /// `L`; NULL is an error.
    ///
    /// # Safety
    /// A non-NULL `raw` must be a live iterator of `L` that nothing else
    /// owns, over a database that stays open for the iterator's lifetime.
    pub(crate) unsafe fn new(raw: *mut L::Iterator) -> EngineResult<Self> {
        let ptr = NonNull::new(raw).ok_or_else(|| null::<L>("create an iterator"))?;
        Ok(Iter {
            ptr,
            _store: PhantomData,
        })
    }

    /// The handle, for the calls of one library only (RocksDB's refresh).
    pub(crate) fn ptr(&self) -> *mut L::Iterator {
        self.ptr.as_ptr()
    }

    /// To the first entry at or after `key`.
    pub(crate) fn seek(&mut self, key: &[u8]) {
        // SAFETY: the iterator is live; the key is read during the call.
        unsafe { (L::ITER_SEEK)(self.ptr(), key.as_ptr().cast::<c_char>(), key.len()) }
    }

    pub(crate) fn valid(&self) -> bool {
        // SAFETY: the iterator is live.
        unsafe { (L::ITER_VALID)(self.ptr()) != 0 }
    }
}

impl<L: Library> Cursor for Iter<'_, L> {
    fn seek_to_first(&mut self) {
        // SAFETY: the iterator is live.
        unsafe { (L::ITER_SEEK_TO_FIRST)(self.ptr()) }
    }

    fn seek_to_last(&mut self) {
        // SAFETY: the iterator is live.
        unsafe { (L::ITER_SEEK_TO_LAST)(self.ptr()) }
    }

    fn entry(&self) -> Option<(&[u8], &[u8])> {
        if !self.valid() {
            return None;
        }
        let (mut klen, mut vlen) = (0usize, 0usize);
        // SAFETY: the iterator is live and valid; the key and value stay
        // put until it moves, which needs `&mut self`, so not while the
        // returned slices are borrowed.
        unsafe {
            let key = (L::ITER_KEY)(self.ptr(), &mut klen);
            let value = (L::ITER_VALUE)(self.ptr(), &mut vlen);
            Some((bytes(key, klen), bytes(value, vlen)))
        }
    }

    fn next(&mut self) {
        if self.valid() {
            // SAFETY: the iterator is live and valid, as Next requires.
            unsafe { (L::ITER_NEXT)(self.ptr()) }
        }
    }

    fn prev(&mut self) {
        if self.valid() {
            // SAFETY: the iterator is live and valid, as Prev requires.
            unsafe { (L::ITER_PREV)(self.ptr()) }
        }
    }

    fn status(&self, what: &str) -> EngineResult<()> {
        let mut err = ptr::null_mut();
        // SAFETY: the iterator is live; `err` is a place for the result.
        unsafe { (L::ITER_GET_ERROR)(self.ptr(), &mut err) };
        check::<L>(err, what)
    }
}

impl<L: Library> Drop for Iter<'_, L> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from the library's create-iterator call
        // (`new`'s promise), is owned by this value alone and destroyed
        // once, before the store.
        unsafe { (L::ITER_DESTROY)(self.ptr()) }
    }
}
