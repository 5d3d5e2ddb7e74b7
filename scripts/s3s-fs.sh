#!/usr/bin/env bash
# Prints the path of s3s-fs, a real S3-compatible server over a directory (used by the
# object-storage tests and scripts/cluster.sh), installing it with `cargo install` into the
# tools cache (TRAWL_TOOLS_DIR, default ~/.cache/trawl-tools) the first time.
set -euo pipefail
tools="${TRAWL_TOOLS_DIR:-$HOME/.cache/trawl-tools}"
version="0.14.1"
if ! "$tools/bin/s3s-fs" --version 2>/dev/null | grep -q "$version"; then
    echo "s3s-fs.sh: installing s3s-fs $version into $tools" >&2
    cargo install --quiet --locked --root "$tools" s3s-fs --version "$version" --features binary >&2 || {
        echo "s3s-fs.sh: cannot install s3s-fs (cargo install s3s-fs --features binary)" >&2
        exit 1
    }
fi
echo "$tools/bin/s3s-fs"
