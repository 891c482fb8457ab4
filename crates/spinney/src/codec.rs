//! The compression codecs, each behind a cargo feature of its own (`lz4`,
//! `zstd`; both on by default), so that a build without them needs no C
//! compiler (zstd is C) and carries neither.
//!
//! A build without a codec refuses to create or open a table that uses it
//! (`Compression::check_built`, `Error::Unsupported`), so its compress
//! functions are not reached; were one reached, it keeps the data raw,
//! which every reader reads. Its decompress functions say which feature is
//! missing.

use crate::error::{Error, Result};
use crate::options::Compression;

/// Why a payload did not decompress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecompressError {
    /// The payload is not a valid one for its codec.
    #[cfg_attr(
        not(any(feature = "lz4", feature = "zstd")),
        expect(dead_code, reason = "made by the codecs' features")
    )]
    Invalid(String),
    /// This build was made without the codec's feature.
    #[cfg_attr(
        all(feature = "lz4", feature = "zstd"),
        expect(dead_code, reason = "made only where a codec's feature is off")
    )]
    NotBuilt(Compression),
}

impl std::fmt::Display for DecompressError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecompressError::Invalid(why) => f.write_str(why),
            DecompressError::NotBuilt(c) => f.write_str(&not_built(*c)),
        }
    }
}

fn not_built(c: Compression) -> String {
    let name = c.name();
    format!(
        "{name} compression needs spinney's `{name}` cargo feature (on by default), \
         and this build was made without it"
    )
}

impl Compression {
    /// Whether this build can write and read this compression: `None`
    /// always; `Lz4` and `Zstd` with the cargo features of those names,
    /// both on by default.
    ///
    /// ```
    /// assert!(spinney::Compression::None.is_built());
    /// ```
    pub fn is_built(self) -> bool {
        match self {
            Compression::None => true,
            Compression::Lz4 => cfg!(feature = "lz4"),
            Compression::Zstd => cfg!(feature = "zstd"),
        }
    }

    /// `Error::Unsupported`, naming the table and the missing feature,
    /// where this build cannot use this compression.
    pub(crate) fn check_built(self, table: &str) -> Result<()> {
        match self.is_built() && !hidden(self) {
            true => Ok(()),
            false => Err(Error::Unsupported(format!(
                "table {table:?}: {}",
                not_built(self)
            ))),
        }
    }
}

#[cfg(feature = "testing")]
thread_local! {
    /// The codecs this thread's checks treat as not built.
    static HIDDEN: std::cell::Cell<(bool, bool)> = const { std::cell::Cell::new((false, false)) };
}

/// For tests (feature `testing`): this thread's checks (creating a table,
/// opening a database) treat `codec` as a build without its feature does,
/// while `hidden`. It lets the default build's tests reach the refusals;
/// CI also builds the engine without the features
/// (`cargo package -p spinney --no-default-features`).
#[cfg(feature = "testing")]
#[doc(hidden)]
pub fn hide_in_this_thread(codec: Compression, hidden: bool) {
    HIDDEN.with(|h| {
        let (lz4, zstd) = h.get();
        h.set(match codec {
            Compression::Lz4 => (hidden, zstd),
            Compression::Zstd => (lz4, hidden),
            Compression::None => (lz4, zstd),
        });
    });
}

fn hidden(codec: Compression) -> bool {
    #[cfg(feature = "testing")]
    return HIDDEN.with(|h| match codec {
        Compression::Lz4 => h.get().0,
        Compression::Zstd => h.get().1,
        Compression::None => false,
    });
    #[cfg(not(feature = "testing"))]
    {
        let _ = codec;
        false
    }
}

/// An LZ4 block of `raw` (no length prefix); `None` without the feature.
pub(crate) fn lz4_compress(raw: &[u8]) -> Option<Vec<u8>> {
    #[cfg(feature = "lz4")]
    return Some(lz4_flex::block::compress(raw));
    #[cfg(not(feature = "lz4"))]
    {
        let _ = raw;
        None
    }
}

/// The `len` bytes an LZ4 block decompresses to.
pub(crate) fn lz4_decompress(
    payload: &[u8],
    len: usize,
) -> std::result::Result<Vec<u8>, DecompressError> {
    #[cfg(feature = "lz4")]
    return lz4_flex::block::decompress(payload, len)
        .map_err(|e| DecompressError::Invalid(e.to_string()));
    #[cfg(not(feature = "lz4"))]
    {
        let _ = (payload, len);
        Err(DecompressError::NotBuilt(Compression::Lz4))
    }
}

/// A zstd frame of `raw` at `level`; `None` without the feature or when
/// zstd fails (out of memory: the data then stays raw).
pub(crate) fn zstd_compress(raw: &[u8], level: i32) -> Option<Vec<u8>> {
    #[cfg(feature = "zstd")]
    return zstd::bulk::compress(raw, level).ok();
    #[cfg(not(feature = "zstd"))]
    {
        let _ = (raw, level);
        None
    }
}

/// The bytes, at most `len`, a zstd frame decompresses to.
pub(crate) fn zstd_decompress(
    payload: &[u8],
    len: usize,
) -> std::result::Result<Vec<u8>, DecompressError> {
    #[cfg(feature = "zstd")]
    return zstd::bulk::decompress(payload, len)
        .map_err(|e| DecompressError::Invalid(e.to_string()));
    #[cfg(not(feature = "zstd"))]
    {
        let _ = (payload, len);
        Err(DecompressError::NotBuilt(Compression::Zstd))
    }
}
