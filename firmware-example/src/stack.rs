//! Peak stack use by painting: fill the unused stack with a pattern at start-up,
//! then find the lowest word that no longer holds it. Works on any target and on
//! stable Rust, unlike `-Z emit-stack-sizes`; the result covers only the code
//! paths actually run (interrupt handlers included, if they fired).

use core::ptr::{addr_of, read_volatile, write_volatile};
use core::sync::atomic::{AtomicUsize, Ordering};

/// Unlikely to be a real stack value (not a Thumb return address: bit 0 clear,
/// not in RAM or flash on this memory map), so an overwrite is easy to detect.
const PAINT: u32 = 0xC5AC_C5AC;

/// How far below the caller `measure` paints: bounds the cost of painting
/// (4 MiB of QEMU RAM would take millions of instructions per call).
pub const PROBE_BYTES: usize = 64 * 1024;

/// Left unpainted below the SP that `paint_below` reads. Needed: LLVM may
/// schedule the `mrs msp` before the function's own prologue push
/// (shrink-wrapping), and painting over the saved LR then hangs on return.
/// This was observed with opt-level "s". 64 bytes is far more than that frame.
const MARGIN_BYTES: usize = 64;

/// Deepest address [`measure`] found touched. Needed because `measure`
/// repaints the stack below it, which erases the evidence `peak_usage` scans
/// for: without this, a deep call inside `measure` (e.g. loading the models,
/// ~40 KB) would vanish from the "since reset" peak.
static DEEPEST_MEASURED: AtomicUsize = AtomicUsize::new(usize::MAX);

extern "C" {
    // Both from cortex-m-rt's link.x: the stack grows down from `_stack_start`
    // (top of RAM) towards `_stack_end` (end of .bss/.uninit, 4-byte aligned).
    static _stack_start: u32;
    static _stack_end: u32;
}

fn bounds() -> (usize, usize) {
    // Only the addresses of the linker symbols are taken (safe), never values.
    (
        addr_of!(_stack_end) as usize,
        addr_of!(_stack_start) as usize,
    )
}

/// Paints everything between `_stack_end` and the current stack pointer.
/// Call first thing in `main`; the usage up to that point is still counted
/// because the high-water mark is measured from `_stack_start`.
pub fn paint() {
    let (bottom, _) = bounds();
    paint_below(bottom);
}

/// Paints from `bottom` up to [`MARGIN_BYTES`] below the stack pointer.
/// Writing below SP is sound here: AAPCS has no red zone, and an exception
/// stacking its frame there only makes the figure conservative.
#[inline(never)]
fn paint_below(bottom: usize) {
    let sp = cortex_m::register::msp::read() as usize;
    let top = sp.saturating_sub(MARGIN_BYTES);
    let mut p = bottom;
    while p < top {
        // SAFETY: [bottom, sp) is RAM below the live stack: unused memory.
        unsafe { write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
}

/// Lowest address in [from, to) that no longer holds the pattern, or `to`.
fn lowest_touched(from: usize, to: usize) -> usize {
    let mut p = from;
    // SAFETY: reads stay within RAM between the linker-provided stack bounds.
    while p < to && unsafe { read_volatile(p as *const u32) } == PAINT {
        p += 4;
    }
    p
}

/// Runs `f` and returns the bytes of stack it used below the caller's frame
/// (it reads at least [`MARGIN_BYTES`] plus a few bytes of its own call frames,
/// so figures below ~80 bytes mean "tiny"). If the result equals
/// [`PROBE_BYTES`], `f` used at least that much.
#[inline(never)]
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let (stack_end, _) = bounds();
    let sp = cortex_m::register::msp::read() as usize;
    let bottom = sp.saturating_sub(PROBE_BYTES).max(stack_end);
    paint_below(bottom);
    let r = core::hint::black_box(call(f));
    let deepest = lowest_touched(bottom, sp);
    DEEPEST_MEASURED.fetch_min(deepest, Ordering::Relaxed);
    (r, sp - deepest)
}

/// Keeps `f` out of `measure`'s own frame (which lies above the SP read
/// there); costs one extra 8-byte frame in the figure.
#[inline(never)]
fn call<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Bytes of stack used so far at the deepest point (since reset; needs `paint`),
/// including what [`measure`] saw before it repainted.
pub fn peak_usage() -> usize {
    let (bottom, top) = bounds();
    let deepest = lowest_touched(bottom, top).min(DEEPEST_MEASURED.load(Ordering::Relaxed));
    top - deepest
}

/// Bytes available to the stack in total (RAM above .bss/.uninit).
pub fn capacity() -> usize {
    let (bottom, top) = bounds();
    top - bottom
}
