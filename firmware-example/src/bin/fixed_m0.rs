//! The fixed-point form of the M = 32 SPGP model on a Cortex-M0 (QEMU
//! `microbit`, nRF51822: no FPU, no 64-bit multiply, 16 KiB of RAM),
//! checked against the trainer's f64 golden values as the main firmware
//! checks it on the mps2 boards (`sgp_firmware_example::fixed_golden`),
//! with instructions counted by SysTick under `-icount`. Built for
//! `thumbv6m-none-eabi` and run by run.sh.
//!
//! RAM: the f32 `Model` it is built from lives in `.bss` (6,044 B), the
//! `FixedModel` on the stack (4,848 B, and as much again while
//! `FixedModel::from_model` returns it): more than the micro:bit's 16 KiB,
//! so run.sh runs it with the 32 KiB of the nRF51822's QFAC variant
//! (`memory-microbit.x`, QEMU's `-global nrf51-soc.sram-size=32768`).
#![no_std]
#![no_main]

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use panic_semihosting as _;
use sgp_firmware_example::fixed_golden::{check_one, Golden};
use sgp_firmware_example::instructions::{nop_block, NOP_BLOCK};
use sgp_firmware_example::model::{ModelM, BLOB_M32};

#[allow(clippy::approx_constant, dead_code)]
mod golden_m32 {
    include!(concat!(env!("OUT_DIR"), "/golden_m32.rs"));
}

/// SysTick's reload: its 24-bit range.
const RELOAD: u32 = 0x00FF_FFFF;

/// SysTick ticks of `f()`, less nothing: SysTick counts down and wraps at
/// 2^24 ticks, more than any one measurement here takes.
#[inline(never)]
fn ticks<R>(f: impl FnOnce() -> R) -> (R, u32) {
    let start = SYST::get_current();
    let r = core::hint::black_box(f());
    let end = SYST::get_current();
    (r, start.wrapping_sub(end) & RELOAD)
}

#[entry]
fn main() -> ! {
    let ok = run();
    hprintln!("RESULT: {}", if ok { "PASS" } else { "FAIL" });
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    #[allow(clippy::empty_loop)]
    loop {}
}

fn run() -> bool {
    let Some(mut peripherals) = cortex_m::Peripherals::take() else {
        return false;
    };
    let syst = &mut peripherals.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(RELOAD);
    syst.clear_current();
    syst.enable_counter();
    // Ticks per instruction from code of known length (the empty window's
    // own ticks subtracted): -icount makes both exact.
    let (_, empty) = ticks(|| ());
    let (_, nops) = ticks(nop_block);
    let per_block = nops.saturating_sub(empty);
    if per_block == 0 {
        hprintln!("fixed_m0: FAILED, SysTick does not count");
        return false;
    }
    let Some(model) = cortex_m::singleton!(MODEL: ModelM<32> = ModelM::<32>::new()) else {
        return false;
    };
    if let Err(e) = model.load(BLOB_M32) {
        hprintln!("fixed_m0: FAILED to load the M = 32 blob: {:?}", e);
        return false;
    }
    let golden = Golden {
        name: "M=32",
        inputs: golden_m32::INPUTS.as_slice(),
        dim: golden_m32::DIM,
        expected: &golden_m32::EXPECTED,
    };
    let mut slot = None;
    check_one(model, &mut slot, &golden, |fixed, x| {
        let (got, t) = ticks(|| fixed.predict(core::hint::black_box(x)));
        let t = t.saturating_sub(empty);
        // Rounded to the nearest instruction.
        let instructions = (t * NOP_BLOCK + per_block / 2) / per_block;
        (got, instructions)
    })
}
