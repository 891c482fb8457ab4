#!/usr/bin/env bash
# Writes a compatibility corpus with the build of a given commit:
#   bash scripts/make-compat-corpus.sh <commit> <name>
# makes crates/spinney/tests/compat/<name>/ (db/, expected.txt, SOURCE) by
# running that commit's `compat_corpus` example (crates/spinney/examples/)
# in a temporary worktree. Name a corpus after the formats it holds
# (docs/format.md's versions); tests/compat.rs opens every corpus there.
set -euo pipefail
commit=${1:?usage: make-compat-corpus.sh <commit> <name>}
name=${2:?usage: make-compat-corpus.sh <commit> <name>}
root=$(git rev-parse --show-toplevel)
out="$root/crates/spinney/tests/compat/$name"
if [ -e "$out" ]; then
    echo "make-compat-corpus: $out exists; a corpus is never rewritten" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add --detach "$work/src" "$commit" >/dev/null
mkdir "$work/corpus"
(cd "$work/src" && CARGO_TARGET_DIR="$root/target" cargo run --quiet --release -p spinney --example compat_corpus -- "$work/corpus")
rm -f "$work/corpus/db/LOCK"
mkdir -p "$(dirname "$out")"
mv "$work/corpus" "$out"
printf 'commit %s\nmade %s by scripts/make-compat-corpus.sh\n' \
    "$(git -C "$root" rev-parse "$commit")" "$(date -u +%Y-%m-%d)" > "$out/SOURCE"
echo "make-compat-corpus: wrote $out"
