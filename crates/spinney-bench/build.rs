//! Build script: compiles the C and C++ shims of the peers whose features
//! are on (Cargo then sets CARGO_FEATURE_<NAME> and compiles this script
//! with the features' cfgs), and links their libraries; with neither
//! `wiredtiger` nor `rocksdb` on it does nothing, so that the default build
//! needs no C or C++ compiler and no C library.
//!
//! - src/engine/wiredtiger/shim.c exists because WiredTiger's API is a
//!   table of function pointers in structs; the Rust adapter calls the
//!   shim's plain functions instead (Debian's libwiredtiger-dev).
//! - src/engine/rocksdb/shim.cc reaches the C++ calls RocksDB's C API lacks
//!   (`DB::CompactFiles`, for compact0 and compact1) from the C API's
//!   handles (Debian's librocksdb-dev 7.8.3); it is C++, so the C++
//!   standard library is linked too.
//!
//! scripts/install-peers.sh installs both libraries.
//!
//! With `rocksdb-current` the same shim is compiled against the headers of
//! the RocksDB that librocksdb-sys builds from its bundled source (it tells
//! where through its `links = "rocksdb"` metadata), and librocksdb-sys links
//! that library itself.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "wiredtiger")]
    wiredtiger();
    #[cfg(feature = "rocksdb")]
    rocksdb();
    #[cfg(feature = "rocksdb-current")]
    rocksdb_current();
}

#[cfg(feature = "wiredtiger")]
fn wiredtiger() {
    const SHIM: &str = "src/engine/wiredtiger/shim.c";
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

#[cfg(feature = "rocksdb")]
fn rocksdb() {
    const SHIM: &str = "src/engine/rocksdb/shim.cc";
    println!("cargo:rerun-if-changed={SHIM}");
    println!("cargo:rerun-if-changed=/usr/include/rocksdb/c.h");
    println!("cargo:rerun-if-changed=/usr/include/rocksdb/db.h");
    println!("cargo:rerun-if-changed=/usr/include/rocksdb/version.h");
    cc::Build::new()
        .cpp(true)
        .file(SHIM)
        .std("c++17")
        .warnings(true)
        .extra_warnings(true)
        .cpp_link_stdlib("stdc++")
        .compile("spinney_rocksdb_shim");
    // After the shim's archive, so that the linker resolves its calls.
    println!("cargo:rustc-link-lib=dylib=rocksdb");
}

#[cfg(feature = "rocksdb-current")]
fn rocksdb_current() {
    const SHIM: &str = "src/engine/rocksdb/shim.cc";
    println!("cargo:rerun-if-changed={SHIM}");
    let root = std::env::var("DEP_ROCKSDB_CARGO_MANIFEST_DIR")
        .expect("librocksdb-sys says where its source is (DEP_ROCKSDB_CARGO_MANIFEST_DIR)");
    let include = std::path::Path::new(&root).join("rocksdb").join("include");
    cc::Build::new()
        .cpp(true)
        .file(SHIM)
        .include(&include)
        // As librocksdb-sys compiles RocksDB itself.
        .std("c++20")
        .warnings(true)
        .extra_warnings(true)
        .cpp_link_stdlib("stdc++")
        .compile("spinney_rocksdb_shim");
}
