//! Instruction counting on QEMU `mps2-an386` with `-icount shift=10`.
//!
//! QEMU emulates neither the DWT cycle counter nor real timing. With
//! `-icount shift=10`, though, virtual time advances exactly 2^10 ns per guest
//! instruction, and the MPS2 CMSDK TIMER0 counts that virtual time at 25 MHz
//! (40 ns per tick). Hence one instruction = 1024 / 40 = 25.6 ticks = 128/5.
//! Counts are deterministic run to run; they are *instructions*, not Cortex-M4
//! cycles (loads, taken branches, divides and flash wait states cost more on
//! silicon).
//!
//! Exactness: the timer is read at instruction granularity, so an interval of N
//! instructions reads as floor or ceil of 25.6 N ticks; two reads (interval and
//! empty-closure overhead) are off by at most 2 ticks = 0.08 instructions in
//! total, so rounding to the nearest instruction is exact. `calibrate_*` below
//! checks that at start-up against code of known length.

use core::hint::black_box;
use core::ptr::{read_volatile, write_volatile};

const TIMER0_BASE: usize = 0x4000_0000;
const CTRL: *mut u32 = TIMER0_BASE as *mut u32;
const VALUE: *mut u32 = (TIMER0_BASE + 0x4) as *mut u32;
const RELOAD: *mut u32 = (TIMER0_BASE + 0x8) as *mut u32;
const CTRL_ENABLE: u32 = 1;

/// 25.6 ticks per instruction as the exact ratio 128/5 (integer maths only).
pub const TICKS_PER_INSTRUCTION_NUM: u32 = 128;
pub const TICKS_PER_INSTRUCTION_DEN: u32 = 5;

/// `nop`s in one [`nop_block`]: few enough that a Cortex-M0 function
/// holding one keeps its literal pool within a Thumb-1 load's reach.
pub const NOP_BLOCK: u32 = 250;

/// Length of the straight-line calibration block: four [`nop_block`]s.
pub const CALIBRATION_NOPS: u32 = 4 * NOP_BLOCK;

/// A straight-line block of exactly [`NOP_BLOCK`] `nop`s, whose
/// instruction count needs no disassembly to know.
#[inline(always)]
pub fn nop_block() {
    // SAFETY: only `nop`s; no memory, stack or flags touched.
    unsafe {
        core::arch::asm!(
            ".rept {n}",
            "nop",
            ".endr",
            n = const NOP_BLOCK,
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// Converts a tick interval to instructions, rounded to nearest.
pub const fn ticks_to_instructions(ticks: u32) -> u32 {
    let scaled = ticks as u64 * TICKS_PER_INSTRUCTION_DEN as u64;
    ((scaled + TICKS_PER_INSTRUCTION_NUM as u64 / 2) / TICKS_PER_INSTRUCTION_NUM as u64) as u32
}

/// Owns TIMER0 and the measured cost of measuring nothing.
pub struct InstructionMeter {
    overhead_ticks: u32,
}

/// One measurement, overhead already removed.
#[derive(Clone, Copy, Debug)]
pub struct Measurement {
    /// Timer ticks spent in the closure (25.6 per instruction).
    pub ticks: u32,
    /// `ticks` converted to instructions, rounded to nearest.
    pub instructions: u32,
}

impl InstructionMeter {
    /// Starts TIMER0 free-running from its full 32-bit range.
    ///
    /// The down-counter wraps after 2^32 ticks (~168 M instructions); a single
    /// measurement must stay below that, which `wrapping_sub` then handles.
    ///
    /// Takes the `cortex_m::Peripherals`-style exclusive role for TIMER0: create
    /// only one, as a second would restart the counter under the first.
    pub fn new() -> Self {
        // SAFETY: TIMER0's registers are at these addresses on mps2-an386 and
        // nothing else in this firmware uses the timer.
        unsafe {
            write_volatile(CTRL, 0);
            write_volatile(RELOAD, u32::MAX);
            write_volatile(VALUE, u32::MAX);
            write_volatile(CTRL, CTRL_ENABLE);
        }
        let mut meter = Self { overhead_ticks: 0 };
        // Minimum over a few runs so a tick-phase boundary cannot inflate it.
        meter.overhead_ticks = (0..4)
            .map(|_| meter.raw_ticks((), |()| ()).1)
            .min()
            .unwrap_or(0);
        meter
    }

    /// Ticks taken by the measurement scaffolding itself.
    pub fn overhead_ticks(&self) -> u32 {
        self.overhead_ticks
    }

    /// Runs `f(arg)` and returns its result with its instruction count.
    ///
    /// `arg` goes through `black_box` *after* the start read: that makes the
    /// computation depend on something the compiler cannot see before the timer
    /// is read, so it cannot be hoisted out of the measured window (a closure
    /// that only captures would let LLVM compute ahead of the volatile read).
    pub fn measure<A, R>(&self, arg: A, f: impl FnOnce(A) -> R) -> (R, Measurement) {
        let (r, raw) = self.raw_ticks(arg, f);
        let ticks = raw.saturating_sub(self.overhead_ticks);
        let m = Measurement {
            ticks,
            instructions: ticks_to_instructions(ticks),
        };
        (r, m)
    }

    // Never inlined: otherwise the scheduler interleaves the caller's unrelated
    // arithmetic into the window between the two timer reads (volatile only
    // orders memory accesses), which showed up as +5 instructions on the
    // 1000-nop calibration. Out of line, only `f`'s own code is in the window.
    #[inline(never)]
    fn raw_ticks<A, R>(&self, arg: A, f: impl FnOnce(A) -> R) -> (R, u32) {
        let start = now();
        let r = f(black_box(arg));
        // Forces the result to exist before the end read.
        let r = black_box(r);
        let end = now();
        // Down-counter: elapsed = start - end, modulo the 32-bit wrap.
        (r, start.wrapping_sub(end))
    }

    /// Measures a straight-line block of exactly [`CALIBRATION_NOPS`] `nop`s,
    /// whose instruction count needs no disassembly to know.
    pub fn calibrate_straight_line(&self) -> Measurement {
        self.measure((), |()| {
            nop_block();
            nop_block();
            nop_block();
            nop_block();
        })
        .1
    }

    /// Measures `nop_loop(n)`; its per-iteration instruction count comes from
    /// the disassembly (see README), so this checks the factor on a loop too.
    pub fn calibrate_loop(&self, n: u32) -> Measurement {
        self.measure(n, nop_loop).1
    }
}

impl Default for InstructionMeter {
    fn default() -> Self {
        Self::new()
    }
}

#[inline(always)]
fn now() -> u32 {
    // SAFETY: TIMER0 VALUE register, a side-effect-free 32-bit read.
    unsafe { read_volatile(VALUE) }
}

/// A loop of `n` `nop`s, kept out of line so its code is one fixed shape that
/// `llvm-objdump -d --disassemble-symbols=...nop_loop...` shows.
#[inline(never)]
pub fn nop_loop(n: u32) {
    for _ in 0..n {
        cortex_m::asm::nop();
    }
}
