//! Name resolution, as far as the walls need it: from a path written in a
//! module to the modules of the same crate it goes through, and the one
//! that defines what it names.
//!
//! A path walks the module tree segment by segment (the longest prefix
//! that names a module), and where a segment is a name a module imports
//! (`use`, `pub use`, a glob) rather than defines, the walk follows the
//! import to where the item is defined: `crate::Table`, re-exported by
//! lib.rs from `db`, and by `db/mod.rs` from `db/table.rs`, resolves to
//! `db/table.rs` through `db/mod.rs`. Names the crate does not define
//! (other crates, the prelude, local variables) resolve to nothing.

use crate::tree::{Crate, ModId, Start, UsePath};

/// How deep import chains are followed before giving up (a glob cycle, or a
/// chain longer than any real one).
const DEPTH_MAX: usize = 24;

/// Where a path led: every module it went through, the defining one last.
pub struct Resolved {
    pub trail: Vec<ModId>,
}

/// How a path's first plain name may be looked up.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// As in a `use` (or an import being followed): a child module, an item
    /// of the module, or a name it imports.
    Import,
    /// As in code: a child module or a name a glob brings in. Names the
    /// module imports by name are left out, since their `use` is counted
    /// where it is written, and items of the module itself are no import.
    Code,
}

/// What a name found in a module is.
struct Found {
    trail: Vec<ModId>,
    module: bool,
}

/// Resolves `path` written in module `from`; None if it leaves the crate
/// (or names nothing the crate defines).
pub fn resolve(krate: &Crate, from: ModId, path: &UsePath, scope: Scope) -> Option<Resolved> {
    resolve_path(krate, from, path, scope, 0).map(|f| Resolved { trail: f.trail })
}

fn resolve_path(
    krate: &Crate,
    from: ModId,
    path: &UsePath,
    scope: Scope,
    depth: usize,
) -> Option<Found> {
    if depth > DEPTH_MAX {
        return None;
    }
    let mut segments = path.segments.iter();
    let mut found = match path.start {
        Start::Global => return None,
        Start::Crate => Found {
            trail: vec![krate.root_of(from)],
            module: true,
        },
        Start::Up(n) => {
            let mut m = from;
            for _ in 0..n {
                m = krate.modules[m].parent?;
            }
            Found {
                trail: vec![m],
                module: true,
            }
        }
        Start::Name => {
            let first = segments.next()?;
            lookup(krate, from, first, scope, depth + 1)?
        }
    };
    for segment in segments {
        if !found.module {
            // The rest names things inside an item (a variant, a method).
            break;
        }
        let here = *found.trail.last()?;
        match lookup(krate, here, segment, Scope::Import, depth + 1) {
            Some(next) => {
                found.trail.extend(next.trail);
                found.module = next.module;
            }
            // Defined in a way this tool does not see (a macro's output):
            // `here` is the best answer.
            None => break,
        }
    }
    Some(found)
}

/// Looks `name` up in module `m`.
fn lookup(krate: &Crate, m: ModId, name: &str, scope: Scope, depth: usize) -> Option<Found> {
    if depth > DEPTH_MAX {
        return None;
    }
    let module = &krate.modules[m];
    if let Some(&child) = module.children.get(name) {
        return Some(Found {
            trail: vec![child],
            module: true,
        });
    }
    if scope == Scope::Code && (module.items.contains(name) || module.bindings.contains_key(name)) {
        // Defined here, or imported by name (that `use` is its own import):
        // a glob's name of the same spelling is shadowed.
        return None;
    }
    if scope == Scope::Import {
        if module.items.contains(name) {
            return Some(Found {
                trail: vec![m],
                module: false,
            });
        }
        if krate.is_root(m) {
            if let Some(&defined_in) = krate.exported_macros.get(name) {
                return Some(Found {
                    trail: vec![defined_in],
                    module: false,
                });
            }
        }
        if let Some(binding) = module.bindings.get(name) {
            let mut f = resolve_path(krate, m, binding, Scope::Import, depth + 1)?;
            f.trail.insert(0, m);
            return Some(f);
        }
    }
    for glob in &module.globs {
        let Some(g) = resolve_path(krate, m, glob, Scope::Import, depth + 1) else {
            continue;
        };
        let Some(&source) = g.trail.last() else {
            continue;
        };
        // In code, a glob of a module of the same file (a test module's
        // `use super::*`) brings that file's own items and imports, whose
        // `use` is counted where it is written.
        let same_file = krate.modules[source].file == module.file;
        if !g.module || source == m || (scope == Scope::Code && same_file) {
            continue;
        }
        if let Some(mut f) = lookup(krate, source, name, Scope::Import, depth + 1) {
            let mut trail = g.trail;
            trail.append(&mut f.trail);
            return Some(Found {
                trail,
                module: f.module,
            });
        }
    }
    None
}
