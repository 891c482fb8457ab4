#!/usr/bin/env bash
# The walls between the pieces of the workspace's crates, and the size
# ratchet, as docs/design.md's "Layers" section writes them: the rules, the
# exceptions (each with its reason; the list only shrinks) and the files
# allowed over the size limit are read from there by crates/spinney-walls,
# which parses every source file with syn and resolves every path that
# reaches another module of the same crate (use trees, paths in code and
# in macros, re-exports followed to where an item is defined). It also
# holds spinney-bench, spinney-cli, spinney-c and spinney-python to
# spinney's public API (no bench_support, no testing or fuzzing feature).
#
# Each crossing is printed with its file and line and the rule it breaks;
# on success one line says how many files and imports were checked.
# Usage: scripts/check-walls.sh [--graph]  (--graph: which piece, and which
# file of each folder, imports which)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
exec cargo run --quiet --locked -p spinney-walls -- "$root" "$@"
