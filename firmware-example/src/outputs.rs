//! Several outputs on one basis (issue 21): a P = 3 regression (the 3-link
//! arm's end-effector position from its 4 joint angles) and a K = 4
//! classifier (the quadrant the end effector is in), both SPGP at M = 32,
//! golden-checked output by output, and their instruction counts beside the
//! P (K) separate single-output models the same members make. Blobs and
//! golden values come from `cargo run -p sgp-trainer --example
//! firmware_outputs` (run.sh); see that example for how the classifier's
//! latents were assembled.

use cortex_m_semihosting::hprintln;
use sgp_runtime::{Error, Model};

use sgp_firmware_example::golden::{self, Tolerance};
use sgp_firmware_example::instructions::InstructionMeter;
use sgp_firmware_example::model::{Model32, INPUT_DIM};

golden_module!(golden_outputs_m32, "golden_outputs_m32.rs");
golden_module!(golden_classes_m32, "golden_classes_m32.rs");

/// Outputs of the regression and classes of the classifier.
const P: usize = 3;
const K: usize = 4;
/// A class probability must be within this of the f64 one.
const PROBABILITY_TOLERANCE: f32 = 1e-3;
/// Issue 21's criterion: all P outputs cost at most this many single-output
/// predictions. Reported, not enforced: the regression (one variance
/// factor) meets it, the classifier (a factor per class) does not
/// (docs/src/device-cost.md, "Several outputs on one basis").
const MAX_COST_OF_ALL_IN_SINGLES: u32 = 2;

type ModelP3 = Model<32, INPUT_DIM, INPUT_DIM, P>;
type ModelP2 = Model<32, INPUT_DIM, INPUT_DIM, 2>;
type ModelK4 = Model<32, INPUT_DIM, INPUT_DIM, K>;

static BLOB_OUTPUTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/outputs_m32.sgp"));
/// The first two outputs of the regression on their basis (P = 2).
static BLOB_TWO_OUTPUTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/outputs2_m32.sgp"));
static BLOB_CLASSES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/classes_m32.sgp"));
/// Each output (class latent) alone: the P (K) separate models.
static BLOB_SEPARATE_OUTPUTS: [&[u8]; P] = [
    include_bytes!(concat!(env!("OUT_DIR"), "/output0_m32.sgp")),
    include_bytes!(concat!(env!("OUT_DIR"), "/output1_m32.sgp")),
    include_bytes!(concat!(env!("OUT_DIR"), "/output2_m32.sgp")),
];
static BLOB_SEPARATE_CLASSES: [&[u8]; K] = [
    include_bytes!(concat!(env!("OUT_DIR"), "/class0_m32.sgp")),
    include_bytes!(concat!(env!("OUT_DIR"), "/class1_m32.sgp")),
    include_bytes!(concat!(env!("OUT_DIR"), "/class2_m32.sgp")),
    include_bytes!(concat!(env!("OUT_DIR"), "/class3_m32.sgp")),
];

/// Loads both set models and one single-output slot into statics, then
/// runs every check; returns whether all passed.
pub fn check(meter: &InstructionMeter) -> bool {
    let (Some(outputs), Some(two), Some(classes), Some(single)) = (
        cortex_m::singleton!(MODEL_OUTPUTS_M32: ModelP3 = ModelP3::new()),
        cortex_m::singleton!(MODEL_TWO_OUTPUTS_M32: ModelP2 = ModelP2::new()),
        cortex_m::singleton!(MODEL_CLASSES_M32: ModelK4 = ModelK4::new()),
        cortex_m::singleton!(MODEL_SEPARATE_M32: Model32 = Model32::new()),
    ) else {
        hprintln!("outputs: FAILED, called twice");
        return false;
    };
    if let Err(e) = outputs.load(BLOB_OUTPUTS) {
        hprintln!("outputs: FAILED to load the P={} blob: {:?}", P, e);
        return false;
    }
    if let Err(e) = two.load(BLOB_TWO_OUTPUTS) {
        hprintln!("outputs: FAILED to load the P=2 blob: {:?}", e);
        return false;
    }
    if let Err(e) = classes.load(BLOB_CLASSES) {
        hprintln!("outputs: FAILED to load the K={} blob: {:?}", K, e);
        return false;
    }
    hprintln!(
        "model outputs M=32: {} outputs on one basis; blob {} B (separate blobs {} B), Model<32, 4, 4, 3> {} B (RAM)",
        outputs.output_count(),
        BLOB_OUTPUTS.len(),
        BLOB_SEPARATE_OUTPUTS.iter().map(|b| b.len()).sum::<usize>(),
        core::mem::size_of::<ModelP3>()
    );
    hprintln!(
        "model classes M=32: {} classes on one basis; blob {} B (separate blobs {} B), Model<32, 4, 4, 4> {} B (RAM)",
        classes.output_count(),
        BLOB_CLASSES.len(),
        BLOB_SEPARATE_CLASSES.iter().map(|b| b.len()).sum::<usize>(),
        core::mem::size_of::<ModelK4>()
    );
    let regression_ok = check_regression(meter, outputs, two, single);
    let classifier_ok = check_classifier(meter, classes, single);
    regression_ok & classifier_ok
}

