#!/usr/bin/env bash
# Matérn against the squared exponential on rough data (issue 39): the sets
# of make_sets.py (draws from a Matérn 3/2 GP in 2, 3 and 4 inputs at two
# noise levels, and a 2-input signal with kinks), 2000 training and 1000
# test rows each, seeded. Per set: sgp's SPGP (FITC) at M = 32 with each
# kernel, sgp's exact GP on all 2000 rows with SE and Matérn 3/2, and
# GPflow's GPRFITC at M = 32 with SE and Matern32
# (bench/peers/peer_fit.py); test NLPD, RMSE and 95% coverage, then a
# summary line per set: Matérn 3/2 minus SE and minus GPflow's Matern32
# (sgp's SPGP), the exact GP's Matérn 3/2 minus SE, GPflow's own Matern32
# minus its SE, and sgp's SPGP SE minus GPflow's SE.
#
#   bash bench/matern/run.sh [PYTHON [SEED...]]   (PYTHON: with numpy and
#       GPflow, default /work/peers-venv/bin/python; SEEDs of the data
#       sets, default 39; the set column names the seed after the first)
#   SETS="m32 kinks" bash bench/matern/run.sh ...  only these sets
#       (default: all, `make_sets.py 0 --list`)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
python=${1:-/work/peers-venv/bin/python}
seeds=("${@:2}")
[ ${#seeds[@]} -gt 0 ] || seeds=(39)
read -r -a sets <<<"${SETS:-$("$python" bench/matern/make_sets.py 0 --list | tr '\n' ' ')}"
cargo build --release -q -p sgp-cli
sgp=${CARGO_TARGET_DIR:-$PWD/target}/release/sgp
work=$(mktemp -d "${TMPDIR:-/tmp}/sgp-matern.XXXXXX")
trap 'rm -rf "$work"' EXIT

row() { printf '| %-11s | %-24s | %8s | %8s | %6s |\n' "$@"; }
score() { # model blob, test csv -> nlpd rmse coverage
    "$sgp" eval --model "$1" --data "$2" --json |
        "$python" -c "import json,sys; r=json.load(sys.stdin); print('%.3f %.4f %.3f' % (r['nlpd'], r['rmse'], r['coverage_95']))"
}
summary=()
row set fit "NLPD" "RMSE" "cover"
row --- --- --- --- ---
for seed in "${seeds[@]}"; do
(cd "$work" && "$python" "$OLDPWD/bench/matern/make_sets.py" "$seed")
for name in "${sets[@]}"; do
    set=$name
    [ "$seed" = 39 ] || set=$name/$seed
    train=$work/${name}_train.csv test=$work/${name}_test.csv
    [ -f "$train" ] || { echo "no set $name (make_sets.py 0 --list)" >&2; exit 2; }
    blob=$work/$name-$seed
    declare -A nlpd_of=()
    for kernel in se matern12 matern32 matern52 auto; do
        "$sgp" fit --data "$train" --model spgp --m 32 --kernel "$kernel" --out "$blob-$kernel.sgp" --quiet >/dev/null
        read -r nlpd rmse cover < <(score "$blob-$kernel.sgp" "$test")
        nlpd_of[$kernel]=$nlpd
        [ "$kernel" != auto ] || kernel="auto: $("$sgp" inspect "$blob-auto.sgp" --json |
            "$python" -c "import json,sys; print(json.load(sys.stdin)['kernel'])")"
        row "$set" "sgp spgp M=32 $kernel" "$nlpd" "$rmse" "$cover"
    done
    for kernel in se matern32; do
        "$sgp" fit --data "$train" --model exact --max-points 2000 --kernel "$kernel" \
            --out "$blob-exact-$kernel.sgp" --quiet >/dev/null
        read -r nlpd rmse cover < <(score "$blob-exact-$kernel.sgp" "$test")
        nlpd_of[exact-$kernel]=$nlpd
        row "$set" "sgp exact $kernel" "$nlpd" "$rmse" "$cover"
    done
    for kernel in se matern32; do
        out=$(OMP_NUM_THREADS=2 "$python" bench/peers/peer_fit.py gpflow --train "$train" \
            --test "$test" --m 32 --kernel "$kernel" 2>/dev/null | tail -1)
        read -r nlpd rmse cover < <("$python" -c "import json,sys; r=json.loads(sys.argv[1]); print('%.3f %.4f %.3f' % (r['nlpd'], r['rmse'], r['coverage']))" "$out")
        nlpd_of[gpflow-$kernel]=$nlpd
        row "$set" "gpflow GPRFITC $kernel" "$nlpd" "$rmse" "$cover"
    done
    summary+=("$(awk -v set="$set" -v m="${nlpd_of[matern32]}" -v s="${nlpd_of[se]}" \
        -v g="${nlpd_of[gpflow-matern32]}" -v em="${nlpd_of[exact-matern32]}" -v es="${nlpd_of[exact-se]}" \
        -v gs="${nlpd_of[gpflow-se]}" \
        'BEGIN { printf "| %-11s | %+7.3f | %+7.3f | %+7.3f | %+7.3f | %+7.3f |", set, m - s, m - g, em - es, g - gs, s - gs }')")
    unset nlpd_of
done
done
echo
echo "| set         | spgp matern32 - se | matern32 - GPflow Matern32 | exact matern32 - se | GPflow Matern32 - se | spgp se - GPflow se |"
echo "| ---         | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${summary[@]}"
