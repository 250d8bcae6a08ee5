#!/usr/bin/env bash
# Default (not --reproducible) fits agree across machines: each set of a
# small suite is fitted natively and under `qemu-x86_64 -cpu Nehalem`
# (x86-64-v2: no AVX, no FMA, so other GEMM kernels and roundings), both
# blobs are evaluated on the same held-out rows, and the script prints the
# test NLPD of each and the difference; it fails if any exceeds 0.01 nats.
# Usage: bash bench/machines/run.sh [path/to/sgp]  (docs/src/benchmarks.md,
# "Across machines"). A few minutes: the emulated fits dominate.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
sgp=${1:-target/release/sgp}
[ -x "$sgp" ] || cargo build --release -q -p sgp-cli
sgp=$(realpath "$sgp")
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 not found (apt-get install qemu-user)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

# name | synth arguments | fit arguments
suite=(
    "ridge-4d|--rows 700 --dim 4 --seed 1|--model spgp --m 16"
    "ridge-2d|--rows 700 --dim 2 --seed 2|--model spgp --m 12"
    "periodic|--rows 500 --shape periodic --seed 3|--model spgp --m 16"
    "step|--rows 500 --shape step --seed 4|--model spgp --m 12"
    "very-noisy|--rows 500 --shape very-noisy --seed 5|--model spgp --m 8"
    "vsgp-4d|--rows 700 --dim 4 --seed 6|--model vsgp --m 10"
)
worst=0
status=0
printf '%-11s %12s %12s %10s\n' set "NLPD native" "NLPD Nehalem" difference
for entry in "${suite[@]}"; do
    IFS='|' read -r name synth fitargs <<< "$entry"
    read -r -a synth <<< "$synth"
    read -r -a fitargs <<< "$fitargs"
    "$sgp" synth --quiet "${synth[@]}" > all.csv
    rows=$(($(wc -l < all.csv) - 1))
    head -n $((rows * 4 / 5 + 1)) all.csv > train.csv
    (head -n 1 all.csv; tail -n $((rows - rows * 4 / 5)) all.csv) > test.csv
    common=(fit --quiet --seed 1 --data train.csv "${fitargs[@]}")
    "$sgp" "${common[@]}" --out native.sgp > /dev/null
    qemu-x86_64 -cpu Nehalem "$sgp" "${common[@]}" --out nehalem.sgp 2>&1 >/dev/null | grep -v TCG || true
    nlpd() { "$sgp" eval --quiet --json --model "$1" --data test.csv | python3 -c 'import json,sys; print(json.load(sys.stdin)["nlpd"])'; }
    a=$(nlpd native.sgp)
    b=$(nlpd nehalem.sgp)
    same=$(cmp -s native.sgp nehalem.sgp && echo "(same blob)" || echo "")
    diff=$(python3 -c "print(f'{abs($a - $b):.4f}')")
    printf '%-11s %12.4f %12.4f %10s %s\n' "$name" "$a" "$b" "$diff" "$same"
    if python3 -c "import sys; sys.exit(0 if $diff <= 0.01 else 1)"; then :; else status=1; fi
    worst=$(python3 -c "print(max($worst, $diff))")
done
echo "largest difference: $worst nats (tolerance 0.01)"
exit $status
