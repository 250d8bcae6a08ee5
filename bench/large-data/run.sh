#!/usr/bin/env bash
# Scaling of `sgp fit --m 64` with the number of training rows (ridge data,
# D = 8): wall time, peak memory (maximum resident set size) and accuracy on
# 20,000 held-out rows, for 10^4 ... 10^7 rows (docs/src/large-data.md).
#
#   bench/large-data/run.sh                    # 10^4, 10^5, 10^6 rows
#   SIZES="10000 100000 1000000 10000000" bench/large-data/run.sh
#   EXTRA="--in-memory" bench/large-data/run.sh   # every row in memory
#
# The training files are prefixes of one generated file (10^7 rows is a
# 1.7 GB CSV), written to $DIR (default /tmp/sgp-large-data) and removed at
# the end unless KEEP=1. Needs /usr/bin/time. Runs niced: the machine may be
# shared. Timings are single runs: repeat them before quoting a ratio.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=${SIZES:-"10000 100000 1000000"}
DIR=${DIR:-/tmp/sgp-large-data}
EXTRA=${EXTRA:-}
M=${M:-64}
SGP=target/release/sgp

cargo build --release -q -p sgp-cli
mkdir -p "$DIR"
largest=$(printf '%s\n' $SIZES | sort -n | tail -1)
if [ ! -s "$DIR/train-$largest.csv" ]; then
    nice -n 10 "$SGP" synth --rows "$largest" --dim 8 --seed 0 > "$DIR/train-$largest.csv"
fi
nice -n 10 "$SGP" synth --rows 20000 --dim 8 --seed 1 > "$DIR/test.csv"

printf '%10s %10s %10s %10s %10s %10s %12s\n' rows seconds "peak MB" "test NLPD" RMSE "95% cover" "fitted rows"
for n in $SIZES; do
    file="$DIR/train-$n.csv"
    [ -s "$file" ] || head -n $((n + 1)) "$DIR/train-$largest.csv" > "$file"
    # shellcheck disable=SC2086
    /usr/bin/time -f '%e %M' -o "$DIR/time-$n" nice -n 10 "$SGP" --quiet fit \
        --data "$file" --m "$M" $EXTRA --out "$DIR/model-$n.blob" --json > "$DIR/fit-$n.json"
    read -r seconds kb < "$DIR/time-$n"
    "$SGP" eval --model "$DIR/model-$n.blob" --data "$DIR/test.csv" --json > "$DIR/eval-$n.json"
    python3 - "$n" "$seconds" "$kb" "$DIR/eval-$n.json" "$DIR/fit-$n.json" <<'PY'
import json, sys
n, seconds, kb, eval_path, fit_path = sys.argv[1:]
e = json.load(open(eval_path))
report = json.load(open(fit_path))["report"]
streamed = report.get("streamed")
fitted = streamed["fitted_rows"] if streamed else report["rows"]
print(f"{int(n):>10} {float(seconds):>10.1f} {int(kb) / 1024:>10.0f} {e['nlpd']:>10.4f} "
      f"{e['rmse']:>10.4f} {e['coverage_95']:>10.3f} {fitted:>12}")
PY
done
[ "${KEEP:-0}" = 1 ] || rm -f "$DIR"/train-*.csv
