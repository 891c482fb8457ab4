//! The names of the files in a database directory, in one place: every
//! piece that makes, finds or cleans a file names it through here, so that
//! open, the cleaner and `spinney dump` agree on what each file is.
//!
//! | file | name | numbered by |
//! |---|---|---|
//! | SST of an LSM table | `NNNNNN.sst` | the database's file numbers |
//! | log segment | `NNNNNN.wal` | the database's file numbers |
//! | manifest | `MANIFEST-NNNNNN` | the database's file numbers |
//! | B-tree table | `NNNNNN.btree` | the table's id |
//! | the live manifest's name | `CURRENT` | |
//! | the directory lock | `LOCK` | |
//!
//! Numbers are written with at least six digits; longer ones are written
//! whole. `docs/format.md` describes each file's bytes.

/// The file an open database holds locked (`Fs::lock`); it never holds data.
pub(crate) const LOCK: &str = "LOCK";

/// The name of SST `number`.
pub(crate) fn sst_name(number: u64) -> String {
    format!("{number:06}.sst")
}

/// The name of log segment `number`.
pub(crate) fn wal_name(number: u64) -> String {
    format!("{number:06}.wal")
}

/// What every manifest's name begins with.
pub(crate) const MANIFEST_PREFIX: &str = "MANIFEST-";

/// The name of the manifest with file number `number`.
pub(crate) fn manifest_name(number: u64) -> String {
    format!("{MANIFEST_PREFIX}{number:06}")
}

/// The number of the manifest named `name`, if it is one.
pub(crate) fn parse_manifest_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(MANIFEST_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The name of the file of B-tree table `table_id`.
pub(crate) fn btree_name(table_id: u32) -> String {
    format!("{table_id:06}.btree")
}

/// The number in a file name of the form `NNNNNN.<ext>`.
pub(crate) fn parse_numbered(name: &str, ext: &str) -> Option<u64> {
    let stem = name.strip_suffix(ext)?.strip_suffix('.')?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_not_numbered() {
        assert_eq!(sst_name(7), "000007.sst");
        assert_eq!(wal_name(1_234_567), "1234567.wal");
        assert_eq!(manifest_name(3), "MANIFEST-000003");
        assert_eq!(btree_name(12), "000012.btree");
        assert_eq!(parse_numbered(&btree_name(12), "btree"), Some(12));
        assert_eq!(parse_numbered(&sst_name(42), "sst"), Some(42));
        assert_eq!(parse_numbered(&wal_name(1_234_567), "wal"), Some(1_234_567));
        for stranger in ["000007.sst.tmp", ".sst", "x7.sst", "000007sst", "-1.sst"] {
            assert_eq!(parse_numbered(stranger, "sst"), None, "{stranger}");
        }
        assert_eq!(parse_numbered("000007.sst", "wal"), None);
    }
}
