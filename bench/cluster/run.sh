#!/usr/bin/env bash
# The streamed fit of one Parquet file (ridge data, D = 8, --m 64, seed 0)
# three ways: single-process `sgp fit`, Dask on a two-worker LocalCluster
# and Spark local[2] (bench/cluster/fit_engine.py): wall time, peak memory,
# and how far each blob's predictions are from `sgp fit`'s
# (docs/src/cluster.md).
#
#   PY=/path/to/venv/bin/python bench/cluster/run.sh     # 10^5, 10^6 rows
#   SIZES="100000 1000000 10000000" bench/cluster/run.sh
#
# PY must have sgp installed (pip install ./python) with dask[dataframe],
# distributed, pyarrow and pyspark (Spark needs a Java runtime). Files go to
# $DIR (default /tmp/sgp-cluster), removed unless KEEP=1. Runs niced; single
# runs on a shared machine: repeat before quoting a ratio.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=${SIZES:-"100000 1000000"}
DIR=${DIR:-/tmp/sgp-cluster}
PY=${PY:-python3}
SGP=target/release/sgp
ENGINES=${ENGINES:-"dask spark"}

cargo build --release -q -p sgp-trainer --bin sgp
mkdir -p "$DIR"
printf '%10s %7s %8s %7s %8s %10s %10s %12s\n' rows engine "start s" "pass s" "total s" "driver MB" "worker MB" "max |dmean|"
for n in $SIZES; do
    data="$DIR/train-$n.parquet"
    if [ ! -s "$data" ]; then
        nice -n 10 "$SGP" synth --rows "$n" --dim 8 --seed 0 > "$DIR/train-$n.csv"
        "$PY" -c 'import sys, pyarrow.csv as c, pyarrow.parquet as p; p.write_table(c.read_csv(sys.argv[1]), sys.argv[2], row_group_size=65536)' \
            "$DIR/train-$n.csv" "$data"
        rm "$DIR/train-$n.csv"
    fi
    /usr/bin/time -f '%e %M' -o "$DIR/time" nice -n 10 "$SGP" --quiet fit --data "$data" \
        --m 64 --seed 0 --out "$DIR/single-$n.sgp" --json > "$DIR/single-$n.json"
    read -r seconds kb < "$DIR/time"
    "$PY" - "$n" "$seconds" "$kb" "$DIR/single-$n.json" <<'PY'
import json, sys
n, wall, kb, report = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), json.load(open(sys.argv[4]))["report"]
pass_s = report["streamed"]["pass_seconds"]
print(f"{n:>10} {'single':>7} {wall - pass_s:>8.1f} {pass_s:>7.1f} {wall:>8.1f} {kb // 1024:>10} {'-':>10} {0:>12}")
PY
    for engine in $ENGINES; do
        line=$(nice -n 10 "$PY" bench/cluster/fit_engine.py "$engine" "$data" 2 "$DIR/$engine-$n.sgp" 2>"$DIR/$engine-$n.log" | tail -1)
        "$PY" - "$line" "$DIR/single-$n.sgp" "$DIR/$engine-$n.sgp" "$data" <<'PY'
import json, sys
import numpy as np, pyarrow.parquet as pq, sgp
r = json.loads(sys.argv[1])
a, b = sgp.Model.load(sys.argv[2]), sgp.Model.load(sys.argv[3])
X = pq.read_table(sys.argv[4]).slice(0, 2000).to_pandas()
d = np.max(np.abs(a.predict(X)[0] - b.predict(X)[0]))
print(f"{r['rows']:>10} {r['engine']:>7} {r['start_s']:>8} {r['pass_s']:>7} {r['total_s']:>8} {r['driver_mb']:>10} {r['worker_mb']:>10} {d:>12.2e}")
PY
    done
done
[ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
