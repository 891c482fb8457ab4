//! include/spinney.h is what cbindgen generates from this crate: the test
//! fails, showing how to regenerate it, when the checked-in header is stale.
//! `SPINNEY_WRITE_HEADER=1 cargo test -p spinney-c --test header` writes it.

use std::path::Path;

#[test]
fn the_checked_in_header_is_the_generated_one() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let path = crate_dir.join("include/spinney.h");
    if std::env::var_os("SPINNEY_WRITE_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is stale: run `SPINNEY_WRITE_HEADER=1 cargo test -p spinney-c --test header` \
         and commit it",
        path.display()
    );
}
