#!/usr/bin/env bash
# Builds the C library for the Cortex-M4F as it ships (`--profile capi`: LTO,
# staticlib only) and proves it panic-free: its panic handler calls
# sgp_capi_panic_is_reachable, which is defined nowhere, and LTO deletes the
# handler unless a panic is reachable from an exported function
# (src/panic_proof.rs). So the archive must not reference that symbol.
# First a self-test: with a deliberate reachable panic the check must fail.
# Prints the library's code size. Exit status 0 only if every check passed.
#
#   SGP_CAPI_SKIP_SELFTEST=1   skip the self-test (it costs a second build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

TARGET=thumbv7em-none-eabihf
SYMBOL=sgp_capi_panic_is_reachable
LIB=target/$TARGET/capi/libsgp_capi.a

fail() {
    printf 'panic-proof.sh: FAILED: %s\n' "$*" >&2
    exit 1
}

# rustup's LLVM tools read what rustc writes; a system llvm-nm may be older.
TOOLS=$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin
if [[ ! -x $TOOLS/llvm-nm ]]; then
    rustup component add llvm-tools >/dev/null 2>&1 || true
fi
NM=$TOOLS/llvm-nm
SIZE=$TOOLS/llvm-size
[[ -x $NM ]] || NM=$(command -v llvm-nm || command -v nm) || fail "no llvm-nm or nm found"

build() {
    cargo rustc -q -p sgp-capi --profile capi --target "$TARGET" --crate-type staticlib "$@"
}
references_panic() {
    # Not `| grep -q`: its early exit would fail nm with SIGPIPE under pipefail.
    [[ $("$NM" -u "$LIB" 2>/dev/null) == *"$SYMBOL"* ]]
}

if [[ "${SGP_CAPI_SKIP_SELFTEST:-0}" != 1 ]]; then
    build --features demo-reachable-panic
    references_panic || fail "self-test: a deliberate reachable panic left no reference to $SYMBOL"
    echo "ok: deliberate reachable panic -> the archive references $SYMBOL"
fi

# Last, so that the archive left in target/ is the real one.
build
if references_panic; then
    fail "a panic is reachable from the C API: $LIB references $SYMBOL"
fi
echo "ok: $LIB references no panic (capacity $(grep -E '^#define SGP_CAPACITY_[MGD] ' \
    "target/$TARGET/capi/sgp.h" | awk '{printf "%s%s", sep, $3; sep=","}'))"

# Code and constants of the library itself (the LTO object; the compiler
# builtins it calls are linked from the same archive only as needed).
if [[ -x $SIZE ]]; then
    member=$(llvm-ar t "$LIB" 2>/dev/null | grep '^sgp_capi-' || "$TOOLS/llvm-ar" t "$LIB" | grep '^sgp_capi-')
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && "$TOOLS/llvm-ar" x "$OLDPWD/$LIB" "$member")
    "$SIZE" -A "$tmp/$member" | awk '
        $1 ~ /^\.text/ { text += $2 } $1 ~ /^\.rodata/ { rodata += $2 }
        END { printf "library code %d B, constants %d B (text, rodata of the LTO object)\n", text, rodata }'
fi
