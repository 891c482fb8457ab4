#!/usr/bin/env bash
# The test suite: every crate's unit, integration and doc tests.
# Long torture runs are separate (see README "Longer runs").
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked "$@"
