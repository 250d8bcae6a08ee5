//! Example firmware: a fixed-rate control loop that trusts the GP model only
//! where it is confident, after checking it against host-computed golden values
//! and measuring what a prediction costs.
//!
//! Runs under QEMU (see .cargo/config.toml / run.sh) and reports through
//! semihosting; the exit code is the verdict (0 = all checks passed).
#![no_std]
#![no_main]

use core::fmt::Arguments;
use core::ptr::{addr_of_mut, write_volatile};

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
// Panics print their message via semihosting and exit QEMU with status 1.
use panic_semihosting as _;

use sgp_firmware_example::golden::{self, Tolerance, GRADIENT_OF_STEEPEST, GRADIENT_RELATIVE};
use sgp_firmware_example::instructions::{self, InstructionMeter, CALIBRATION_NOPS};
use sgp_firmware_example::model::{
    self, Model, ModelM, Models, CONTROL_M, DR_FEATURE_DIM, DR_INPUT_DIM, INPUT_DIM,
};
use sgp_firmware_example::stack;

/// Host-generated golden values, one file per model (model/golden_m{M}.rs,
/// model/golden_{kind}_m{M}.rs, staged by build.rs): `DIM`, `Y_SCALES`,
/// `INPUTS` (row-major), `EXPECTED`, `GRADIENTS` (row-major like `INPUTS`).
macro_rules! golden_module {
    ($name:ident, $file:literal) => {
        // The generator prints each value as the shortest literal of its f32,
        // which may still land near a named constant such as PI.
        #[allow(clippy::approx_constant)]
        // A generated file defines every constant of its kind; a check
        // reads those it needs (one output's check, not `OUTPUTS`).
        #[allow(dead_code)]
        mod $name {
            include!(concat!(env!("OUT_DIR"), "/", $file));
        }
    };
}
// After the macro, which they use too.
mod fixed;
mod learning;
mod outputs;
mod uncertain;

golden_module!(golden_m16, "golden_m16.rs");
golden_module!(golden_m32, "golden_m32.rs");
golden_module!(golden_m64, "golden_m64.rs");
golden_module!(golden_vsgp_m32, "golden_vsgp_m32.rs");
golden_module!(golden_dr_m32, "golden_dr_m32.rs");
golden_module!(golden_gplasso_m32, "golden_gplasso_m32.rs");
golden_module!(golden_spgp_d16_m32, "golden_spgp_d16_m32.rs");
golden_module!(golden_ivm_m32, "golden_ivm_m32.rs");
golden_module!(golden_svgp_m32, "golden_svgp_m32.rs");
golden_module!(golden_matern32_m32, "golden_matern32_m32.rs");

/// Control ticks simulated (a real loop would wait for a timer each tick).
const CONTROL_TICKS: u32 = 200;
/// The model is "unsure" where its predictive standard deviation exceeds this
/// fraction of the prior one (prior + noise: what it predicts with no data
/// nearby). Relative, so it needs no retuning when the target is rescaled
/// or the model refitted. Inside the training data the M = 32 fit stays
/// below ~0.6 of it (mostly below 0.25); 0.75 keeps it acting there while any
/// input far from the data (std -> 1.0 of prior) falls back.
const UNSURE_STD_FRACTION: f32 = 0.75;
/// The conservative action taken when the model is unsure (e.g. hold/stop).
const SAFE_ACTION: f32 = 0.0;
/// Print one status line every this many ticks (plus on every mode change).
const LOG_EVERY: u32 = 25;
/// Iterations of the `nop_loop` calibration (its cost is in the README).
const LOOP_CALIBRATION_N: u32 = 1000;
/// Half-width of the box the training inputs were drawn from (`sgp synth`:
/// uniform on [-3, 3]^4); the simulated sensor sweeps inside 2/3 of it.
const DATA_HALF_WIDTH: f32 = 3.0;
/// The bounds for one `predict` (mean + variance) at M = 32 and 64, D = 4
/// on the Cortex-M4F: one above today's counts (issue 22's targets were
/// 3,000 and 9,000; issue 54's 2,300 at M = 32 is not met), so the firmware
/// fails if a change of the runtime makes a prediction dearer.
const TARGET_PREDICT_INSTRUCTIONS_M32: u32 = 2_824;
/// A Matérn 3/2 prediction's cost over the squared exponential's at M = 32
/// (issue 39).
const MATERN_PREDICT_RATIO: f32 = 1.25;
const TARGET_PREDICT_INSTRUCTIONS_M64: u32 = 7_649;
/// Largest spread of instruction counts over inputs accepted as "constant
/// time" for one function and M. See `check_cost` for what the spread is.
const CONSTANT_TIME_SLACK: u32 = 8;
/// The same for a classifier's `probability`: `Phi` is libm's `erfcf`,
/// which picks one of several rational approximations by the size of its
/// argument, so the spread depends on where the model's latent values fall:
/// 14 instructions when the probes' latent values share a branch, 141 with
/// the IVM whose posterior uses every training row (its probabilities at
/// the probes reach different branches). `predict` inside it is still held
/// to `CONSTANT_TIME_SLACK`; this bounds the branches' difference.
const PROBABILITY_SLACK: u32 = 160;
/// Built for a core with a hardware FPU (thumbv7em-none-eabihf, run.sh's
/// Cortex-M4F). Without one (thumbv7m-none-eabi on the Cortex-M3, run.sh's
/// second run) every float operation is a compiler-builtins routine whose
/// path depends on the operands, so the counts vary with the input: there
/// they are reported, not required to be constant.
const HARD_FLOAT: bool = cfg!(target_abi = "eabihf");
/// Largest accepted |P(+1) on target - P(+1) from the host's golden latent
/// mean and variance|: the trainer's own export check uses the same bound.
const PROBABILITY_TOL: f32 = 1e-3;

/// Simulated actuator register; volatile writes stand in for a DAC/PWM update
/// and keep the whole loop observable, so nothing is optimised away.
static mut ACTUATOR: f32 = 0.0;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Model,
    Fallback,
}