/// Every output of `predict_all` against its golden values; the largest
/// `predict_all` count over the golden inputs, and each separate model's
/// `predict` at the same inputs.
fn check_regression(
    meter: &InstructionMeter,
    model: &ModelP3,
    two: &ModelP2,
    single: &mut Model32,
) -> bool {
    use golden_outputs_m32 as g;
    let tolerance = Tolerance {
        mean_abs: g::MEAN_TOLERANCE,
        var_rel: 1e-2,
    };
    let mut ok = g::OUTPUTS == P && g::DIM == INPUT_DIM;
    let mut all_cost = 0;
    for (p, expected) in g::EXPECTED.iter().enumerate() {
        let report = golden::check(&g::INPUTS, g::DIM, expected, tolerance, |x| {
            let (all, m) = meter.measure(x, |x| model.predict_all(x));
            all_cost = all_cost.max(m.instructions);
            match all.as_ref().map(|all| all.as_array().get(p).copied()) {
                Ok(Some(prediction)) => (prediction.mean, prediction.variance),
                _ => (f32::NAN, f32::INFINITY),
            }
        });
        ok &= print_report(format_args!("outputs M=32 output {p} of {P}"), report);
    }
    let separate = separate_costs(meter, single, &BLOB_SEPARATE_OUTPUTS, &g::INPUTS, |m, x| {
        m.predict(x).map(|_| ())
    });
    compare_costs("P=3 outputs", "predict_all", all_cost, separate);
    // P = 2: the first two outputs, the same as the P = 3 model's.
    let mut two_cost = 0;
    for x in g::INPUTS.chunks_exact(g::DIM) {
        let (all, m) = meter.measure(x, |x| two.predict_all(x));
        two_cost = two_cost.max(m.instructions);
        let same = match (all, model.predict_all(x)) {
            (Ok(a), Ok(b)) => a.iter().zip(b.iter()).all(|(a, b)| a == b) && a.len() == 2,
            _ => false,
        };
        if !same {
            hprintln!("outputs M=32: FAILED, the P=2 model's outputs differ from the P=3 model's");
            ok = false;
        }
    }
    compare_costs(
        "P=2 outputs",
        "predict_all",
        two_cost,
        [separate[0], separate[1]],
    );
    ok
}

