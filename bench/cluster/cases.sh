#!/usr/bin/env bash
# Issue 50's done-when, measured: four streamed fits (`--m 64 --seed 0`)
# on Parquet directories of 10^5 and 10^6 rows (and 10^7 of the ring),
# single-process `sgp fit --data DIR` against Dask on a two-worker
# LocalCluster (bench/cluster/fit_engine.py): wall seconds, peak resident
# MB, held-out score on 20,000 rows of another seed, and whether Dask's
# blob is `sgp fit`'s byte for byte (docs/src/cluster.md, "Every family
# at 10^5, 10^6 and 10^7 rows").
#
#   PY=/path/to/venv/bin/python bench/cluster/cases.sh          # 10^5, 10^6
#   BIG=1 SIZES=10000000 ENGINES=single PY=... bench/cluster/cases.sh  # 10^7 ring
#   CASES="ring three" SIZES=100000 PY=... bench/cluster/cases.sh
#
# Cases: ring (two classes, 6 inputs: `sgp synth --classes ring`), three
# (three classes: bench/classify/three_bands.py's bands of the same
# rows), matern32 (the ridge in 3 inputs, `--kernel matern32`), pendulum
# (two targets, `--target dtheta,domega`). Part k of a case holds 10^5
# rows drawn with seed k + 1; the n-row set is its first n / 10^5 parts
# (hard links), so the 10^5-row set is the first 10^5 rows of the 10^6.
# PY must have sgp (pip install ./python), dask[dataframe], distributed
# and pyarrow. Files go to $DIR (default /tmp/sgp-cases; 10^7 rows: 4 GB),
# kept. Runs one fit at a time, niced; prints a Markdown table and the
# load average before each fit.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SIZES=${SIZES:-"100000 1000000"}
CASES=${CASES:-"ring three matern32 pendulum"}
ENGINES=${ENGINES:-"single dask"}
DIR=${DIR:-/tmp/sgp-cases}
PY=${PY:-python3}
SGP=${SGP:-$ROOT/target/release/sgp}
PART=100000
[ "${BIG:-0}" = 1 ] && SIZES="$SIZES 10000000" && CASES=${BIG_CASES:-ring}
[ -x "$SGP" ] || cargo build --release -q -p sgp-cli
mkdir -p "$DIR"

# The case's rows: `synth ARGS` for part k (seed k + 1) and the test set.
synth_args() {
    case $1 in
        ring | three) echo "--classes ring" ;;
        matern32) echo "--dim 3" ;;
        pendulum) echo "--system pendulum" ;;
    esac
}
fit_args() {
    case $1 in
        ring) echo "--model svgp" ;;
        three) echo "--model svgp --task classification" ;;
        matern32) echo "--kernel matern32" ;;
        pendulum) echo "--target dtheta,domega" ;;
    esac
}
engine_args() {
    case $1 in
        ring | three) echo "classify" ;;
        matern32) echo "y matern32" ;;
        pendulum) echo "dtheta,domega" ;;
    esac
}

