//! Link-time proof that the prediction path contains no reachable panic:
//! `Model::load`, `predict`, `mean`, `probability`, `in_training_range`,
//! the name accessors, and `FixedModel::from_model` and its `predict`.
//!
//! The panic handler calls a function that is defined nowhere. After LTO, the
//! handler is only kept (and the symbol only needed) if some panic remains
//! reachable from `main`, in which case linking fails with
//! `undefined symbol: sgp_predict_path_can_panic`. So a successful release
//! build of this binary is the proof. Only the release profile proves anything:
//! see the `debug_assertions` handler below.
//!
//! Nothing here may format (core::fmt has panicking paths of its own): results
//! leave through volatile writes and the exit is a bare semihosting call.
#![no_std]
#![no_main]

use core::panic::PanicInfo;
use core::ptr::{addr_of, addr_of_mut, read_volatile, write_volatile};

use cortex_m_rt::entry;
use cortex_m_semihosting::debug;

use sgp_firmware_example::model::{self, Model, DR_INPUT_DIM, INPUT_DIM};

const N_INPUTS: usize = 4;

/// Inputs the optimiser cannot see through (read volatile at run time):
/// inside the data, at its edge, far outside, and non-finite.
static mut INPUTS: [[f32; INPUT_DIM]; N_INPUTS] = [
    [0.0, 0.5, -1.0, 2.0],
    [3.0, -3.0, 3.0, -3.0],
    [40.0, -40.0, 1e6, 0.0],
    [f32::NAN, f32::INFINITY, 0.0, 0.0],
];
/// The same for the 16-input models (SPGP+DR and SPGP on 16 inputs).
static mut INPUTS_16: [[f32; DR_INPUT_DIM]; N_INPUTS] = [
    [0.5; DR_INPUT_DIM],
    [3.0; DR_INPUT_DIM],
    [1e6; DR_INPUT_DIM],
    [f32::NAN; DR_INPUT_DIM],
];
/// Models whose prediction path is proved.
const N_MODELS: usize = 8;
/// Results written volatile so nothing can be optimised away: per model
/// (SPGP M = 16, 32, 64, VSGP, GPLasso, SPGP+DR, SPGP D = 16 and the IVM
/// classifier at M = 32) and input, (mean, variance) from `predict`, `mean`,
/// the sum of everything `predict_with_gradient` returns, and
/// `in_training_range`.
static mut OUTPUTS: [[Outputs; N_INPUTS]; N_MODELS] =
    [[(0.0, 0.0, 0.0, 0.0, false); N_INPUTS]; N_MODELS];
/// One input's results, as [`OUTPUTS`] lists them.
type Outputs = (f32, f32, f32, f32, bool);
/// Bytes of every model's input names (`input_names`, `target_name`).
static mut NAME_BYTES: usize = 0;
/// (mean, variance) of the fixed-point form of the M = 32 model.
static mut FIXED: (f32, f32) = (0.0, 0.0);
/// The IVM classifier's `probability` per input (its path adds the normal
/// CDF and a square root to `predict`'s) and the sum of what
/// `probability_with_gradient` returns.
static mut PROBABILITIES: [(f32, f32); N_INPUTS] = [(0.0, 0.0); N_INPUTS];

#[cfg(not(debug_assertions))]
extern "C" {
    /// Deliberately undefined: see the module docs.
    fn sgp_predict_path_can_panic() -> !;
}

#[cfg(not(debug_assertions))]
#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    // SAFETY: never runs; if it can be reached the link fails.
    unsafe { sgp_predict_path_can_panic() }
}

/// Unoptimised builds keep every bounds/overflow check, so the proof cannot
/// hold there; this handler only lets a plain `cargo build` (dev profile)
/// link. The proof is the release build (run.sh), where debug assertions are off.
#[cfg(debug_assertions)]
#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

