//! The module tree of one crate: every `.rs` file under `src/` parsed, and
//! mapped to the module it is, with the names each module defines, imports
//! (`use`) and re-exports.
//!
//! The tree follows the compiler's rules for finding a module's file:
//! `lib.rs` and `main.rs` are crate roots, `mod foo;` is `foo.rs` or
//! `foo/mod.rs` beside (or under the folder of) the declaring file, inline
//! `mod foo { }` blocks are modules of the same file, and `#[path]` names a
//! file itself. A module declared under `#[cfg(test)]` is a test module, and
//! so is everything in it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::{Attribute, Item, UseTree};

/// An index into `Crate::files`.
pub type FileId = usize;
/// An index into `Crate::modules`.
pub type ModId = usize;

/// One crate of the workspace, parsed.
pub struct Crate {
    /// The crate's folder name under `crates/` (`spinney`, `spinney-bench`).
    pub name: String,
    /// The crate's `src/` folder.
    pub src: PathBuf,
    pub files: Vec<SourceFile>,
    pub modules: Vec<Module>,
    /// `#[macro_export]` macros, which live at the crate root whatever module
    /// defines them: name to defining module.
    pub exported_macros: BTreeMap<String, ModId>,
}

/// One source file and its syntax tree.
pub struct SourceFile {
    /// The path relative to `src/`, with `/` separators (`btree/pager.rs`).
    pub rel: String,
    /// The path relative to the repository root, for messages.
    pub shown: String,
    pub text: String,
    pub ast: syn::File,
    /// The module the file is (not its inline modules).
    pub module: ModId,
    /// Declared under `#[cfg(test)]` (or inside such a module).
    pub test: bool,
}

/// One module: a file's, or an inline `mod x { }` block's.
pub struct Module {
    pub parent: Option<ModId>,
    pub file: FileId,
    pub test: bool,
    /// Child modules by name.
    pub children: BTreeMap<String, ModId>,
    /// Names of the items defined here (fn, struct, enum, const, macro...).
    pub items: BTreeSet<String>,
    /// Names brought in by `use` at module level (re-exports included).
    pub bindings: BTreeMap<String, UsePath>,
    /// `use x::*` at module level.
    pub globs: Vec<UsePath>,
}

/// Where a path starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// `crate::`
    Crate,
    /// `self::`, or `super::` repeated n times.
    Up(usize),
    /// A name: a child module, an imported name, or another crate.
    Name,
    /// `::name`: another crate.
    Global,
}

/// A path as written, split into where it starts and its segments.
#[derive(Clone, Debug)]
pub struct UsePath {
    pub start: Start,
    pub segments: Vec<String>,
}

impl UsePath {
    /// Splits written segments (`super`, `super`, `lsm`, `x`) into a start
    /// and the rest.
    pub fn from_segments(global: bool, written: &[String]) -> UsePath {
        if global {
            return UsePath {
                start: Start::Global,
                segments: written.to_vec(),
            };
        }
        let mut rest = written;
        let start = match rest.first().map(String::as_str) {
            Some("crate") => {
                rest = &rest[1..];
                Start::Crate
            }
            Some("self") | Some("super") => {
                let mut ups = 0;
                if rest.first().map(String::as_str) == Some("self") {
                    rest = &rest[1..];
                }
                while rest.first().map(String::as_str) == Some("super") {
                    ups += 1;
                    rest = &rest[1..];
                }
                Start::Up(ups)
            }
            _ => Start::Name,
        };
        UsePath {
            start,
            segments: rest.to_vec(),
        }
    }

    /// The path as it would be written, for messages.
    pub fn written(&self) -> String {
        let mut parts: Vec<String> = match self.start {
            Start::Crate => vec!["crate".into()],
            Start::Up(0) => vec!["self".into()],
            Start::Up(n) => vec!["super".into(); n],
            Start::Name => Vec::new(),
            Start::Global => vec![String::new()],
        };
        parts.extend(self.segments.iter().cloned());
        parts.join("::")
    }
}

/// One leaf of a `use` tree: the full path, the name it binds (none for a
/// glob or `as _`), and the line of the leaf.
pub struct UseLeaf {
    pub path: UsePath,
    pub binds: Option<String>,
    pub glob: bool,
    pub line: usize,
}

/// Flattens a `use` tree (`crate::{a::b, c as d, e::*}`) into its leaves.
pub fn use_leaves(global: bool, tree: &UseTree) -> Vec<UseLeaf> {
    let mut out = Vec::new();
    flatten(global, tree, &mut Vec::new(), &mut out);
    out
}

