//! Puts and gets through the Rust API: the twin of examples/bench.c (see
//! there), for docs/bindings.md's overhead figure.
//!
//! `cargo run --release -p spinney-c --example bench -- DIR lsm|btree N`

use std::time::Instant;

use spinney::{Db, Options, TableOptions};

fn main() -> spinney::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, kind, n] = &args[..] else {
        eprintln!("usage: bench DIR lsm|btree N");
        std::process::exit(2);
    };
    let n: u64 = n.parse().unwrap_or(0);
    let db = Db::open(
        dir,
        Options {
            cache_size: 1 << 30,
            ..Options::default()
        },
    )?;
    let options = match kind.as_str() {
        "btree" => TableOptions::btree(),
        _ => TableOptions::lsm(),
    };
    let t = db.create_table("t", options)?;
    let value = [b'v'; 100];
    let start = Instant::now();
    for i in 0..n {
        let key = format!("{:016}", (i * 2_654_435_761) % n);
        t.put(key.as_bytes(), &value)?;
    }
    let put_s = start.elapsed().as_secs_f64();
    let mut buffer = Vec::new();
    let mut found = 0u64;
    let start = Instant::now();
    for i in 0..n {
        let key = format!("{:016}", (i * 40_503) % n);
        if t.get_into(key.as_bytes(), &mut buffer)? {
            found += 1;
        }
    }
    let get_s = start.elapsed().as_secs_f64();
    println!(
        "rust {kind}: put {:.0} ops/s, get {:.0} ops/s ({found} found)",
        n as f64 / put_s,
        n as f64 / get_s
    );
    drop(t);
    db.close()
}
