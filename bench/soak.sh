#!/usr/bin/env bash
# Soak: ingest and query at a steady rate for SOAK_SECONDS (default 600) against a release
# build and report resident memory (start, peak, end, slope over the second half in MiB per
# minute). The test command runs a one-minute version (tests/e2e/test_soak.py).
#
#   CARGO_TARGET_DIR=$HOME/.cache/trawl-release nice -n 19 cargo build --release -p trawl
#   TRAWL_BIN=$HOME/.cache/trawl-release/release/trawl bench/soak.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
: "${TRAWL_BIN:?set TRAWL_BIN to a (release) trawl binary}"
venv="${TRAWL_E2E_VENV:-$HOME/.cache/trawl-e2e-venv}"
if [ ! -x "$venv/bin/python" ]; then
  echo "bench/soak.sh: run tests/e2e/run.sh once to make $venv" >&2
  exit 2
fi
cd "$repo/tests/e2e"
exec "$venv/bin/python" soak.py --binary "$TRAWL_BIN" --seconds "${SOAK_SECONDS:-600}" "$@"
