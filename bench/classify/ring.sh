#!/usr/bin/env bash
# The default svgp classifier (`sgp fit --model svgp --m 64`) on the ring
# of `sgp synth --classes ring` (two relevant inputs of six, 5% flipped
# labels: Bayes error 5%) at several sizes and seeds: test error and log
# loss on 20,000 held-out rows, and fit seconds.
#
#   bash bench/classify/ring.sh [OUT_DIR]          # default /tmp/sgp-ring-bench
#   SIZES="2000 100000" SEEDS="1 2" bash bench/classify/ring.sh
#
# Needs target/release/sgp (cargo build --release -p sgp-trainer).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
SGP="${SGP:-$HERE/../../target/release/sgp}"
OUT="${1:-/tmp/sgp-ring-bench}"
SIZES="${SIZES:-2000 5000 20000 100000}"
SEEDS="${SEEDS:-1 2 3}"
mkdir -p "$OUT"
echo "| rows | seed | test error | log loss | fit s |"
echo "|---:|---:|---:|---:|---:|"
for seed in $SEEDS; do
  test="$OUT/test-$seed.csv"
  # Held-out rows: the same ring from a seed no training set uses.
  [ -f "$test" ] || "$SGP" synth --classes ring --rows 20000 --seed $((seed + 1000000)) >"$test"
  for rows in $SIZES; do
    train="$OUT/train-$rows-$seed.csv"
    [ -f "$train" ] || "$SGP" synth --classes ring --rows "$rows" --seed "$seed" >"$train"
    start=$(date +%s.%N)
    "$SGP" -q fit --data "$train" --model svgp --m 64 --out "$OUT/ring-$rows-$seed.sgp" >/dev/null
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    scores=$("$SGP" -q eval --model "$OUT/ring-$rows-$seed.sgp" --data "$test" --json)
    echo "$scores" | python3 -c '
import json, sys
s = json.load(sys.stdin)
rows, seed, seconds = sys.argv[1:4]
err, loss = 100 * s["error_rate"], s["log_loss"]
print(f"| {rows} | {seed} | {err:.2f}% | {loss:.3f} | {float(seconds):.1f} |")
' "$rows" "$seed" "$seconds"
  done
done