/// Every class latent and every probability of `classify` against their
/// golden values, the class against the most probable golden one; the
/// largest `classify` count, and each separate latent's `probability`.
fn check_classifier(meter: &InstructionMeter, model: &ModelK4, single: &mut Model32) -> bool {
    use golden_classes_m32 as g;
    let tolerance = Tolerance {
        mean_abs: g::MEAN_TOLERANCE,
        var_rel: 1e-2,
    };
    let mut ok = g::OUTPUTS == K && g::DIM == INPUT_DIM;
    for (k, expected) in g::EXPECTED.iter().enumerate() {
        let report = golden::check(&g::INPUTS, g::DIM, expected, tolerance, |x| {
            match model
                .predict_all(x)
                .map(|all| all.as_array().get(k).copied())
            {
                Ok(Some(latent)) => (latent.mean, latent.variance),
                _ => (f32::NAN, f32::INFINITY),
            }
        });
        ok &= print_report(format_args!("classes M=32 latent {k} of {K}"), report);
    }
    let (mut within, mut right_class, mut worst, mut classify_cost) = (0, 0, 0.0f32, 0);
    for (x, want) in g::INPUTS.chunks_exact(g::DIM).zip(&g::PROBABILITIES) {
        let (got, m) = meter.measure(x, |x| model.classify(x));
        classify_cost = classify_cost.max(m.instructions);
        let Ok(got) = got else { continue };
        let error = got
            .probabilities
            .iter()
            .zip(want)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0f32, |a, e| if e > a || e.is_nan() { e } else { a });
        worst = if error > worst || error.is_nan() {
            error
        } else {
            worst
        };
        within += usize::from(error <= PROBABILITY_TOLERANCE);
        let best = (0..K).fold(0, |b, k| if want[k] > want[b] { k } else { b });
        right_class += usize::from(got.class == best && got.classes == K);
    }
    let n = g::PROBABILITIES.len();
    let probabilities_ok = within == n && right_class == n;
    hprintln!(
        "golden classes M=32 classify: {}/{} within +-{} of the f64 probabilities (worst {}), {}/{} the most probable class; classify <= {} instructions{}",
        within,
        n,
        PROBABILITY_TOLERANCE,
        worst,
        right_class,
        n,
        classify_cost,
        if probabilities_ok { "" } else { " FAILED" }
    );
    let separate = separate_costs(meter, single, &BLOB_SEPARATE_CLASSES, &g::INPUTS, |m, x| {
        m.probability(x).map(|_| ())
    });
    compare_costs("K=4 classes", "classify", classify_cost, separate);
    ok & probabilities_ok
}

fn print_report(
    label: core::fmt::Arguments,
    report: Result<golden::Report, golden::ShapeError>,
) -> bool {
    match report {
        Ok(r) => {
            hprintln!(
                "golden {}: {}/{} within tolerance; worst mean err {}x tol, worst var err {}x tol{}",
                label,
                r.checked - r.failed,
                r.checked,
                r.worst_mean_ratio,
                r.worst_var_ratio,
                if r.passed() { "" } else { " FAILED" }
            );
            r.passed()
        }
        Err(e) => {
            hprintln!("golden {}: FAILED, golden file shape {:?}", label, e);
            false
        }
    }
}

/// The largest count of `call` over `inputs` for each blob loaded in turn
/// into `single` (`u32::MAX` for a blob that does not load or a call that
/// fails, so a broken separate model cannot pass for a cheap one).
fn separate_costs<const N: usize>(
    meter: &InstructionMeter,
    single: &mut Model32,
    blobs: &[&[u8]; N],
    inputs: &[f32],
    call: impl Fn(&Model32, &[f32]) -> Result<(), Error>,
) -> [u32; N] {
    let mut costs = [u32::MAX; N];
    for (cost, blob) in costs.iter_mut().zip(blobs) {
        if single.load(blob).is_err() {
            continue;
        }
        let model: &Model32 = single;
        let mut largest = 0;
        for x in inputs.chunks_exact(INPUT_DIM) {
            let (result, m) = meter.measure(x, |x| call(model, x));
            largest = if result.is_ok() {
                largest.max(m.instructions)
            } else {
                u32::MAX
            };
        }
        *cost = largest;
    }
    costs
}

/// Prints one set call's count beside the separate models' and against
/// issue 21's criterion: at most 2 single-output calls (the dearest one).
fn compare_costs<const N: usize>(what: &str, call: &str, all: u32, separate: [u32; N]) {
    let sum = separate.iter().fold(0u32, |s, &c| s.saturating_add(c));
    let one = separate.iter().copied().max().unwrap_or(u32::MAX);
    let met = all <= MAX_COST_OF_ALL_IN_SINGLES.saturating_mul(one);
    hprintln!(
        "cost: {} on one basis: {} <= {} instructions, {} separate models {} together (one: {}); {}.{:02} single-output calls, {} the target of <= {}",
        what,
        call,
        all,
        N,
        sum,
        one,
        all / one.max(1),
        (all % one.max(1)) * 100 / one.max(1),
        if met { "meets" } else { "MISSES" },
        MAX_COST_OF_ALL_IN_SINGLES
    );
}
