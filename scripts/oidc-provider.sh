#!/usr/bin/env bash
# Installs the test OpenID Connect provider (tests/e2e/oidc: oidc-provider from npm, pinned
# by its package-lock.json) once into the tools cache and prints the directory to run
# `node provider.mjs` in. Needs Node 20 or later and npm.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/e2e/oidc"
command -v npm >/dev/null 2>&1 || { echo "scripts/oidc-provider.sh: npm is missing" >&2; exit 2; }
stamp="$(cat "$here/package-lock.json" "$here/provider.mjs" | sha256sum | cut -c1-16)"
target="${TRAWL_TOOLS_DIR:-$HOME/.cache/trawl-tools}/oidc-provider-$stamp"
if [[ ! -f "$target/.installed" ]]; then
    rm -rf "$target"
    mkdir -p "$target"
    cp "$here/package.json" "$here/package-lock.json" "$here/provider.mjs" "$target/"
    (cd "$target" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    touch "$target/.installed"
fi
echo "$target"