#[entry]
fn main() -> ! {
    // The loader runs here as in main.rs (same function), so `Model::load`
    // (header, CRC, postcard decoding, range checks) is covered by the proof.
    let Some(Ok(models)) = model::load() else {
        debug::exit(debug::EXIT_FAILURE);
        loop {
            cortex_m::asm::wfi();
        }
    };
    // Every capacity, since each (M, G, D) is its own monomorphisation of
    // the runtime.
    // SAFETY: plain writes of a static nothing else accesses; the indices
    // are constants, checked at compile time (no bounds-check panic); the
    // input tables are statics nothing else accesses.
    unsafe {
        let inputs = addr_of!(INPUTS);
        let inputs_16 = addr_of!(INPUTS_16);
        write_volatile(addr_of_mut!(OUTPUTS[0]), run(models.m16, inputs));
        write_volatile(addr_of_mut!(OUTPUTS[1]), run(models.m32, inputs));
        write_volatile(addr_of_mut!(OUTPUTS[2]), run(models.m64, inputs));
        // Same monomorphisation as m32, but their own data (VSGP: per-basis
        // widths; GPLasso: centres at training inputs).
        write_volatile(addr_of_mut!(OUTPUTS[3]), run(models.vsgp_m32, inputs));
        write_volatile(addr_of_mut!(OUTPUTS[4]), run(models.gplasso_m32, inputs));
        // Projected (G = 4 < D = 16) and unprojected (G = D = 16).
        write_volatile(addr_of_mut!(OUTPUTS[5]), run(models.dr_m32, inputs_16));
        write_volatile(
            addr_of_mut!(OUTPUTS[6]),
            run(models.spgp_d16_m32, inputs_16),
        );
        // Probit: one factor (the second solve skipped), and `probability`.
        write_volatile(addr_of_mut!(OUTPUTS[7]), run(models.ivm_m32, inputs));
        write_volatile(
            addr_of_mut!(PROBABILITIES),
            probabilities(models.ivm_m32, inputs),
        );
        let name_bytes = name_bytes(models.m16)
            + name_bytes(models.m32)
            + name_bytes(models.m64)
            + name_bytes(models.dr_m32)
            + name_bytes(models.spgp_d16_m32);
        write_volatile(addr_of_mut!(NAME_BYTES), name_bytes);
        // The fixed-point form: its construction from the loaded model and
        // its prediction.
        let fixed = sgp_runtime::FixedModel::<32, 4>::from_model(models.m32)
            .ok()
            .and_then(|fixed| fixed.predict(&(*inputs)[0]).ok())
            .map_or((f32::NAN, f32::NAN), |p| (p.mean, p.variance));
        write_volatile(addr_of_mut!(FIXED), fixed);
    }
    debug::exit(debug::EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}

/// (mean, variance) from `predict`, the mean from `mean`, the sum of
/// `predict_with_gradient`'s values and gradients (every number is used,
/// so none of its code can be dropped), and whether the input is in the
/// training range, per input.
///
/// # Safety
/// `inputs` must point to a static that nothing else accesses.
unsafe fn run<const M: usize, const G: usize, const D: usize>(
    model: &Model<M, G, D>,
    inputs: *const [[f32; D]; N_INPUTS],
) -> [Outputs; N_INPUTS] {
    let mut out = [(0.0, 0.0, 0.0, 0.0, false); N_INPUTS];
    for (i, slot) in out.iter_mut().enumerate() {
        let mut x = [0.0f32; D];
        for (j, xj) in x.iter_mut().enumerate() {
            // SAFETY: in-bounds (i < N_INPUTS, j < D) read of the static.
            *xj = unsafe { read_volatile(addr_of!((*inputs)[i][j])) };
        }
        let x = demo_reachable_panic(&x);
        let (mean, variance) = model::predict(model, x);
        let mean_only = model::mean(model, x);
        let g = model::predict_with_gradient(model, x);
        let gradient_sum = g
            .mean_gradient
            .iter()
            .chain(&g.variance_gradient)
            .sum::<f32>()
            + g.mean
            + g.variance;
        let in_range = model.in_training_range(x) == Ok(true);
        *slot = (mean, variance, mean_only, gradient_sum, in_range);
    }
    out
}

/// Bytes of a model's input and target names.
fn name_bytes<const M: usize, const G: usize, const D: usize>(model: &Model<M, G, D>) -> usize {
    let inputs: usize = model.input_names().iter().map(|n| n.len()).sum();
    inputs + model.target_name().len()
}

/// `probability`, and the sum of what `probability_with_gradient` returns,
/// per input.
///
/// # Safety
/// `inputs` must point to a static that nothing else accesses.
unsafe fn probabilities<const M: usize, const G: usize, const D: usize>(
    model: &Model<M, G, D>,
    inputs: *const [[f32; D]; N_INPUTS],
) -> [(f32, f32); N_INPUTS] {
    let mut out = [(0.0, 0.0); N_INPUTS];
    for (i, slot) in out.iter_mut().enumerate() {
        let mut x = [0.0f32; D];
        for (j, xj) in x.iter_mut().enumerate() {
            // SAFETY: in-bounds (i < N_INPUTS, j < D) read of the static.
            *xj = unsafe { read_volatile(addr_of!((*inputs)[i][j])) };
        }
        let x = demo_reachable_panic(&x);
        let with_gradient = match model.probability_with_gradient(x) {
            Ok(p) => p.probability + p.gradient.iter().sum::<f32>(),
            Err(_) => f32::NAN,
        };
        *slot = (model::probability(model, x), with_gradient);
    }
    out
}

/// With feature `demo-reachable-panic`, slices the input with a length the
/// compiler cannot know, i.e. a bounds check that can fail: run.sh checks the
/// link then fails, so a passing proof is not a vacuous one.
#[inline(always)]
fn demo_reachable_panic(x: &[f32]) -> &[f32] {
    if cfg!(feature = "demo-reachable-panic") {
        static mut LEN: usize = INPUT_DIM;
        // SAFETY: plain read of a static nothing writes.
        &x[..unsafe { read_volatile(addr_of!(LEN)) }]
    } else {
        x
    }
}
