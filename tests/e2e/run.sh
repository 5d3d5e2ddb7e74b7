#!/usr/bin/env bash
# End-to-end tests: real OpenTelemetry SDK exporters against a real `trawl serve`.
#
#   CARGO_TARGET_DIR=$HOME/.cache/trawl-target cargo build -p trawl
#   TRAWL_BIN=$HOME/.cache/trawl-target/debug/trawl tests/e2e/run.sh [pytest arguments]
#   (e.g. -k crash, or tests/e2e/test_health.py to run one file; paths are relative to the repo root)
#
# The virtual environment lives in ${TRAWL_E2E_VENV:-$HOME/.cache/trawl-e2e-venv} and is
# re-created when requirements.txt (or the Python version) changes. Python: $TRAWL_E2E_PYTHON,
# else python3.11, else python3 (3.10 or later). TRAWL_E2E_SEED replays the crash tests.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${TRAWL_E2E_VENV:-$HOME/.cache/trawl-e2e-venv}"
requirements="$here/requirements.txt"

die() {
    echo "tests/e2e/run.sh: $*" >&2
    exit 2
}

if [[ -z "${TRAWL_BIN:-}" ]]; then
    die "TRAWL_BIN is not set; build the server (CARGO_TARGET_DIR=\$HOME/.cache/trawl-target cargo build -p trawl) and set TRAWL_BIN=\$HOME/.cache/trawl-target/debug/trawl"
fi
if [[ ! -f "$TRAWL_BIN" || ! -x "$TRAWL_BIN" ]]; then
    die "TRAWL_BIN=$TRAWL_BIN is not an executable file"
fi
TRAWL_BIN="$(cd "$(dirname "$TRAWL_BIN")" && pwd)/$(basename "$TRAWL_BIN")"
export TRAWL_BIN

python="${TRAWL_E2E_PYTHON:-}"
if [[ -z "$python" ]]; then
    for candidate in python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1; then
            python="$candidate"
            break
        fi
    done
fi
[[ -n "$python" ]] || die "no python3.11 or python3 on PATH (or set TRAWL_E2E_PYTHON)"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "$python is older than 3.10"

# The stamp: requirements.txt and the interpreter that built the environment.
want="$("$python" - "$requirements" <<'PY'
import hashlib, sys
digest = hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest()
print(f"{digest} python-{sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}")
PY
)"
stamp="$venv/.trawl-e2e-requirements"

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off
if [[ ! -x "$venv/bin/python" || ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "tests/e2e/run.sh: creating $venv" >&2
    if [[ -e "$venv" && ! -f "$venv/pyvenv.cfg" ]] && [[ -n "$(ls -A "$venv" 2>/dev/null)" ]]; then
        die "$venv exists and is not a virtual environment; not deleting it (set TRAWL_E2E_VENV)"
    fi
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    if ! "$python" -m venv "$venv" >/dev/null 2>&1; then
        # Without ensurepip (Debian's python3-venv missing): bootstrap virtualenv with pip.
        rm -rf "$venv"
        bootstrap="$(mktemp -d)"
        trap 'rm -rf "$bootstrap"' EXIT
        "$python" -m pip install --quiet --target "$bootstrap" virtualenv==21.15.8
        PYTHONPATH="$bootstrap" "$python" -m virtualenv --quiet "$venv"
        rm -rf "$bootstrap"
        trap - EXIT
    fi
    "$venv/bin/python" -m pip install --quiet -r "$requirements"
    echo "$want" >"$stamp"
fi

# A real S3-compatible server for the object-storage and cluster tests (s3s-fs: S3 over a
# directory), installed once into the tools cache.
TRAWL_S3_SERVER_BIN="$(bash "$repo/scripts/s3s-fs.sh")" || die "cannot install s3s-fs"
export TRAWL_S3_SERVER_BIN

# A real OpenID Connect provider for the SSO browser tests (oidc-provider from npm).
if command -v npm >/dev/null 2>&1; then
    TRAWL_OIDC_PROVIDER_DIR="$(bash "$repo/scripts/oidc-provider.sh")" || die "cannot install the test OpenID provider"
    export TRAWL_OIDC_PROVIDER_DIR
fi

cd "$repo"
export PYTHONDONTWRITEBYTECODE=1
# Arguments go to pytest; the whole of tests/e2e runs unless a test path or node id is given.
targets=(tests/e2e)
for argument in "$@"; do
    if [[ -e "${argument%%::*}" ]]; then
        targets=()
        break
    fi
done
# -p no:cacheprovider: no .pytest_cache in the repository.
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider ${targets[@]+"${targets[@]}"} "$@" </dev/null
