//! Internal keys: a user key plus the version that wrote it.
//!
//! Byte layout (docs/format.md#internal-key):
//! ```text
//! internal_key := user_key trailer
//! trailer      := u64 little-endian, (seqno << 8) | kind
//! ```
//! Internal keys order by user key ascending (bytewise), then by trailer
//! descending, so the newest version of a key comes first. A search for
//! `(key, snapshot)` seeks to `(key, snapshot, KIND_SEEK)` and lands on the
//! newest version no newer than the snapshot.

use std::cmp::Ordering;

/// Sequence numbers use the low 56 bits of the trailer.
pub(crate) const SEQNO_MAX: u64 = (1 << 56) - 1;

/// Length of the trailer appended to every user key.
pub(crate) const TRAILER_BYTES: usize = 8;

/// What an entry records for its key. On disk: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub(crate) enum Kind {
    /// The key was deleted (a tombstone).
    Delete = 0,
    /// The key was set to the entry's value.
    Put = 1,
    /// Every key from the entry's key up to its value (exclusive; an empty
    /// value: to the end) was deleted. Only in the log's batches: never in
    /// an internal key (`mvcc::range_del`).
    RangeDelete = 2,
}

/// The kind used in seek targets: the largest kind, so that a seek to
/// `(key, seqno)` lands before every entry of `key` at `seqno` or older.
pub(crate) const KIND_SEEK: Kind = Kind::Put;

impl Kind {
    pub(crate) fn from_u8(v: u8) -> Option<Kind> {
        match v {
            0 => Some(Kind::Delete),
            1 => Some(Kind::Put),
            2 => Some(Kind::RangeDelete),
            _ => None,
        }
    }
}

pub(crate) fn pack_trailer(seqno: u64, kind: Kind) -> u64 {
    debug_assert!(seqno <= SEQNO_MAX);
    (seqno << 8) | kind as u64
}

/// Appends the internal key for `(user_key, seqno, kind)` to `dst`.
pub(crate) fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seqno: u64, kind: Kind) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seqno, kind).to_le_bytes());
}

pub(crate) fn internal_key(user_key: &[u8], seqno: u64, kind: Kind) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TRAILER_BYTES);
    append_internal_key(&mut k, user_key, seqno, kind);
    k
}

/// Runs `f` on the internal key for `(user_key, seqno, kind)`, built on the
/// stack when it is short (most are), so that a seek allocates nothing.
pub(crate) fn with_internal_key<R>(
    user_key: &[u8],
    seqno: u64,
    kind: Kind,
    f: impl FnOnce(&[u8]) -> R,
) -> R {
    let mut buf = [0u8; 64];
    let len = user_key.len() + TRAILER_BYTES;
    match buf.get_mut(..len) {
        Some(dst) => {
            let (uk, tr) = dst.split_at_mut(user_key.len());
            uk.copy_from_slice(user_key);
            tr.copy_from_slice(&pack_trailer(seqno, kind).to_le_bytes());
            f(dst)
        }
        None => f(&internal_key(user_key, seqno, kind)),
    }
}

/// An internal key split into its parts. Only built from keys that were
/// validated (`ParsedKey::parse` returns None for a key too short or with an
/// unknown kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ParsedKey<'a> {
    pub user_key: &'a [u8],
    pub seqno: u64,
    pub kind: Kind,
}

impl<'a> ParsedKey<'a> {
    pub(crate) fn parse(ikey: &'a [u8]) -> Option<ParsedKey<'a>> {
        let split = ikey.len().checked_sub(TRAILER_BYTES)?;
        let (user_key, trailer) = ikey.split_at(split);
        let trailer = u64::from_le_bytes(trailer.try_into().ok()?);
        let kind = Kind::from_u8((trailer & 0xFF) as u8)?;
        if kind == Kind::RangeDelete {
            return None;
        }
        Some(ParsedKey {
            user_key,
            seqno: trailer >> 8,
            kind,
        })
    }
}

/// The user-key part of an internal key (empty if the key is too short to
/// hold a trailer; such keys never come out of a validated source).
pub(crate) fn user_key(ikey: &[u8]) -> &[u8] {
    let split = ikey.len().saturating_sub(TRAILER_BYTES);
    ikey.get(..split).unwrap_or(ikey)
}

pub(crate) fn trailer(ikey: &[u8]) -> u64 {
    let split = ikey.len().saturating_sub(TRAILER_BYTES);
    ikey.get(split..)
        .and_then(|t| t.try_into().ok())
        .map(u64::from_le_bytes)
        .unwrap_or(0)
}

/// The byte order of two strings (as `<[u8]>::cmp`), eight bytes at a time
/// while both have eight: keys are short, and a call to the C library's
/// `memcmp` costs more than the comparison for them.
#[inline]
pub(crate) fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    compare_bytes_shared(a, b).0
}

/// An internal key given by its parts, so that a search for (user key,
/// seqno) needs no key built in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyRef<'a> {
    pub user_key: &'a [u8],
    pub trailer: u64,
}