#[entry]
fn main() -> ! {
    stack::paint();
    let ok = run();
    hprintln!(
        "stack: peak {} B of {} B available (painted)",
        stack::peak_usage(),
        stack::capacity()
    );
    if ok {
        hprintln!("RESULT: PASS");
        debug::exit(debug::EXIT_SUCCESS);
    } else {
        hprintln!("RESULT: FAIL");
        debug::exit(debug::EXIT_FAILURE);
    }
    // Only reached if no debugger/semihosting host is attached.
    loop {
        cortex_m::asm::wfi();
    }
}

/// Runs every check; returns whether all passed.
fn run() -> bool {
    let meter = InstructionMeter::new();
    let calibrated = calibrate(&meter);
    let Some(models) = load_models() else {
        return false;
    };
    // `&` (not `&&`): every check runs and reports even after a failure.
    let golden_ok = check_golden(
        &meter,
        "M=16",
        models.m16,
        golden_m16::INPUTS.as_slice(),
        golden_m16::DIM,
        &golden_m16::EXPECTED,
        golden_m16::Y_SCALES[0],
    ) & check_golden(
        &meter,
        "M=32",
        models.m32,
        golden_m32::INPUTS.as_slice(),
        golden_m32::DIM,
        &golden_m32::EXPECTED,
        golden_m32::Y_SCALES[0],
    ) & check_golden(
        &meter,
        "M=64",
        models.m64,
        golden_m64::INPUTS.as_slice(),
        golden_m64::DIM,
        &golden_m64::EXPECTED,
        golden_m64::Y_SCALES[0],
    ) & check_golden(
        &meter,
        "vsgp M=32",
        models.vsgp_m32,
        golden_vsgp_m32::INPUTS.as_slice(),
        golden_vsgp_m32::DIM,
        &golden_vsgp_m32::EXPECTED,
        golden_vsgp_m32::Y_SCALES[0],
    ) & check_golden(
        &meter,
        "spgp-dr M=32",
        models.dr_m32,
        golden_dr_m32::INPUTS.as_slice(),
        golden_dr_m32::DIM,
        &golden_dr_m32::EXPECTED,
        golden_dr_m32::Y_SCALES[0],
    ) & check_golden(
        &meter,
        "gplasso M=32",
        models.gplasso_m32,
        golden_gplasso_m32::INPUTS.as_slice(),
        golden_gplasso_m32::DIM,
        &golden_gplasso_m32::EXPECTED,
        golden_gplasso_m32::Y_SCALES[0],
    ) & check_golden(
        &meter,
        "spgp D=16 M=32",
        models.spgp_d16_m32,
        golden_spgp_d16_m32::INPUTS.as_slice(),
        golden_spgp_d16_m32::DIM,
        &golden_spgp_d16_m32::EXPECTED,
        golden_spgp_d16_m32::Y_SCALES[0],
    ) & check_golden(
        &meter,
        "ivm M=32",
        models.ivm_m32,
        golden_ivm_m32::INPUTS.as_slice(),
        golden_ivm_m32::DIM,
        &golden_ivm_m32::EXPECTED,
        golden_ivm_m32::Y_SCALES[0],
    ) & check_probability(
        &meter,
        "ivm M=32",
        models.ivm_m32,
        golden_ivm_m32::INPUTS.as_slice(),
        golden_ivm_m32::DIM,
        &golden_ivm_m32::EXPECTED,
    ) & check_golden(
        &meter,
        "svgp M=32",
        models.svgp_m32,
        golden_svgp_m32::INPUTS.as_slice(),
        golden_svgp_m32::DIM,
        &golden_svgp_m32::EXPECTED,
        golden_svgp_m32::Y_SCALES[0],
    ) & check_probability(
        &meter,
        "svgp M=32",
        models.svgp_m32,
        golden_svgp_m32::INPUTS.as_slice(),
        golden_svgp_m32::DIM,
        &golden_svgp_m32::EXPECTED,
    ) & check_golden(
        &meter,
        "matern32 M=32",
        models.matern32_m32,
        golden_matern32_m32::INPUTS.as_slice(),
        golden_matern32_m32::DIM,
        &golden_matern32_m32::EXPECTED,
        golden_matern32_m32::Y_SCALES[0],
    );
    // Every model's gradients against the host's central differences.
    macro_rules! gradient_golden {
        ($label:literal, $model:expr, $golden:ident) => {
            check_gradient_golden(
                &meter,
                $label,
                $model,
                $golden::INPUTS.as_slice(),
                $golden::DIM,
                &$golden::GRADIENTS,
            )
        };
    }
    let gradient_ok = gradient_golden!("M=16", models.m16, golden_m16)
        & gradient_golden!("M=32", models.m32, golden_m32)
        & gradient_golden!("M=64", models.m64, golden_m64)
        & gradient_golden!("vsgp M=32", models.vsgp_m32, golden_vsgp_m32)
        & gradient_golden!("spgp-dr M=32", models.dr_m32, golden_dr_m32)
        & gradient_golden!("gplasso M=32", models.gplasso_m32, golden_gplasso_m32)
        & gradient_golden!("spgp D=16 M=32", models.spgp_d16_m32, golden_spgp_d16_m32)
        & gradient_golden!("ivm M=32", models.ivm_m32, golden_ivm_m32)
        & gradient_golden!("svgp M=32", models.svgp_m32, golden_svgp_m32)
        & gradient_golden!("matern32 M=32", models.matern32_m32, golden_matern32_m32);
    let cost_ok = check_cost(&meter, &models);
    let api_ok = check_api_cost(&meter, &models);
    let loop_ok = control_loop(&meter, models.m32);
    let outputs_ok = outputs::check(&meter);
    let learning_ok = learning::check(&meter);
    let fixed_ok = fixed::check(&meter, &models);
    let uncertain_ok = uncertain::check(&meter);
    calibrated
        & golden_ok
        & gradient_ok
        & cost_ok
        & api_ok
        & loop_ok
        & outputs_ok
        & learning_ok
        & fixed_ok
        & uncertain_ok
}

