#!/usr/bin/env bash
# The streamed fit of a directory of $FILES Parquet files (default 20;
# ridge data, D = 8, file k drawn by `sgp synth --seed k`; --m 64, seed 0)
# three ways: single-process `sgp fit --data DIR`, Dask on a two-worker
# LocalCluster and Spark local[2] (bench/cluster/fit_engine.py): wall
# time, peak memory, whether each blob is `sgp fit`'s byte for byte and
# how far its predictions are (docs/src/cluster.md).
#
#   PY=/path/to/venv/bin/python bench/cluster/run.sh     # 10^5, 10^6 rows
#   SIZES="100000 1000000 10000000" bench/cluster/run.sh  # 10^7: 720 MB
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
FILES=${FILES:-20}

cargo build --release -q -p sgp-cli
mkdir -p "$DIR"
printf '%10s %7s %8s %7s %8s %10s %10s %12s %6s\n' rows engine "start s" "pass s" "total s" "driver MB" "worker MB" "max |dmean|" bytes
for n in $SIZES; do
    data="$DIR/train-$n"
    if [ ! -d "$data" ]; then
        mkdir -p "$data.tmp"
        for k in $(seq 0 $((FILES - 1))); do
            nice -n 10 "$SGP" synth --rows $((n / FILES)) --dim 8 --seed "$k" \
                --parquet "$data.tmp/part-$(printf %05d "$k").parquet"
        done
        mv "$data.tmp" "$data"
    fi
    /usr/bin/time -f '%e %M' -o "$DIR/time" nice -n 10 "$SGP" --quiet fit --data "$data" \
        --m 64 --seed 0 --out "$DIR/single-$n.sgp" --json > "$DIR/single-$n.json"
    read -r seconds kb < "$DIR/time"
    "$PY" - "$n" "$seconds" "$kb" "$DIR/single-$n.json" <<'PY'
import json, sys
n, wall, kb, report = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), json.load(open(sys.argv[4]))["report"]
pass_s = report["streamed"]["pass_seconds"]
print(f"{n:>10} {'single':>7} {wall - pass_s:>8.1f} {pass_s:>7.1f} {wall:>8.1f} {kb // 1024:>10} {'-':>10} {0:>12} {'-':>6}")
PY
    for engine in $ENGINES; do
        line=$(nice -n 10 "$PY" bench/cluster/fit_engine.py "$engine" "$data" 2 "$DIR/$engine-$n.sgp" 2>"$DIR/$engine-$n.log" | tail -1)
        "$PY" - "$line" "$DIR/single-$n.sgp" "$DIR/$engine-$n.sgp" "$data" <<'PY'
import json, sys
import numpy as np, pyarrow.parquet as pq, sgp
from sgp.cluster import parquet_files
r = json.loads(sys.argv[1])
a, b = sgp.Model.load(sys.argv[2]), sgp.Model.load(sys.argv[3])
X = pq.read_table(parquet_files(sys.argv[4])[0]).slice(0, 2000).to_pandas()
d = np.max(np.abs(a.predict(X)[0] - b.predict(X)[0]))
same = open(sys.argv[2], "rb").read() == open(sys.argv[3], "rb").read()
print(f"{r['rows']:>10} {r['engine']:>7} {r['start_s']:>8} {r['pass_s']:>7} {r['total_s']:>8} {r['driver_mb']:>10} {r['worker_mb']:>10} {d:>12.2e} {'same' if same else 'differ':>6}")
PY
    done
done
[ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
