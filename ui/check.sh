#!/usr/bin/env bash
# Checks that ui/dist (checked in, embedded in the binary) is what `npm ci && npm run build`
# makes from ui/, and that src/gen is what `npm run gen` makes from the .proto files: both are
# made again in a scratch directory and compared file by file. After changing ui/src, run
# `npm ci && npm run build` in ui/ and commit ui/dist; after changing meta.proto, `npm run gen`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
command -v npm >/dev/null 2>&1 || { echo "ui/check.sh: npm is missing (Node 20 or later)" >&2; exit 2; }
npm ci --no-audit --no-fund --loglevel=error >/dev/null
npx tsc --noEmit -p .
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
npx buf generate --template '{"version":"v2","plugins":[{"local":"protoc-gen-es","out":"'"$scratch"'/gen","opt":"target=ts"}]}' \
    ../crates/proto/proto --path ../crates/proto/proto/trawl/meta/v1/meta.proto
if ! diff -r "$scratch/gen" src/gen >/dev/null; then
    echo "ui/check.sh: ui/src/gen is not what meta.proto makes; run 'npm run gen' in ui/ and commit it:" >&2
    diff -rq "$scratch/gen" src/gen >&2 || true
    exit 1
fi
npx vite build --outDir "$scratch/dist" --emptyOutDir --logLevel error
if ! diff -r "$scratch/dist" dist >/dev/null; then
    echo "ui/check.sh: ui/dist is not what ui/ builds; run 'npm ci && npm run build' in ui/ and commit ui/dist:" >&2
    diff -rq "$scratch/dist" dist >&2 || true
    exit 1
fi
echo "ui/check.sh: ui/dist is up to date ($(du -sh dist | cut -f1))"