/// Checks the 25.6 ticks/instruction factor on code of known length, so the
/// instruction counts printed later can be trusted (fails without -icount).
fn calibrate(meter: &InstructionMeter) -> bool {
    let straight = meter.calibrate_straight_line();
    let looped = meter.calibrate_loop(LOOP_CALIBRATION_N);
    hprintln!(
        "instructions: overhead {} ticks; {} nops -> {} ticks = {} instructions; nop_loop({}) -> {} ticks = {} instructions",
        meter.overhead_ticks(),
        CALIBRATION_NOPS,
        straight.ticks,
        straight.instructions,
        LOOP_CALIBRATION_N,
        looped.ticks,
        looped.instructions,
    );
    let ok = straight.instructions == CALIBRATION_NOPS;
    if !ok {
        hprintln!(
            "instructions: calibration FAILED (expected {} instructions = {} ticks); is QEMU running with -icount shift=10?",
            CALIBRATION_NOPS,
            CALIBRATION_NOPS * instructions::TICKS_PER_INSTRUCTION_NUM
                / instructions::TICKS_PER_INSTRUCTION_DEN
        );
    }
    ok
}

/// Loads the eight blobs into their statics and reports sizes and the
/// stack the in-place `Model::load` calls need.
fn load_models() -> Option<Models> {
    let (loaded, load_stack) = stack::measure(model::load);
    let models = match loaded {
        Some(Ok(models)) => models,
        Some(Err(e)) => {
            hprintln!("load: FAILED, blob {}: {:?}", e.blob, e.error);
            return None;
        }
        None => {
            hprintln!("load: FAILED, called twice");
            return None;
        }
    };
    describe("M=16", models.m16, model::BLOB_M16.len());
    describe("M=32", models.m32, model::BLOB_M32.len());
    describe("M=64", models.m64, model::BLOB_M64.len());
    describe("vsgp M=32", models.vsgp_m32, model::BLOB_VSGP_M32.len());
    describe("spgp-dr M=32", models.dr_m32, model::BLOB_DR_M32.len());
    describe(
        "gplasso M=32",
        models.gplasso_m32,
        model::BLOB_GPLASSO_M32.len(),
    );
    describe(
        "spgp D=16 M=32",
        models.spgp_d16_m32,
        model::BLOB_SPGP_D16_M32.len(),
    );
    describe("ivm M=32", models.ivm_m32, model::BLOB_IVM_M32.len());
    describe("svgp M=32", models.svgp_m32, model::BLOB_SVGP_M32.len());
    describe(
        "matern32 M=32",
        models.matern32_m32,
        model::BLOB_MATERN32_M32.len(),
    );
    hprintln!(
        "load: all nine Model::load calls (in place, into .bss) <= {} B stack",
        load_stack
    );
    Some(models)
}

/// One line per model; `label` names it in every line of the log ("M=32" for
/// the SPGP models, "vsgp M=32").
fn describe<const M: usize, const G: usize, const D: usize>(
    label: &str,
    m: &Model<M, G, D>,
    blob_bytes: usize,
) {
    let s = m.shape();
    hprintln!(
        "model {}: {} with {} basis functions, D={}, G={}; per-basis widths: {}; blob {} B (flash), Model<{}, {}, {}> {} B (RAM); prior var {}, noise var {}",
        label,
        s.kind.name(),
        s.n_basis,
        s.input_dim,
        s.feature_dim,
        if s.per_basis { "yes" } else { "no (shared)" },
        blob_bytes,
        M,
        G,
        D,
        core::mem::size_of::<Model<M, G, D>>(),
        m.prior_variance(),
        m.noise_variance()
    );
}

/// Compares on-target predictions of `model` with the host's golden values.
fn check_golden<const M: usize, const G: usize, const D: usize>(
    meter: &InstructionMeter,
    label: &str,
    model: &Model<M, G, D>,
    inputs: &[f32],
    dim: usize,
    expected: &[(f32, f32)],
    y_scale: f32,
) -> bool {
    let tol = Tolerance::for_y_scale(y_scale);
    let (mut max_instr, mut max_stack) = (0, 0);
    let result = golden::check(inputs, dim, expected, tol, |x| {
        let ((pred, m), stack_bytes) =
            stack::measure(|| meter.measure(x, |x| model::predict(model, x)));
        max_instr = max_instr.max(m.instructions);
        max_stack = max_stack.max(stack_bytes);
        perturb_for_demo(pred, y_scale)
    });
    match result {
        Err(e) => shape_mismatch("golden", label, e),
        Ok(r) => {
            hprintln!(
                "golden {}: {}/{} within tolerance (mean +-{}, var +-{}%); worst mean err {}x tol, worst var err {}x tol; predict <= {} instructions, <= {} B stack",
                label,
                r.checked - r.failed,
                r.checked,
                tol.mean_abs,
                tol.var_rel * 100.0,
                r.worst_mean_ratio,
                r.worst_var_ratio,
                max_instr,
                max_stack
            );
            if let Some(f) = r.first_failure {
                hprintln!(
                    "golden {}: first failure at #{}: got ({}, {}), want ({}, {})",
                    label,
                    f.index,
                    f.got.0,
                    f.got.1,
                    f.want.0,
                    f.want.1
                );
            }
            r.passed()
        }
    }
}

/// Reports golden values that do not fit their inputs; always a failure.
fn shape_mismatch(check: &str, label: &str, e: golden::ShapeError) -> bool {
    hprintln!(
        "{} {}: FAILED, shape mismatch: {} inputs, dim {}, {} expected pairs",
        check,
        label,
        e.inputs,
        e.dim,
        e.expected
    );
    false
}

