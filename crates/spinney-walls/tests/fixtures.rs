//! The check, trusted once it has failed: each test writes a small
//! workspace to a temporary directory (two crates and a docs/design.md with
//! a "Layers" section, all of which pass), plants one crossing of one kind,
//! and sees the check name it, with its file and line.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use spinney_walls::check;

/// The layers of the fixture's engine crate, `eng`, lowest first.
const LAYERS: &str = "\
#### Layers of `crates/eng`, lowest first

| piece | may import | walls |
| --- | --- | --- |
| `error.rs` | — | |
| `mvcc/` | `error.rs` | no table kind |
| `lsm/` | `error.rs`, `mvcc/` | never `btree/` |
| `btree/` | `error.rs`, `mvcc/` | never `lsm/` |
| `db/` | `error.rs`, `mvcc/`, `lsm/`, `btree/` | |
| `lib.rs` | any | |
";

/// A workspace that passes: `eng` (an engine with layers) and `lab` (a
/// crate with two top-level files, `b.rs` importing `a.rs`).
struct Fixture {
    files: BTreeMap<String, String>,
    layers: String,
    exceptions: Vec<String>,
    big_files: Vec<String>,
}

impl Fixture {
    fn clean() -> Fixture {
        let mut files = BTreeMap::new();
        let mut put = |path: &str, text: &str| {
            files.insert(path.to_string(), text.to_string());
        };
        put(
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/eng\", \"crates/lab\"]\n",
        );
        put(
            "crates/eng/src/lib.rs",
            "//! eng\nmod btree;\nmod db;\nmod error;\nmod lsm;\nmod mvcc;\n\
             pub use db::Db;\npub use error::Error;\npub use btree::Tree;\n",
        );
        put("crates/eng/src/error.rs", "pub struct Error;\n");
        put(
            "crates/eng/src/mvcc/mod.rs",
            "pub mod key;\npub use key::Key;\n",
        );
        put(
            "crates/eng/src/mvcc/key.rs",
            "pub struct Key;\npub fn k() -> crate::Error { crate::Error }\n",
        );
        put(
            "crates/eng/src/lsm/mod.rs",
            "pub mod x;\nuse crate::mvcc::Key;\npub struct Lsm(pub Key);\n",
        );
        put(
            "crates/eng/src/lsm/x.rs",
            "pub struct Thing;\npub fn g() -> super::Lsm { super::Lsm(crate::mvcc::Key) }\n",
        );
        put(
            "crates/eng/src/btree/mod.rs",
            "pub mod inner;\npub mod p;\npub mod q;\npub struct Tree;\npub fn f() {}\n",
        );
        put(
            "crates/eng/src/btree/inner.rs",
            "use super::super::mvcc::key::k;\npub fn h() { k(); }\n",
        );
        put("crates/eng/src/btree/p.rs", "pub struct P;\n");
        put(
            "crates/eng/src/btree/q.rs",
            "use super::p::P;\npub fn q() -> P { P }\n",
        );
        put(
            "crates/eng/src/db/mod.rs",
            "use crate::{btree::Tree, lsm::Lsm};\npub struct Db(pub Tree, pub Lsm);\n\
             pub fn open() { crate::btree::f(); }\n",
        );
        put("crates/lab/src/lib.rs", "mod a;\nmod b;\npub use b::run;\n");
        put("crates/lab/src/a.rs", "pub fn helper() {}\n");
        put(
            "crates/lab/src/b.rs",
            "pub fn run() { crate::a::helper() }\n",
        );
        Fixture {
            files,
            layers: LAYERS.to_string(),
            exceptions: Vec::new(),
            big_files: Vec::new(),
        }
    }

    /// Replaces (or adds) a file.
    fn put(&mut self, path: &str, text: &str) -> &mut Fixture {
        self.files.insert(path.to_string(), text.to_string());
        self
    }

    /// Adds a line to the end of a file.
    fn append(&mut self, path: &str, line: &str) -> &mut Fixture {
        let text = self.files.entry(path.to_string()).or_default();
        text.push_str(line);
        text.push('\n');
        self
    }

    fn except(&mut self, row: &str) -> &mut Fixture {
        self.exceptions.push(row.to_string());
        self
    }

    fn allow_big(&mut self, path: &str) -> &mut Fixture {
        self.big_files.push(format!("| `{path}` | a fixture |"));
        self
    }

