#!/usr/bin/env bash
# Builds the example firmware, runs it under QEMU (mps2-an386, Cortex-M4),
# runs it again built for a core without an FPU (mps2-an385, Cortex-M3:
# every golden check, soft-float instruction counts), runs the fixed-point
# model on a Cortex-M0 (microbit), proves the prediction
# path panic-free at link time, and prints the footprint.
# Exit status 0 only if every step passed.
#
# Environment knobs:
#   OPT_LEVEL=3|s|z|2        override the release opt-level (to compare; default: Cargo.toml)
#   SGP_FW_SKIP_SELFTEST=1   skip the negative self-tests (they cost two extra builds)
#   SGP_FW_COMPARE=1         also build and run opt-level s/3 x built-in/micromath exp, print their cost tables
#   SGP_BIN=/path/to/sgp     use this host sgp binary instead of building it from ../
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
# Cargo picks up .cargo/config.toml (target, runner) from the current directory.
# Firmware builds pass --target-dir explicitly so that a CARGO_TARGET_DIR meant
# for host builds (e.g. exported by CI) cannot move them away from $BIN_DIR.
TARGET=thumbv7em-none-eabihf
# The same firmware for a core without an FPU (soft-float f32).
NOFPU_TARGET=thumbv7m-none-eabi
# The fixed-point model on a Cortex-M0 (src/bin/fixed_m0.rs).
M0_TARGET=thumbv6m-none-eabi
M0_BIN=fixed_m0
TARGET_DIR=target
REPO_ROOT=$(cd .. && pwd)
# Scratch space for the host tool's outputs before they are compared with model/.
GEN_DIR=$PWD/$TARGET_DIR/model-gen
# "kind M [d16]" per model; must match the *_SIZES lists in build.rs and the
# models in src/model.rs. Files: model/m$M.sgp and golden_m$M.rs for spgp,
# model/{kind}_m$M.sgp and golden_{kind}_m$M.rs for vsgp and gplasso (gplasso
# with --no-held-out-choice: on its 400 rows the small-data rule exported
# plain SPGP, and the device ran no lasso basis),
# model/dr_m$M.sgp and golden_dr_m$M.rs for spgp-dr (fitted on its own
# D = DR_DIM data, projected to G = DR_G dims; --no-held-out-choice, or the
# small-data rule may export plain SPGP and leave the projection untested on
# the device), model/spgp_d16_m$M.sgp and
# golden_spgp_d16_m$M.rs for "spgp M d16" (plain SPGP on the spgp-dr data,
# G = D = DR_DIM, to compare with the projection), model/ivm_m$M.sgp and
# golden_ivm_m$M.rs for the IVM probit classifier (fitted on the D = MODEL_DIM
# data with the target thresholded at 0 into classes 0/1), model/matern32_m$M.sgp
# and golden_matern32_m$M.rs for "matern32 M" (SPGP with --kernel matern32 on
# the SPGP models' data, to compare its cost with the squared exponential's).
MODELS=("spgp 16" "spgp 32" "spgp 64" "vsgp 32" "gplasso 32" "spgp-dr 32" "spgp 32 d16" "ivm 32" "svgp 32" "matern32 32")
MODEL_DIM=4
DR_DIM=16
DR_G=4
# Rows GPLasso's exact-GP hyperparameter fit may use (of 400): O(n^3), so
# kept small for a quick fit.
GPLASSO_MAX_POINTS=300
BIN_DIR=$TARGET_DIR/$TARGET/release
MAIN_BIN=sgp-firmware-example
# The user guide's "Your own firmware in five steps", built and run as it stands.
STEPS_BIN=five_steps
PROOF_BIN=panic_free
PROOF_SYMBOL=sgp_predict_path_can_panic
# Keep in sync with the runner in .cargo/config.toml. -icount shift=10 makes the
# instruction counts exact (src/instructions.rs); timeout turns a hang into a failure.
QEMU=(timeout 60 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic
    -monitor none -semihosting-config enable=on,target=native -icount shift=10 -kernel)
# The Cortex-M3 board with the same memory map and timer; soft float takes
# about 40 times the instructions, hence the longer timeout.
QEMU_NOFPU=(timeout 300 qemu-system-arm -cpu cortex-m3 -machine mps2-an385 -nographic
    -monitor none -semihosting-config enable=on,target=native -icount shift=10 -kernel)
