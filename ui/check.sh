#!/usr/bin/env bash
# Checks that ui/dist (checked in, embedded in the binary) is what `npm ci && npm run build`
# makes from ui/: builds into a scratch directory and compares every file. After changing
# ui/src, run `npm ci && npm run build` in ui/ and commit ui/dist.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
command -v npm >/dev/null 2>&1 || { echo "ui/check.sh: npm is missing (Node 20 or later)" >&2; exit 2; }
npm ci --no-audit --no-fund --loglevel=error >/dev/null
npx tsc --noEmit -p .
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
npx vite build --outDir "$scratch/dist" --emptyOutDir --logLevel error
if ! diff -r "$scratch/dist" dist >/dev/null; then
    echo "ui/check.sh: ui/dist is not what ui/ builds; run 'npm ci && npm run build' in ui/ and commit ui/dist:" >&2
    diff -rq "$scratch/dist" dist >&2 || true
    exit 1
fi
echo "ui/check.sh: ui/dist is up to date ($(du -sh dist | cut -f1))"
