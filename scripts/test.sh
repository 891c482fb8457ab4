#!/usr/bin/env bash
# The test suite: every crate's unit, integration and doc tests, with the
# lab's peers built in (their libraries come from scripts/install-peers.sh;
# SPINNEY_NO_PEERS=1 runs without them, on a machine that cannot install
# them). Long torture runs are separate (see README "Longer runs").
set -euo pipefail
cd "$(dirname "$0")/.."
features=(--features spinney-bench/peers)
if [ "${SPINNEY_NO_PEERS:-0}" = "1" ]; then
    echo "test.sh: SPINNEY_NO_PEERS=1: the lab's peers are not built or tested" >&2
    features=()
fi
cargo test --workspace --locked "${features[@]}" "$@"
if [ "$#" -eq 0 ]; then
    # The C API: a C program that calls every function, under ASan.
    if [ "${SPINNEY_NO_PEERS:-0}" = "1" ] && ! { command -v cc && command -v pkg-config; } >/dev/null; then
        echo "test.sh: no cc or pkg-config: the C API's C tests (scripts/test-c.sh) are not run" >&2
    else
        bash scripts/test-c.sh
    fi
    # The Python package: built into a virtual environment, then pytest.
    if [ "${SPINNEY_NO_PEERS:-0}" = "1" ] && ! python3 -c "import venv" 2>/dev/null; then
        echo "test.sh: no python3 with venv: the Python package's tests (scripts/test-python.sh) are not run" >&2
    else
        bash scripts/test-python.sh
    fi
fi
