#!/usr/bin/env bash
# The walls between the engine's pieces (docs/design.md, "Pieces"), checked
# on the source text: a `use crate::x` or `crate::x::` in a piece that must
# not know x fails the check, naming the file and line.
#
#   lsm/ and btree/          never import each other (both build on mvcc/)
#   mvcc/                    imports neither table kind
#   cache/, fs/, wal/,       import no table kind and not db/
#     encoding/, manifest/
#   anything below db/       never imports db/ (db/ ties the pieces together;
#                            lib.rs and batch.rs, the public face beside
#                            db/'s handles, may)
#   spinney-bench, -cli      use the public API only: no `bench_support`,
#                            and spinney without its `testing` feature
#
# Comments are not code: lines whose first non-blank characters are // are
# skipped.
set -euo pipefail
cd "$(dirname "$0")/../crates"

failed=0

# forbid DIR PATTERN WHY: no code line under DIR matches PATTERN.
forbid() {
    local dir=$1 pattern=$2 why=$3
    local hits
    hits=$(grep -rnE --include='*.rs' "$pattern" "$dir" | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
    if [ -n "$hits" ]; then
        echo "check-walls: $why:" >&2
        echo "$hits" >&2
        failed=1
    fi
}

src=spinney/src
forbid "$src/lsm" 'crate::btree\b' "lsm/ imports btree/"
forbid "$src/btree" 'crate::lsm\b' "btree/ imports lsm/"
forbid "$src/mvcc" 'crate::(lsm|btree|db)\b' "mvcc/ imports a table kind or db/"
for piece in cache fs wal encoding manifest; do
    forbid "$src/$piece" 'crate::(lsm|btree|db)\b' "$piece/ imports a table kind or db/"
done
for piece in lsm btree mvcc cache fs wal encoding manifest; do
    forbid "$src/$piece" 'crate::db\b' "$piece/ imports db/"
done
for file in read_context.rs file_names.rs limits.rs options.rs error.rs; do
    forbid "$src/$file" 'crate::db\b' "$file imports db/"
done
for lab in spinney-bench spinney-cli; do
    forbid "$lab/src" 'bench_support' "$lab reaches past the public API"
    if grep -nE '^spinney *=.*testing' "$lab/Cargo.toml" >/dev/null; then
        echo "check-walls: $lab/Cargo.toml turns on spinney's testing feature" >&2
        failed=1
    fi
done

if [ "$failed" -ne 0 ]; then
    exit 1
fi
echo "check-walls: the walls hold"