/// Checks a probit model's `probability` at the golden inputs against
/// `Phi(m / sqrt(1 + v))` of the host's latent (mean, variance) there (the
/// golden file carries no probabilities), within `PROBABILITY_TOL`.
fn check_probability<const M: usize, const G: usize, const D: usize>(
    meter: &InstructionMeter,
    label: &str,
    model: &Model<M, G, D>,
    inputs: &[f32],
    dim: usize,
    expected: &[(f32, f32)],
) -> bool {
    if dim == 0 || inputs.len() != dim * expected.len() {
        hprintln!("golden {} probability: FAILED, shape mismatch", label);
        return false;
    }
    let (mut failed, mut worst, mut max_instr) = (0usize, 0.0f32, 0u32);
    for (x, &(mean, variance)) in inputs.chunks_exact(dim).zip(expected) {
        let want = 0.5 * libm::erfcf(-mean / libm::sqrtf(2.0 * (1.0 + variance)));
        let (got, m) = meter.measure(x, |x| model::probability(model, x));
        max_instr = max_instr.max(m.instructions);
        let ratio = (got - want).abs() / PROBABILITY_TOL;
        worst = worst.max(ratio);
        // Written as "within" so that NaN (all comparisons false) fails.
        let within = ratio <= 1.0;
        if !within {
            failed += 1;
        }
    }
    hprintln!(
        "golden {} probability: {}/{} within +-{} of Phi(m / sqrt(1 + v)) of the golden latent; worst err {}x tol; probability <= {} instructions",
        label,
        expected.len() - failed,
        expected.len(),
        PROBABILITY_TOL,
        worst,
        max_instr
    );
    failed == 0 && !expected.is_empty()
}

/// Compares on-target `predict_with_gradient` gradients of `model` with the
/// host's (central differences of its f64 predictions), and its mean and
/// variance with `predict`'s, bit for bit.
fn check_gradient_golden<const M: usize, const G: usize, const D: usize>(
    meter: &InstructionMeter,
    label: &str,
    model: &Model<M, G, D>,
    inputs: &[f32],
    dim: usize,
    expected: &[(f32, f32)],
) -> bool {
    let (mut max_instr, mut max_stack, mut same_values) = (0, 0, 0usize);
    let result = golden::check_gradients(inputs, dim, expected, |x| {
        let ((g, m), stack_bytes) =
            stack::measure(|| meter.measure(x, |x| model::predict_with_gradient(model, x)));
        max_instr = max_instr.max(m.instructions);
        max_stack = max_stack.max(stack_bytes);
        let (mean, variance) = model::predict(model, x);
        if (g.mean.to_bits(), g.variance.to_bits()) == (mean.to_bits(), variance.to_bits()) {
            same_values += 1;
        }
        perturb_gradient_for_demo(g.mean_gradient, g.variance_gradient)
    });
    match result {
        Err(e) => shape_mismatch("golden gradient", label, e),
        Ok(r) => {
            hprintln!(
                "golden gradient {}: {}/{} within tolerance ({} |g(x)| + {} max |g|); worst mean-gradient err {}x tol, worst variance-gradient err {}x tol; mean and variance = predict's bit for bit at {}/{}; predict_with_gradient <= {} instructions, <= {} B stack",
                label,
                r.checked - r.failed,
                r.checked,
                GRADIENT_RELATIVE,
                GRADIENT_OF_STEEPEST,
                r.worst_mean_ratio,
                r.worst_var_ratio,
                same_values,
                r.checked,
                max_instr,
                max_stack
            );
            r.passed() && same_values == r.checked
        }
    }
}

/// With feature `demo-golden-mismatch`, shifts every mean by 10 tolerances so
/// run.sh can show that a failing comparison makes the firmware exit non-zero.
fn perturb_for_demo(pred: (f32, f32), y_scale: f32) -> (f32, f32) {
    if cfg!(feature = "demo-golden-mismatch") {
        (pred.0 + 1e-2 * y_scale, pred.1)
    } else {
        pred
    }
}

/// With feature `demo-golden-mismatch`, flips the sign of every gradient:
/// the error a gradient check must catch (it passes only where the
/// gradient is within tolerance of zero, far from the data).
fn perturb_gradient_for_demo<const D: usize>(
    mean: [f32; D],
    variance: [f32; D],
) -> ([f32; D], [f32; D]) {
    if cfg!(feature = "demo-golden-mismatch") {
        (mean.map(|g| -g), variance.map(|g| -g))
    } else {
        (mean, variance)
    }
}

/// Smallest and largest of a set of instruction counts.
#[derive(Clone, Copy)]
struct Span {
    min: u32,
    max: u32,
}

impl Span {
    const EMPTY: Span = Span {
        min: u32::MAX,
        max: 0,
    };

    fn add(&mut self, v: u32) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    fn spread(&self) -> u32 {
        self.max.saturating_sub(self.min)
    }
}

/// Instruction counts of `predict` and `mean` at one input.
fn cost<const M: usize, const G: usize, const D: usize>(
    meter: &InstructionMeter,
    model: &Model<M, G, D>,
    x: &[f32],
) -> (u32, u32) {
    // The runtime's own API, Result and all, so the figure is what a caller pays.
    let (_, p) = meter.measure(x, |x| model.predict(x));
    let (_, m) = meter.measure(x, |x| model.mean(x));
    (p.instructions, m.instructions)
}

/// Instruction count of `predict_with_gradient` at one input.
fn gradient_cost<const M: usize, const G: usize, const D: usize>(
    meter: &InstructionMeter,
    model: &Model<M, G, D>,
    x: &[f32],
) -> u32 {
    let (_, g) = meter.measure(x, |x| model.predict_with_gradient(x));
    g.instructions
}

