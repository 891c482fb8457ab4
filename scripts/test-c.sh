#!/usr/bin/env bash
# The C API (crates/spinney-c): builds libspinney_c, then compiles with cc,
# through the pkg-config file the build writes, the test program that calls
# every function of include/spinney.h and the example of docs/bindings.md,
# and runs them under AddressSanitizer and UndefinedBehaviorSanitizer
# (with LeakSanitizer: a handle or a buffer not freed fails the run).
# Needs cc (gcc or clang) and pkg-config.
set -euo pipefail
cd "$(dirname "$0")/.."
# The dev profile: scripts/test-python.sh's maturin build, next, reuses its
# engine.
cargo build -p spinney-c --locked
target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
export PKG_CONFIG_PATH="$target_dir/debug/pkgconfig"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-std=c11 -Wall -Wextra -Werror -g -fsanitize=address,undefined -fno-omit-frame-pointer)
# shellcheck disable=SC2046 # pkg-config's output is words on purpose
cc "${flags[@]}" crates/spinney-c/tests/c/test_api.c $(pkg-config --cflags --libs spinney) -o "$work/test_api"
# shellcheck disable=SC2046
cc "${flags[@]}" crates/spinney-c/examples/hello.c $(pkg-config --cflags --libs spinney) -o "$work/hello"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1
mkdir "$work/test" "$work/hello-dir"
"$work/test_api" "$work/test"
(cd "$work/hello-dir" && "$work/hello") > "$work/hello.out"
diff -u crates/spinney-c/examples/hello.out "$work/hello.out"
# The example as README.md and docs/bindings.md show it: their first C block.
for doc in README.md docs/bindings.md; do
    awk '/^```c$/ {on = 1; next} on && /^```$/ {exit} on {print}' "$doc" > "$work/shown.c"
    diff -u crates/spinney-c/examples/hello.c "$work/shown.c" || {
        echo "test-c.sh: the C example in $doc is not crates/spinney-c/examples/hello.c" >&2
        exit 1
    }
done
echo "test-c.sh: the C test program and the example ran clean under ASan, LSan and UBSan"
