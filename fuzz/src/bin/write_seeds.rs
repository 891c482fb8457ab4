//! Writes each fuzz target's seeds (`spinney::fuzzing::seeds`) into
//! `corpus/<target>/seed-N`, the corpus cargo-fuzz starts from.

use std::path::Path;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for name in spinney::fuzzing::TARGETS {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir)?;
        for (i, seed) in spinney::fuzzing::seeds(name).iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i}")), seed)?;
        }
    }
    Ok(())
}
