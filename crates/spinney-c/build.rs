//! Writes `spinney.pc` for pkg-config into `<target>/<profile>/pkgconfig/`,
//! beside the libraries this crate builds, so that after `cargo build -p
//! spinney-c` (or `--release`)
//!
//! ```sh
//! PKG_CONFIG_PATH=target/debug/pkgconfig cc app.c $(pkg-config --cflags --libs spinney)
//! ```
//!
//! compiles and links a C program against `libspinney_c` (the shared
//! library, found at run time through the rpath the file adds).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let (Some(out), Some(manifest)) = (
        std::env::var_os("OUT_DIR"),
        std::env::var_os("CARGO_MANIFEST_DIR"),
    ) else {
        return;
    };
    // OUT_DIR is <target>/<profile>/build/<crate>-<hash>/out.
    let Some(libdir) = PathBuf::from(out).ancestors().nth(3).map(PathBuf::from) else {
        return;
    };
    let include = PathBuf::from(manifest).join("include");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let pc = format!(
        "libdir={libdir}\n\
         includedir={include}\n\
         \n\
         Name: spinney\n\
         Description: An embedded storage engine whose tables are B-trees or LSM trees (C API)\n\
         Version: {version}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lspinney_c\n\
         Libs.private: -lpthread -ldl -lm -lrt -lutil -lgcc_s\n",
        libdir = libdir.display(),
        include = include.display(),
    );
    let dir = libdir.join("pkgconfig");
    // A failure here costs only the convenience: the libraries build.
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join("spinney.pc"), pc);
    }
}