fn flatten(global: bool, tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(global, &p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Group(g) => {
            for t in &g.items {
                flatten(global, t, prefix, out);
            }
        }
        UseTree::Name(n) => {
            let name = n.ident.to_string();
            let line = n.ident.span().start().line;
            if name == "self" {
                // `use a::b::{self}` binds `b` to `a::b`.
                out.push(UseLeaf {
                    path: UsePath::from_segments(global, prefix),
                    binds: prefix.last().cloned(),
                    glob: false,
                    line,
                });
            } else {
                let mut full = prefix.clone();
                full.push(name.clone());
                out.push(UseLeaf {
                    path: UsePath::from_segments(global, &full),
                    binds: Some(name),
                    glob: false,
                    line,
                });
            }
        }
        UseTree::Rename(r) => {
            let mut full = prefix.clone();
            if r.ident != "self" {
                full.push(r.ident.to_string());
            }
            let alias = r.rename.to_string();
            out.push(UseLeaf {
                path: UsePath::from_segments(global, &full),
                binds: (alias != "_").then_some(alias),
                glob: false,
                line: r.ident.span().start().line,
            });
        }
        UseTree::Glob(g) => out.push(UseLeaf {
            path: UsePath::from_segments(global, prefix),
            binds: None,
            glob: true,
            line: g.star_token.span.start().line,
        }),
    }
}

/// True if the attributes hold a `#[cfg(...)]` that needs `test`:
/// `cfg(test)`, or `cfg(all(test, ...))`.
pub fn is_cfg_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Meta>().is_ok_and(|m| requires_test(&m))
    })
}

fn requires_test(meta: &syn::Meta) -> bool {
    match meta {
        syn::Meta::Path(p) => p.is_ident("test"),
        syn::Meta::List(list) => {
            let nested = list.parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            );
            let Ok(nested) = nested else { return false };
            if list.path.is_ident("all") {
                nested.iter().any(requires_test)
            } else if list.path.is_ident("any") {
                !nested.is_empty() && nested.iter().all(requires_test)
            } else {
                false
            }
        }
        syn::Meta::NameValue(_) => false,
    }
}

/// The attributes of any item.
pub fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The value of a `#[path = "..."]` attribute.
fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

impl Crate {
    /// Parses the crate in `dir` (its `src/lib.rs` and `src/main.rs`, and
    /// every module they declare). `shown_prefix` is the crate folder as
    /// messages show it (`crates/spinney`).
    pub fn load(name: &str, dir: &Path, shown_prefix: &str) -> Result<Crate, String> {
        let src = dir.join("src");
        let mut krate = Crate {
            name: name.to_string(),
            src: src.clone(),
            files: Vec::new(),
            modules: Vec::new(),
            exported_macros: BTreeMap::new(),
        };
        let mut loader = Loader {
            shown_prefix,
            seen: BTreeSet::new(),
        };
        for root in ["lib.rs", "main.rs"] {
            let path = src.join(root);
            if path.is_file() {
                loader.load_file(&mut krate, &path, None, true, false)?;
            }
        }
        if krate.files.is_empty() {
            return Err(format!("{shown_prefix}/src has neither lib.rs nor main.rs"));
        }
        // A file no root reaches is not compiled, and so not checked: a dead
        // file, or one brought in some way this tool does not follow.
        let mut stray = Vec::new();
        collect_rs(&src, &mut stray).map_err(|e| format!("{}: {e}", src.display()))?;
        for path in stray {
            if !loader.seen.contains(&path) {
                return Err(format!(
                    "{}: no crate root reaches this file (no `mod` declares it)",
                    shown(shown_prefix, &src, &path)
                ));
            }
        }
        Ok(krate)
    }

    /// True if `m` is a crate root (lib.rs's or main.rs's module).
    pub fn is_root(&self, m: ModId) -> bool {
        self.modules[m].parent.is_none()
    }

    /// The crate root above `m`.
    pub fn root_of(&self, mut m: ModId) -> ModId {
        while let Some(p) = self.modules[m].parent {
            m = p;
        }
        m
    }
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_rs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn shown(prefix: &str, src: &Path, path: &Path) -> String {
    match path.strip_prefix(src) {
        Ok(rel) => format!("{prefix}/src/{}", rel.to_string_lossy()),
        Err(_) => path.display().to_string(),
    }
}

struct Loader<'a> {
    shown_prefix: &'a str,
    seen: BTreeSet<PathBuf>,
}