/// The cost of the gradients next to `predict` at M = 32, with the
/// arithmetic they add: the back substitutions (factors * M(M-1)/2
/// multiply-adds), one more pass over the basis functions (2MG: two sums
/// per feature) and, with a projection, the chain rule through it (2GD).
/// Rows: SPGP and the IVM classifier (D = G = 4), SPGP+DR (D = 16, G = 4),
/// SPGP on 16 inputs (G = D = 16).
fn gradient_table(predict: [Span; 4], gradient: [Span; 4]) {
    const ROWS: [(&str, u32, u32, u32, bool); 4] = [
        ("spgp", 4, 4, 2, false),
        ("ivm (probit, 1 factor)", 4, 4, 1, false),
        ("spgp-dr", 16, 4, 2, true),
        ("spgp", 16, 16, 2, false),
    ];
    let m = 32u32;
    hprintln!("gradient cost table (M = 32; instructions min-max over the same inputs):");
    hprintln!("| kind | D | G | back-solve MACs factors*M(M-1)/2 | gradient pass MACs 2MG (+2GD) | predict | predict_with_gradient | gradient - predict |");
    hprintln!("|---|---|---|---|---|---|---|---|");
    for ((&(kind, d, g, factors, projected), p), q) in ROWS.iter().zip(&predict).zip(&gradient) {
        hprintln!(
            "| {} | {} | {} | {} | {} | {}-{} | {}-{} | {} |",
            kind,
            d,
            g,
            factors * m * (m - 1) / 2,
            2 * m * g + if projected { 2 * g * d } else { 0 },
            p.min,
            p.max,
            q.min,
            q.max,
            i64::from(q.max) - i64::from(p.max)
        );
    }
}

/// Inputs for the cost table besides the golden ones: the data's centre and
/// a corner, then ever further out (the exp arguments reach libm's
/// underflow range), up to a huge value.
const EXTRA_COST_INPUTS: [[f32; INPUT_DIM]; 6] = [
    [0.0, 0.0, 0.0, 0.0],
    [3.0, 3.0, 3.0, 3.0],
    [-3.0, 3.0, -3.0, 3.0],
    [6.0, -6.0, 6.0, -6.0],
    [10.0, -10.0, 10.0, -10.0],
    [1e4, 1e4, -1e4, -1e4],
];

