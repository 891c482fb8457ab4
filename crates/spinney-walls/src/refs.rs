//! The imports of a crate: every path in its source that reaches another
//! file of the same crate, with the file and line it is written at.
//!
//! An import is a leaf of a `use` tree (groups, renames, globs, `self`,
//! `super`, `pub use` re-exports, uses inside functions), a path in code
//! (expressions, types, patterns, impl headers, trait bounds, attributes,
//! visibilities) that starts with `crate`, `self` or `super`, or with the
//! name of a child module or of something a glob brings in, and a path of
//! that kind inside a macro's tokens (`crate::x::y`, `super::x`). Paths
//! that start with a name the module imports by name are not counted again:
//! their `use` is. Code under `#[cfg(test)]` is collected like any other,
//! and marked as test code.

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::{ImplItem, Item, TraitItem};

use crate::resolve::{resolve, Scope};
use crate::tree::{is_cfg_test, item_attrs, use_leaves, Crate, FileId, ModId, Start, UsePath};

/// One import: a path in `file` at `line` that reaches other files.
pub struct Import {
    pub file: FileId,
    pub line: usize,
    /// The path as written, for messages.
    pub written: String,
    /// Written in test code.
    pub test: bool,
    /// The files the path goes through, the one that defines what it names
    /// last; never `file` itself, never a crate root passed through (`crate::`
    /// alone imports nothing from lib.rs).
    pub targets: Vec<FileId>,
}

/// Every import of the crate, file by file.
pub fn collect(krate: &Crate) -> Vec<Import> {
    let mut imports = Vec::new();
    for (file, source) in krate.files.iter().enumerate() {
        let mut walker = Walker {
            krate,
            file,
            modules: vec![source.module],
            tests: usize::from(source.test),
            out: &mut imports,
        };
        walker.visit_file(&source.ast);
    }
    imports
}

struct Walker<'a> {
    krate: &'a Crate,
    file: FileId,
    /// The module being walked, innermost last (inline modules push).
    modules: Vec<ModId>,
    /// How many enclosing items are test code (0: none).
    tests: usize,
    out: &'a mut Vec<Import>,
}

impl Walker<'_> {
    fn module(&self) -> ModId {
        self.modules.last().copied().unwrap_or(0)
    }

    fn record(&mut self, path: UsePath, line: usize, scope: Scope) {
        let here = self.module();
        let Some(resolved) = resolve(self.krate, here, &path, scope) else {
            return;
        };
        let last = resolved.trail.len().saturating_sub(1);
        let mut targets = Vec::new();
        for (i, &m) in resolved.trail.iter().enumerate() {
            if i < last && self.krate.is_root(m) {
                continue;
            }
            let f = self.krate.modules[m].file;
            if f != self.file && !targets.contains(&f) {
                targets.push(f);
            }
        }
        if targets.is_empty() {
            return;
        }
        let test = self.tests > 0 || self.krate.modules[here].test;
        self.out.push(Import {
            file: self.file,
            line,
            written: path.written(),
            test,
            targets,
        });
    }

    /// Finds `crate::a::b`, `super::a`, `self::a` in a macro's tokens.
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            if let TokenTree::Group(g) = &trees[i] {
                self.scan_tokens(g.stream());
                i += 1;
                continue;
            }
            let start = match &trees[i] {
                TokenTree::Ident(id) if id == "crate" || id == "super" || id == "self" => id,
                _ => {
                    i += 1;
                    continue;
                }
            };
            let line = start.span().start().line;
            let mut written = vec![start.to_string()];
            let mut j = i + 1;
            while let (
                Some(TokenTree::Punct(a)),
                Some(TokenTree::Punct(b)),
                Some(TokenTree::Ident(id)),
            ) = (trees.get(j), trees.get(j + 1), trees.get(j + 2))
            {
                if a.as_char() != ':' || b.as_char() != ':' {
                    break;
                }
                written.push(id.to_string());
                j += 3;
            }
            if written.len() >= 2 {
                self.record(UsePath::from_segments(false, &written), line, Scope::Import);
            }
            i = j.max(i + 1);
        }
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        let test = is_cfg_test(item_attrs(item));
        self.tests += usize::from(test);
        match item {
            Item::Mod(m) => {
                if m.content.is_some() {
                    let child = self.krate.modules[self.module()]
                        .children
                        .get(&m.ident.to_string())
                        .copied();
                    if let Some(child) = child {
                        self.modules.push(child);
                    }
                    visit::visit_item_mod(self, m);
                    if child.is_some() {
                        self.modules.pop();
                    }
                }
                // `mod x;` is walked as its own file.
            }
            Item::Use(u) => {
                for leaf in use_leaves(u.leading_colon.is_some(), &u.tree) {
                    self.record(leaf.path, leaf.line, Scope::Import);
                }
            }
            other => visit::visit_item(self, other),
        }
        self.tests -= usize::from(test);
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        let attrs: &[syn::Attribute] = match item {
            ImplItem::Const(i) => &i.attrs,
            ImplItem::Fn(i) => &i.attrs,
            ImplItem::Type(i) => &i.attrs,
            ImplItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        let test = is_cfg_test(attrs);
        self.tests += usize::from(test);
        visit::visit_impl_item(self, item);
        self.tests -= usize::from(test);
    }

    fn visit_trait_item(&mut self, item: &'ast TraitItem) {
        let attrs: &[syn::Attribute] = match item {
            TraitItem::Const(i) => &i.attrs,
            TraitItem::Fn(i) => &i.attrs,
            TraitItem::Type(i) => &i.attrs,
            TraitItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        let test = is_cfg_test(attrs);
        self.tests += usize::from(test);
        visit::visit_trait_item(self, item);
        self.tests -= usize::from(test);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let written: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = path
                .segments
                .first()
                .map_or(0, |s| s.ident.span().start().line);
            let p = UsePath::from_segments(false, &written);
            match p.start {
                // `self` alone is a method's receiver, `super` and `crate`
                // alone are visibilities.
                Start::Crate | Start::Up(_) if written.len() >= 2 => {
                    self.record(p, line, Scope::Import)
                }
                // `x::y` with x a child module or a glob's name; a lone
                // `Name` only if capitalised (a type, a constant, a variant),
                // since a lone lowercase name is most often a local variable.
                Start::Name
                    if written.len() >= 2
                        || written
                            .first()
                            .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_uppercase())) =>
                {
                    self.record(p, line, Scope::Code)
                }
                _ => {}
            }
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        visit::visit_macro(self, mac);
        self.scan_tokens(mac.tokens.clone());
    }
}
