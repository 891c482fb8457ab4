//! The walls: each import checked against its crate's layer table, the
//! circles between the files of each folder, and the exceptions, which must
//! each still excuse something.
//!
//! A crate's pieces are the files and folders at the top of its `src/`.
//! The files of a folder (and its subfolders, each taken whole) are the
//! units a circle is looked for between, the top of `src/` included: a
//! folder's `mod.rs`, like a crate root, declares and re-exports its files,
//! so imports to and from it make no circle; an item reached through its
//! re-export is an import of the file that defines it.

use std::collections::{BTreeMap, BTreeSet};

use crate::design::{Exception, LayerRow, MayImport, Rules};
use crate::refs::Import;
use crate::tree::Crate;
use crate::Problem;

/// The document the rules are read from, as messages name it.
const DOC: &str = "docs/design.md";

/// A crate with its imports.
pub struct Checked {
    pub krate: Crate,
    pub imports: Vec<Import>,
}

/// Which exceptions excused something, by index into `Rules::exceptions`.
pub type Used = BTreeSet<usize>;

/// The piece a file belongs to: `db/` for `db/write.rs`, `options.rs`.
pub fn piece(rel: &str) -> String {
    match rel.split_once('/') {
        Some((folder, _)) => format!("{folder}/"),
        None => rel.to_string(),
    }
}

/// True if the file `rel` is, or is under, `unit` (`db/`, `btree/pager.rs`).
pub fn within(rel: &str, unit: &str) -> bool {
    if unit.ends_with('/') {
        rel.starts_with(unit)
    } else {
        rel == unit
    }
}

/// The exceptions that excuse `import`, from the file `from` in `krate`,
/// where it reaches the files `to` (those of one piece, or one unit of a
/// folder: a path through `lsm/mod.rs` to `lsm/memtable.rs` is excused by
/// an exception for either).
fn excusing(rules: &Rules, krate: &str, from: &str, to: &[&str], import: &Import) -> Vec<usize> {
    rules
        .exceptions
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.krate == krate
                && within(from, &e.from)
                && to.iter().any(|t| within(t, &e.to))
                && (import.test || !e.tests_only)
        })
        .map(|(i, _)| i)
        .collect()
}

/// The files an import reaches, grouped by `key` (their piece, or their
/// unit of a folder), in the order first reached; files `key` gives no
/// group are left out.
fn grouped<'a, K: Ord + Clone>(
    c: &'a Checked,
    import: &Import,
    key: impl Fn(&str) -> Option<K>,
) -> Vec<(K, Vec<&'a str>)> {
    let mut groups: Vec<(K, Vec<&str>)> = Vec::new();
    for &t in &import.targets {
        let to = c.krate.files[t].rel.as_str();
        let Some(k) = key(to) else { continue };
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, files)) => files.push(to),
            None => groups.push((k, vec![to])),
        }
    }
    groups
}

fn at(c: &Checked, import: &Import) -> String {
    let test = if import.test { " (test code)" } else { "" };
    format!("{}:{}{test}", c.krate.files[import.file].shown, import.line)
}

/// Checks the table itself: a layering (each row names only rows above
/// it), and one row for each piece the crate has, no more.
pub fn check_table(c: &Checked, rows: &[LayerRow], problems: &mut Vec<Problem>) {
    let pieces: BTreeSet<String> = c.krate.files.iter().map(|f| piece(&f.rel)).collect();
    let mut above: BTreeSet<&str> = BTreeSet::new();
    for row in rows {
        if !pieces.contains(&row.piece) {
            problems.push(format!(
                "{DOC}:{}: the layer table of crates/{} names `{}`, which its src/ does not have",
                row.line, c.krate.name, row.piece
            ));
        }
        if let MayImport::Only(names) = &row.may_import {
            for name in names {
                if !above.contains(name.as_str()) {
                    problems.push(format!(
                        "{DOC}:{}: `{}` may import `{name}`, which is not in a row above it \
                         (the table is the layering, lowest first: a piece imports only pieces below it)",
                        row.line, row.piece
                    ));
                }
            }
        }
        if !above.insert(&row.piece) {
            problems.push(format!("{DOC}:{}: `{}` has two rows", row.line, row.piece));
        }
    }
    for p in &pieces {
        if !above.contains(p.as_str()) {
            problems.push(format!(
                "crates/{}/src/{p}: a piece with no row in the layer table ({DOC}, \"Layers\"): give it its place",
                c.krate.name
            ));
        }
    }
}