/// Measures `predict` and `mean` for every model at the golden inputs (near
/// the data and far from it) and a few more; prints every count and the
/// table with the arithmetic each needs. Fails if a count varies with the
/// input by more than `CONSTANT_TIME_SLACK` (the runtime promises constant
/// time per prediction).
fn check_cost(meter: &InstructionMeter, models: &Models) -> bool {
    // Rows of the table: (kind, M, triangular factors); `counts` below is
    // in the same order.
    const ROWS: [(&str, u32, u32); 7] = [
        ("spgp", 16, 2),
        ("spgp", 32, 2),
        ("spgp", 64, 2),
        ("vsgp", 32, 2),
        ("gplasso", 32, 2),
        ("ivm (probit, 1 factor)", 32, 1),
        ("spgp matern32", 32, 2),
    ];
    let mut spans = [[Span::EMPTY; 2]; ROWS.len()];
    // The IVM classifier's `probability` (predict + Phi(m / sqrt(1 + v))).
    let mut probability = Span::EMPTY;
    // `predict_with_gradient` of SPGP and the IVM classifier at M = 32, and
    // the classifier's `probability_with_gradient` (VSGP and GPLasso run
    // SPGP's code).
    let mut gradient = [Span::EMPTY; 3];
    // `predict_with_gradient` of the Matérn 3/2 SPGP model at M = 32.
    let mut matern_gradient = Span::EMPTY;
    let inputs = golden_m32::INPUTS
        .chunks_exact(INPUT_DIM)
        .chain(EXTRA_COST_INPUTS.iter().map(|x| x.as_slice()));
    for x in inputs {
        let counts = [
            cost(meter, models.m16, x),
            cost(meter, models.m32, x),
            cost(meter, models.m64, x),
            cost(meter, models.vsgp_m32, x),
            cost(meter, models.gplasso_m32, x),
            cost(meter, models.ivm_m32, x),
            cost(meter, models.matern32_m32, x),
        ];
        let (_, pm) = meter.measure(x, |x| models.ivm_m32.probability(x));
        probability.add(pm.instructions);
        gradient[0].add(gradient_cost(meter, models.m32, x));
        gradient[1].add(gradient_cost(meter, models.ivm_m32, x));
        matern_gradient.add(gradient_cost(meter, models.matern32_m32, x));
        let (_, pg) = meter.measure(x, |x| models.ivm_m32.probability_with_gradient(x));
        gradient[2].add(pg.instructions);
        for (span, (p, m)) in spans.iter_mut().zip(counts) {
            span[0].add(p);
            span[1].add(m);
        }
        hprintln!(
            "cost: x=[{:+.2e}, {:+.2e}, {:+.2e}, {:+.2e}] predict M=16/32/64: {} / {} / {}, vsgp / gplasso / ivm M=32: {} / {} / {}; mean: {} / {} / {}, vsgp / gplasso / ivm M=32: {} / {} / {}; ivm probability: {}",
            x[0],
            x[1],
            x[2],
            x[3],
            counts[0].0,
            counts[1].0,
            counts[2].0,
            counts[3].0,
            counts[4].0,
            counts[5].0,
            counts[0].1,
            counts[1].1,
            counts[2].1,
            counts[3].1,
            counts[4].1,
            counts[5].1,
            pm.instructions
        );
    }

    hprintln!(
        "cost table (D = G = {}; instructions min-max over the inputs above):",
        INPUT_DIM
    );
    hprintln!("| kind | M | distances 3MG flops | exp calls M | mean MACs M | solve MACs factors*M(M+1)/2 | predict | mean | predict - mean | (predict - mean) / solve MAC |");
    hprintln!("|---|---|---|---|---|---|---|---|---|---|");
    let mut constant_time = true;
    for (&(kind, m, factors), span) in ROWS.iter().zip(&spans) {
        let g = INPUT_DIM as u32;
        let solve_macs = factors * m * (m + 1) / 2;
        let variance_part = span[0].max.saturating_sub(span[1].max);
        hprintln!(
            "| {} | {} | {} | {} | {} | {} | {}-{} | {}-{} | {} | {:.2} |",
            kind,
            m,
            3 * m * g,
            m,
            m,
            solve_macs,
            span[0].min,
            span[0].max,
            span[1].min,
            span[1].max,
            variance_part,
            variance_part as f32 / solve_macs as f32
        );
        constant_time &= span[0].spread() <= CONSTANT_TIME_SLACK;
        constant_time &= span[1].spread() <= CONSTANT_TIME_SLACK;
    }
    let dr = wide_cost(
        meter,
        models.dr_m32,
        golden_dr_m32::INPUTS.as_slice(),
        "spgp-dr",
    );
    let d16 = wide_cost(
        meter,
        models.spgp_d16_m32,
        golden_spgp_d16_m32::INPUTS.as_slice(),
        "spgp",
    );
    for span in [dr, d16] {
        constant_time &= span.iter().all(|s| s.spread() <= CONSTANT_TIME_SLACK);
    }
    // gradient[2] is the classifier's probability_with_gradient: erfcf again.
    constant_time &= gradient[..2]
        .iter()
        .all(|s| s.spread() <= CONSTANT_TIME_SLACK);
    constant_time &= matern_gradient.spread() <= CONSTANT_TIME_SLACK;
    constant_time &= gradient[2].spread() <= PROBABILITY_SLACK;
    gradient_table(
        [spans[1][0], spans[5][0], dr[0], d16[0]],
        [gradient[0], gradient[1], dr[2], d16[2]],
    );
    hprintln!(
        "cost: ivm M=32 probability_with_gradient {}-{} instructions (predict_with_gradient {:+}, probability {:+})",
        gradient[2].min,
        gradient[2].max,
        i64::from(gradient[2].max) - i64::from(gradient[1].max),
        i64::from(gradient[2].max) - i64::from(probability.max)
    );
    // The targets hold on the FPU build only (soft float costs ~45 times).
    let mut targets_met = true;
    for (m, predict, target) in [
        (32, spans[1][0].max, TARGET_PREDICT_INSTRUCTIONS_M32),
        (64, spans[2][0].max, TARGET_PREDICT_INSTRUCTIONS_M64),
    ] {
        let met = predict < target;
        targets_met &= met;
        hprintln!(
            "cost: M={} predict <= {} instructions: {} the target of < {}",
            m,
            predict,
            if met { "meets" } else { "MISSES" },
            target
        );
    }
    // The target: a Matérn prediction costs at most 1.25 times the
    // squared exponential's (the same Model<32, 4, 4>, the same variance
    // form; the square root per basis function is the difference).
    let (se, matern) = (spans[1], spans[6]);
    let ratio = matern[0].max as f32 / se[0].max as f32;
    let met = ratio <= MATERN_PREDICT_RATIO;
    targets_met &= met;
    hprintln!(
        "cost: matern32 vs spgp (se) at M=32: predict {} vs {} ({:.3}x: {} the target of <= {}x), mean {} vs {}; predict_with_gradient {}-{} vs {}-{}",
        matern[0].max,
        se[0].max,
        ratio,
        if met { "meets" } else { "MISSES" },
        MATERN_PREDICT_RATIO,
        matern[1].max,
        se[1].max,
        matern_gradient.min,
        matern_gradient.max,
        gradient[0].min,
        gradient[0].max
    );
    // Same Model<32, 4, 4> type, so the same code: any difference would come
    // from the data (there is none in a constant-time runtime).
    let (spgp, vsgp, gplasso) = (spans[1], spans[3], spans[4]);
    print_versus(
        format_args!("vsgp vs spgp at M=32"),
        vsgp,
        spgp,
        format_args!(""),
    );
    // GPLasso's blob has SPGP's layout (shared widths, two factors), so it
    // too runs Model<32, 4, 4>'s code.
    print_versus(
        format_args!("gplasso vs spgp at M=32"),
        gplasso,
        spgp,
        format_args!(""),
    );
    // The IVM classifier runs Model<32, 4, 4>'s code too, but its blob has
    // one triangular factor: the second solve is skipped at run time.
    let ivm = spans[5];
    hprintln!(
        "cost: ivm vs spgp at M=32: predict {} vs {} ({:+}), mean {} vs {} ({:+}) instructions; ivm probability {}-{} (predict {:+})",
        ivm[0].max,
        spgp[0].max,
        i64::from(ivm[0].max) - i64::from(spgp[0].max),
        ivm[1].max,
        spgp[1].max,
        i64::from(ivm[1].max) - i64::from(spgp[1].max),
        probability.min,
        probability.max,
        i64::from(probability.max) - i64::from(ivm[0].max)
    );
    constant_time &= probability.spread() <= PROBABILITY_SLACK;
    // The DR model has the feature dimension of the SPGP M=32 one (G = 4):
    // what it costs beyond it is the projection (G x D multiply-adds) and
    // standardising 16 inputs instead of 4.
    print_versus(
        format_args!(
            "spgp-dr M=32 (D={DR_INPUT_DIM}, G={DR_FEATURE_DIM}) vs spgp M=32 (D=G={INPUT_DIM})"
        ),
        [dr[0], dr[1]],
        spgp,
        format_args!(
            "; the projection is {} multiply-adds",
            DR_FEATURE_DIM * DR_INPUT_DIM
        ),
    );
    // Same 16 inputs without the projection: distances in 16 dims instead of 4.
    print_versus(
        format_args!(
            "spgp-dr M=32 (D={DR_INPUT_DIM}, G={DR_FEATURE_DIM}) vs spgp M=32 (D=G={DR_INPUT_DIM})"
        ),
        [dr[0], dr[1]],
        [d16[0], d16[1]],
        format_args!(""),
    );
    hprintln!(
        "constant time: {} (largest spread over inputs {} instructions, allowed {})",
        match (constant_time, HARD_FLOAT) {
            (true, _) => "ok",
            (false, true) => "FAILED",
            (false, false) => "not required without an FPU (soft-float paths depend on the values)",
        },
        spans
            .iter()
            .flatten()
            .chain(dr.iter().chain(&d16))
            .chain(&gradient[..2])
            .map(Span::spread)
            .max()
            .unwrap_or(0),
        CONSTANT_TIME_SLACK
    );
    hprintln!(
        "constant time: ivm probability spread {}, probability_with_gradient {} instructions (allowed {PROBABILITY_SLACK}: erfcf's branches)",
        probability.spread(),
        gradient[2].spread()
    );
    (constant_time && targets_met) || !HARD_FLOAT
}

