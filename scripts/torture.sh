#!/usr/bin/env bash
# The torture runs of docs/durability.md, each ending in one row of a table:
# part, count, violations.
#
#   scripts/torture.sh --quick   real processes killed: 30 per durability
#                                mode; 2,000 byte flips and piece swaps
#                                (about a minute; CI runs it)
#   scripts/torture.sh --long    1,000 kills per mode; 100,000 flips; the
#                                crash, fault, corruption and model suites
#                                (5,000 shrinking model sequences);
#                                every fuzz target for 10 minutes (needs the
#                                nightly toolchain; cargo-fuzz is installed
#                                if missing)
#
# SEED=S picks the seed of the kills (default 1). Exits non-zero if any part
# found a violation or failed.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:---quick}
case "$mode" in
--quick) kills=30 flips=2000 ;;
--long) kills=1000 flips=100000 ;;
*)
    echo "usage: scripts/torture.sh [--quick|--long]" >&2
    exit 2
    ;;
esac
seed=${SEED:-1}
rows=()
failed=0

cargo build --quiet --release --locked -p spinney-stress
for durability in full normal off; do
    out=$(target/release/spinney-stress --kills "$kills" --seed "$seed" \
        --durability "$durability" 2>/tmp/spinney-torture-stress.err) || failed=1
    echo "$out"
    tail -5 /tmp/spinney-torture-stress.err >&2 || true
    # "kills: N, violations: V, reopen failures: F (...)"
    k=$(sed -nE 's/^kills: ([0-9]+).*/\1/p' <<<"$out")
    v=$(sed -nE 's/.*violations: ([0-9]+).*/\1/p' <<<"$out")
    f=$(sed -nE 's/.*reopen failures: ([0-9]+).*/\1/p' <<<"$out")
    rows+=("$(printf '%-34s %12s %12s' "kills, durability $durability" "${k:-?}" "$((${v:-1} + ${f:-1}))")")
done

out=$(target/release/spinney-stress --flips "$flips" --seed "$seed" \
    2>/tmp/spinney-torture-flips.err) || failed=1
echo "$out"
tail -5 /tmp/spinney-torture-flips.err >&2 || true
# "flips: N, detected: D (X not as Corruption), harmless: H, violations: V (...)"
n=$(sed -nE 's/^flips: ([0-9]+).*/\1/p' <<<"$out")
v=$(sed -nE 's/.*violations: ([0-9]+).*/\1/p' <<<"$out")
rows+=("$(printf '%-34s %12s %12s' "byte flips and piece swaps" "${n:-?}" "${v:-?}")")

if [ "$mode" = --long ]; then
    # Each simulated power loss of the suites appends a byte here.
    export SPINNEY_CRASH_COUNT_FILE=/tmp/spinney-torture-crashes
    # The shrinking model test runs 5,000 sequences (256 in CI).
    export PROPTEST_CASES=5000
    rm -f "$SPINNEY_CRASH_COUNT_FILE"
    suites_failed=0
    for suite in crash_commit crash_flush_compaction crash_checkpoint crash_manifest_roll \
        crash_recovery kill_process corruption boundaries io_errors model model_shrinking; do
        log=/tmp/spinney-torture-$suite.log
        status=0
        cargo test --quiet --release --locked -p spinney --test "$suite" >"$log" 2>&1 || status=$?
        passed=$(grep -oE '[0-9]+ passed' "$log" | awk '{ s += $1 } END { print s + 0 }')
        [ "$status" -eq 0 ] || failed=1
        [ "$status" -eq 0 ] || suites_failed=1
        rows+=("$(printf '%-34s %12s %12s' "suite $suite (tests)" "${passed:-0}" "$([ "$status" -eq 0 ] && echo 0 || echo "FAILED")")")
    done
    images=$(stat -c %s "$SPINNEY_CRASH_COUNT_FILE" 2>/dev/null || echo 0)
    rows+=("$(printf '%-34s %12s %12s' "crash images checked (suites)" "$images" "$suites_failed")")
    unset SPINNEY_CRASH_COUNT_FILE PROPTEST_CASES
    status=0
    fuzz_out=$(scripts/fuzz.sh 600) || status=$?
    echo "$fuzz_out"
    [ "$status" -eq 0 ] || failed=1
    while read -r target runs crashes _; do
        [ "$target" = target ] && continue
        rows+=("$(printf '%-34s %12s %12s' "fuzz $target (executions)" "$runs" "$crashes")")
    done <<<"$fuzz_out"
fi

echo
printf '%-34s %12s %12s\n' part count violations
printf '%s\n' "${rows[@]}"
exit "$failed"
