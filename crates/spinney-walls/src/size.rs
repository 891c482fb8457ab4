//! The size ratchet: no file of non-test code over the limit
//! (docs/design.md, "Layers"), unless listed with its reason; a listed file
//! that has come under the limit must leave the list.
//!
//! A file's size is its lines less those of its `#[cfg(test)]` items (and
//! their attributes and doc comments); a file that is a test module as a
//! whole (`#[cfg(test)] mod tests;`) is not counted at all.

use std::collections::BTreeSet;

use syn::spanned::Spanned;
use syn::visit::{self, Visit};

use crate::design::Rules;
use crate::tree::{is_cfg_test, item_attrs, SourceFile};
use crate::walls::Checked;
use crate::Problem;

/// The non-test lines of a file.
pub fn non_test_lines(file: &SourceFile) -> usize {
    if file.test {
        return 0;
    }
    let mut tests = TestLines::default();
    tests.visit_file(&file.ast);
    file.text.lines().count().saturating_sub(tests.lines.len())
}

/// The lines covered by `#[cfg(test)]` items.
#[derive(Default)]
struct TestLines {
    lines: BTreeSet<usize>,
}

impl TestLines {
    fn cover(&mut self, span: proc_macro2::Span) {
        self.lines.extend(span.start().line..=span.end().line);
    }
}

impl<'ast> Visit<'ast> for TestLines {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_cfg_test(item_attrs(item)) {
            self.cover(item.span());
        } else {
            visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_cfg_test(&f.attrs) {
            self.cover(f.span());
        } else {
            visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_impl_item_const(&mut self, c: &'ast syn::ImplItemConst) {
        if is_cfg_test(&c.attrs) {
            self.cover(c.span());
        }
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if is_cfg_test(&f.attrs) {
            self.cover(f.span());
        } else {
            visit::visit_trait_item_fn(self, f);
        }
    }
}

/// A file over the limit that the list allows, for the report.
pub struct Oversize {
    pub shown: String,
    pub lines: usize,
}

/// Checks every file of `checked` against the limit and the list.
pub fn check(checked: &[Checked], rules: &Rules, problems: &mut Vec<String>) -> Vec<Oversize> {
    let limit = rules.size_limit;
    let mut listed: Vec<(&str, usize, Option<usize>)> = rules
        .big_files
        .iter()
        .map(|b| (b.path.as_str(), b.line, None))
        .collect();
    let mut over = Vec::new();
    for c in checked {
        for file in &c.krate.files {
            let lines = non_test_lines(file);
            match listed.iter_mut().find(|(p, _, _)| *p == file.shown) {
                Some(entry) => {
                    entry.2 = Some(lines);
                    if lines > limit {
                        over.push(Oversize { shown: file.shown.clone(), lines });
                    }
                }
                None if lines > limit => problems.push(format!(
                    "{}: {lines} lines of non-test code, over {limit}: split it, or list it with its \
                     reason in docs/design.md, \"Layers\" (files over {limit} lines)",
                    file.shown
                )),
                None => {}
            }
        }
    }
    for (path, line, lines) in listed {
        let problem: Problem = match lines {
            None => format!("docs/design.md:{line}: `{path}` is listed as over {limit} lines, but no checked crate has it"),
            Some(n) if n <= limit => format!(
                "docs/design.md:{line}: `{path}` has {n} lines of non-test code, no more than {limit}: \
                 remove it from the list of files over {limit} lines (the list only shrinks)"
            ),
            Some(_) => continue,
        };
        problems.push(problem);
    }
    over
}
