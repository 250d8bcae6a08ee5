#!/usr/bin/env bash
# Peer benchmark: sgp fit (default settings) against GPflow and GPy FITC on
# the same CSVs, same M, 2 threads each, alternating. Not run by CI.
#   bash bench/peers/run.sh [--rounds R] [--iters N] [--only sgp,gpflow,gpy]
# PEERS_VENV overrides the virtualenv location (default bench/peers/.venv).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${PEERS_VENV:-$here/.venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import GPy, gpflow" 2>/dev/null; then
    echo "setting up $venv (TensorFlow is large: a few minutes)" >&2
    python3 -m venv "$venv" || { echo "run.sh: could not create a virtualenv at $venv" >&2; exit 1; }
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt" ||
        { echo "run.sh: pip install -r requirements.txt failed" >&2; exit 1; }
fi
(cd "$root" && cargo build --release --quiet -p sgp-cli)
threads="${PEERS_THREADS:-2}"
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads"
export RAYON_NUM_THREADS="$threads" TF_NUM_INTRAOP_THREADS="$threads" TF_NUM_INTEROP_THREADS=1
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONWARNINGS=ignore
exec "$venv/bin/python" "$here/run_peers.py" --sgp "$root/target/release/sgp" "$@"
