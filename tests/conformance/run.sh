#!/usr/bin/env bash
# Runs the public KQL conformance corpus (corpus/, kept in the repository) against a freshly started
# `trawl serve`, through its gateway (`/v1/rest/query` with the bootstrap admin token), and
# fails when fewer core cases pass than the floor in floor.txt, or fewer of all cases (geo, graph
# and plugins included) than the floor in floor-all.txt.
# Usage: TRAWL_BIN=path/to/trawl tests/conformance/run.sh [extra run.py arguments]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
corpus_dir="${TRAWL_CORPUS_DIR:-$here/corpus}"
if [ ! -f "$corpus_dir/public.jsonl" ]; then
  echo "conformance: corpus not found at $corpus_dir (set TRAWL_CORPUS_DIR)" >&2
  exit 2
fi
: "${TRAWL_BIN:?set TRAWL_BIN to the trawl binary}"
floor="$(tr -d '[:space:]' < "$here/floor.txt")"
floor_all="$(tr -d '[:space:]' < "$here/floor-all.txt")"

workdir="$(mktemp -d)"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
gateway_port="$(port)"
"$TRAWL_BIN" serve --data-dir "$workdir/data" --gateway-bind "127.0.0.1:$gateway_port" \
  --query-bind "127.0.0.1:$(port)" --operator-bind "127.0.0.1:$(port)" --meta-bind "127.0.0.1:$(port)" \
  --otlp-grpc-bind "127.0.0.1:$(port)" --otlp-http-bind "127.0.0.1:$(port)" \
  > "$workdir/server.log" 2>&1 &
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$workdir"; }
trap cleanup EXIT
for _ in $(seq 1 100); do
  if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$gateway_port/health/ready', timeout=1)" 2>/dev/null; then
    break
  fi
  sleep 0.2
done
token="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["admin_token"])' "$workdir/data/bootstrap.json")"
echo "conformance: core cases (floor $floor)"
python3 "$corpus_dir/run.py" "$corpus_dir/public.jsonl" --url "http://127.0.0.1:$gateway_port/v1/rest/query" \
  --header "Authorization: Bearer $token" --core --min-pass "$floor" "$@"
echo "conformance: all cases (floor $floor_all)"
python3 "$corpus_dir/run.py" "$corpus_dir/public.jsonl" --url "http://127.0.0.1:$gateway_port/v1/rest/query" \
  --header "Authorization: Bearer $token" --min-pass "$floor_all" "$@"