    fn design(&self) -> String {
        let mut d = String::from("# design\n\n## Pieces\n\n### Layers\n\nThe walls.\n\n");
        d.push_str(&self.layers);
        d.push_str("\n#### Exceptions\n\n| crate | from | to | in | why |\n| --- | --- | --- | --- | --- |\n");
        for e in &self.exceptions {
            d.push_str(e);
            d.push('\n');
        }
        d.push_str("\n#### Files over 800 lines\n\n| file | why |\n| --- | --- |\n");
        for b in &self.big_files {
            d.push_str(b);
            d.push('\n');
        }
        d.push_str("\n## Write path\n\nNot read.\n\n| piece | may import |\n| --- | --- |\n| `x` | `y` |\n");
        d
    }

    fn write(&self, root: &Path) {
        for (path, text) in &self.files {
            let path = root.join(path);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).expect("fixture folder");
            }
            fs::write(path, text).expect("fixture file");
        }
        fs::create_dir_all(root.join("docs")).expect("docs folder");
        fs::write(root.join("docs/design.md"), self.design()).expect("design.md");
    }

    /// Writes the fixture and checks it: the problems found.
    fn problems(&self) -> Vec<String> {
        let dir = tempfile::tempdir().expect("temporary directory");
        self.write(dir.path());
        let report = check(dir.path()).expect("the fixture can be checked");
        report.problems
    }
}

/// Asserts exactly one problem, holding each of `parts`.
fn one_problem(problems: &[String], parts: &[&str]) {
    assert_eq!(problems.len(), 1, "expected one problem, got {problems:#?}");
    for part in parts {
        assert!(
            problems[0].contains(part),
            "{part:?} not in {:?}",
            problems[0]
        );
    }
}

/// `n` lines of code.
fn lines(n: usize) -> String {
    (0..n)
        .map(|i| format!("pub const C{i}: u32 = {i};\n"))
        .collect()
}

#[test]
fn clean_fixture_passes() {
    // Goal: the fixture every other test plants one bug in passes, and its
    // imports are seen (so the others fail for their plant alone).
    let dir = tempfile::tempdir().expect("temporary directory");
    Fixture::clean().write(dir.path());
    let report = check(dir.path()).expect("checked");
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    assert_eq!(report.files, 14);
    // eng's lib.rs (3 re-exports), mvcc/mod.rs (1), mvcc/key.rs (2 paths),
    // lsm/mod.rs (1), lsm/x.rs (3 paths), btree/inner.rs (1), btree/q.rs
    // (1), db/mod.rs (2 use leaves, 1 path); lab's lib.rs and b.rs (1 each).
    assert_eq!(report.imports, 17);
}

#[test]
fn use_group_into_a_forbidden_piece() {
    // `use crate::{lsm::x}` in btree/: the grep missed groups.
    let problems = Fixture::clean()
        .append("crates/eng/src/btree/p.rs", "use crate::{lsm::x};")
        .problems();
    one_problem(
        &problems,
        &[
            "crates/eng/src/btree/p.rs:2",
            "btree/ imports lsm/",
            "`crate::lsm::x`",
            "docs/design.md:",
            "may import `error.rs`, `mvcc/`",
        ],
    );
}

#[test]
fn super_super_from_a_nested_file() {
    // `super::super::lsm::x` from btree/inner.rs reaches the crate root,
    // then lsm/.
    let problems = Fixture::clean()
        .append(
            "crates/eng/src/btree/inner.rs",
            "use super::super::lsm::x::Thing;",
        )
        .problems();
    one_problem(
        &problems,
        &[
            "crates/eng/src/btree/inner.rs:3",
            "btree/ imports lsm/",
            "super::super::lsm::x::Thing",
        ],
    );
}

#[test]
fn expression_path_in_a_function_body() {
    // A path in an expression, with no `use`.
    let problems = Fixture::clean()
        .append(
            "crates/eng/src/lsm/x.rs",
            "pub fn planted() {\n    crate::btree::f();\n}",
        )
        .problems();
    one_problem(
        &problems,
        &[
            "crates/eng/src/lsm/x.rs:4",
            "lsm/ imports btree/",
            "crate::btree::f",
        ],
    );
}

