//! The fixed-point form's golden check, shared by the main firmware (both
//! mps2 boards) and the Cortex-M0 binary (`src/bin/fixed_m0.rs`): a
//! `FixedModel`'s predictions against the trainer's f64 golden values, the
//! mean within 1% of the golden predictive sd, the variance within 2%.

use cortex_m_semihosting::hprintln;
use sgp_runtime::{Error, FixedModel, Model, Prediction};

/// Mean tolerance as a fraction of the golden predictive sd.
pub const MEAN_OF_SD: f32 = 0.01;
/// Variance tolerance, relative.
pub const VARIANCE_RELATIVE: f32 = 0.02;

/// One golden set: its name, its inputs (`dim` per point) and (mean,
/// variance).
pub struct Golden<'a> {
    pub name: &'a str,
    pub inputs: &'a [f32],
    pub dim: usize,
    pub expected: &'a [(f32, f32)],
}

/// `model`'s fixed-point form into `slot`, every golden point predicted
/// through `measure` (the prediction and its instruction count), one
/// `golden ... fixed:` line printed; returns whether all passed.
pub fn check_one<const M: usize, const G: usize, const D: usize>(
    model: &Model<M, G, D>,
    slot: &mut Option<FixedModel<M, G>>,
    golden: &Golden,
    measure: impl Fn(&FixedModel<M, G>, &[f32]) -> (Result<Prediction, Error>, u32),
) -> bool {
    let built = match FixedModel::from_model(model) {
        Ok(built) => slot.insert(built),
        Err(e) => {
            hprintln!(
                "golden {} fixed: FAILED, no fixed-point form: {}",
                golden.name,
                e
            );
            return false;
        }
    };
    let rows = golden.inputs.chunks_exact(golden.dim);
    let (mut passed, mut worst_mean, mut worst_var, mut max_instr) = (0, 0.0f32, 0.0f32, 0);
    for (x, &(mean, variance)) in rows.zip(golden.expected) {
        let (got, instructions) = measure(built, x);
        max_instr = max_instr.max(instructions);
        let Ok(got) = got else { continue };
        let mean_ratio = (got.mean - mean).abs() / (MEAN_OF_SD * libm::sqrtf(variance));
        let var_ratio = (got.variance - variance).abs() / (VARIANCE_RELATIVE * variance);
        worst_mean = worst_mean.max(mean_ratio);
        worst_var = worst_var.max(var_ratio);
        // Written as "within" so that NaN fails.
        if mean_ratio <= 1.0 && var_ratio <= 1.0 {
            passed += 1;
        }
    }
    let total = golden.expected.len();
    hprintln!(
        "golden {} fixed: {}/{} within tolerance (mean +-{}% of the sd, var +-{}%; worst mean err {}x tol, worst var err {}x tol); predict <= {} instructions, FixedModel<{}, {}> {} B",
        golden.name,
        passed,
        total,
        MEAN_OF_SD * 100.0,
        VARIANCE_RELATIVE * 100.0,
        worst_mean,
        worst_var,
        max_instr,
        M,
        G,
        core::mem::size_of::<FixedModel<M, G>>()
    );
    passed == total && total > 0
}