/// Checks every import of `c` against the layer table `rows`.
pub fn check_layers(
    c: &Checked,
    rows: &[LayerRow],
    rules: &Rules,
    used: &mut Used,
    problems: &mut Vec<Problem>,
) {
    let row_of: BTreeMap<&str, &LayerRow> = rows.iter().map(|r| (r.piece.as_str(), r)).collect();
    // One message for each line and piece crossed into.
    let mut reported = BTreeSet::new();
    for import in &c.imports {
        let from = &c.krate.files[import.file].rel;
        let from_piece = piece(from);
        let row = row_of.get(from_piece.as_str());
        let others = grouped(c, import, |to| Some(piece(to)).filter(|p| *p != from_piece));
        for (to_piece, to) in others {
            let allowed = match row.map(|r| &r.may_import) {
                Some(MayImport::Any) => true,
                Some(MayImport::Only(names)) => names.contains(&to_piece),
                // A piece with no row is reported by check_table.
                None => true,
            };
            if allowed {
                continue;
            }
            let excused = excusing(rules, &c.krate.name, from, &to, import);
            if !excused.is_empty() {
                used.extend(excused);
                continue;
            }
            if !reported.insert((import.file, import.line, to_piece.clone())) {
                continue;
            }
            let (row_line, may, walls) = match row {
                Some(r) if r.walls.is_empty() => (r.line, may_list(&r.may_import), String::new()),
                Some(r) => (r.line, may_list(&r.may_import), format!(" ({})", r.walls)),
                None => (0, String::new(), String::new()),
            };
            let defined = import
                .targets
                .last()
                .map_or("", |&d| c.krate.files[d].rel.as_str());
            problems.push(format!(
                "{}: {from_piece} imports {to_piece} (`{}`, defined in {defined}): breaks the layer table, \
                 {DOC}:{row_line}: `{from_piece}` may import {may}{walls}",
                at(c, import),
                import.written,
            ));
        }
    }
}