/// What the calls beside `predict` cost at M = 32 (`predict_array`, the
/// training-range check), and what a capacity larger than the blob costs:
/// the M = 16 blob in a `Model<32, 4, 4>` against its own `Model<16, 4, 4>`
/// (golden-checked too). Fails on a golden miss or a count that varies with
/// the input.
fn check_api_cost(meter: &InstructionMeter, models: &Models) -> bool {
    let inputs = || {
        golden_m32::INPUTS
            .chunks_exact(INPUT_DIM)
            .chain(EXTRA_COST_INPUTS.iter().map(|x| x.as_slice()))
            .filter_map(|x| <&[f32; INPUT_DIM]>::try_from(x).ok())
    };
    let (mut predict, mut array, mut range) = (Span::EMPTY, Span::EMPTY, Span::EMPTY);
    for x in inputs() {
        predict.add(meter.measure(x, |x| models.m32.predict(x)).1.instructions);
        array.add(
            meter
                .measure(x, |x| models.m32.predict_array(x))
                .1
                .instructions,
        );
        range.add(
            meter
                .measure(x, |x| models.m32.in_training_range(x))
                .1
                .instructions,
        );
    }
    hprintln!(
        "cost: M=32 predict {}-{}, predict_array {}-{}, in_training_range (D={}) {}-{} instructions",
        predict.min,
        predict.max,
        array.min,
        array.max,
        INPUT_DIM,
        range.min,
        range.max
    );

    let Some(wide) = cortex_m::singleton!(MODEL_M16_IN_M32: ModelM<32> = ModelM::<32>::new())
    else {
        hprintln!("cost: FAILED, the capacity model was already taken");
        return false;
    };
    if let Err(e) = wide.load(model::BLOB_M16) {
        hprintln!("cost: FAILED, the M=16 blob in Model<32, 4, 4>: {:?}", e);
        return false;
    }
    let wide: &ModelM<32> = wide;
    let golden_ok = check_golden(
        meter,
        "M=16 in Model<32, 4, 4>",
        wide,
        golden_m16::INPUTS.as_slice(),
        golden_m16::DIM,
        &golden_m16::EXPECTED,
        golden_m16::Y_SCALES[0],
    );
    let (mut own, mut roomy) = ([Span::EMPTY; 2], [Span::EMPTY; 2]);
    for x in inputs() {
        for (span, (p, m)) in [
            (&mut own, cost(meter, models.m16, x)),
            (&mut roomy, cost(meter, wide, x)),
        ] {
            span[0].add(p);
            span[1].add(m);
        }
    }
    print_versus(
        format_args!("the M=16 blob in Model<32, 4, 4> vs Model<16, 4, 4>"),
        roomy,
        own,
        format_args!(""),
    );
    let spans = [predict, array, range, own[0], own[1], roomy[0], roomy[1]];
    let constant_time = spans.iter().all(|s| s.spread() <= CONSTANT_TIME_SLACK) || !HARD_FLOAT;
    if !constant_time {
        hprintln!("cost: FAILED, a count above varies with the input");
    }
    golden_ok & constant_time
}

/// One comparison line: the largest `predict` and `mean` counts of `a`
/// against `b`'s, with their differences, then `note`.
fn print_versus(what: Arguments, a: [Span; 2], b: [Span; 2], note: Arguments) {
    let diff = |i: usize| i64::from(a[i].max) - i64::from(b[i].max);
    hprintln!(
        "cost: {}: predict {} vs {} ({:+}), mean {} vs {} ({:+}) instructions{}",
        what,
        a[0].max,
        b[0].max,
        diff(0),
        a[1].max,
        b[1].max,
        diff(1),
        note
    );
}

/// Inputs for the 16-input models' cost besides their golden ones: the
/// centre, a corner, far out and huge.
const EXTRA_DR_COST_INPUTS: [[f32; DR_INPUT_DIM]; 4] = [
    [0.0; DR_INPUT_DIM],
    [3.0; DR_INPUT_DIM],
    [10.0; DR_INPUT_DIM],
    [1e4; DR_INPUT_DIM],
];

/// Instruction spans of a 16-input model's `predict`, `mean` and
/// `predict_with_gradient` over its golden inputs and a few more; prints
/// its row of the cost table. With a projection (SPGP+DR) the distances
/// are in G dims and the projection adds G x D multiply-adds; without one
/// (G = D) the distances are in all D.
fn wide_cost<const G: usize>(
    meter: &InstructionMeter,
    model: &Model<32, G, DR_INPUT_DIM>,
    golden_inputs: &[f32],
    kind: &str,
) -> [Span; 3] {
    let mut span = [Span::EMPTY; 3];
    let inputs = golden_inputs
        .chunks_exact(DR_INPUT_DIM)
        .chain(EXTRA_DR_COST_INPUTS.iter().map(|x| x.as_slice()));
    for x in inputs {
        let (p, m) = cost(meter, model, x);
        span[0].add(p);
        span[1].add(m);
        span[2].add(gradient_cost(meter, model, x));
    }
    let (m, g, d) = (32u32, G as u32, DR_INPUT_DIM as u32);
    let solve_macs = m * (m + 1);
    let variance_part = span[0].max.saturating_sub(span[1].max);
    let projection_macs = if G == DR_INPUT_DIM { 0 } else { g * d };
    hprintln!(
        "| {} (D={}, G={}, projection {} MACs) | {} | {} | {} | {} | {} | {}-{} | {}-{} | {} | {:.2} |",
        kind,
        d,
        g,
        projection_macs,
        m,
        3 * m * g,
        m,
        m,
        solve_macs,
        span[0].min,
        span[0].max,
        span[1].min,
        span[1].max,
        variance_part,
        variance_part as f32 / solve_macs as f32
    );
    span
}