# The nRF51822 with the 32 KiB of RAM of its QFAC variant (memory-microbit.x):
# the micro:bit's 16 KiB do not hold the M = 32 check.
QEMU_M0=(timeout 60 qemu-system-arm -cpu cortex-m0 -machine microbit
    -global nrf51-soc.sram-size=32768 -nographic -monitor none
    -semihosting-config enable=on,target=native -icount shift=10 -kernel)

if [[ -n "${OPT_LEVEL:-}" ]]; then
    export CARGO_PROFILE_RELEASE_OPT_LEVEL=$OPT_LEVEL
fi

step() { printf '\n== %s\n' "$*"; }
fail() {
    printf 'run.sh: FAILED: %s\n' "$*" >&2
    exit 1
}

# --- 1. prerequisites (installed only if missing, quietly) -------------------
step "prerequisites"
for target in "$TARGET" "$NOFPU_TARGET" "$M0_TARGET"; do
    if ! rustup target list --installed | grep -qx "$target"; then
        rustup target add "$target" >/dev/null 2>&1 || fail "rustup target add $target"
    fi
done
if ! command -v qemu-system-arm >/dev/null; then
    SUDO=()
    [[ $(id -u) -eq 0 ]] || SUDO=(sudo)
    "${SUDO[@]}" apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq \
        --no-install-recommends qemu-system-arm >/dev/null || fail "apt-get install qemu-system-arm"
fi
# llvm-size from the system, else from rustup's llvm-tools (same ELF reader).
LLVM_SIZE=$(command -v llvm-size || true)
if [[ -z "$LLVM_SIZE" ]]; then
    rustup component add llvm-tools >/dev/null 2>&1 || true
    LLVM_SIZE=$(find "$(rustc --print sysroot)" -name llvm-size -type f 2>/dev/null | head -n1)
fi
echo "target $TARGET, $(qemu-system-arm --version | head -n1), size tool: ${LLVM_SIZE:-none}"

# --- 2. model blobs and golden values ---------------------------------------
step "model (host sgp tool: data, then fits: ${MODELS[*]/%/;} D = $MODEL_DIM; spgp-dr and d16 D = $DR_DIM, G = $DR_G and $DR_DIM; ivm: probit on sign(y))"
# The cost of a prediction does not depend on the model's quality, so short
# fits do; fixed seeds make every run produce the same files. Generated into
# model/ (ignored by firmware-example/.gitignore, never committed); build.rs
# refuses to build without them.
sgp() {
    if [[ -n "${SGP_BIN:-}" ]]; then
        "$SGP_BIN" "$@"
    else
        # From the repository root: cargo then finds the host workspace and its
        # target dir (CARGO_TARGET_DIR if set, relative to the root, else
        # ../target) by itself, and does not read this directory's
        # .cargo/config.toml (which would build the tool for the Cortex-M4).
        (cd "$REPO_ROOT" && env -u CARGO_PROFILE_RELEASE_OPT_LEVEL cargo run --release -q -p sgp-cli -- "$@")
    fi
}
if [[ -z "${SGP_BIN:-}" ]]; then
    echo "building the host sgp tool (cargo build --release -p sgp-cli; cold: ~2 min)"
    (cd "$REPO_ROOT" && env -u CARGO_PROFILE_RELEASE_OPT_LEVEL cargo build --release -q -p sgp-cli) || fail "building the host sgp tool"
fi
mkdir -p "$GEN_DIR" model
sgp synth --rows 400 --dim "$MODEL_DIM" --seed 0 >"$GEN_DIR/data.csv" || fail "sgp synth"
sgp synth --rows 500 --dim "$DR_DIM" --seed 0 >"$GEN_DIR/data_dr.csv" || fail "sgp synth --dim $DR_DIM"
# The IVM classifier's data: the same inputs, the target's sign as class 1
# (y > 0, 221 of the 400 rows) or 0.
awk -F, -v OFS=, 'NR == 1 { print; next } { $NF = ($NF > 0) ? 1 : 0; print }' \
    "$GEN_DIR/data.csv" >"$GEN_DIR/data_cls.csv" || fail "thresholding the classifier's target"