fn may_list(m: &MayImport) -> String {
    match m {
        MayImport::Any => "any piece".into(),
        MayImport::Only(v) if v.is_empty() => "no other piece".into(),
        MayImport::Only(v) => v
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The units of a folder that an import of `b` by `a` joins: the folder,
/// and the file or subfolder of it each side is in. None when the two are
/// in one unit, or one side is the folder's mod.rs or the crate root.
pub fn units(a: &str, b: &str) -> Option<(String, String, String)> {
    let a: Vec<&str> = a.split('/').collect();
    let b: Vec<&str> = b.split('/').collect();
    let mut k = 0;
    while k + 1 < a.len() && k + 1 < b.len() && a[k] == b[k] {
        k += 1;
    }
    let unit = |parts: &[&str]| {
        if k + 1 < parts.len() {
            format!("{}/", parts[k])
        } else {
            parts[k].to_string()
        }
    };
    let (ua, ub) = (unit(&a), unit(&b));
    let face = |u: &str| u == "mod.rs" || (k == 0 && (u == "lib.rs" || u == "main.rs"));
    if ua == ub || face(&ua) || face(&ub) {
        return None;
    }
    let folder: String = a[..k].iter().map(|p| format!("{p}/")).collect();
    Some((folder, ua, ub))
}

/// One edge of a folder's graph: the imports that make it.
#[derive(Default)]
struct Edge<'a> {
    /// Imports no exception excuses, and the ones some do, with which.
    plain: Vec<&'a Import>,
    excused: Vec<(&'a Import, Vec<usize>)>,
}

/// Looks for circles between the units of every folder of `c`.
pub fn check_circles(c: &Checked, rules: &Rules, used: &mut Used, problems: &mut Vec<Problem>) {
    // folder -> (from unit, to unit) -> edge
    let mut graphs: BTreeMap<String, BTreeMap<(String, String), Edge>> = BTreeMap::new();
    for import in &c.imports {
        let from = &c.krate.files[import.file].rel;
        for ((folder, ua, ub), to) in grouped(c, import, |to| units(from, to)) {
            let edge = graphs
                .entry(folder)
                .or_default()
                .entry((ua, ub))
                .or_default();
            let excused = excusing(rules, &c.krate.name, from, &to, import);
            if excused.is_empty() {
                edge.plain.push(import);
            } else {
                edge.excused.push((import, excused));
            }
        }
    }
    for (folder, graph) in &graphs {
        let all: Vec<(&str, &str)> = graph
            .keys()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let full = components(&all);
        for ((a, b), edge) in graph {
            if full.get(a.as_str()) == full.get(b.as_str()) {
                for (_, excused) in &edge.excused {
                    used.extend(excused.iter().copied());
                }
            }
        }
        let plain: Vec<(&str, &str)> = graph
            .iter()
            .filter(|(_, e)| !e.plain.is_empty())
            .map(|((a, b), _)| (a.as_str(), b.as_str()))
            .collect();
        let sccs = components(&plain);
        let mut circles: BTreeMap<usize, BTreeSet<&str>> = BTreeMap::new();
        for (unit, id) in &sccs {
            circles.entry(*id).or_default().insert(unit);
        }
        for members in circles.values().filter(|m| m.len() > 1) {
            let names: Vec<&str> = members.iter().copied().collect();
            let mut text = format!(
                "a circle between the files of crates/{}/src/{folder}: {} (breaks \"no circle between \
                 the pieces of a crate, nor between the files of a folder\", {DOC}, \"Layers\"); \
                 its imports:",
                c.krate.name,
                names.join(", ")
            );
            // One import for each edge of the circle (code before tests),
            // and how many more make the same edge.
            for ((a, b), edge) in graph {
                if !(members.contains(a.as_str()) && members.contains(b.as_str())) {
                    continue;
                }
                let Some(first) = edge.plain.iter().find(|i| !i.test).or(edge.plain.first()) else {
                    continue;
                };
                text.push_str(&format!(
                    "\n    {}: {a} imports {b} (`{}`)",
                    at(c, first),
                    first.written
                ));
                if edge.plain.len() > 1 {
                    text.push_str(&format!(" and {} more", edge.plain.len() - 1));
                }
            }
            problems.push(text);
        }
    }
}

/// The strongly connected components of a graph given by its edges
/// (Tarjan's algorithm): node to component number.
fn components<'a>(edges: &[(&'a str, &'a str)]) -> BTreeMap<&'a str, usize> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for &(a, b) in edges {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        component: BTreeMap<&'a str, usize>,
        count: usize,
    }
    fn visit<'a>(v: &'a str, next: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in next.get(v).map(Vec::as_slice).unwrap_or(&[]) {
            if !s.index.contains_key(w) {
                visit(w, next, s);
                let lw = s.low[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(lw));
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                s.component.insert(w, s.count);
                if w == v {
                    break;
                }
            }
            s.count += 1;
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        component: BTreeMap::new(),
        count: 0,
    };
    for &v in next.keys() {
        if !s.index.contains_key(v) {
            visit(v, &next, &mut s);
        }
    }
    s.component
}

/// Checks that each exception names a crate and units that exist, and
/// excused something: one that no longer does must go.
pub fn check_exceptions(
    checked: &[Checked],
    rules: &Rules,
    used: &Used,
    problems: &mut Vec<Problem>,
) {
    for (i, e) in rules.exceptions.iter().enumerate() {
        let Some(c) = checked.iter().find(|c| c.krate.name == e.krate) else {
            problems.push(format!(
                "{DOC}:{}: the exception names crate `{}`, which is not checked",
                e.line, e.krate
            ));
            continue;
        };
        let exists = |unit: &str| c.krate.files.iter().any(|f| within(&f.rel, unit));
        for unit in [&e.from, &e.to] {
            if !exists(unit) {
                problems.push(format!(
                    "{DOC}:{}: the exception names `{unit}`, which crates/{}/src does not have \
                     (a folder is written `name/`)",
                    e.line, e.krate
                ));
            }
        }
        if !used.contains(&i) && exists(&e.from) && exists(&e.to) {
            problems.push(stale(e));
        }
    }
}

fn stale(e: &Exception) -> String {
    format!(
        "{DOC}:{}: the exception `{}` -> `{}` (crates/{}) is no longer needed: no import it excuses \
         crosses a wall or closes a circle now. Remove its row (the list only shrinks)",
        e.line, e.from, e.to, e.krate
    )
}

/// Which piece imports which, and which unit of each folder imports which
/// other, for `--graph`: lines `folder: from -> to (N imports, M in tests)`.
pub fn graph(c: &Checked) -> Vec<String> {
    let mut pieces: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    let mut folders: BTreeMap<(String, String, String), (usize, usize)> = BTreeMap::new();
    for import in &c.imports {
        let from = &c.krate.files[import.file].rel;
        let mut seen = BTreeSet::new();
        for &t in &import.targets {
            let to = &c.krate.files[t].rel;
            let key = (piece(from), piece(to));
            if key.0 != key.1 && seen.insert(key.clone()) {
                let n = pieces.entry(key).or_default();
                n.0 += 1;
                n.1 += usize::from(import.test);
            }
            if let Some((folder, a, b)) = units(from, to) {
                if !folder.is_empty() && seen.insert((folder.clone(), b.clone())) {
                    let n = folders.entry((folder, a, b)).or_default();
                    n.0 += 1;
                    n.1 += usize::from(import.test);
                }
            }
        }
    }
    let count = |(n, t): (usize, usize)| {
        if t == 0 {
            format!("{n}")
        } else {
            format!("{n}, {t} in tests")
        }
    };
    let mut out: Vec<String> = pieces
        .into_iter()
        .map(|((a, b), n)| format!("src/: {a} -> {b} ({})", count(n)))
        .collect();
    out.extend(
        folders
            .into_iter()
            .map(|((f, a, b), n)| format!("src/{f}: {a} -> {b} ({})", count(n))),
    );
    out
}