part() { # case k -> path of part k, made if missing
    local c=$1 k=$2 p="$DIR/parts-$1/part-$(printf %05d "$2").parquet"
    mkdir -p "$DIR/parts-$c"
    if [ ! -f "$p" ]; then
        if [ "$c" = three ]; then
            "$PY" "$ROOT/bench/cluster/three_parquet.py" "$(part ring "$k")" "$p.tmp" "$((k + 1))"
        elif [ "$c" = pendulum ]; then # --system writes CSV only
            nice -n 5 "$SGP" -q synth --rows $PART --system pendulum --seed $((k + 1)) > "$p.csv"
            "$PY" -c 'import sys, pyarrow.csv as c, pyarrow.parquet as q
q.write_table(c.read_csv(sys.argv[1]), sys.argv[2])' "$p.csv" "$p.tmp"
            rm "$p.csv"
        else
            # shellcheck disable=SC2046
            nice -n 5 "$SGP" -q synth --rows $PART $(synth_args "$c") --seed $((k + 1)) --parquet "$p.tmp"
        fi
        mv "$p.tmp" "$p"
    fi
    echo "$p"
}
test_set() { # case -> held-out CSV (20,000 rows, seed 1000001)
    local c=$1 t="$DIR/test-$1.csv"
    if [ ! -f "$t" ]; then
        if [ "$c" = three ]; then
            python3 "$ROOT/bench/classify/three_bands.py" "$(test_set ring)" "$t" 1000001
        else
            # shellcheck disable=SC2046
            "$SGP" -q synth --rows 20000 $(synth_args "$c") --seed 1000001 > "$t.tmp"
            mv "$t.tmp" "$t"
        fi
    fi
    echo "$t"
}
score() { # blob(s) test -> held-out score
    local b
    for b in "$@"; do
        [ "$b" = "${!#}" ] && break
        "$SGP" -q eval --model "$b" --data "${!#}" --json | python3 -c '
import json, sys
def scores(s):
    if isinstance(s, list):
        return [x for o in s for x in scores(o)]
    if "error_rate" in s:
        error, loss = 100 * s["error_rate"], s["log_loss"]
        return [f"{error:.2f}%, {loss:.4f}"]
    if "nlpd" in s:
        name, nlpd = s.get("output", ""), s["nlpd"]
        return [f"{name} {nlpd:.4f}".strip()]
    inner = [v for v in s.values() if isinstance(v, (dict, list))]
    return [x for v in inner for x in scores(v)][:1] if "output" not in s else [
        (s["output"] + " " + x).strip() for v in inner for x in scores(v)][:1]
print("; ".join(scores(json.load(sys.stdin))))'
    done | paste -sd';' -
}
blobs() { # out.sgp -> the blob or the per-target blobs written
    if [ -f "$1" ]; then echo "$1"; else ls "${1%.sgp}".*.sgp; fi
}

echo "| rows | case | engine | wall s | peak MB | held-out | blob | load |"
echo "|---:|---|---|---:|---:|---|---|---|"
for n in $SIZES; do
    for c in $CASES; do
        data="$DIR/$c-$n"
        if [ ! -d "$data" ]; then
            mkdir -p "$data.tmp"
            for k in $(seq 0 $((n / PART - 1))); do
                ln -f "$(part "$c" "$k")" "$data.tmp/"
            done
            mv "$data.tmp" "$data"
        fi
        test=$(test_set "$c")
        for e in $ENGINES; do
            out="$DIR/out/$e-$c-$n.sgp"
            mkdir -p "$DIR/out"
            rm -f "${out%.sgp}".*sgp "$out"
            load=$(cut -d' ' -f1 /proc/loadavg)
            if [ "$e" = single ]; then
                # shellcheck disable=SC2046
                /usr/bin/time -f '%e %M' -o "$DIR/time" nice -n 5 "$SGP" -q fit --data "$data" \
                    $(fit_args "$c") --m 64 --seed 0 --out "$out" > /dev/null
                read -r wall kb < "$DIR/time"
                peak=$((kb / 1024))
                same=-
            else
                # shellcheck disable=SC2046
                line=$(nice -n 5 "$PY" bench/cluster/fit_engine.py "$e" "$data" 2 "$out" \
                    $(engine_args "$c") 2> "$DIR/out/$e-$c-$n.log" | tail -1)
                read -r wall peak < <(echo "$line" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["total_s"], str(r["driver_mb"]) + "+" + str(r["worker_mb"]))')
                same=differ
                single="$DIR/out/single-$c-$n.sgp"
                if [ -e "$single" ] || ls "${single%.sgp}".*.sgp > /dev/null 2>&1; then
                    a=$(blobs "$single" | xargs cat | sha256sum)
                    b=$(blobs "$out" | xargs cat | sha256sum)
                    [ "$a" = "$b" ] && same="same bytes"
                else
                    same="?"
                fi
            fi
            # shellcheck disable=SC2046
            held=$(score $(blobs "$out") "$test")
            echo "| $n | $c | $e | $wall | $peak | $held | $same | $load |"
        done
    done
done
