#!/usr/bin/env bash
# The fairness check of docs/peers.md for LMDB and LevelDB, whose Debian
# packages ship no db_bench: the same benchmarks (fillrandom, overwrite,
# readrandom), the same options and the same keys and values, through a
# small C program that uses the library directly (scripts/fairness/*.c)
# and through the lab's engine, ROUNDS rounds alternating which goes first,
# each in a fresh directory. Prints each run's db_bench lines, then the
# medians per engine and benchmark and the ratio lab / C program.
#
#   bash scripts/fairness-peers.sh                  # 1,000,000 keys, 3 rounds, both
#   NUM=200000 ROUNDS=1 bash scripts/fairness-peers.sh
#   ENGINES=lmdb bash scripts/fairness-peers.sh
#
# The machine's other benchmarks must not run at the same time; where they
# share a lock, take it around the whole check:
#
#   flock /tmp/bench.lock bash scripts/fairness-peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."

num=${NUM:-1000000}
rounds=${ROUNDS:-3}
read -r -a engines <<<"${ENGINES:-lmdb leveldb}"
# ENGINES may also be a comma-separated list.
read -r -a engines <<<"${engines[*]//,/ }"
for engine in "${engines[@]}"; do
    case $engine in
    lmdb | leveldb) ;;
    *)
        echo "fairness-peers: ENGINES names '$engine'; only lmdb and leveldb have a C program here" >&2
        exit 2
        ;;
    esac
done

# The C programs are built next to the lab's binaries (target/ is not
# committed), with the flags a user of the library would use.
bin=target/fairness
mkdir -p "$bin"
for engine in "${engines[@]}"; do
    gcc -std=c99 -O2 -Wall -Wextra -o "$bin/${engine}_bench" "scripts/fairness/${engine}_bench.c" "-l$engine"
done
# The commit measured, and whether the working tree differed from it (the
# lab is built from the working tree), as the build starts.
state="lab: $(git rev-parse HEAD)$(git diff --quiet HEAD -- crates || echo ' with uncommitted changes:')
$(git diff --stat HEAD -- crates | sed 's/^/  /')"
cargo build --release --locked -p spinney-bench --features lmdb,leveldb >&2
# A copy of the lab's binary, so that a rebuild of target/release during
# the rounds (by anyone) cannot change what is measured halfway.
lab=$bin/spinney-bench
cp target/release/spinney-bench "$lab"

# Both sides draw a new seed per process (--seed=0) and a stream per
# benchmark, write one entry per commit in one thread, and make the same
# keys (16 decimal digits) and values (100 bytes that compress to half);
# the lab goes from one benchmark to the next at once (--settle=0), as the
# C programs and db_bench do.
lab_common=(--benchmarks=fillrandom,overwrite,readrandom --num="$num" --key_size=16
    --value_size=100 --batch_size=1 --threads=1 --seed=0 --progress=0 --settle=0)
# LevelDB: every option the lab's leveldb engine sets, in both programs'
# flags: the cache, bloom bits, compression and write buffer.
leveldb_options=(--cache_size=67108864 --bloom_bits=10 --write_buffer_size=8388608)

# What each adapter says it sets (the "Table:" line of the lab's header),
# from an untimed run that only opens the database, so that a difference
# from the C program's configuration shows. LevelDB's table file size is
# the adapter's choice (its header names it when it sets one) and is
# passed to the C program alike; LevelDB's default is 2 MiB.
leveldb_c_options=("${leveldb_options[@]}")
for engine in "${engines[@]}"; do
    probe=$(mktemp -d)
    table=$("$lab" --engine="$engine" --benchmarks=stats --num=1 --progress=0 --compression_type=none \
        --db="$probe/db" 2>/dev/null | sed -n 's/^Table: *//p')
    rm -rf "$probe"
    echo "$engine adapter: $table"
    if [ "$engine" = leveldb ]; then
        mib=$(sed -n 's/.*max_file_size \([0-9]*\) MiB.*/\1/p' <<<"$table")
        if [ -n "$mib" ]; then
            leveldb_c_options+=(--max_file_size=$((mib << 20)))
        fi
        echo "leveldb_bench: ${leveldb_c_options[*]}"
    fi
