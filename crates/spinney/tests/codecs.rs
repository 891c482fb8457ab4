//! The compression codecs behind their cargo features (`lz4` and `zstd`,
//! both on by default): a build says which it can use
//! (`Compression::is_built`), uses those in tables of both kinds, and
//! refuses, with `Unsupported` naming the missing feature, to create a
//! table that uses another or to open a database that holds one.
//!
//! The refusals are reached in the default build through
//! `hide_codec_in_this_thread` (feature `testing`), which makes this
//! thread's checks treat a codec as a build without its feature does; a
//! build without the features is also compiled by CI (`cargo package -p
//! spinney --no-default-features`), and this file passes there too
//! (`cargo test -p spinney --no-default-features --test codecs`).

use spinney::{hide_codec_in_this_thread, Compression, Db, Error, Options, TableOptions};

mod common;

use common::files::copy_dir;

/// Creates and uses a table of `codec` of each kind: it must work exactly
/// when `usable`, and otherwise be refused by name.
fn each_kind(codec: Compression, usable: bool) {
    for (kind, options) in common::kinds() {
        let ctx = format!("{kind} table with {}", codec.name());
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let options = TableOptions {
            compression: codec,
            ..options
        };
        match db.create_table("t", options) {
            Ok(t) => {
                assert!(usable, "{ctx}: created without the codec built");
                // Values that compress, in pages and blocks on disk.
                for i in 0..2000u32 {
                    t.put(&common::model::key(i), &[b'a' + (i % 7) as u8; 300])
                        .expect("put");
                }
                db.flush().expect("flush");
                drop(t);
                db.close().expect("close");
                let db = Db::open(dir.path(), Options::default()).expect("reopen");
                let t = db.table("t").expect("table");
                for i in (0..2000u32).step_by(37) {
                    assert_eq!(
                        t.get(&common::model::key(i)).expect("get"),
                        Some(vec![b'a' + (i % 7) as u8; 300]),
                        "{ctx}: key {i}"
                    );
                }
                db.verify().expect("verify");
            }
            Err(Error::Unsupported(why)) => {
                assert!(!usable, "{ctx}: refused though built: {why}");
                assert!(
                    why.contains(&format!("`{}` cargo feature", codec.name())),
                    "{ctx}: {why}"
                );
                assert!(db.tables().is_empty(), "{ctx}: a refused table exists");
            }
            Err(e) => panic!("{ctx}: {e}"),
        }
    }
}

#[test]
fn each_codec_works_exactly_where_its_feature_is_built() {
    assert!(Compression::None.is_built());
    assert_eq!(Compression::Lz4.is_built(), cfg!(feature = "lz4"));
    assert_eq!(Compression::Zstd.is_built(), cfg!(feature = "zstd"));
    for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
        each_kind(codec, codec.is_built());
    }
    // As a build without each codec's feature.
    for codec in [Compression::Lz4, Compression::Zstd] {
        hide_codec_in_this_thread(codec, true);
        each_kind(codec, false);
        each_kind(Compression::None, true);
        hide_codec_in_this_thread(codec, false);
    }
}

#[test]
fn a_database_with_a_table_of_a_codec_not_built_is_refused_by_name() {
    // The compatibility corpus holds tables of every codec, both kinds.
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/compat/format2-log2-sst1-btree2/db");
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("db");
    copy_dir(&corpus, &copy);
    let opened = |ctx: &str, all_built: bool| match Db::open(&copy, Options::default()) {
        Ok(db) => {
            assert!(all_built, "{ctx}: opened without every codec built");
            db.verify().expect("verify");
        }
        Err(Error::Unsupported(why)) => {
            assert!(
                !all_built,
                "{ctx}: refused though every codec is built: {why}"
            );
            assert!(
                why.starts_with("table ") && why.contains("cargo feature"),
                "{ctx}: {why}"
            );
        }
        Err(e) => panic!("{ctx}: {e}"),
    };
    opened(
        "this build",
        Compression::Lz4.is_built() && Compression::Zstd.is_built(),
    );
    for codec in [Compression::Lz4, Compression::Zstd] {
        hide_codec_in_this_thread(codec, true);
        opened(&format!("without {}", codec.name()), false);
        hide_codec_in_this_thread(codec, false);
    }
}
