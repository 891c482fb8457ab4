//! spinney-walls: the walls between the pieces of spinney's crates, checked
//! on the parsed source (docs/design.md, "Layers"), and the size ratchet.
//!
//! `check` reads the rules from docs/design.md's "Layers" section, parses
//! every crate of the workspace (its members under `crates/`), resolves
//! every path that reaches another file of the same crate, and returns
//! each problem as a message that names the file and line and the rule it
//! breaks. Single-threaded; it reads files and writes none.

pub mod design;
pub mod public_api;
pub mod refs;
pub mod resolve;
pub mod size;
pub mod tree;
pub mod walls;

use std::collections::BTreeMap;
use std::path::Path;

use crate::walls::Checked;

/// A problem found: a message naming the file and line and the rule.
pub type Problem = String;

/// What a check found.
pub struct Report {
    pub problems: Vec<Problem>,
    /// Files over the size limit that the list allows, with their counts.
    pub oversize: Vec<size::Oversize>,
    pub files: usize,
    pub imports: usize,
    /// Which piece imports which, and which file of a folder which other,
    /// crate by crate (`walls::graph`).
    pub graphs: BTreeMap<String, Vec<String>>,
}

/// Checks the repository at `root`. An error is a setup that cannot be
/// checked at all (no design.md section, a file that does not parse).
pub fn check(root: &Path) -> Result<Report, String> {
    let doc = root.join("docs/design.md");
    let text = std::fs::read_to_string(&doc).map_err(|e| format!("{}: {e}", doc.display()))?;
    let rules = design::parse(&text).map_err(|e| format!("docs/design.md: {e}"))?;
    let mut checked = Vec::new();
    for name in members(root)? {
        let krate = tree::Crate::load(
            &name,
            &root.join("crates").join(&name),
            &format!("crates/{name}"),
        )?;
        let imports = refs::collect(&krate);
        checked.push(Checked { krate, imports });
    }
    let mut problems = Vec::new();
    let mut used = walls::Used::new();
    for (name, rows) in &rules.layers {
        match checked.iter().find(|c| &c.krate.name == name) {
            Some(c) => {
                walls::check_table(c, rows, &mut problems);
                walls::check_layers(c, rows, &rules, &mut used, &mut problems);
            }
            None => problems.push(format!(
                "docs/design.md: a layer table for crates/{name}, which is not a member"
            )),
        }
    }
    for c in &checked {
        walls::check_circles(c, &rules, &mut used, &mut problems);
    }
    walls::check_exceptions(&checked, &rules, &used, &mut problems);
    let oversize = size::check(&checked, &rules, &mut problems);
    public_api::check(root, &checked, &mut problems);
    Ok(Report {
        problems,
        oversize,
        files: checked.iter().map(|c| c.krate.files.len()).sum(),
        imports: checked.iter().map(|c| c.imports.len()).sum(),
        graphs: checked
            .iter()
            .map(|c| (c.krate.name.clone(), walls::graph(c)))
            .collect(),
    })
}

/// The workspace's members under `crates/`, from the root Cargo.toml's
/// `members = [...]`, by folder name.
fn members(root: &Path) -> Result<Vec<String>, String> {
    let manifest = root.join("Cargo.toml");
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let start = text
        .find("members")
        .ok_or("Cargo.toml: no workspace members")?;
    let list = &text[start..];
    let open = list.find('[').ok_or("Cargo.toml: members is not a list")?;
    let close = list.find(']').ok_or("Cargo.toml: members is not a list")?;
    let names: Vec<String> = list[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches('"'))
        .filter_map(|s| s.strip_prefix("crates/"))
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return Err("Cargo.toml: no members under crates/".into());
    }
    Ok(names)
}
