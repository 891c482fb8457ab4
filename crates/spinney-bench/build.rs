//! Build script: compiles the WiredTiger shim and links libwiredtiger when
//! the `wiredtiger` feature is on (Cargo then sets CARGO_FEATURE_WIREDTIGER
//! and compiles this script with the feature's cfg); otherwise it does
//! nothing, so that the default build needs no C compiler and no C library.
//!
//! The shim (src/engine/wiredtiger_shim.c) exists because WiredTiger's API
//! is a table of function pointers in structs; the Rust adapter calls the
//! shim's plain functions instead. The library is Debian's libwiredtiger-dev
//! (scripts/install-peers.sh installs it).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "wiredtiger")]
    wiredtiger();
}

#[cfg(feature = "wiredtiger")]
fn wiredtiger() {
    const SHIM: &str = "src/engine/wiredtiger_shim.c";
    println!("cargo:rerun-if-changed={SHIM}");
    println!("cargo:rerun-if-changed=/usr/include/wiredtiger.h");
    cc::Build::new()
        .file(SHIM)
        .std("c11")
        .warnings(true)
        .extra_warnings(true)
        .compile("spinney_wiredtiger_shim");
    println!("cargo:rustc-link-lib=dylib=wiredtiger");
}