impl Loader<'_> {
    /// Parses `path` as a module under `parent`, and the modules it
    /// declares. `mod_rs`: the file's own folder holds its children
    /// (lib.rs, main.rs, mod.rs, and `#[path]` files).
    fn load_file(
        &mut self,
        krate: &mut Crate,
        path: &Path,
        parent: Option<ModId>,
        mod_rs: bool,
        test: bool,
    ) -> Result<ModId, String> {
        let shown = shown(self.shown_prefix, &krate.src, path);
        if !self.seen.insert(path.to_path_buf()) {
            return Err(format!("{shown}: declared as a module twice"));
        }
        let text = fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        let ast = syn::parse_file(&text)
            .map_err(|e| format!("{shown}:{}: does not parse: {e}", e.span().start().line))?;
        let rel = path
            .strip_prefix(&krate.src)
            .map(|r| r.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|_| shown.clone());
        let file = krate.files.len();
        let module = new_module(krate, parent, file, test);
        krate.files.push(SourceFile {
            rel,
            shown,
            text,
            ast,
            module,
            test,
        });
        let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let children_dir = if mod_rs {
            folder.clone()
        } else {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default();
            folder.join(stem)
        };
        let place = Place {
            file,
            folder,
            children_dir,
            inline: false,
        };
        // The items are lent out while the tree grows, and put back.
        let items = std::mem::take(&mut krate.files[file].ast.items);
        let loaded = self.load_items(krate, &items, module, &place, test);
        krate.files[file].ast.items = items;
        loaded?;
        Ok(module)
    }

    /// Records the names `items` define and import in `module`, and loads
    /// the modules they declare.
    fn load_items(
        &mut self,
        krate: &mut Crate,
        items: &[Item],
        module: ModId,
        place: &Place,
        test: bool,
    ) -> Result<(), String> {
        for item in items {
            let item_test = test || is_cfg_test(item_attrs(item));
            match item {
                Item::Mod(m) => {
                    let name = m.ident.to_string();
                    let child = if let Some((_, content)) = &m.content {
                        let child = new_module(krate, Some(module), place.file, item_test);
                        let inner = Place {
                            file: place.file,
                            folder: place.folder.clone(),
                            children_dir: place.children_dir.join(&name),
                            inline: true,
                        };
                        self.load_items(krate, content, child, &inner, item_test)?;
                        child
                    } else {
                        let (path, mod_rs) = self.module_file(krate, place, &name, &m.attrs)?;
                        self.load_file(krate, &path, Some(module), mod_rs, item_test)?
                    };
                    krate.modules[module].children.insert(name, child);
                }
                Item::Use(u) => {
                    for leaf in use_leaves(u.leading_colon.is_some(), &u.tree) {
                        if leaf.glob {
                            krate.modules[module].globs.push(leaf.path);
                        } else if let Some(name) = leaf.binds {
                            krate.modules[module].bindings.insert(name, leaf.path);
                        }
                    }
                }
                Item::Macro(m) => {
                    if let Some(ident) = &m.ident {
                        let name = ident.to_string();
                        if m.attrs.iter().any(|a| a.path().is_ident("macro_export")) {
                            krate.exported_macros.insert(name.clone(), module);
                        }
                        krate.modules[module].items.insert(name);
                    }
                }
                Item::ForeignMod(f) => {
                    for fi in &f.items {
                        let ident = match fi {
                            syn::ForeignItem::Fn(f) => Some(&f.sig.ident),
                            syn::ForeignItem::Static(s) => Some(&s.ident),
                            syn::ForeignItem::Type(t) => Some(&t.ident),
                            _ => None,
                        };
                        if let Some(ident) = ident {
                            krate.modules[module].items.insert(ident.to_string());
                        }
                    }
                }
                other => {
                    if let Some(name) = defined_name(other) {
                        krate.modules[module].items.insert(name);
                    }
                }
            }
        }
        Ok(())
    }

    /// The file of `mod name;` declared at `place`, and whether it is a
    /// mod-rs file (its children sit beside it).
    fn module_file(
        &self,
        krate: &Crate,
        place: &Place,
        name: &str,
        attrs: &[Attribute],
    ) -> Result<(PathBuf, bool), String> {
        let declarer = &krate.files[place.file].shown;
        if let Some(p) = path_attr(attrs) {
            // Outside inline blocks a #[path] is relative to the declaring
            // file's folder; inside them, to the blocks' folder.
            let base = if place.inline {
                &place.children_dir
            } else {
                &place.folder
            };
            let path = base.join(p);
            if !path.is_file() {
                return Err(format!(
                    "{declarer}: #[path] of `mod {name}` names {}, not a file",
                    path.display()
                ));
            }
            return Ok((path, true));
        }
        let flat = place.children_dir.join(format!("{name}.rs"));
        let nested = place.children_dir.join(name).join("mod.rs");
        match (flat.is_file(), nested.is_file()) {
            (true, false) => Ok((flat, false)),
            (false, true) => Ok((nested, true)),
            (true, true) => Err(format!(
                "{declarer}: `mod {name}` is both {} and {}",
                flat.display(),
                nested.display()
            )),
            (false, false) => Err(format!(
                "{declarer}: `mod {name}` has no file ({} or {})",
                flat.display(),
                nested.display()
            )),
        }
    }
}

/// Where items being loaded sit: their file, its folder, and the folder
/// their `mod x;` children are found in.
struct Place {
    file: FileId,
    folder: PathBuf,
    children_dir: PathBuf,
    inline: bool,
}

fn new_module(krate: &mut Crate, parent: Option<ModId>, file: FileId, test: bool) -> ModId {
    krate.modules.push(Module {
        parent,
        file,
        test,
        children: BTreeMap::new(),
        items: BTreeSet::new(),
        bindings: BTreeMap::new(),
        globs: Vec::new(),
    });
    krate.modules.len() - 1
}

/// The name an item defines in its module's namespace, if any.
fn defined_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::ExternCrate(i) => i.rename.as_ref().map(|(_, r)| r).unwrap_or(&i.ident),
        Item::Fn(i) => &i.sig.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}