#[test]
fn paths_in_types_impls_bounds_and_macros() {
    // Paths outside `use` and expressions: a type, an impl header, a bound,
    // and a macro's tokens; each is a crossing of its own line.
    let problems = Fixture::clean()
        .append("crates/eng/src/lsm/x.rs", "pub struct S(pub crate::btree::Tree);")
        .append("crates/eng/src/lsm/x.rs", "impl From<crate::btree::p::P> for Thing { fn from(_: crate::btree::p::P) -> Thing { Thing } }")
        .append("crates/eng/src/lsm/x.rs", "pub fn b<T: Into<super::super::btree::Tree>>(_: T) {}")
        .append("crates/eng/src/lsm/x.rs", "pub fn m() { assert!(matches!(crate::btree::q::q(), _)); }")
        .problems();
    assert_eq!(problems.len(), 4, "{problems:#?}");
    for line in 3..=6 {
        assert!(
            problems
                .iter()
                .any(|p| p.contains(&format!("lsm/x.rs:{line}"))),
            "line {line}: {problems:#?}"
        );
    }
}

#[test]
fn pub_use_re_export_of_a_forbidden_piece() {
    // btree/ re-exports an lsm/ item: the `pub use` is the crossing.
    let problems = Fixture::clean()
        .append(
            "crates/eng/src/btree/mod.rs",
            "pub use crate::lsm::x::Thing;",
        )
        .problems();
    one_problem(
        &problems,
        &["crates/eng/src/btree/mod.rs:6", "btree/ imports lsm/"],
    );
}

#[test]
fn crate_root_re_export_resolves_to_the_defining_piece() {
    // `crate::Tree` is lib.rs's `pub use btree::Tree`: an import of btree/,
    // which lsm/ may not make, though the path names only the root.
    let problems = Fixture::clean()
        .append(
            "crates/eng/src/lsm/x.rs",
            "pub fn t() -> crate::Tree { crate::Tree }",
        )
        .problems();
    one_problem(
        &problems,
        &[
            "crates/eng/src/lsm/x.rs:3",
            "lsm/ imports btree/",
            "`crate::Tree`",
            "defined in btree/mod.rs",
        ],
    );
}

#[test]
fn glob_and_rename() {
    // A glob and a rename each reach the piece they name.
    let problems = Fixture::clean()
        .append("crates/eng/src/btree/p.rs", "use crate::lsm::*;")
        .append(
            "crates/eng/src/btree/p.rs",
            "use crate::{lsm::x as renamed};",
        )
        .problems();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].contains("btree/p.rs:2") && problems[0].contains("btree/ imports lsm/"));
    assert!(problems[1].contains("btree/p.rs:3") && problems[1].contains("`crate::lsm::x`"));
}

#[test]
fn test_code_is_held_to_the_walls() {
    // A test module is checked like the code; the message says it is test
    // code. An exception for tests alone excuses it, and no code beside.
    let test_module = "#[cfg(test)]\nmod tests {\n    use crate::btree::Tree;\n}";
    let problems = Fixture::clean()
        .append("crates/eng/src/lsm/x.rs", test_module)
        .problems();
    one_problem(
        &problems,
        &[
            "crates/eng/src/lsm/x.rs:5 (test code)",
            "lsm/ imports btree/",
        ],
    );

    let problems = Fixture::clean()
        .append("crates/eng/src/lsm/x.rs", test_module)
        .except("| eng | `lsm/x.rs` | `btree/` | tests | a fixture |")
        .problems();
    assert!(problems.is_empty(), "{problems:#?}");

    let problems = Fixture::clean()
        .append(
            "crates/eng/src/lsm/x.rs",
            "pub fn planted() -> crate::btree::Tree { crate::btree::Tree }",
        )
        .except("| eng | `lsm/x.rs` | `btree/` | tests | a fixture |")
        .problems();
    // The crossing, and the exception that excuses nothing.
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].contains("lsm/x.rs:3") && problems[0].contains("lsm/ imports btree/"));
    assert!(problems[1].contains("no longer needed"));
}

#[test]
fn circle_between_two_top_level_pieces() {
    // lab has no layer table; a.rs importing b.rs closes a circle.
    let problems = Fixture::clean()
        .append("crates/lab/src/a.rs", "pub fn back() { crate::b::run() }")
        .problems();
    one_problem(
        &problems,
        &[
            "a circle between the files of crates/lab/src/: a.rs, b.rs",
            "crates/lab/src/a.rs:2: a.rs imports b.rs",
            "crates/lab/src/b.rs:1: b.rs imports a.rs",
        ],
    );
}

