//! The fixed-point form of the M = 16, 32 and 64 SPGP models and of SPGP
//! on 16 inputs at M = 32 (`sgp_runtime::FixedModel`, built at start-up
//! from the loaded f32 models) against the trainer's f64 golden values: the mean within 1% of
//! the golden predictive sd, the variance within 2%. Run on both boards;
//! on the Cortex-M3 (no FPU) the instruction counts are the integer
//! path's, the figures the guide and `sgp sweep`'s cost model quote.

use cortex_m_semihosting::hprintln;
use sgp_firmware_example::instructions::InstructionMeter;
use sgp_firmware_example::model::{Models, DR_INPUT_DIM, INPUT_DIM};
use sgp_runtime::{FixedModel, Model};

use crate::{golden_m16, golden_m32, golden_m64, golden_spgp_d16_m32};

/// Mean tolerance as a fraction of the golden predictive sd.
const MEAN_OF_SD: f32 = 0.01;
/// Variance tolerance, relative.
const VARIANCE_RELATIVE: f32 = 0.02;

/// One golden set: its name, its inputs (`dim` per point) and (mean,
/// variance).
struct Golden<'a> {
    name: &'a str,
    inputs: &'a [f32],
    dim: usize,
    expected: &'a [(f32, f32)],
}

/// Builds the fixed-point forms of the M = 16, 32 and 64 models and of the
/// 16-input one (the cost model's second G), compares every golden point
/// and prints one `golden ... fixed:` line each; returns whether all
/// passed.
pub fn check(meter: &InstructionMeter, models: &Models) -> bool {
    macro_rules! golden {
        ($name:expr, $g:ident) => {
            Golden {
                name: $name,
                inputs: $g::INPUTS.as_slice(),
                dim: $g::DIM,
                expected: &$g::EXPECTED,
            }
        };
    }
    let m16 = cortex_m::singleton!(: Option<FixedModel<16, INPUT_DIM>> = None);
    let m32 = cortex_m::singleton!(: Option<FixedModel<32, INPUT_DIM>> = None);
    let m64 = cortex_m::singleton!(: Option<FixedModel<64, INPUT_DIM>> = None);
    let d16 = cortex_m::singleton!(: Option<FixedModel<32, DR_INPUT_DIM>> = None);
    let (Some(m16), Some(m32), Some(m64), Some(d16)) = (m16, m32, m64, d16) else {
        hprintln!("golden fixed: FAILED, called twice");
        return false;
    };
    check_one(meter, models.m16, m16, &golden!("M=16", golden_m16))
        & check_one(meter, models.m32, m32, &golden!("M=32", golden_m32))
        & check_one(meter, models.m64, m64, &golden!("M=64", golden_m64))
        & check_one(
            meter,
            models.spgp_d16_m32,
            d16,
            &golden!("spgp D=16 M=32", golden_spgp_d16_m32),
        )
}

/// One model's fixed-point form into `slot`, checked against `golden`.
fn check_one<const M: usize, const G: usize>(
    meter: &InstructionMeter,
    model: &Model<M, G, G>,
    slot: &mut Option<FixedModel<M, G>>,
    golden: &Golden,
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
