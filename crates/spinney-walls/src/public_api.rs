//! The lab, the command and the bindings (C, Python) use spinney's public
//! API only: no path into its hidden modules (`bench_support`, for the
//! criterion benches; `fuzzing`, for the fuzz targets), and spinney without
//! its `testing` and `fuzzing` features in their Cargo.toml.

use std::path::Path;

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

use crate::tree::{use_leaves, Start};
use crate::walls::Checked;
use crate::Problem;

/// The crates held to the public API.
pub const LABS: [&str; 4] = [
    "spinney-bench",
    "spinney-cli",
    "spinney-c",
    "spinney-python",
];
/// spinney's features that reach past its API.
const HIDDEN_FEATURES: [&str; 2] = ["testing", "fuzzing"];

/// Checks the labs among `checked`; `root` is the repository.
pub fn check(root: &Path, checked: &[Checked], problems: &mut Vec<Problem>) {
    for c in checked
        .iter()
        .filter(|c| LABS.contains(&c.krate.name.as_str()))
    {
        for file in &c.krate.files {
            let mut hidden = Hidden::default();
            hidden.visit_file(&file.ast);
            for (line, module) in hidden.hits {
                problems.push(format!(
                    "{}:{line}: {} reaches past spinney's public API (`{module}` is hidden, for spinney's own tools)",
                    file.shown, c.krate.name
                ));
            }
        }
        let manifest = root.join("crates").join(&c.krate.name).join("Cargo.toml");
        match std::fs::read_to_string(&manifest) {
            Ok(text) => features_used(
                &text,
                &format!("crates/{}/Cargo.toml", c.krate.name),
                problems,
            ),
            Err(e) => problems.push(format!("{}: {e}", manifest.display())),
        }
    }
}

/// Paths into spinney's hidden modules: `bench_support` anywhere in a path
/// (a name no lab has a reason to spell), and `spinney::fuzzing`; in `use`
/// trees (groups included), in code, and in macros' tokens.
#[derive(Default)]
struct Hidden {
    hits: Vec<(usize, String)>,
}

impl Hidden {
    fn check(&mut self, segments: &[String], line: usize) {
        let hidden = segments
            .iter()
            .position(|s| s == "bench_support")
            .or_else(|| {
                (segments.first().is_some_and(|s| s == "spinney")
                    && segments.get(1).is_some_and(|s| s == "fuzzing"))
                .then_some(1)
            });
        if let Some(i) = hidden {
            self.hits.push((line, segments[i].clone()));
        }
    }

    /// Paths in a macro's tokens: each run of `a::b::c`.
    fn scan(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.scan(g.stream()),
                TokenTree::Ident(id) => {
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                        j += 3;
                    }
                    self.check(&segments, id.span().start().line);
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Hidden {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        for leaf in use_leaves(u.leading_colon.is_some(), &u.tree) {
            // A leaf's path is split at `crate`/`self`/`super`; a path into
            // another crate starts with its name.
            if leaf.path.start == Start::Name {
                self.check(&leaf.path.segments, leaf.line);
            }
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.check(
            &segments,
            path.segments
                .first()
                .map_or(0, |s| s.ident.span().start().line),
        );
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        visit::visit_macro(self, mac);
        self.scan(mac.tokens.clone());
    }
}

/// Finds spinney's hidden features in a Cargo.toml: in an inline
/// `spinney = { ..., features = [...] }` of any dependency table, or in a
/// `[...dependencies.spinney]` table.
fn features_used(text: &str, shown: &str, problems: &mut Vec<Problem>) {
    let mut table = String::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            table = line
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
            continue;
        }
        let in_spinney_table = table.ends_with("dependencies.spinney");
        let spinney_inline = table.ends_with("dependencies")
            && line
                .split('=')
                .next()
                .is_some_and(|k| k.trim() == "spinney");
        if !(in_spinney_table && line.starts_with("features") || spinney_inline) {
            continue;
        }
        for feature in HIDDEN_FEATURES {
            if line.contains(&format!("\"{feature}\"")) {
                problems.push(format!(
                    "{shown}:{}: turns on spinney's `{feature}` feature, which is past its public API",
                    n + 1
                ));
            }
        }
    }
}
