#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for a bounded time each and fails when one finds
# an input that panics, aborts, runs out of memory or hangs.
#
#   fuzz/run.sh                 # every target, 20 s each (what the test command runs in CI)
#   FUZZ_SECONDS=600 fuzz/run.sh kql_parse vendor_series_v3   # long runs of some targets
#
# Settings (environment): FUZZ_SECONDS (per target, default 20), FUZZ_RELEASE=1 (optimized
# build: slower to build, several times more executions per second; use it for long runs).
#
# cargo-fuzz is installed once into $HOME/.cache/trawl-tools. The targets build with the stable
# toolchain and no sanitizer (`-s none`): our code forbids `unsafe`, so what fuzzing hunts is
# panics (with overflow checks and debug assertions on), unbounded memory (-rss_limit_mb) and
# hangs (-timeout). Seeds are in fuzz/corpus/<target> (made from real clients, see
# fuzz/seeds/README.md); the growing corpus lives in $HOME/.cache/trawl-fuzz-corpus; an input
# that fails is saved under fuzz/artifacts/<target>/ and becomes a regression test.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="${TRAWL_TOOLS_DIR:-$HOME/.cache/trawl-tools}"
export PATH="$tools/bin:$PATH"
export CARGO_TARGET_DIR="${TRAWL_FUZZ_TARGET_DIR:-$HOME/.cache/trawl-fuzz-target}"
corpus_cache="${TRAWL_FUZZ_CORPUS_DIR:-$HOME/.cache/trawl-fuzz-corpus}"
seconds="${FUZZ_SECONDS:-20}"
cargo_fuzz_version="0.13.2"

if ! cargo fuzz --version 2>/dev/null | grep -q "$cargo_fuzz_version"; then
  echo "fuzz: installing cargo-fuzz $cargo_fuzz_version into $tools" >&2
  cargo install --quiet --locked --root "$tools" cargo-fuzz --version "$cargo_fuzz_version" >&2
fi

cd "$here"
profile=(--dev)
if [ "${FUZZ_RELEASE:-0}" = "1" ]; then
  profile=(--release --debug-assertions)
fi
mapfile -t all < <(cargo fuzz list)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${all[@]}")
fi
echo "fuzz: building ${#targets[@]} targets" >&2
cargo fuzz build -s none "${profile[@]}" >&2

passed=0
failed=0
for target in "${targets[@]}"; do
  work="$corpus_cache/$target"
  seeds="$here/corpus/$target"
  mkdir -p "$work" "$seeds" "$here/artifacts/$target"
  log="$(mktemp)"
  started=$(date +%s)
  # Seconds one input may take.
  timeout=10
  if cargo fuzz run -s none "${profile[@]}" "$target" "$work" "$seeds" -- \
      -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout="$timeout" \
      -max_len=262144 -print_final_stats=1 \
      -artifact_prefix="$here/artifacts/$target/" >"$log" 2>&1; then
    runs="$(grep -ho 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s += $2} END {print s + 0}')"
    echo "fuzz: $target ok: $runs executions in $(( $(date +%s) - started )) s, corpus $(ls "$work" | wc -l) inputs"
    passed=$((passed + 1))
  else
    echo "fuzz: $target FAILED; the input is in fuzz/artifacts/$target/:"
    grep -E "panicked|ERROR|SUMMARY|Test unit written" "$log" | head -20
    failed=$((failed + 1))
  fi
  rm -f "$log"
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