#[test]
fn circle_between_files_of_a_folder() {
    // btree/p.rs and btree/q.rs import each other; a re-export through
    // btree/mod.rs counts as an import of the file that defines the item.
    let problems = Fixture::clean()
        .append("crates/eng/src/btree/mod.rs", "pub use q::q as qq;")
        .append(
            "crates/eng/src/btree/p.rs",
            "pub fn back() -> P { super::qq() }",
        )
        .problems();
    one_problem(
        &problems,
        &[
            "crates/eng/src/btree/: p.rs, q.rs",
            "btree/p.rs:2: p.rs imports q.rs (`super::qq`)",
            "btree/q.rs:1: q.rs imports p.rs",
        ],
    );
}

#[test]
fn exception_excuses_a_listed_crossing_and_a_circle() {
    // The same crossing as use_group_into_a_forbidden_piece, listed; a path
    // through lsm/mod.rs to lsm/x.rs, listed by the file it reaches; and a
    // circle with one edge listed.
    let problems = Fixture::clean()
        .append("crates/eng/src/btree/p.rs", "use crate::{lsm::x};")
        .except("| eng | `btree/p.rs` | `lsm/` | all code | a fixture |")
        .append("crates/eng/src/btree/inner.rs", "use crate::lsm::x::Thing;")
        .except("| eng | `btree/inner.rs` | `lsm/x.rs` | all code | a fixture |")
        .append(
            "crates/eng/src/btree/p.rs",
            "pub fn back() { super::q::q(); }",
        )
        .except("| eng | `btree/p.rs` | `btree/q.rs` | all code | a fixture |")
        .problems();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn exception_no_longer_needed() {
    // The crossing it excused is gone: its row must go.
    let problems = Fixture::clean()
        .except("| eng | `btree/` | `lsm/` | all code | fixed since |")
        .problems();
    one_problem(
        &problems,
        &[
            "docs/design.md:",
            "the exception `btree/` -> `lsm/` (crates/eng) is no longer needed",
        ],
    );

    // An edge that exists but no longer closes a circle is gone too.
    let problems = Fixture::clean()
        .except("| eng | `btree/q.rs` | `btree/p.rs` | all code | was a circle |")
        .problems();
    one_problem(
        &problems,
        &[
            "the exception `btree/q.rs` -> `btree/p.rs`",
            "no longer needed",
        ],
    );

    // An exception naming a file that is not there.
    let problems = Fixture::clean()
        .except("| eng | `btree/gone.rs` | `lsm/` | all code | moved |")
        .problems();
    one_problem(
        &problems,
        &["names `btree/gone.rs`, which crates/eng/src does not have"],
    );
}

#[test]
fn unlisted_file_over_the_limit() {
    // 801 lines of code, and nothing in the list.
    let problems = Fixture::clean()
        .put("crates/eng/src/error.rs", &lines(801))
        .problems();
    one_problem(
        &problems,
        &["crates/eng/src/error.rs: 801 lines of non-test code, over 800"],
    );
}

#[test]
fn oversize_file_listed_is_reported_with_its_count() {
    // Listed with its reason: it passes, and the report gives its count.
    let mut f = Fixture::clean();
    f.put("crates/eng/src/error.rs", &lines(900))
        .allow_big("crates/eng/src/error.rs");
    let dir = tempfile::tempdir().expect("temporary directory");
    f.write(dir.path());
    let report = check(dir.path()).expect("checked");
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    assert_eq!(report.oversize.len(), 1);
    assert_eq!(
        (report.oversize[0].shown.as_str(), report.oversize[0].lines),
        ("crates/eng/src/error.rs", 900)
    );
}

#[test]
fn test_items_do_not_count_toward_the_limit() {
    // 790 lines of code and a 100-line test module: under the limit.
    let mut text = lines(790);
    text.push_str("#[cfg(test)]\nmod tests {\n");
    text.push_str(&lines(96));
    text.push_str("}\n");
    let problems = Fixture::clean()
        .put("crates/eng/src/error.rs", &text)
        .problems();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn listed_file_that_shrank_must_leave_the_list() {
    let problems = Fixture::clean()
        .allow_big("crates/eng/src/error.rs")
        .problems();
    one_problem(
        &problems,
        &[
            "`crates/eng/src/error.rs` has 1 lines of non-test code, no more than 800",
            "remove it",
        ],
    );
}

#[test]
fn piece_without_a_row() {
    // A new top-level file must be placed in the layer table.
    let problems = Fixture::clean()
        .append("crates/eng/src/lib.rs", "mod extra;")
        .put("crates/eng/src/extra.rs", "pub fn e() {}\n")
        .problems();
    one_problem(
        &problems,
        &["crates/eng/src/extra.rs: a piece with no row in the layer table"],
    );
}

#[test]
fn the_lab_keeps_to_the_public_api() {
    // spinney-cli is held to spinney's public API in its source and its
    // Cargo.toml.
    let problems = Fixture::clean()
        .put("Cargo.toml", "[workspace]\nmembers = [\"crates/eng\", \"crates/lab\", \"crates/spinney-cli\"]\n")
        .put(
            "crates/spinney-cli/src/main.rs",
            "use spinney::bench_support::MemTable;\n\
             use spinney::{fuzzing::seeds, Db};\n\
             fn main() {\n\
             \x20   spinney::fuzzing::seeds();\n\
             \x20   println!(\"{}\", spinney::bench_support::X);\n\
             }\n",
        )
        .put("crates/spinney-cli/Cargo.toml", "[package]\nname = \"spinney-cli\"\n\n[dependencies]\nspinney = { path = \"../spinney\", features = [\"testing\"] }\n")
        .problems();
    // A `use`, a `use` group, a path in code, a path in a macro's tokens,
    // and the feature.
    let expected = [
        ("src/main.rs:1", "`bench_support`"),
        ("src/main.rs:2", "`fuzzing`"),
        ("src/main.rs:4", "`fuzzing`"),
        ("src/main.rs:5", "`bench_support`"),
        ("Cargo.toml:5", "`testing`"),
    ];
    assert_eq!(problems.len(), expected.len(), "{problems:#?}");
    for (problem, (at, what)) in problems.iter().zip(expected) {
        assert!(
            problem.starts_with(&format!("crates/spinney-cli/{at}")) && problem.contains(what),
            "{problem}"
        );
    }
}

#[test]
fn inline_modules_and_path_attributes() {
    // An inline `mod` block is a module of its file; a `#[path]` module is
    // the file it names. A crossing in either is named by its own file.
    let problems = Fixture::clean()
        .append(
            "crates/eng/src/lsm/x.rs",
            "mod inner {\n    pub fn i() {\n        crate::btree::f();\n    }\n}",
        )
        .append(
            "crates/eng/src/lsm/mod.rs",
            "#[path = \"elsewhere.rs\"]\nmod renamed;",
        )
        .put(
            "crates/eng/src/lsm/elsewhere.rs",
            "pub fn e() -> crate::btree::Tree {\n    crate::btree::Tree\n}\n",
        )
        .problems();
    assert_eq!(problems.len(), 3, "{problems:#?}");
    for at in ["lsm/x.rs:5", "lsm/elsewhere.rs:1", "lsm/elsewhere.rs:2"] {
        let found = problems.iter().any(|p| {
            p.contains(&format!("crates/eng/src/{at}")) && p.contains("lsm/ imports btree/")
        });
        assert!(found, "{at}: {problems:#?}");
    }
}

#[test]
fn the_table_is_a_layering() {
    // A row may name only pieces above it: mvcc/ naming lsm/ would allow a
    // circle.
    let mut f = Fixture::clean();
    f.layers = LAYERS.replace(
        "| `mvcc/` | `error.rs` |",
        "| `mvcc/` | `error.rs`, `lsm/` |",
    );
    one_problem(
        &f.problems(),
        &["`mvcc/` may import `lsm/`, which is not in a row above it"],
    );
}

#[test]
fn a_file_no_root_reaches_cannot_be_checked() {
    // A file no `mod` declares is reported, not skipped.
    let mut f = Fixture::clean();
    f.put("crates/eng/src/lsm/stray.rs", "use crate::btree::Tree;\n");
    let dir = tempfile::tempdir().expect("temporary directory");
    f.write(dir.path());
    let error = check(dir.path()).err().expect("an error");
    assert!(
        error.contains("crates/eng/src/lsm/stray.rs: no crate root reaches this file"),
        "{error}"
    );
}
