#!/usr/bin/env bash
# Builds the lab with current RocksDB and LMDB in place of Debian's
# (`--features peers-current`: engines `rocksdb-current` and `lmdb-current`,
# docs/peers.md), into target/current so that it leaves the usual build in
# target/release alone. Prints the binary's path.
#
# RocksDB comes from the source librocksdb-sys bundles: about 350 C++ files,
# some 30 minutes on two cores the first time. Its bindgen step needs
# libclang (Debian's libclang-dev), installed here with the other peers'
# packages.
#
# RocksDB is compiled with SSE4.2 and PCLMUL, as its own Makefile does on a
# machine that has them (it builds for the machine unless PORTABLE is set):
# without them its CRC32C, computed on every block it writes and checks on
# every block it reads from storage, falls back to a table in software.
# Debian's librocksdb 7.8 is such a portable build (docs/peers.md). The flags
# go to C++ only, so spinney's own code is compiled as in every other build.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-peers.sh --current

if ! grep -qw sse4_2 /proc/cpuinfo || ! grep -qw pclmulqdq /proc/cpuinfo; then
    echo "build-current-peers: this CPU lacks SSE4.2 or PCLMUL; building RocksDB without them" >&2
    flags=""
else
    flags="-msse4.2 -mpclmul"
fi

CXXFLAGS="$flags" CARGO_TARGET_DIR=target/current \
    cargo build --release --locked -p spinney-bench --features peers-current >&2
echo target/current/release/spinney-bench
