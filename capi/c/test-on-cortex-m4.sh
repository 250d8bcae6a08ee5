#!/usr/bin/env bash
# Runs the C test program (test_capi.c) on an emulated Cortex-M4F against
# the bare-metal library, as a board would: the library from panic-proof.sh
# (profile capi, thumbv7em-none-eabihf), the headers the host test writes
# (cargo test -p sgp-capi --test c_program), arm-none-eabi-gcc with newlib's
# semihosting runtime, QEMU mps2-an386. Then again with --perturb, where all
# 48 golden checks must fail. Not in CI: the ARM toolchain is an 800 MB
# install (apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

LIB_DIR=target/thumbv7em-none-eabihf/capi
HEADERS=target/tmp/c_program
ELF=target/tmp/test_capi_cortex_m4.elf
QEMU=(timeout 120 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic -monitor none
    -semihosting-config enable=on,target=native -kernel "$ELF")

fail() {
    printf 'test-on-cortex-m4.sh: FAILED: %s\n' "$*" >&2
    exit 1
}
command -v arm-none-eabi-gcc >/dev/null || fail "arm-none-eabi-gcc not found"
command -v qemu-system-arm >/dev/null || fail "qemu-system-arm not found"

cargo test -q --release -p sgp-capi --test c_program >/dev/null
SGP_CAPI_SKIP_SELFTEST=1 bash capi/panic-proof.sh >/dev/null
arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 \
    -std=c11 -Wall -Wextra -Werror -pedantic -O2 -I "$LIB_DIR" -I "$HEADERS" \
    capi/c/cortex_m4_startup.c capi/c/test_capi.c "$LIB_DIR/libsgp_capi.a" \
    --specs=rdimon.specs -Wl,--section-start=.vectors=0 -Wl,--undefined=sgp_vectors \
    -Wl,--gc-sections -Wl,--no-warn-execstack -lm -o "$ELF"

"${QEMU[@]}" | tee "$ELF.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || fail "test_capi on the Cortex-M4"
set +e
"${QEMU[@]}" -append --perturb >"$ELF.log" 2>&1
status=$?
set -e
failed=$(grep -c '^FAILED' "$ELF.log" || true)
[[ $status -eq 1 && $failed -eq 48 ]] ||
    fail "with --perturb: exit $status and $failed failed checks, expected 1 and 48"
echo "ok: with --perturb all 48 golden checks fail"
