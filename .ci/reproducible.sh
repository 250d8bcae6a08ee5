#!/usr/bin/env bash
# `sgp fit --reproducible` computes the same blob on every CPU: a few small
# fits (SPGP, VSGP, a text-label SVGP classifier, a two-output SPGP, which
# the held-out choice writes as one model per output) run
# natively, natively on one thread, and under `qemu-x86_64 -cpu Nehalem`
# (x86-64-v2: SSE4.2, no AVX, no FMA), and the blobs must agree bit for bit.
# Usage: .ci/reproducible.sh [path/to/sgp [path/to/aarch64/sgp]]  (default:
# target/release/sgp, built if missing). Needs qemu-x86_64 (Debian:
# qemu-user). With an aarch64 build of sgp the fits also run under
# qemu-aarch64 (not in CI: the cross build costs minutes; the guide's
# "Across machines" gives the commands).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
sgp=${1:-target/release/sgp}
[ -x "$sgp" ] || cargo build --release -q -p sgp-cli
sgp=$(realpath "$sgp")
arm=${2:+$(realpath "$2")}
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 not found (apt-get install qemu-user)" >&2; exit 1; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
"$sgp" synth --quiet --rows 300 --dim 3 --seed 3 > reg.csv
# A text-label classification and a second output derived from the same rows.
awk -F, 'NR == 1 { print $1 "," $2 "," $3 ",label"; next }
         { print $1 "," $2 "," $3 "," ($4 > 0 ? "warm" : "cold") }' reg.csv > cls.csv
awk -F, 'NR == 1 { print $0 ",y2"; next } { printf "%s,%.6f\n", $0, $1 * $4 - $2 }' reg.csv > two.csv

fits=(
    "spgp|--data reg.csv --model spgp --m 8"
    "vsgp|--data reg.csv --model vsgp --m 6"
    "svgp|--data cls.csv --model svgp --m 8"
    "two|--data two.csv --target y,y2 --model spgp --m 6"
)
status=0
for entry in "${fits[@]}"; do
    name=${entry%%|*}
    read -r -a args <<< "${entry#*|}"
    common=(fit --quiet --reproducible --seed 1 --max-iter 40 "${args[@]}")
    start=$SECONDS
    "$sgp" "${common[@]}" --out "$name-native.sgp" > /dev/null
    RAYON_NUM_THREADS=1 "$sgp" "${common[@]}" --out "$name-1thread.sgp" > /dev/null
    qemu-x86_64 -cpu Nehalem "$sgp" "${common[@]}" --out "$name-nehalem.sgp" 2>&1 >/dev/null \
        | grep -v TCG || true
    # Several outputs may be written one model per output (name.OUT.sgp):
    # every file the native fit wrote must be matched bit for bit.
    natives=("$name-native"*.sgp)
    [ -s "${natives[0]}" ] || { echo "$name: no native blob" >&2; status=1; continue; }
    others=(1thread nehalem)
    if [ -n "$arm" ]; then
        qemu-aarch64 -L /usr/aarch64-linux-gnu "$arm" "${common[@]}" --out "$name-aarch64.sgp" > /dev/null
        others+=(aarch64)
    fi
    for other in "${others[@]}"; do
        verdict=same
        for native in "${natives[@]}"; do
            cmp -s "$native" "$name-$other${native#"$name-native"}" || verdict=DIFFERENT
        done
        [ "$verdict" = same ] || status=1
        printf '%-5s native vs %-8s %s (%d file(s))\n' "$name" "$other:" "$verdict" "${#natives[@]}"
    done
    printf '%-5s %s B, sha256 %s (%ds)\n' "$name" "$(cat "${natives[@]}" | wc -c)" \
        "$(cat "${natives[@]}" | sha256sum | cut -c1-16)" $((SECONDS - start))
done
exit $status
