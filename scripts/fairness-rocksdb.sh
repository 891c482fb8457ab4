#!/usr/bin/env bash
# The fairness check of docs/peers.md: the same benchmarks, with the same
# options and seed handling, through RocksDB's own db_bench (Debian's
# rocksdb-tools, the same librocksdb) and through the lab's rocksdb engine,
# ROUNDS rounds alternating which goes first, each in a fresh directory.
# Prints each run's db_bench lines; docs/peers.md holds the figures.
#
#   bash scripts/fairness-rocksdb.sh            # 1,000,000 keys, 3 rounds
#   NUM=200000 ROUNDS=1 bash scripts/fairness-rocksdb.sh
set -euo pipefail
cd "$(dirname "$0")/.."

num=${NUM:-1000000}
rounds=${ROUNDS:-3}
cargo build --release --locked -p spinney-bench --features rocksdb >&2
lab=target/release/spinney-bench

# Every option the lab's rocksdb engine sets, in db_bench's flags: the
# cache, bloom bits, compression, write buffers, the tree's shape (spinney's:
# dynamic levels, a 64 MiB base level, 8 MiB files) and background jobs. db_bench
# pipelines WAL and memtable writes by default and the adapter does not
# (it keeps RocksDB's library default), so that is turned off here. Both
# draw a new seed per process (--seed=0) and a stream per benchmark, and
# make the same keys (the lab's --key_format=binary is db_bench's layout).
common=(--benchmarks=fillrandom,overwrite,readrandom --num="$num" --key_size=16
    --value_size=100 --cache_size=67108864 --bloom_bits=10
    --compression_type=none --write_buffer_size=8388608 --max_write_buffer_number=2
    --threads=1 --seed=0)

run_db_bench() {
    echo "-- db_bench (round $1)"
    db_bench "${common[@]}" --max_background_jobs=2 --enable_pipelined_write=false \
        --level_compaction_dynamic_level_bytes=true --max_bytes_for_level_base=67108864 \
        --target_file_size_base=8388608 \
        --db="$2/db_bench" 2>/dev/null | grep -E '^(fillrandom|overwrite|readrandom) '
}

run_lab() {
    echo "-- spinney-bench --engine=rocksdb (round $1)"
    "$lab" "${common[@]}" --engine=rocksdb --key_format=binary --background_threads=2 --progress=0 --settle=0 \
        --db="$2/lab" 2>/dev/null | grep -E '^(fillrandom|overwrite|readrandom) '
}

for round in $(seq "$rounds"); do
    dir=$(mktemp -d)
    if [ $((round % 2)) -eq 1 ]; then
        run_db_bench "$round" "$dir"
        run_lab "$round" "$dir"
    else
        run_lab "$round" "$dir"
        run_db_bench "$round" "$dir"
    fi
    rm -rf "$dir"
done
