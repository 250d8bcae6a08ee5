#!/usr/bin/env bash
# Usage: bench/blob_identity.sh SGP OUTDIR
#
# Runs about 60 small fits (every family, objective, kernel and data shape
# the command line takes, classifiers, several targets, a streamed Parquet
# fit, sweep, the C export) with the `sgp` binary SGP and keeps, for each,
# the blob, stdout, stderr and exit code in OUTDIR. Two binaries that should
# write the same bytes (a refactor) are compared with
# bench/blob_identity_compare.sh A B. Small synthetic data: under 3 minutes.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 SGP OUTDIR" >&2
    exit 2
fi
src=$(realpath "$1")
out=$2
mkdir -p "$out"
out=$(realpath "$out")
# Same program name in every run: clap prints it in usage lines.
bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
cp "$src" "$bin_dir/sgp"
sgp=$bin_dir/sgp
cd "$out"

# run NAME ARGS...: one command, its stdout, stderr and exit code.
run() {
    local name=$1
    shift
    "$sgp" "$@" >"$name.stdout" 2>"$name.stderr"
    echo $? >"$name.rc"
}
# fit NAME ARGS...: `sgp fit --out NAME.sgp ARGS...`
fit() {
    local name=$1
    shift
    run "$name" fit --out "$name.sgp" "$@"
}
# data FILE ARGS...: `sgp synth ARGS...` into FILE.
data() {
    local file=$1
    shift
    "$sgp" synth "$@" >"$file"
}

# Data: small, seeded, written by the binary under test (its own synth).
data ridge.csv --rows 200 --dim 3
data ridge_test.csv --rows 100 --dim 3 --seed 1
data ridge2.csv --rows 120 --dim 2 --seed 2
data hs.csv --rows 200 --shape heteroscedastic
data chirp.csv --rows 200 --shape chirp
data periodic.csv --rows 150 --shape periodic
data few.csv --rows 200 --shape few-directions
data linear.csv --rows 60 --shape linear
data step.csv --rows 100 --shape step
data offsets.csv --rows 100 --shape offsets
data tiny.csv --shape tiny
data duplicated.csv --rows 80 --shape duplicated
data arm.csv --rows 150 --system arm
data arm_test.csv --rows 80 --system arm --seed 1
# Classes from the ridge data's target: two numbers, two text labels, three
# text labels.
awk -F, 'NR == 1 { print "x1,x2,x3,c"; next } { print $1 "," $2 "," $3 "," ($4 > 0.3 ? 1 : 0) }' ridge.csv >two01.csv
awk -F, 'NR == 1 { print "x1,x2,x3,label"; next } { print $1 "," $2 "," $3 "," ($4 > 0.3 ? "yes" : "no") }' ridge.csv >twotext.csv
awk -F, 'NR == 1 { print "x1,x2,x3,label"; next } { print $1 "," $2 "," $3 "," ($4 < -0.2 ? "low" : ($4 < 0.6 ? "mid" : "high")) }' ridge.csv >three.csv
awk -F, 'NR == 1 { print "x1,x2,x3,c"; next } { print $1 "," $2 "," $3 "," ($4 > 0.3 ? 1 : 0) }' ridge_test.csv >two01_test.csv
# Large enough to be streamed; once as a file, once as a directory.
run synth_parquet synth --rows 80000 --dim 2 --parquet big.parquet
mkdir -p parts
cp big.parquet parts/part-0.parquet

quick=(--m 8 --max-iter 40 --restarts 1)

