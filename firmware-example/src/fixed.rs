//! The fixed-point form of the M = 32 SPGP model (`sgp_runtime::FixedModel`,
//! built at start-up from the loaded f32 model) against the trainer's f64
//! golden values: the mean within 1% of the golden predictive sd, the
//! variance within 2%. Run on both boards; on the Cortex-M3 (no FPU) its
//! instruction count is the integer path's, the figure the guide quotes.

use cortex_m_semihosting::hprintln;
use sgp_firmware_example::instructions::InstructionMeter;
use sgp_firmware_example::model::Model32;
use sgp_runtime::FixedModel;

use crate::golden_m32;

/// Mean tolerance as a fraction of the golden predictive sd.
const MEAN_OF_SD: f32 = 0.01;
/// Variance tolerance, relative.
const VARIANCE_RELATIVE: f32 = 0.02;

/// Builds the fixed-point model from `model`, compares every golden point
/// and prints one `golden M=32 fixed:` line; returns whether all passed.
pub fn check(meter: &InstructionMeter, model: &Model32) -> bool {
    let Some(fixed) = cortex_m::singleton!(: Option<FixedModel<32, 4>> = None) else {
        hprintln!("golden M=32 fixed: FAILED, called twice");
        return false;
    };
    let built = match FixedModel::from_model(model) {
        Ok(built) => fixed.insert(built),
        Err(e) => {
            hprintln!("golden M=32 fixed: FAILED, no fixed-point form: {}", e);
            return false;
        }
    };
    let (dim, expected) = (golden_m32::DIM, &golden_m32::EXPECTED);
    let rows = golden_m32::INPUTS.as_slice().chunks_exact(dim);
    let (mut passed, mut worst_mean, mut worst_var, mut max_instr) = (0, 0.0f32, 0.0f32, 0);
    for (x, &(mean, variance)) in rows.zip(expected) {
        let (got, m) = meter.measure(x, |x| built.predict(x));
        max_instr = max_instr.max(m.instructions);
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
    let total = expected.len();
    hprintln!(
        "golden M=32 fixed: {}/{} within tolerance (mean +-{}% of the sd, var +-{}%; worst mean err {}x tol, worst var err {}x tol); predict <= {} instructions, FixedModel<32, 4> {} B",
        passed,
        total,
        MEAN_OF_SD * 100.0,
        VARIANCE_RELATIVE * 100.0,
        worst_mean,
        worst_var,
        max_instr,
        core::mem::size_of::<FixedModel<32, 4>>()
    );
    passed == total && total > 0
}
