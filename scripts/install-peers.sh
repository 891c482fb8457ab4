#!/usr/bin/env bash
# Installs the C libraries of the engines the lab measures beside spinney
# (docs/peers.md): Debian's packages of RocksDB (with its own db_bench, for
# the fairness check), WiredTiger, LevelDB and LMDB, and the C and C++
# compilers that build the lab's small shims over WiredTiger's and RocksDB's
# APIs; pkg-config, with which scripts/test-c.sh builds the C API's test
# program against libspinney_c (gcc brings AddressSanitizer's runtime); and
# python3 with its venv module, for the Python package's tests
# (scripts/test-python.sh, which takes maturin and pytest from PyPI).
# The Rust peers (fjall, redb) come from crates.io through Cargo.lock and
# need nothing here.
#
# `--current` adds libclang, which the build of current RocksDB from
# librocksdb-sys's bundled source needs (scripts/build-current-peers.sh).
#
# Needs root (CI runs as root) or sudo. Does nothing when every package is
# already installed.
set -euo pipefail

packages=(librocksdb-dev rocksdb-tools libwiredtiger-dev libleveldb-dev liblmdb-dev gcc g++ pkg-config python3 python3-venv)
if [ "${1:-}" = "--current" ]; then
    packages+=(libclang-dev)
elif [ $# -gt 0 ]; then
    echo "usage: install-peers.sh [--current]" >&2
    exit 2
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-peers: all installed (${packages[*]})"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    run=()
elif command -v sudo >/dev/null; then
    run=(sudo)
else
    echo "install-peers: need root or sudo to install ${missing[*]}" >&2
    exit 1
fi
echo "install-peers: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${run[@]}" apt-get update -qq
"${run[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