impl<'a> KeyRef<'a> {
    /// The parts of internal key `ikey` (as `user_key` reads them: a key
    /// too short for a trailer, which no validated source holds, reads as
    /// an empty user key and a zero trailer).
    pub(crate) fn of(ikey: &'a [u8]) -> KeyRef<'a> {
        KeyRef {
            user_key: user_key(ikey),
            trailer: trailer(ikey),
        }
    }

    /// The seek target for `user_key` at `seqno`: it sorts before every
    /// version of the key at `seqno` or older.
    pub(crate) fn seek(user_key: &'a [u8], seqno: u64) -> KeyRef<'a> {
        KeyRef {
            user_key,
            trailer: pack_trailer(seqno, KIND_SEEK),
        }
    }
}

/// The order of internal key `a` against `b` (as `compare` orders them).
#[inline]
pub(crate) fn compare_to(a: &[u8], b: KeyRef<'_>) -> Ordering {
    match compare_bytes(user_key(a), b.user_key) {
        Ordering::Equal => b.trailer.cmp(&trailer(a)),
        other => other,
    }
}

/// The byte order of two strings and how many leading bytes they share,
/// eight bytes at a time while both have eight, then a byte at a time (the
/// first differing byte of a chunk found from the XOR of the two).
#[inline]
pub(crate) fn compare_bytes_shared(a: &[u8], b: &[u8]) -> (Ordering, usize) {
    let mut done = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let x = u64::from_be_bytes(x.try_into().unwrap_or([0; 8]));
        let y = u64::from_be_bytes(y.try_into().unwrap_or([0; 8]));
        if x != y {
            return (x.cmp(&y), done + (x ^ y).leading_zeros() as usize / 8);
        }
        done += 8;
    }
    let (a_rest, b_rest) = (a.get(done..).unwrap_or(&[]), b.get(done..).unwrap_or(&[]));
    for (x, y) in a_rest.iter().zip(b_rest) {
        if x != y {
            return (x.cmp(y), done);
        }
        done += 1;
    }
    (a_rest.len().cmp(&b_rest.len()), done)
}

/// Whether two strings are equal, compared as `compare_bytes` does (without
/// a call to the C library for short keys).
#[inline]
pub(crate) fn equal_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && compare_bytes(a, b).is_eq()
}

/// The order of internal keys: user key ascending, then trailer descending.
pub(crate) fn compare(a: &[u8], b: &[u8]) -> Ordering {
    match compare_bytes(user_key(a), user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_bytes_is_the_byte_order() {
        // Goal: the chunked comparison agrees with `<[u8]>::cmp` on every
        // pair, across chunk boundaries, prefixes and equal strings.
        let mut strings: Vec<Vec<u8>> = vec![Vec::new()];
        for len in 1..=20u8 {
            strings.push((0..len).collect());
            let mut high: Vec<u8> = (0..len).collect();
            if let Some(last) = high.last_mut() {
                *last = 0xFF;
            }
            strings.push(high);
            strings.push(vec![0; usize::from(len)]);
            strings.push(vec![0xFF; usize::from(len)]);
        }
        for a in &strings {
            for b in &strings {
                assert_eq!(
                    compare_bytes(a, b),
                    a.as_slice().cmp(b.as_slice()),
                    "{a:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn shared_lengths_and_orders_agree_with_a_scan() {
        // Goal: the chunked comparison finds the byte order and the length
        // of the common prefix of every pair, across chunk boundaries.
        let mut strings: Vec<Vec<u8>> = vec![Vec::new()];
        for len in 1..=19u8 {
            strings.push((0..len).collect());
            let mut high: Vec<u8> = (0..len).collect();
            if let Some(b) = high.get_mut(usize::from(len / 2)) {
                *b = 0xFF;
            }
            strings.push(high);
        }
        for a in &strings {
            for b in &strings {
                let shared = a.iter().zip(b).take_while(|(x, y)| x == y).count();
                assert_eq!(
                    compare_bytes_shared(a, b),
                    (a.as_slice().cmp(b.as_slice()), shared),
                    "{a:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn newer_versions_sort_first() {
        let old = internal_key(b"k", 5, Kind::Put);
        let new = internal_key(b"k", 9, Kind::Delete);
        assert_eq!(compare(&new, &old), Ordering::Less);
        let seek = internal_key(b"k", 7, KIND_SEEK);
        assert_eq!(compare(&seek, &new), Ordering::Greater);
        assert_eq!(compare(&seek, &old), Ordering::Less);
    }

    #[test]
    fn user_key_order_dominates() {
        let a = internal_key(b"a", 1, Kind::Put);
        let b = internal_key(b"b", 100, Kind::Put);
        assert_eq!(compare(&a, &b), Ordering::Less);
        // A key that is a prefix of another sorts first whatever its trailer.
        let ab = internal_key(b"ab", 1, Kind::Put);
        assert_eq!(compare(&a, &ab), Ordering::Less);
    }

    #[test]
    fn internal_keys_built_on_the_stack_or_the_heap_are_the_same() {
        // Goal: the stack buffer's edge (keys that just fit, and one byte
        // more) changes nothing.
        for len in [0usize, 1, 55, 56, 57, 200] {
            let uk = vec![b'k'; len];
            let got = with_internal_key(&uk, 77, Kind::Delete, <[u8]>::to_vec);
            assert_eq!(got, internal_key(&uk, 77, Kind::Delete), "{len}");
        }
    }

    #[test]
    fn golden_bytes() {
        assert_eq!(
            internal_key(b"k", 0x0102, Kind::Put),
            [b'k', 0x01, 0x02, 0x01, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn parse_rejects_short_and_unknown_kind() {
        assert!(ParsedKey::parse(b"short").is_none());
        let mut k = internal_key(b"x", 3, Kind::Put);
        if let Some(b) = k.get_mut(1) {
            *b = 7;
        }
        assert!(ParsedKey::parse(&k).is_none());
        let k = internal_key(b"x", 3, Kind::Delete);
        assert_eq!(
            ParsedKey::parse(&k),
            Some(ParsedKey {
                user_key: b"x",
                seqno: 3,
                kind: Kind::Delete
            })
        );
    }
}