# The trainer's defaults (restarts, pseudo-input init) apply; --max-iter caps
# each optimiser run (vsgp: each of its two stages, SPGP then widths freed).
BLOBS=()
for model in "${MODELS[@]}"; do
    read -r kind m on <<<"$model"
    name=m$m
    fit_kind=$kind
    data=$GEN_DIR/data.csv
    extra=()
    case $kind${on:+ $on} in
        spgp) ;;
        "spgp d16") name=spgp_d16_m$m data=$GEN_DIR/data_dr.csv ;;
        spgp-dr) name=dr_m$m data=$GEN_DIR/data_dr.csv extra=(--dim "$DR_G" --no-held-out-choice) ;;
        gplasso) name=gplasso_m$m extra=(--max-points "$GPLASSO_MAX_POINTS" --no-held-out-choice) ;;
        ivm) name=ivm_m$m data=$GEN_DIR/data_cls.csv extra=(--link probit --positive 1) ;;
        svgp) name=svgp_m$m data=$GEN_DIR/data_cls.csv extra=(--task classification --positive 1) ;;
        matern32) name=matern32_m$m fit_kind=spgp extra=(--kernel matern32) ;;
        *) name=${kind}_m$m ;;
    esac
    sgp fit --data "$data" --model "$fit_kind" --m "$m" "${extra[@]}" --max-iter 30 --seed 0 \
        --out "$GEN_DIR/$name.sgp" --golden "$GEN_DIR/golden_$name.rs" --quiet >"$GEN_DIR/fit_$name.log" ||
        { cat "$GEN_DIR/fit_$name.log" >&2; fail "sgp fit --model $kind --m $m"; }
    for f in "$name.sgp" "golden_$name.rs"; do
        # Replace only on change: an unchanged mtime spares the firmware a rebuild.
        cmp -s "$GEN_DIR/$f" "model/$f" || cp "$GEN_DIR/$f" "model/$f"
        [[ -s "model/$f" ]] || fail "model/$f missing or empty"
    done
    BLOBS+=("model/$name.sgp")
    echo "$kind${on:+ $on} M=$m: model/$name.sgp ($(wc -c <"model/$name.sgp") B), model/golden_$name.rs; $(grep -m1 '^runtime check' "$GEN_DIR/fit_$name.log" || true)"
done
# Several outputs on one basis (src/outputs.rs): the trainer's example fits
# a P = 3 regression and a K = 4 classifier at M = 32 and writes the sets,
# their golden values and each output alone (the separate models).
OUTPUT_FILES=(outputs_m32.sgp golden_outputs_m32.rs outputs2_m32.sgp output{0,1,2}_m32.sgp
    classes_m32.sgp golden_classes_m32.rs class{0,1,2,3}_m32.sgp)
(cd "$REPO_ROOT" && env -u CARGO_PROFILE_RELEASE_OPT_LEVEL cargo run --release -q -p sgp-trainer \
    --example firmware_outputs -- "$GEN_DIR") || fail "cargo run -p sgp-trainer --example firmware_outputs"
for f in "${OUTPUT_FILES[@]}"; do
    cmp -s "$GEN_DIR/$f" "model/$f" || cp "$GEN_DIR/$f" "model/$f"
    [[ -s "model/$f" ]] || fail "model/$f missing or empty"
done
for f in "${OUTPUT_FILES[@]}"; do
    if [[ $f == *.sgp ]]; then BLOBS+=("model/$f"); fi
done
# Learning on the device (src/learning.rs): updatable SPGP blobs at M = 32
# and 64 and the golden values of the predict, observe, update loop, from
# the host's replay of the same stream through the runtime's update.
LEARNING_FILES=(learn_m32.sgp learn_m64.sgp golden_learn_m32.rs)
(cd "$REPO_ROOT" && env -u CARGO_PROFILE_RELEASE_OPT_LEVEL cargo run --release -q -p sgp-trainer \
    --example firmware_learning -- "$GEN_DIR") || fail "cargo run -p sgp-trainer --example firmware_learning"
for f in "${LEARNING_FILES[@]}"; do
    cmp -s "$GEN_DIR/$f" "model/$f" || cp "$GEN_DIR/$f" "model/$f"
    [[ -s "model/$f" ]] || fail "model/$f missing or empty"
    if [[ $f == *.sgp ]]; then BLOBS+=("model/$f"); fi
done

# --- 3. build ----------------------------------------------------------------
step "build (release${OPT_LEVEL:+, opt-level $OPT_LEVEL})"
cargo build --release -q --target-dir "$TARGET_DIR" --bin "$MAIN_BIN" --bin "$STEPS_BIN"

