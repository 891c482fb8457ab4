//! The rules, read from docs/design.md's "Layers" section, so that the
//! document and the check cannot say different things.
//!
//! The section holds three kinds of markdown table, told apart by their
//! header row:
//!
//! - `| piece | may import | ... |`: a crate's layers, lowest first, under a
//!   `####` heading that names the crate as `crates/NAME`. A piece is a
//!   top-level file (`options.rs`) or folder (`db/`) of the crate's `src/`;
//!   `may import` lists pieces (`` `error.rs`, `fs/` ``), `any`, or `—`.
//! - `| crate | from | to | in | why |`: the exceptions, each an import the
//!   rules forbid that is there today, with its reason. `from` and `to` are a
//!   file or folder of the crate's `src/`; `in` is `tests` (only imports in
//!   test code are excused) or `all code`.
//! - `| file | why |`: the files allowed over the size limit, under a
//!   heading that gives the limit (`#### Files over 800 lines`); `file` is
//!   the path from the repository root.
//!
//! Other columns (the walls a piece keeps, in words) are for the reader.

use std::collections::BTreeMap;

/// The section's title.
pub const SECTION: &str = "### Layers";

/// Everything the section says.
pub struct Rules {
    /// Layer tables by crate name.
    pub layers: BTreeMap<String, Vec<LayerRow>>,
    pub exceptions: Vec<Exception>,
    /// The size limit (lines of non-test code in one file).
    pub size_limit: usize,
    pub big_files: Vec<BigFile>,
}

/// One row of a layer table.
pub struct LayerRow {
    pub piece: String,
    pub may_import: MayImport,
    /// The walls in words (the third column), for messages.
    pub walls: String,
    /// The line of design.md the row is on.
    pub line: usize,
}

pub enum MayImport {
    Any,
    Only(Vec<String>),
}

/// An import the rules forbid, excused while it lasts.
pub struct Exception {
    pub krate: String,
    pub from: String,
    pub to: String,
    /// Excuses imports in test code only.
    pub tests_only: bool,
    pub line: usize,
}

/// A file allowed over the size limit.
pub struct BigFile {
    pub path: String,
    pub line: usize,
}

/// Parses the "Layers" section of design.md's text.
pub fn parse(text: &str) -> Result<Rules, String> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_end() == SECTION)
        .ok_or_else(|| format!("no `{SECTION}` section"))?;
    let mut rules = Rules {
        layers: BTreeMap::new(),
        exceptions: Vec::new(),
        size_limit: 0,
        big_files: Vec::new(),
    };
    let mut heading = String::new();
    let mut i = start + 1;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("## ") || line.starts_with("### ") || line.starts_with("# ") {
            break;
        }
        if let Some(h) = line.strip_prefix("#### ") {
            heading = h.to_string();
            i += 1;
            continue;
        }
        if !line.trim_start().starts_with('|') {
            i += 1;
            continue;
        }
        let header = cells(line);
        // The header, its separator, then rows until the table ends.
        let mut rows = Vec::new();
        let mut j = i + 2;
        while j < lines.len() && lines[j].trim_start().starts_with('|') {
            rows.push((j + 1, cells(lines[j])));
            j += 1;
        }
        let names: Vec<String> = header.iter().map(|c| c.to_lowercase()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        match names.as_slice() {
            ["piece", "may import", ..] => {
                let krate = crate_of(&heading).ok_or_else(|| {
                    format!(
                        "line {}: a layer table's heading must name its crate as `crates/NAME`",
                        i + 1
                    )
                })?;
                let table = rows
                    .into_iter()
                    .map(|(line, c)| LayerRow {
                        piece: cell(&c, 0),
                        may_import: may_import(&cell(&c, 1)),
                        walls: c.get(2).map(|w| w.trim().to_string()).unwrap_or_default(),
                        line,
                    })
                    .collect();
                if rules.layers.insert(krate.clone(), table).is_some() {
                    return Err(format!("line {}: a second layer table for {krate}", i + 1));
                }
            }
            ["crate", "from", "to", "in", "why"] => {
                for (line, c) in rows {
                    let tests_only = match cell(&c, 3).as_str() {
                        "tests" => true,
                        "all code" => false,
                        other => {
                            return Err(format!("line {line}: an exception is `in` `tests` or `all code`, not `{other}`"))
                        }
                    };
                    rules.exceptions.push(Exception {
                        krate: cell(&c, 0),
                        from: cell(&c, 1),
                        to: cell(&c, 2),
                        tests_only,
                        line,
                    });
                }
            }
            ["file", "why"] => {
                rules.size_limit = heading
                    .split_whitespace()
                    .find_map(|w| w.replace(',', "").parse().ok())
                    .ok_or_else(|| {
                        format!(
                            "line {}: the size list's heading must give the limit",
                            i + 1
                        )
                    })?;
                for (line, c) in rows {
                    rules.big_files.push(BigFile {
                        path: cell(&c, 0),
                        line,
                    });
                }
            }
            _ => {
                return Err(format!(
                    "line {}: a table this tool does not know (header {header:?})",
                    i + 1
                ))
            }
        }
        i = j;
    }
    if rules.size_limit == 0 {
        return Err(format!(
            "`{SECTION}` has no size list (`| file | why |` under `#### Files over N lines`)"
        ));
    }
    Ok(rules)
}

/// The cells of a table row, trimmed.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|s| s.trim().to_string()).collect()
}

/// Cell `i` of a row, without its backticks; empty if the row is short.
fn cell(row: &[String], i: usize) -> String {
    row.get(i).map(|c| plain(c)).unwrap_or_default()
}

/// A cell without its backticks.
fn plain(cell: &str) -> String {
    cell.replace('`', "").trim().to_string()
}

fn may_import(cell: &str) -> MayImport {
    if cell == "any" {
        return MayImport::Any;
    }
    MayImport::Only(
        cell.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "—" && *s != "-")
            .map(str::to_string)
            .collect(),
    )
}

/// `spinney` from a heading holding `` `crates/spinney` ``.
fn crate_of(heading: &str) -> Option<String> {
    let at = heading.find("crates/")?;
    let name: String = heading[at + "crates/".len()..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}
