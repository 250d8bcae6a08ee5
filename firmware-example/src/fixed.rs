//! The fixed-point form of the M = 16, 32 and 64 SPGP models and of SPGP
//! on 16 inputs at M = 32 (`sgp_runtime::FixedModel`, built at start-up
//! from the loaded f32 models) against the trainer's f64 golden values: the mean within 1% of
//! the golden predictive sd, the variance within 2%. Run on both boards;
//! on the Cortex-M3 (no FPU) the instruction counts are the integer
//! path's, the figures the guide and `sgp sweep`'s cost model quote.

use cortex_m_semihosting::hprintln;
use sgp_firmware_example::fixed_golden::{check_one as check_with, Golden};
use sgp_firmware_example::instructions::InstructionMeter;
use sgp_firmware_example::model::{Models, DR_INPUT_DIM, INPUT_DIM};
use sgp_runtime::{Error, FixedModel, Model, Prediction};

use crate::{golden_m16, golden_m32, golden_m64, golden_spgp_d16_m32};

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

/// [`check_with`] measured by the mps2 boards' timer.
fn check_one<const M: usize, const G: usize>(
    meter: &InstructionMeter,
    model: &Model<M, G, G>,
    slot: &mut Option<FixedModel<M, G>>,
    golden: &Golden,
) -> bool {
    let measure = |built: &FixedModel<M, G>, x: &[f32]| -> (Result<Prediction, Error>, u32) {
        let (got, m) = meter.measure(x, |x| built.predict(x));
        (got, m.instructions)
    };
    check_with(model, slot, golden, measure)
}