# From here on a failed check is recorded and the independent steps still run,
# so one CI log shows every problem; the exit status is still non-zero.
FAILURES=()
check_failed() {
    printf 'run.sh: FAILED: %s\n' "$*" >&2
    FAILURES+=("$*")
}

# --- 4. run on the emulated Cortex-M4 ------------------------------------------
step "run $MAIN_BIN under QEMU"
LOG=$(mktemp)
PROOF_LOG=$(mktemp)
trap 'rm -f "$LOG" "$PROOF_LOG"' EXIT
set +e
"${QEMU[@]}" "$BIN_DIR/$MAIN_BIN" | tee "$LOG"
status=${PIPESTATUS[0]}
set -e
case $status in
    0) grep -qx 'RESULT: PASS' "$LOG" || check_failed "$MAIN_BIN exited 0 without 'RESULT: PASS'" ;;
    124) check_failed "$MAIN_BIN timed out (hung) under QEMU" ;;
    *) check_failed "$MAIN_BIN exited with status $status (see the lines marked FAILED/MISSES above)" ;;
esac

# The learning loop's error before and after the drifting plant's change,
# the device's against the host's replay (src/learning.rs).
grep -q '^learn loop: .*; matches the host' "$LOG" ||
    check_failed "the learning loop's error differs from the host's (line 'learn loop:')"

step "run $STEPS_BIN (the user guide's five-step firmware) under QEMU"
if "${QEMU[@]}" "$BIN_DIR/$STEPS_BIN"; then
    echo "ok: the user guide's snippet builds and runs"
else
    check_failed "$STEPS_BIN (the user guide's five-step firmware) exited with status $?"
fi

# Runs <elf> under the QEMU command that follows it, prints its golden,
# constant-time and RESULT lines prefixed with "<label>: ", and records a
# failure unless it printed RESULT: PASS and exited 0.
run_on_board() { # <label> <elf> <qemu command...>
    local label=$1 elf=$2 board_log status
    shift 2
    board_log=$(mktemp)
    set +e
    "$@" "$elf" >"$board_log" 2>&1
    status=$?
    set -e
    grep -E '^golden|^constant time|^RESULT' "$board_log" | sed "s/^/$label: /"
    if [[ $status -ne 0 ]] || ! grep -qx 'RESULT: PASS' "$board_log"; then
        grep -E 'FAILED|MISSES|panicked' "$board_log" >&2 || true
        check_failed "$(basename "$elf") on the $label exited with status $status"
    fi
    rm -f "$board_log"
}

step "run $MAIN_BIN built for $NOFPU_TARGET under QEMU (mps2-an385, Cortex-M3, no FPU)"
# Every golden check must pass here too; the counts are soft float's, and
# not required to be constant (see HARD_FLOAT in src/main.rs).
cargo build --release -q --target-dir "$TARGET_DIR" --target "$NOFPU_TARGET" --bin "$MAIN_BIN"
run_on_board cortex-m3 "$TARGET_DIR/$NOFPU_TARGET/release/$MAIN_BIN" "${QEMU_NOFPU[@]}"

step "run $M0_BIN built for $M0_TARGET under QEMU (microbit, Cortex-M0: the fixed-point model)"
cargo build --release -q --target-dir "$TARGET_DIR" --target "$M0_TARGET" --bin "$M0_BIN"
run_on_board cortex-m0 "$TARGET_DIR/$M0_TARGET/release/$M0_BIN" "${QEMU_M0[@]}"

# --- 5. panic-freedom proof --------------------------------------------------
step "panic-freedom proof ($PROOF_BIN links only if no panic is reachable)"
# A failed link leaves an older $PROOF_BIN behind: remove it so that the
# footprint below can never describe a stale binary.
rm -f "$BIN_DIR/$PROOF_BIN"
if ! cargo build --release -q --target-dir "$TARGET_DIR" --bin "$PROOF_BIN" >"$PROOF_LOG" 2>&1; then
    grep -E 'error|undefined symbol|referenced by|>>>' "$PROOF_LOG" | head -n 20 >&2
    if grep -q "$PROOF_SYMBOL" "$PROOF_LOG"; then
        check_failed "a panic is reachable from load/predict/mean/the gradients (undefined $PROOF_SYMBOL); the firmware chapter's \"Panic-freedom proof\" shows how to find it"
    else
        check_failed "$PROOF_BIN did not build"
    fi
