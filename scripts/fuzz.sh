#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets, one per decoder of bytes read
# from disk) for SECONDS each, one after the other on one core, starting
# from the seeds the engine's encoders make, and ends with a table: target,
# executions, crashes. Needs the nightly toolchain and cargo-fuzz (installed
# here if missing). A crash leaves its input in fuzz/artifacts/<target>/;
# `cargo +nightly fuzz run <target> <file>` replays it.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     (default: 600 s, every target)
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-600}
shift || true
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
cargo run --quiet --release --bin write_seeds
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(log_segment batch_record manifest_edit sst_block sst_filter sst_footer
        sst_file btree_page btree_header free_map crash_ops)
fi
mkdir -p logs
rows=()
failed=0
for t in "${targets[@]}"; do
    log="logs/$t.log"
    status=0
    cargo +nightly fuzz run "$t" -- -max_total_time="$seconds" -rss_limit_mb=4096 \
        -max_len=65536 -timeout=10 >"$log" 2>&1 || status=$?
    runs=$(grep -oE 'Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' | tail -1 || true)
    if [ -z "$runs" ]; then
        runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
    fi
    crashes=$(find "artifacts/$t" -type f 2>/dev/null | wc -l)
    if [ "$status" -ne 0 ]; then
        failed=1
    fi
    rows+=("$(printf '%-14s %14s %8s %s' "$t" "${runs:-?}" "$crashes" "$([ "$status" -eq 0 ] && echo ok || echo "FAILED (see fuzz/$log)")")")
done
printf '%-14s %14s %8s %s\n' target executions crashes result
printf '%s\n' "${rows[@]}"
exit "$failed"