/// Simulated 4-channel sensor: a Lissajous sweep inside the training box,
/// with three excursions outside it: one input a little beyond its range
/// (where the variance barely rises), then two far outside (a fault, or a
/// regime never trained on), where the model must not be trusted.
fn read_sensor(tick: u32) -> [f32; INPUT_DIM] {
    let t = 2.0 * core::f32::consts::PI * tick as f32 / 64.0;
    let a = 2.0 / 3.0 * DATA_HALF_WIDTH;
    let sweep = [
        a * libm::sinf(t),
        a * libm::sinf(1.3 * t + 0.5),
        a * libm::cosf(0.7 * t),
        a * libm::sinf(1.9 * t + 1.0),
    ];
    match tick {
        60..=69 => [1.2 * DATA_HALF_WIDTH, sweep[1], sweep[2], sweep[3]],
        120..=129 => [10.0, -10.0, 10.0, -10.0],
        170..=174 => [-9.0, -9.0, -9.0, 9.0],
        _ => sweep,
    }
}

fn is_excursion(tick: u32) -> bool {
    matches!(tick, 60..=69 | 120..=129 | 170..=174)
}

fn actuate(command: f32) {
    // SAFETY: single-threaded, no interrupts touch ACTUATOR.
    unsafe { write_volatile(addr_of_mut!(ACTUATOR), command) };
}

/// The input names the control loop's sensors have, in the order it reads
/// them (`sgp synth` names its columns x1, x2, ...).
const SENSOR_NAMES: [&str; INPUT_DIM] = ["x1", "x2", "x3", "x4"];

/// The control loop: sense, check the training range, predict, gate on
/// variance, act. Returns whether the gating behaved: the model's inputs are
/// the sensors, every excursion tick fell back, and the model acted on at
/// least one nominal tick.
fn control_loop(meter: &InstructionMeter, model: &ModelM<CONTROL_M>) -> bool {
    // Once, before trusting any prediction: a blob fitted on another column
    // order would otherwise give plausible nonsense.
    let names_ok = model.input_names() == SENSOR_NAMES;
    hprintln!(
        "loop: model inputs {:?} {} the sensors {:?}",
        model.input_names(),
        if names_ok { "match" } else { "DO NOT MATCH" },
        SENSOR_NAMES
    );
    // Relative to the prior: see UNSURE_STD_FRACTION.
    let prior = model.prior_variance() + model.noise_variance();
    let var_threshold = UNSURE_STD_FRACTION * UNSURE_STD_FRACTION * prior;
    hprintln!(
        "loop: M={}, fallback outside the training range or where std > {} x prior std, i.e. var > {}",
        CONTROL_M,
        UNSURE_STD_FRACTION,
        var_threshold
    );
    let mut mode = Mode::Model;
    let mut fallback_ticks = 0u32;
    let mut model_ticks_in_excursion = 0u32;
    // Excursion ticks that only the range check caught: the variance alone
    // would have trusted the model there.
    let mut caught_by_range_only = 0u32;
    let mut span = Span::EMPTY;
    let mut sum_instr = 0u64;

    for tick in 0..CONTROL_TICKS {
        let x = read_sensor(tick);
        // Checked separately from (and not paid by) `predict`; an error, like
        // a model without a recorded range, counts as outside.
        let in_range = model.in_training_range(&x) == Ok(true);
        let ((mean, var), m) = meter.measure(&x, |x| model::predict_array(model, x));
        span.add(m.instructions);
        sum_instr += u64::from(m.instructions);

        // A NaN variance (model error) must also fall back: written so that
        // only a comparison that is true trusts the model.
        let confident = var <= var_threshold;
        let new_mode = if in_range && confident {
            Mode::Model
        } else {
            Mode::Fallback
        };
        let command = match new_mode {
            Mode::Model => mean,
            Mode::Fallback => SAFE_ACTION,
        };
        actuate(command);

        if new_mode == Mode::Fallback {
            fallback_ticks += 1;
            if confident {
                caught_by_range_only += 1;
            }
        } else if is_excursion(tick) {
            model_ticks_in_excursion += 1;
        }
        if new_mode != mode || tick % LOG_EVERY == 0 {
            hprintln!(
                "tick {:3}: x=[{:+.2}, {:+.2}, {:+.2}, {:+.2}] {} mean={:+.4} var={:.4} -> {} {:+.4}",
                tick,
                x[0],
                x[1],
                x[2],
                x[3],
                if in_range { "in range" } else { "OUT OF RANGE" },
                mean,
                var,
                match new_mode {
                    Mode::Model => "model",
                    Mode::Fallback => "FALLBACK",
                },
                command
            );
        }
        mode = new_mode;
    }

    let excursion_ticks = (0..CONTROL_TICKS).filter(|&t| is_excursion(t)).count() as u32;
    hprintln!(
        "loop: {} ticks, {} fallback ({} excursion ticks, {} of them trusted the model; {} fell back on the range check alone, the variance was below its threshold); predict instructions min {} / mean {} / max {}",
        CONTROL_TICKS,
        fallback_ticks,
        excursion_ticks,
        model_ticks_in_excursion,
        caught_by_range_only,
        span.min,
        sum_instr / u64::from(CONTROL_TICKS),
        span.max
    );
    names_ok && model_ticks_in_excursion == 0 && fallback_ticks < CONTROL_TICKS
}