elif "${QEMU[@]}" "$BIN_DIR/$PROOF_BIN"; then
    echo "linked and ran: no reachable panic in Model::load, predict, mean, probability, their _with_gradient forms, in_training_range, the name accessors or FixedModel::from_model and predict"
else
    check_failed "$PROOF_BIN exited with status $?"
fi

# --- 6. footprint ------------------------------------------------------------
step "footprint"
# Flash = text + rodata (+ data's initial values); RAM = data + bss + stack.
# Attribution by the crate that defines each symbol (generic code instantiated
# from core, e.g. iterator adaptors, counts as core: the runtime's figures are
# lower bounds).
footprint() { # <elf> <peak stack or "-">
    local elf=$1 stack=$2 secs text rodata data bss
    secs=$("$LLVM_SIZE" -A "$elf")
    text=$(awk '$1 == ".vector_table" || $1 == ".text" { s += $2 } END { print s + 0 }' <<<"$secs")
    rodata=$(awk '$1 == ".rodata" { s += $2 } END { print s + 0 }' <<<"$secs")
    data=$(awk '$1 == ".data" { s += $2 } END { print s + 0 }' <<<"$secs")
    bss=$(awk '$1 == ".bss" || $1 == ".uninit" { s += $2 } END { print s + 0 }' <<<"$secs")
    # Code and constants per crate (t/T = text, r/R = rodata).
    local by_crate runtime models
    by_crate=$("$LLVM_NM" -S --size-sort --radix=d -C "$elf" | awk '
        $3 ~ /^[tTrR]$/ {
            # Legacy-mangled leftovers: _$LT$a..b$GT$ -> <a::b>
            name = $4; gsub(/\$LT\$/, "<", name); gsub(/\.\./, "::", name); sub(/^_?</, "", name)
            n = split(name, part, "::"); crate = (n > 1) ? part[1] : "(no crate: builtins, asm, tables)"
            size[crate] += $2
        }
        END { for (c in size) printf "%s=%d\n", c, size[c] }' | sort -t= -k2 -nr)
    # The runtime and its dependencies; of libm only what the runtime calls
    # (the firmware's sensor simulation uses sinf/cosf too).
    runtime=$(awk -F= '$1 ~ /^(sgp_runtime|postcard|serde|serde_core|crc|crc_catalog|heapless|micromath)$/ { s += $2 } END { print s + 0 }' <<<"$by_crate")
    runtime=$((runtime + $("$LLVM_NM" -S --radix=d -C "$elf" | awk '$3 ~ /^[tT]$/ && $4 ~ /^libm::math::(expf|scalbnf|sqrtf?|exp)::/ { s += $2 } END { print s + 0 }')))
    models=$("$LLVM_NM" -S --radix=d -C "$elf" | awk '$3 ~ /^[bB]$/ && $4 ~ /MODEL_([A-Z0-9]+_)*M[0-9]+/ { s += $2 } END { print s + 0 }')
    printf '| `%s` | %d | %d | %d | %d | %d | %d | %d | %s |\n' "$(basename "$elf")" \
        "$((text + rodata + data))" "$text" "$rodata" "$runtime" "$BLOB_BYTES" "$((data + bss))" "$models" "$stack"
}
LLVM_NM=$(command -v llvm-nm || true)
[[ -n "$LLVM_NM" ]] || LLVM_NM=$(find "$(rustc --print sysroot)" -name llvm-nm -type f 2>/dev/null | head -n1)
BLOB_BYTES=0
for blob in "${BLOBS[@]}"; do BLOB_BYTES=$((BLOB_BYTES + $(wc -c <"$blob"))); done
if [[ -n "$LLVM_SIZE" && -n "$LLVM_NM" ]]; then
    echo "| binary | flash total | text | rodata | runtime code+consts (sgp_runtime, postcard, serde, crc, libm exp/sqrt if called) | blobs (${#BLOBS[@]}, in rodata) | RAM data+bss | models in bss | peak stack |"
    echo "|---|---|---|---|---|---|---|---|---|"
    peak=$(sed -n 's/^stack: peak \([0-9]*\) B.*/\1 B/p' "$LOG")
    footprint "$BIN_DIR/$MAIN_BIN" "${peak:--}"
    [[ -f "$BIN_DIR/$PROOF_BIN" ]] && footprint "$BIN_DIR/$PROOF_BIN" "(not measured)"
    echo "largest sgp_runtime functions (and libm expf, if linked) in $MAIN_BIN, bytes (one copy per M):"
    "$LLVM_NM" -S --size-sort --radix=d -C "$BIN_DIR/$MAIN_BIN" |
        awk '$3 ~ /^[tT]$/ && ($4 ~ /sgp_runtime::/ || $4 ~ /^libm::math::(expf|scalbnf)::/) { print "    " $2 "  " $4 }' | tail -n 12
else
    echo "no llvm-size/llvm-nm found; skipping sizes"
fi
grep '^stack:\|^load:' "$LOG" || true

# --- 7. self-tests of this harness -------------------------------------------
# Each must FAIL; if one passes, the corresponding check above proves nothing.
# A separate target dir keeps the real binaries above untouched.
if [[ "${SGP_FW_SKIP_SELFTEST:-0}" != 1 ]]; then
    step "self-tests (expected failures)"
    SELF_DIR=$TARGET_DIR/selftest
    if cargo build --release -q --target-dir "$SELF_DIR" --bin "$PROOF_BIN" \
        --features demo-reachable-panic >"$PROOF_LOG" 2>&1; then
        check_failed "self-test: $PROOF_BIN linked despite a deliberate reachable panic"
    elif grep -q "undefined symbol: $PROOF_SYMBOL" "$PROOF_LOG"; then
        echo "ok: deliberate reachable panic -> link fails with 'undefined symbol: $PROOF_SYMBOL'"
    else
        cat "$PROOF_LOG" >&2
        check_failed "self-test: $PROOF_BIN failed for another reason"
    fi

    cargo build --release -q --target-dir "$SELF_DIR" --bin "$MAIN_BIN" --features demo-golden-mismatch
    set +e
    "${QEMU[@]}" "$SELF_DIR/$TARGET/release/$MAIN_BIN" >"$PROOF_LOG" 2>&1
    status=$?
    set -e
    grep '^golden' "$PROOF_LOG" || true
    # Sign-flipped gradients pass only where they are within tolerance of
    # zero: the 4 far points, not the 12 in the data.
    if [[ $status -eq 1 ]] && grep -q '^golden M=32: 0/16 within tolerance' "$PROOF_LOG" &&
        grep -q '^golden gradient M=32: [0-4]/16 within tolerance' "$PROOF_LOG"; then
        echo "ok: deliberate golden mismatch -> every golden point fails, every gradient in the data fails, firmware exits with status 1"
    else
        cat "$PROOF_LOG" >&2
        check_failed "self-test: golden mismatch gave status $status, expected 1 with every point and every gradient in the data failing"
    fi
fi

# --- 8. optional: opt-level and exp implementation compared -------------------
if [[ "${SGP_FW_COMPARE:-0}" == 1 ]]; then
    step "compare opt-level s / 3 and built-in / micromath exp (measurements only)"
    for variant in "s libm" "3 libm" "s micromath" "3 micromath"; do
        read -r opt exp <<<"$variant"
        dir=$TARGET_DIR/compare-$opt-$exp
        features=()
        [[ $exp == micromath ]] && features=(--features micromath)
        CARGO_PROFILE_RELEASE_OPT_LEVEL=$opt cargo build --release -q --target-dir "$dir" \
            --bin "$MAIN_BIN" "${features[@]}"
        label=$exp
        [[ $exp == libm ]] && label="built-in" # the default features: the runtime's own exp
        echo "opt-level $opt, $label exp:"
        set +e
        "${QEMU[@]}" "$dir/$TARGET/release/$MAIN_BIN" >"$PROOF_LOG" 2>&1
        set -e
        grep -E '^\| (kind|spgp|vsgp|gplasso|ivm)|^golden [a-zA-Z0-9 =-]*M=[0-9]+: [0-9]|^constant time' "$PROOF_LOG" | sed 's/^/    /'
        echo "    text $("$LLVM_SIZE" "$dir/$TARGET/release/$MAIN_BIN" | awk 'NR == 2 { print $1 }') B"
    done
fi

if [[ ${#FAILURES[@]} -gt 0 ]]; then
    step "FAILED (${#FAILURES[@]})"
    printf '  - %s\n' "${FAILURES[@]}"
    exit 1
fi
step "all checks passed"
