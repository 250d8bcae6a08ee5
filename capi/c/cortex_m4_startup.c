/* Just enough of a Cortex-M4F start-up for QEMU's mps2-an386 to run
 * test_capi.c against the bare-metal library (test-on-cortex-m4.sh): a
 * vector table at address 0, and a reset handler that enables the FPU (off
 * at reset, and the library computes in hardware floats) before newlib's
 * semihosting start-up (rdimon) sets up the C runtime and calls main. */
extern void _start(void);

__attribute__((naked, noreturn)) static void reset(void) {
    __asm volatile(
        "ldr r0, =0xE000ED88\n" /* CPACR: full access to CP10 and CP11 */
        "ldr r1, [r0]\n"
        "orr r1, r1, #(0xF << 20)\n"
        "str r1, [r0]\n"
        "dsb\n"
        "isb\n"
        "b _start\n");
}

static void halt(void) {
    for (;;) {
    }
}

/* Initial stack pointer: the top of the 4 MB SSRAM at address 0. */
__attribute__((section(".vectors"), used)) void (*const sgp_vectors[16])(void) = {
    (void (*)(void))0x00400000, reset, halt, halt, halt, halt, halt, 0, 0, 0, 0, halt, halt, 0,
    halt, halt,
};
