#!/usr/bin/env bash
# The one test command: unit and integration tests of every crate, then the end-to-end
# tests (real OpenTelemetry SDK exporters against a running `trawl serve`, crash recovery),
# the KQL conformance corpus, and a short run of every fuzz target (fuzz/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# Build artifacts live outside the checkout so repeated runs rebuild only what changed.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/trawl-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# Each rebuild of a test binary leaves the old one behind (~450 MB each with line tables);
# a shared target directory fills the disk over many runs. Drop test and binary
# executables older than a day: cargo relinks what it still needs.
if [ -d "$CARGO_TARGET_DIR/debug/deps" ]; then
  find "$CARGO_TARGET_DIR/debug/deps" -maxdepth 1 -type f -perm -u+x \
    ! -name '*.so' ! -name '*.rlib' ! -name '*.rmeta' ! -name '*.d' -mtime +0 -delete 2>/dev/null || true
fi

# The web UI's bundle (ui/dist, embedded in the binary) must be what ui/ builds.
if [ "${TRAWL_SKIP_UI_CHECK:-0}" != "1" ]; then
  bash ui/check.sh
fi

# A throwaway PostgreSQL server for the catalog suite, which runs on SQLite and PostgreSQL
# (scripts/postgres.sh installs the server when it is missing).
pg_dir="$(mktemp -d)"
trap 'bash scripts/postgres.sh stop "$pg_dir"; rm -rf "$pg_dir"' EXIT
TRAWL_TEST_POSTGRES_URL="$(bash scripts/postgres.sh start "$pg_dir")"
export TRAWL_TEST_POSTGRES_URL

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
else
  cargo test --workspace --no-fail-fast
fi

if [ "${TRAWL_SKIP_E2E:-0}" != "1" ]; then
  # The profiling tests read profiles with `go tool pprof`, as operators do.
  if ! command -v go >/dev/null 2>&1; then
    echo "test.sh: installing golang-go (go tool pprof) for the profiling tests" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y -q golang-go || { apt-get update -q && apt-get install -y -q golang-go; }; } >/dev/null
  fi
  # The web UI's tests drive Debian's Chromium.
  if ! command -v chromium >/dev/null 2>&1; then
    echo "test.sh: installing chromium for the web UI's tests" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; } >/dev/null
  fi
  cargo build -p trawl
  TRAWL_BIN="$CARGO_TARGET_DIR/debug/trawl" bash tests/e2e/run.sh
fi

if [ "${TRAWL_SKIP_CONFORMANCE:-0}" != "1" ]; then
  cargo build -p trawl
  TRAWL_BIN="$CARGO_TARGET_DIR/debug/trawl" bash tests/conformance/run.sh
fi

if [ "${TRAWL_SKIP_BENCH:-0}" != "1" ]; then
  # Every benchmark on a tiny data set with the debug binaries, to prove bench/run-all works
  # end to end (its figures mean nothing here; real ones need release builds).
  cargo build -p trawl -p trawl-bench
  TRAWL_RELEASE_DIR="$CARGO_TARGET_DIR/debug" bash bench/run-all --tiny
fi

if [ "${TRAWL_SKIP_FUZZ:-0}" != "1" ]; then
  # A bounded run of each decoder's fuzz target (FUZZ_SECONDS each, 20 by default) so a
  # regression that panics on some input is caught; long runs: see fuzz/README.md.
  bash fuzz/run.sh
fi
