#!/usr/bin/env bash
# Builds the Python package from this checkout into a fresh virtualenv (as a
# user's `pip install ./python` does, scikit-learn from PyPI), runs mypy over
# it and its tests, the docstrings' examples among them. Used by .ci/run;
# run it by hand the same way from the repository root. Set CARGO_TARGET_DIR
# to reuse a target directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

python=${PYTHON:-python3}
command -v "$python" >/dev/null || { echo "python3 not found" >&2; exit 1; }
"$python" -c 'import sys; assert sys.version_info >= (3, 9), sys.version' \
    || { echo "the sgp package needs Python >= 3.9" >&2; exit 1; }
venv=$(mktemp -d "${TMPDIR:-/tmp}/sgp-python-ci.XXXXXX")
trap 'rm -rf "$venv"' EXIT
if ! "$python" -m venv "$venv" 2>/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv
    "$python" -m venv "$venv"
fi
started=$(date +%s)
"$venv/bin/pip" install -q "./python[test]"
echo "built and installed the sgp package in $(( $(date +%s) - started )) s"
# The streamed fit on a two-process Dask LocalCluster (tests/test_dask.py).
"$venv/bin/pip" install -q "dask[dataframe]" distributed

# The annotations and the compiled module's stub agree with the code.
"$venv/bin/pip" install -q mypy
"$venv/bin/mypy" --ignore-missing-imports --no-incremental -p sgp

# The CLI the tests compare blobs and exports with (built by cargo test).
cli="${CARGO_TARGET_DIR:-$PWD/target}/release/sgp"
[ -x "$cli" ] || cargo build --release -q -p sgp-cli
# From the tests' folder, so that `import sgp` is the installed package.
cd python/tests
SGP_CLI="$cli" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    --doctest-modules --pyargs sgp .