# SPGP: objectives, inits, kernels, the defaults.
fit spgp_default --data ridge.csv
fit spgp_fitc --data ridge.csv --model spgp --objective fitc "${quick[@]}"
fit spgp_vfe --data ridge.csv --model spgp --objective vfe "${quick[@]}"
fit spgp_auto_obj --data ridge.csv --model spgp "${quick[@]}"
fit spgp_random --data ridge.csv --model spgp --init random --objective fitc "${quick[@]}"
fit spgp_exact_init --data ridge.csv --model spgp --init-hyper exact "${quick[@]}"
fit spgp_seed7 --data ridge.csv --model spgp --seed 7 "${quick[@]}"
fit spgp_noheld --data ridge.csv --no-held-out-choice "${quick[@]}"
fit spgp_m12 --data ridge.csv --kernel matern12 --model spgp "${quick[@]}"
fit spgp_m32 --data ridge.csv --kernel matern32 --model spgp "${quick[@]}"
fit spgp_m52 --data periodic.csv --kernel matern52 --model spgp "${quick[@]}"
fit spgp_kauto --data periodic.csv --kernel auto --model spgp "${quick[@]}"
fit spgp_repro --data ridge.csv --model spgp --reproducible "${quick[@]}"
fit spgp_json --data ridge.csv --model spgp --json "${quick[@]}"
# Every shape `sgp fit --json` prints: a lasso path, text and three
# classes, a projection's note, a refused updatable product, separate and
# shared bases of several targets.
fit json_path --data ridge.csv --model gplasso --path --m 8 --max-iter 40 --json
fit json_three --data three.csv --json "${quick[@]}"
fit json_twotext --data twotext.csv --json "${quick[@]}"
fit json_pca --data few.csv --model spgp-pca --dim 2 --json "${quick[@]}"
fit json_arm2 --data arm.csv --target ex,ey --json "${quick[@]}"
fit json_arm2_shared --data arm.csv --target ex,ey --no-held-out-choice --json "${quick[@]}"
fit json_arm3 --data arm.csv --target ex,ey,ez --model spgp --json "${quick[@]}"
fit json_updatable --data hs.csv --model spgp --objective fitc --updatable --force --json "${quick[@]}"
fit spgp_golden --data ridge2.csv --model spgp --golden golden.rs "${quick[@]}"
fit spgp_target --data ridge.csv --target x3 --model spgp "${quick[@]}"
fit spgp_linear --data linear.csv --model spgp "${quick[@]}"
fit spgp_step --data step.csv --model spgp "${quick[@]}"
fit spgp_offsets --data offsets.csv --model spgp "${quick[@]}"
fit spgp_tiny --data tiny.csv --model spgp --m 4 --max-iter 40 --restarts 1
fit spgp_duplicated --data duplicated.csv --model spgp "${quick[@]}"
fit auto_family --data hs.csv --max-iter 40
# The other regression families.
fit hs --data hs.csv --model spgp-hs "${quick[@]}"
fit hs_noheld --data hs.csv --model spgp-hs --no-held-out-choice "${quick[@]}"
fit dr --data few.csv --model spgp-dr --dim 2 "${quick[@]}"
fit pca --data few.csv --model spgp-pca --dim 2 "${quick[@]}"
fit vsgp --data chirp.csv --model vsgp "${quick[@]}"
fit vsgp_fitc --data chirp.csv --model vsgp --objective fitc "${quick[@]}"
fit gplasso --data ridge.csv --model gplasso --m 8 --max-iter 40
fit gplasso_fixed --data ridge.csv --model gplasso --fixed-hyperparameters --m 8 --max-points 100
fit gplasso_basis --data ridge.csv --model gplasso --fixed-basis --rank 40 --m 8 --max-iter 40
fit gplasso_path --data ridge.csv --model gplasso --path --m 8 --max-iter 40
fit ivm_reg --data ridge.csv --model ivm --m 12
fit exact --data ridge.csv --model exact --max-points 120 --max-iter 60
fit exact_m32 --data ridge2.csv --model exact --kernel matern32 --max-points 80 --max-iter 60
# Blobs that learn on the device.
fit upd_spgp --data ridge.csv --model spgp --updatable "${quick[@]}"
fit upd_fitc --data ridge.csv --model spgp --objective fitc --updatable "${quick[@]}"
fit upd_force --data hs.csv --model spgp --objective fitc --updatable --force "${quick[@]}"
fit upd_svgp --data two01.csv --model svgp --updatable "${quick[@]}"
# Classifiers: 0/1, two text labels, three text labels.
fit svgp01 --data two01.csv "${quick[@]}"
fit svgp01_pos --data two01.csv --positive 0 "${quick[@]}"
fit svgp_text --data twotext.csv "${quick[@]}"
fit svgp_m32 --data twotext.csv --kernel matern32 "${quick[@]}"
fit svgp3 --data three.csv "${quick[@]}"
fit svgp3_pos --data three.csv --positive mid "${quick[@]}"
fit ivm_cls --data two01.csv --model ivm --m 12 --max-points 100
fit ivm_cls_active --data twotext.csv --model ivm --m 12 --ivm-posterior active-set --max-points 100
fit ivm3_pos --data three.csv --model ivm --positive high --m 12 --max-points 100
fit task_reg01 --data two01.csv --task regression --model spgp "${quick[@]}"
fit link_probit --data two01.csv --link probit "${quick[@]}"
# Several targets (P = 2 and 3).
fit arm2 --data arm.csv --target ex,ey "${quick[@]}"
fit arm2_noheld --data arm.csv --target ex,ey --no-held-out-choice "${quick[@]}"
fit arm3 --data arm.csv --target ex,ey,ez --model spgp "${quick[@]}"
# Where the outputs separate, --out is one container (SGPS) of each
# output's blob: split it into NAME.sgp.member-K, so that each member is
# compared byte for byte (with an older binary's NAME.TARGET.sgp by hand).
members() {
    local file=$1.sgp
    [ "$(head -c 4 "$file" 2>/dev/null)" = SGPS ] || return 0
    local count at len k
    count=$(od -An -tu2 -j6 -N2 "$file" | tr -d ' ')
    at=8
    for ((k = 0; k < count; k++)); do
        len=$(od -An -tu4 -j"$at" -N4 "$file" | tr -d ' ')
        tail -c +$((at + 5)) "$file" | head -c "$len" >"$file.member-$k"
        at=$((at + 4 + len))
    done
}
members arm2
members arm3
run inspect_arm3 inspect arm3.sgp
run predict_arm3 predict --model arm3.sgp --data arm_test.csv
run eval_arm3 eval --model arm3.sgp --data arm_test.csv --json
run export_rust_arm3 export --model arm3.sgp --format rust --out arm3.rs
# Streamed: a Parquet file and a directory of them.
fit streamed_file --data big.parquet --m 8 --max-iter 20 --restarts 1 --json
fit streamed_dir --data parts --m 8 --max-iter 20 --restarts 1
fit in_memory_parquet --data big.parquet --in-memory --model spgp --objective vfe --m 8 --max-iter 10 --restarts 1

# Everything else the command line writes.
run sweep sweep --data ridge.csv --test ridge_test.csv --models spgp,vsgp,exact --m 4,8 --out sweep.sgp
run sweep_cls sweep --data two01.csv --test two01_test.csv --m 4,8 --out sweep_cls.sgp
run sweep_arm sweep --data arm.csv --test arm_test.csv --target ex,ey --models spgp --m 4,8 --out sweep_arm.sgp
run export_c export --model spgp_fitc.sgp --format c --out spgp_fitc.h
run export_c3 export --model svgp3.sgp --format c --out svgp3.h
run export_rust export --model arm2_noheld.sgp --format rust --out arm2.rs
run inspect inspect spgp_fitc.sgp
run inspect_json inspect svgp3.sgp --json
run predict predict --model hs.sgp --data hs.csv
run eval eval --model upd_spgp.sgp --data ridge_test.csv --json
run replay replay --model upd_spgp.sgp --data ridge_test.csv --forgetting 0.99 --window 25 --out replayed.sgp --svg replay.svg
run plot plot --model hs.sgp --data hs.csv --out hs.svg
run demo demo --out demo.sgp
