#!/usr/bin/env bash
# The Python package (python/): a virtual environment with maturin and
# pytest from PyPI, the package built into it by `maturin develop` (the dev
# profile, in cargo's target directory), then pytest on python/tests.
# Needs python3 with its venv module (Debian: python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$(realpath -m "${SPINNEY_PYTHON_VENV:-target/python-venv}")
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.5,<2" "pytest>=7,<10"
(cd python && VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop -q)
"$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests "$@"
# The example as README.md and docs/bindings.md show it (their first Python
# block), run in an empty directory, against what it must print.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for doc in README.md docs/bindings.md; do
    awk '/^```python$/ {on = 1; next} on && /^```$/ {exit} on {print}' "$doc" > "$work/shown.py"
    diff -u python/examples/hello.py "$work/shown.py" || {
        echo "test-python.sh: the Python example in $doc is not python/examples/hello.py" >&2
        exit 1
    }
done
(cd "$work" && "$venv/bin/python" "$root/python/examples/hello.py") > "$work/hello.out"
diff -u python/examples/hello.out "$work/hello.out"
