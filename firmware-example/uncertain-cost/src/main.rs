//! Instructions of `Uncertain::prepare`, `predict` (a full 4 x 4 input
//! covariance) and `predict_with_derivatives` against the certain
//! `Model::predict`, for the guide's cost table
//! (docs/src/uncertain-input.md). `data/m32.sgp` and `data/m64.sgp` are the
//! guide's fitted one-output SPGP plant models (M = 32 and 64), the
//! two-output one is the runtime's test blob. `cargo run --release`.
#![no_std]
#![no_main]

#[allow(dead_code)] // the firmware example's meter; its calibration is not used here
#[path = "../../src/instructions.rs"]
mod instructions;

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use instructions::InstructionMeter;
use panic_semihosting as _;
use sgp_runtime::{Model, Uncertain};

static M32: &[u8] = include_bytes!("../data/m32.sgp");
static M32_TWO: &[u8] = include_bytes!("../../../runtime/tests/data/uncertain-plant.sgp");
static M64: &[u8] = include_bytes!("../data/m64.sgp");

/// A full input covariance (raw units).
const COV: [f32; 16] = [
    0.04, 0.01, 0.0, 0.0, 0.01, 0.09, 0.0, 0.0, 0.0, 0.0, 0.01, 0.005, 0.0, 0.0, 0.005, 0.04,
];

fn run<const M: usize, const P: usize>(
    meter: &InstructionMeter,
    name: &str,
    blob: &'static [u8],
    model: &'static mut Model<M, 4, 4, P>,
    uncertain: &'static mut Uncertain<M, 4, P>,
) {
    model.load(blob).unwrap();
    let (_, prepare) = meter.measure((), |_| uncertain.prepare(model));
    let (mut lo, mut hi) = (u32::MAX, 0);
    let inputs = [
        [0.0f32, 0.0, 0.0, 0.0],
        [1.0, -1.5, 0.5, 2.0],
        [-2.0, 1.0, -0.3, 0.7],
        [30.0, 9.0, -4.0, 1.0],
    ];
    for x in inputs {
        let (y, m) = meter.measure(x, |x| uncertain.predict(&x, &COV));
        assert!(y.is_ok());
        lo = lo.min(m.instructions);
        hi = hi.max(m.instructions);
    }
    let x = [0.5f32, 0.1, -0.2, 0.3];
    let (_, certain) = meter.measure(x, |x| model.predict(&x));
    let (_, derivatives) = meter.measure(x, |x| uncertain.predict_with_derivatives(&x, &COV));
    hprintln!(
        "{}: prepare {} ; predict_uncertain {}-{} ; with derivatives {} ; predict {} instructions",
        name,
        prepare.instructions,
        lo,
        hi,
        derivatives.instructions,
        certain.instructions
    );
}

#[entry]
fn main() -> ! {
    let meter = InstructionMeter::new();
    run::<32, 1>(
        &meter,
        "M=32 D=4 P=1",
        M32,
        cortex_m::singleton!(: Model<32, 4, 4, 1> = Model::new()).unwrap(),
        cortex_m::singleton!(: Uncertain<32, 4, 1> = Uncertain::new()).unwrap(),
    );
    run::<32, 2>(
        &meter,
        "M=32 D=4 P=2",
        M32_TWO,
        cortex_m::singleton!(: Model<32, 4, 4, 2> = Model::new()).unwrap(),
        cortex_m::singleton!(: Uncertain<32, 4, 2> = Uncertain::new()).unwrap(),
    );
    run::<64, 1>(
        &meter,
        "M=64 D=4 P=1",
        M64,
        cortex_m::singleton!(: Model<64, 4, 4, 1> = Model::new()).unwrap(),
        cortex_m::singleton!(: Uncertain<64, 4, 1> = Uncertain::new()).unwrap(),
    );
    debug::exit(debug::EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}