done

echo "$state"
echo "keys: $num, rounds: $rounds, engines: ${engines[*]}"

results=$(mktemp)
dir=""
trap 'rm -rf "$results" ${dir:+"$dir"}' EXIT

# Runs one side ("c" or "lab") of `engine` in `dir`; prints its lines and
# records each benchmark's ops/sec (and found counts) in $results.
run_side() {
    local engine=$1 side=$2 round=$3 dir=$4
    local cmd
    if [ "$side" = c ]; then
        cmd=("$bin/${engine}_bench" --num="$num" --seed=0 --db="$dir/c")
        [ "$engine" = leveldb ] && cmd+=("${leveldb_c_options[@]}")
        echo "-- ${engine}_bench (round $round)"
    else
        cmd=("$lab" "${lab_common[@]}" --engine="$engine" --compression_type=none --db="$dir/lab")
        [ "$engine" = leveldb ] && cmd+=("${leveldb_options[@]}")
        echo "-- spinney-bench --engine=$engine (round $round)"
    fi
    if ! "${cmd[@]}" >"$dir/$side.out" 2>"$dir/$side.err"; then
        echo "fairness-peers: ${cmd[*]} failed:" >&2
        cat "$dir/$side.err" >&2
        exit 1
    fi
    local lines
    lines=$(grep -E '^(fillrandom|overwrite|readrandom) ' "$dir/$side.out")
    echo "$lines"
    echo "$lines" | awk -v e="$engine" -v s="$side" '{
        ops = ""; found = ""; total = ""
        for (i = 1; i <= NF; i++) {
            if ($i == "ops/sec;") ops = $(i - 1)
            if ($i == "of" && $(i + 2) == "found)") { found = substr($(i - 1), 2); total = $(i + 1) }
        }
        print e, s, $1, ops, found, total
    }' >>"$results"
}

for round in $(seq "$rounds"); do
    for engine in "${engines[@]}"; do
        dir=$(mktemp -d)
        if [ $((round % 2)) -eq 1 ]; then
            run_side "$engine" c "$round" "$dir"
            run_side "$engine" lab "$round" "$dir"
        else
            run_side "$engine" lab "$round" "$dir"
            run_side "$engine" c "$round" "$dir"
        fi
        rm -rf "$dir"
    done
done

# The medians (the mean of the middle two for an even count of rounds).
median() {
    sort -n | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "-"; exit }
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2
    }'
}
echo
echo "medians of $rounds round(s), $num keys, ops/sec:"
printf '%-8s %-11s %12s %12s %7s  %s\n' engine benchmark "C program" lab "lab/C" "found (C, lab)"
for engine in "${engines[@]}"; do
    for bench in fillrandom overwrite readrandom; do
        c=$(awk -v e="$engine" -v b="$bench" '$1 == e && $2 == "c" && $3 == b { print $4 }' "$results" | median)
        l=$(awk -v e="$engine" -v b="$bench" '$1 == e && $2 == "lab" && $3 == b { print $4 }' "$results" | median)
        ratio=$(awk -v c="$c" -v l="$l" 'BEGIN { if (c > 0) printf "%.2f", l / c; else print "-" }')
        found=""
        if [ "$bench" = readrandom ]; then
            found=$(for side in c lab; do
                awk -v e="$engine" -v s="$side" '$1 == e && $2 == s && $3 == "readrandom" && $6 > 0 {
                    f += $5; t += $6 } END { if (t > 0) printf "%.1f%% ", 100 * f / t }' "$results"
            done)
        fi
        printf '%-8s %-11s %12s %12s %7s  %s\n' "$engine" "$bench" "$c" "$l" "$ratio" "$found"
    done
done
