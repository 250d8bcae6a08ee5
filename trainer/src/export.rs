//! [`TrainedModel`] to blob bytes, and the check that the f32 runtime
//! reading those bytes still predicts what the f64 trainer predicts.

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sgp_runtime::Link;

use crate::device::predict_all;
use crate::model::TrainedModel;
use crate::{Error, Result};

/// Largest mean deviation allowed, in units of the target's scale
/// (QUALITY.md: `1e-3 * y_scale`). For probit models: of the probability.
pub const MEAN_TOLERANCE: f64 = 1e-3;
/// Largest relative deviation of the predictive variance (QUALITY.md: 1%).
pub const VARIANCE_TOLERANCE: f64 = 1e-2;

/// Worst f32-versus-f64 deviations over the checked points.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Fidelity {
    /// Number of points compared.
    pub points: usize,
    /// Worst `|mean32 - mean64| / y_scale` (probit: of the probability).
    pub worst_mean: f64,
    /// Worst `|var32 - var64| / var64`.
    pub worst_variance: f64,
    /// Predictions whose variance was negative or NaN (must be zero).
    pub invalid: usize,
}

impl Fidelity {
    /// Whether every deviation is within the QUALITY.md tolerances.
    pub fn passes(&self) -> bool {
        self.worst_mean <= MEAN_TOLERANCE
            && self.worst_variance <= VARIANCE_TOLERANCE
            && self.invalid == 0
    }
}

/// An exported model.
#[derive(Clone, Debug)]
pub struct Exported {
    /// The blob bytes (FORMAT.md).
    pub blob: Vec<u8>,
    /// How closely the runtime reproduces the trainer on the checked points.
    pub fidelity: Fidelity,
}

/// Encodes `model` and compares the runtime's f32 predictions with the
/// trainer's f64 ones at `check_x` (raw inputs; pass held-out or training
/// points — [`far_points`] are added).
///
/// # Errors
/// [`Error::Fidelity`] if a deviation exceeds the tolerances and `force` is
/// false; [`Error::Blob`] if the model cannot be encoded.
pub fn export(model: &TrainedModel, check_x: &DMatrix<f64>, force: bool) -> Result<Exported> {
    let blob = model.to_spec()?.to_bytes()?;
    let far = far_points(model, 16, 0x5eed);
    let points = DMatrix::from_rows(&check_x.row_iter().chain(far.row_iter()).collect::<Vec<_>>());
    let fidelity = compare(model, &blob, &points)?;
    if !fidelity.passes() && !force {
        return Err(Error::Fidelity(format!(
            "worst mean deviation {:.2e} (limit {MEAN_TOLERANCE:.0e}), worst relative variance \
             deviation {:.2e} (limit {VARIANCE_TOLERANCE:.0e}), {} invalid variances over {} \
             points; pass --force to export anyway",
            fidelity.worst_mean, fidelity.worst_variance, fidelity.invalid, fidelity.points
        )));
    }
    Ok(Exported { blob, fidelity })
}

/// Compares the runtime reading `blob` with `model` at raw inputs `x`.
///
/// # Errors
/// If the runtime refuses the blob or an input.
pub fn compare(model: &TrainedModel, blob: &[u8], x: &DMatrix<f64>) -> Result<Fidelity> {
    let reference = model.predict_raw(x)?;
    let device = predict_all(blob, x)?;
    let link = model.link;
    let mut fidelity = Fidelity {
        points: device.len(),
        worst_mean: 0.0,
        worst_variance: 0.0,
        invalid: 0,
    };
    let references = reference.mean.iter().zip(reference.var.iter());
    for (p, (&ref_mean, &ref_var)) in device.iter().zip(references) {
        let (mean, var) = (f64::from(p.mean), f64::from(p.variance));
        let mean_dev = match (link, p.probability) {
            (Link::Probit, Some(probability)) => {
                (f64::from(probability) - probit(ref_mean, ref_var)).abs()
            }
            _ => (mean - ref_mean).abs() / model.transform.y_scale,
        };
        fidelity.worst_mean = fidelity.worst_mean.max(mean_dev);
        if var.is_nan() || var < 0.0 {
            fidelity.invalid += 1;
        } else {
            let rel = (var - ref_var).abs() / ref_var.max(f64::MIN_POSITIVE);
            fidelity.worst_variance = fidelity.worst_variance.max(rel);
        }
    }
    Ok(fidelity)
}

/// `Phi(m / sqrt(1 + v))`: the probit class probability in f64.
pub fn probit(mean: f64, var: f64) -> f64 {
    0.5 * libm::erfc(-mean / (1.0 + var).sqrt() / std::f64::consts::SQRT_2)
}

/// Raw inputs far outside the training data (5 to 20 standard deviations
/// from the mean in random directions), where the variance must rise to
/// the prior and the mean fall to the target mean.
pub fn far_points(model: &TrainedModel, n: usize, seed: u64) -> DMatrix<f64> {
    let t = &model.transform;
    let d = t.x_mean.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    DMatrix::from_fn(n, d, |_, j| {
        let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
        t.x_mean[j] + sign * rng.random_range(5.0..20.0) * t.x_scale[j]
    })
}

/// Golden values for firmware tests, as Rust source: the f64 trainer's
/// predictions (mean and variance of `y`) at the rows of `x` (raw inputs),
/// in the form `firmware-example` includes (`DIM`, `Y_SCALE`, `INPUTS`,
/// `EXPECTED`).
///
/// # Errors
/// If the model cannot predict at `x`.
pub fn golden_rust(model: &TrainedModel, x: &DMatrix<f64>) -> Result<String> {
    use std::fmt::Write;
    let p = model.predict_raw(x)?;
    let (n, d) = x.shape();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by `sgp fit --golden`: f64 trainer predictions."
    );
    let _ = writeln!(s, "/// Input dimension.\npub const DIM: usize = {d};");
    let _ = writeln!(
        s,
        "/// Target scale: the mean tolerance is 1e-3 * Y_SCALE.\npub const Y_SCALE: f32 = {:e};",
        model.transform.y_scale
    );
    let _ = writeln!(
        s,
        "/// Row-major inputs.\npub static INPUTS: [f32; {}] = [",
        n * d
    );
    for row in x.row_iter() {
        let cells: Vec<String> = row.iter().map(|v| format!("{v:e}")).collect();
        let _ = writeln!(s, "    {},", cells.join(", "));
    }
    let _ = writeln!(s, "];");
    let _ = writeln!(
        s,
        "/// (mean, variance) of y at each input row.\npub static EXPECTED: [(f32, f32); {n}] = ["
    );
    for i in 0..n {
        let _ = writeln!(s, "    ({:e}, {:e}),", p.mean[i], p.var[i]);
    }
    let _ = writeln!(s, "];");
    Ok(s)
}

/// The points golden values are taken at: up to `n_data` training rows
/// (evenly spread through the file) plus `n_far` points far outside it.
pub fn golden_points(
    model: &TrainedModel,
    raw_x: &DMatrix<f64>,
    n_data: usize,
    n_far: usize,
) -> DMatrix<f64> {
    let step = (raw_x.nrows() / n_data.max(1)).max(1);
    let rows: Vec<usize> = (0..raw_x.nrows()).step_by(step).take(n_data).collect();
    let data = raw_x.select_rows(&rows);
    let far = far_points(model, n_far, 0xfa7);
    DMatrix::from_rows(&data.row_iter().chain(far.row_iter()).collect::<Vec<_>>())
}
