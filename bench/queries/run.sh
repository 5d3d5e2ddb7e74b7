#!/usr/bin/env bash
# Query benchmark, Trawl vs DuckDB: creates or reuses the virtual environment
# $HOME/.cache/trawl-bench-venv from requirements.txt, then runs queries.py with the arguments
# given (see bench/README.md, "Query benchmark").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$HOME/.cache/trawl-bench-venv"
installed="$venv/requirements.installed"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! cmp -s "$here/requirements.txt" "$installed"; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$installed"
fi
if [ "${1:-}" = "scaling" ]; then
    shift
    exec "$venv/bin/python" "$here/scaling.py" "$@"
fi
if [ "${1:-}" = "cold" ]; then
    shift
    exec "$venv/bin/python" "$here/cold.py" "$@"
fi
if [ "${1:-}" = "live-segments" ]; then
    shift
    exec "$venv/bin/python" "$here/live.py" "$@"
fi
if [ "${1:-}" = "first-rows" ]; then
    shift
    exec "$venv/bin/python" "$here/first_rows.py" "$@"
fi
exec "$venv/bin/python" "$here/queries.py" "$@"
