//! [`TrainedModel`] (or a [`ModelSet`] of several outputs on one basis) to
//! blob bytes, and the check that the f32 runtime reading those bytes
//! still predicts what the f64 trainer predicts, output by output.
//!
//! The check is judged by what matters to a user (QUALITY.md, section 1):
//! at each checked point the f32 mean must lie within 1% of the f64
//! predictive standard deviation (never tighter than `1e-4 * y_scale`) — a
//! device error that small is invisible next to the model's own
//! uncertainty — and the variance within 1% relative, never negative or
//! NaN. Probit models are held to an absolute deviation of the class
//! probability instead, and so is each class of a multi-class model.

pub mod artefact;
pub mod codegen;
pub mod cure;
pub(crate) mod fixed;
pub(crate) mod gradient;
pub mod inspect;
pub mod output_blob;
pub mod peer;
#[cfg(feature = "internals")]
pub mod updatable;
#[cfg(not(feature = "internals"))]
pub(crate) mod updatable;

use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sgp_runtime::{Link, VarianceForm};

use crate::fit::Fit;
use crate::model::device::{predict_outputs, DevicePrediction};
use crate::model::multiclass::class_probabilities;
use crate::model::{ModelSet, RawPrediction, SetPrediction, TrainedModel};
use crate::{Error, Result};

/// Largest mean deviation allowed at a point, as a fraction of the f64
/// predictive standard deviation there (QUALITY.md: 1%).
pub(crate) const MEAN_TOLERANCE_SD: f64 = 1e-2;
/// The mean tolerance never goes below this fraction of the target's scale
/// (QUALITY.md: `1e-4 * y_scale`): where the predictive sd is tiny, f32's
/// own rounding of `y_mean + y_scale m` must still pass.
pub(crate) const MEAN_TOLERANCE_FLOOR: f64 = 1e-4;
/// Largest deviation of the class probability of probit models.
pub(crate) const PROBABILITY_TOLERANCE: f64 = 1e-3;
/// Largest relative deviation of the predictive variance (QUALITY.md: 1%).
pub(crate) const VARIANCE_TOLERANCE: f64 = 1e-2;

/// The mean deviation allowed at a point whose f64 predictive standard
/// deviation is `sd` (raw units) for a target of scale `y_scale`:
/// `max(1% of sd, 1e-4 y_scale)`.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn mean_tolerance(sd: f64, y_scale: f64) -> f64 {
    (MEAN_TOLERANCE_SD * sd).max(MEAN_TOLERANCE_FLOOR * y_scale)
}

/// Worst f32-versus-f64 deviations over the checked points.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Fidelity {
    /// Number of points compared.
    pub points: usize,
    /// Worst ratio of the mean deviation to the tolerance at its point
    /// (`mean_tolerance`; probit: [`Fidelity::PROBABILITY`]). The mean
    /// passes when this is at most 1.
    pub worst_mean_ratio: f64,
    /// Worst `|mean32 - mean64| / sd64`, the deviation as a fraction of
    /// the f64 predictive standard deviation (regression; 0 for probit).
    pub worst_mean_sd: f64,
    /// Worst `|mean32 - mean64| / y_scale` (probit: of the probability).
    pub worst_mean: f64,
    /// Worst `|var32 - var64| / var64` (probit: of the latent variance,
    /// divided by `1 + var64`, the scale it enters the probability at).
    pub worst_variance: f64,
    /// Predictions whose variance was negative or NaN (must be zero).
    pub invalid: usize,
}

impl Fidelity {
    /// Largest mean deviation allowed at a point, as a fraction of the f64
    /// predictive standard deviation there (`mean_tolerance`).
    pub const MEAN_SD: f64 = MEAN_TOLERANCE_SD;
    /// The mean tolerance's floor, as a fraction of the target's scale.
    pub const MEAN_FLOOR: f64 = MEAN_TOLERANCE_FLOOR;
    /// Largest deviation of a probit model's class probability.
    pub const PROBABILITY: f64 = PROBABILITY_TOLERANCE;
    /// Largest relative deviation of the predictive variance.
    pub const VARIANCE: f64 = VARIANCE_TOLERANCE;

    /// The worst of each figure over several outputs' fidelities at the
    /// same points (the whole blob passes when this does).
    pub fn worst(all: &[Fidelity]) -> Fidelity {
        let start = Fidelity {
            points: all.first().map_or(0, |f| f.points),
            worst_mean_ratio: 0.0,
            worst_mean_sd: 0.0,
            worst_mean: 0.0,
            worst_variance: 0.0,
            invalid: 0,
        };
        all.iter().fold(start, |acc, f| Fidelity {
            points: acc.points,
            worst_mean_ratio: acc.worst_mean_ratio.max(f.worst_mean_ratio),
            worst_mean_sd: acc.worst_mean_sd.max(f.worst_mean_sd),
            worst_mean: acc.worst_mean.max(f.worst_mean),
            worst_variance: acc.worst_variance.max(f.worst_variance),
            invalid: acc.invalid + f.invalid,
        })
    }

    /// Whether every deviation is within the QUALITY.md tolerances.
    pub fn passes(&self) -> bool {
        self.worst_mean_ratio <= 1.0
            && self.worst_variance <= VARIANCE_TOLERANCE
            && self.invalid == 0
    }

    /// One line for people: each worst deviation next to its limit.
    pub fn describe(&self) -> String {
        format!(
            "worst mean deviation {:.2} of its tolerance ({:.2e} of the predictive sd, limit \
             {MEAN_TOLERANCE_SD:.0e}, floor {MEAN_TOLERANCE_FLOOR:.0e} y_scale; {:.2e} of \
             y_scale), worst relative variance deviation {:.2e} (limit \
             {VARIANCE_TOLERANCE:.0e}), {} invalid variances over {} points",
            self.worst_mean_ratio,
            self.worst_mean_sd,
            self.worst_mean,
            self.worst_variance,
            self.invalid,
            self.points
        )
    }
}

/// An exported model.
#[derive(Clone, Debug)]
pub struct Exported {
    /// The blob bytes (FORMAT.md).
    pub blob: Vec<u8>,
    /// How the blob stores the variance: the cheaper
    /// [`VarianceForm::Product`] whenever it passes the check.
    pub variance: VarianceForm,
    /// Why the blob has the solves instead of the product (`None` when it
    /// has the product): the product's own check, or why `W` has no
    /// factor.
    pub product_refused: Option<String>,
    /// How closely the runtime reproduces the trainer on the checked points:
    /// the worst over the outputs.
    pub fidelity: Fidelity,
    /// The same, output by output (one for a single-output model).
    pub outputs: Vec<Fidelity>,
    /// Columns whose values f32 cannot resolve (`crate::model::precision`): the
    /// likely cause when the check fails.
    pub precision: Vec<String>,
    /// The jitter raise that made the check pass, if one was needed.
    pub cure: Option<cure::Cure>,
}

/// Encodes `set` (one model, several outputs, or the classes of a
/// classifier, on one basis) and compares the runtime's f32 predictions
/// with the trainer's f64 ones, member by member, at `check_x` (raw
/// inputs; held-out or training points) and at `far_points` (a
/// multi-class model: each class probability). The blob has the product
/// form of the variance when every member passes in it, else the solves
/// ([`Exported::product_refused`] says why). Never refuses for fidelity:
/// look at `fidelity.passes()`.
///
/// # Errors
/// [`Error::BadInput`] when the members do not share one basis and link
/// ([`ModelSet::link`]); [`Error::Blob`] if the set cannot be encoded.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn check(set: &ModelSet, check_x: &DMatrix<f64>) -> Result<Exported> {
    let first = set
        .members
        .first()
        .ok_or_else(|| Error::BadInput("a model set needs at least one member".into()))?;
    let far = far_points(first, 16, 0x5eed);
    let points = DMatrix::from_rows(&check_x.row_iter().chain(far.row_iter()).collect::<Vec<_>>());
    let mut precision = Vec::new();
    for member in &set.members {
        for warning in crate::model::precision::for_model(member, check_x) {
            if !precision.contains(&warning) {
                precision.push(warning);
            }
        }
    }
    // The product first: it is the cheaper form on the device; the solves
    // are the fallback where f32 needs them.
    let product_refused = match set.to_product_spec() {
        Ok(spec) => {
            let blob = spec.to_bytes()?;
            let outputs = compare(set, &blob, &points)?;
            let fidelity = Fidelity::worst(&outputs);
            if fidelity.passes() {
                return Ok(Exported {
                    blob,
                    variance: VarianceForm::Product,
                    product_refused: None,
                    fidelity,
                    outputs,
                    precision,
                    cure: None,
                });
            }
            format!("the product in f32: {}", fidelity.describe())
        }
        Err(e @ Error::BadInput(_)) => return Err(e),
        Err(e) => e.to_string(),
    };
    let blob = set.to_spec()?.to_bytes()?;
    let outputs = compare(set, &blob, &points)?;
    Ok(Exported {
        blob,
        variance: VarianceForm::Solves,
        product_refused: Some(product_refused),
        fidelity: Fidelity::worst(&outputs),
        outputs,
        precision,
        cure: None,
    })
}

/// Exports `fit`: its set checked as [`check`] checks it; a set that fails
/// is cured ([`cure`]: more jitter, the fit's models replaced by the cured
/// ones); with `force` a set that nothing cures is exported as fitted.
/// Several outputs that pass only in the solves form of the variance are
/// cured into the product form where that costs at most
/// [`Cure::MAX_COST`](cure::Cure::MAX_COST) (`cure::cure_to_product`): the solves form
/// would make their one blob larger than separate blobs.
///
/// # Errors
/// [`Error::Fidelity`] when nothing cures the check and `force` is false
/// (the message names the failing outputs and any precision warning, the
/// likely cause); as [`check`].
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn export(fit: &mut Fit, check_x: &DMatrix<f64>, force: bool) -> Result<Exported> {
    let first = check(&fit.set, check_x)?;
    if first.fidelity.passes() {
        let several = fit.set.members.len() > 1 && fit.first().link == sgp_runtime::Link::Identity;
        if several && first.product_refused.is_some() {
            if let Some(product) = cure::cure_to_product(fit, check_x)? {
                return Ok(product);
            }
        }
        return Ok(first);
    }
    if let Some(cured) = cure::cure(fit, check_x)? {
        return Ok(cured);
    }
    if force {
        return Ok(first);
    }
    let failing: Vec<String> = first
        .outputs
        .iter()
        .zip(&fit.set.members)
        .filter(|(f, _)| !f.passes())
        .map(|(_, m)| format!("'{}'", m.target_name))
        .collect();
    let which = if fit.set.members.len() > 1 {
        format!("outputs failing the check: {}; ", failing.join(", "))
    } else {
        String::new()
    };
    Err(refusal(
        &first,
        &format!(
            "{which}raising the jitter to {:e} s2 did not cure it: try fewer basis functions \
             (--m) or --objective vfe",
            cure::MAX_CURE_EPS
        ),
    ))
}

/// The error for an export that failed its check: the deviations, the
/// likely cause when f32 cannot resolve a column, `advice` (what was tried
/// and what to try; may be empty), and the way to export anyway.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn refusal(exported: &Exported, advice: &str) -> Error {
    let cause = if exported.precision.is_empty() {
        String::new()
    } else {
        format!(
            "; likely cause: f32 cannot resolve the data: {}",
            exported.precision.join("; ")
        )
    };
    let advice = if advice.is_empty() {
        String::new()
    } else {
        format!("; {advice}")
    };
    Error::Fidelity(format!(
        "{}{cause}{advice}; pass --force to export anyway",
        exported.fidelity.describe()
    ))
}

/// The deviations of each member of `set` from output `p` of the runtime
/// reading `blob` at raw inputs `x` (class probabilities for a
/// multi-class link, against [`class_probabilities`] of the f64 latents).
///
/// # Errors
/// If the runtime refuses the blob or an input, or the blob has another
/// number of outputs than the set has members.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn compare(set: &ModelSet, blob: &[u8], x: &DMatrix<f64>) -> Result<Vec<Fidelity>> {
    let SetPrediction {
        outputs: references,
        probabilities,
    } = set.predict_set(x)?;
    let device = predict_outputs(blob, x)?;
    let count = set.members.len();
    if let Some(row) = device.iter().find(|row| row.len() != count) {
        return Err(Error::BadInput(format!(
            "the blob has {} outputs, the set {count} members",
            row.len()
        )));
    }
    // A column per member (a binary classifier's one: its probability).
    let probabilities: Vec<DVector<f64>> = probabilities
        .map(|p| p.column_iter().map(|c| c.into_owned()).collect())
        .unwrap_or_default();
    Ok(set
        .members
        .iter()
        .enumerate()
        .map(|(p, member)| {
            let outputs: Vec<DevicePrediction> = device.iter().map(|row| row[p]).collect();
            fidelity(member, &references[p], probabilities.get(p), &outputs)
        })
        .collect())
}

/// The deviations of one output's f32 predictions `device` from its f64
/// `reference` (and, for a classifier, from the f64 class probability of
/// each point).
fn fidelity(
    model: &TrainedModel,
    reference: &RawPrediction,
    probability: Option<&DVector<f64>>,
    device: &[DevicePrediction],
) -> Fidelity {
    let link = model.link;
    let y_scale = model.transform.y_scale;
    let mut fidelity = Fidelity {
        points: device.len(),
        worst_mean_ratio: 0.0,
        worst_mean_sd: 0.0,
        worst_mean: 0.0,
        worst_variance: 0.0,
        invalid: 0,
    };
    let references = reference.mean.iter().zip(reference.var.iter());
    for (i, (p, (&ref_mean, &ref_var))) in device.iter().zip(references).enumerate() {
        let (mean, var) = (f64::from(p.mean), f64::from(p.variance));
        match (p.probability, probability.map(|q| q[i])) {
            (Some(probability), Some(expected)) => {
                let dev = (f64::from(probability) - expected).abs();
                let dev = if dev.is_nan() { f64::INFINITY } else { dev };
                fidelity.worst_mean = fidelity.worst_mean.max(dev);
                fidelity.worst_mean_ratio =
                    fidelity.worst_mean_ratio.max(dev / PROBABILITY_TOLERANCE);
            }
            _ => {
                // A NaN mean must fail: `max` would drop it.
                let dev = (mean - ref_mean).abs();
                let dev = if dev.is_nan() { f64::INFINITY } else { dev };
                let sd = ref_var.max(0.0).sqrt();
                fidelity.worst_mean = fidelity.worst_mean.max(dev / y_scale);
                fidelity.worst_mean_sd =
                    fidelity.worst_mean_sd.max(dev / sd.max(f64::MIN_POSITIVE));
                fidelity.worst_mean_ratio = fidelity
                    .worst_mean_ratio
                    .max(dev / mean_tolerance(sd, y_scale));
            }
        }
        if var.is_nan() || var < 0.0 {
            fidelity.invalid += 1;
        } else {
            // A probit model's latent variance enters the probability as
            // `1 + v` and may be clamped to zero near an active point:
            // relative to `1 + v`, never to `v` itself.
            let scale = match link {
                Link::Probit | Link::OneVsRest | Link::Softmax => 1.0 + ref_var,
                Link::Identity => ref_var,
            };
            let rel = (var - ref_var).abs() / scale.max(f64::MIN_POSITIVE);
            fidelity.worst_variance = fidelity.worst_variance.max(rel);
        }
    }
    fidelity
}

/// Raw inputs far outside the training data (5 to 20 standard deviations
/// from the mean in random directions), where the variance must rise to
/// the prior and the mean fall to the target mean.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn far_points(model: &TrainedModel, n: usize, seed: u64) -> DMatrix<f64> {
    let t = &model.transform;
    let d = t.x_mean.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    DMatrix::from_fn(n, d, |_, j| {
        let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
        t.x_mean[j] + sign * rng.random_range(5.0..20.0) * t.x_scale[j]
    })
}

/// Row `i` of the input gradients as `(d mean, d variance)` literals.
fn gradient_row(g: &crate::export::gradient::RawGradient, i: usize) -> String {
    let cells: Vec<String> = (0..g.mean.ncols())
        .map(|j| {
            format!(
                "({}, {})",
                f32_literal(g.mean[(i, j)]),
                f32_literal(g.var[(i, j)])
            )
        })
        .collect();
    cells.join(", ")
}

/// Golden values for firmware tests, as Rust source (`sgp fit --golden`):
/// the f64 trainer's predictions of every member of `set` at the rows of
/// `x` (raw inputs) and their input gradients (central differences). The
/// file defines `DIM`, `OUTPUTS` (the member count), `Y_SCALES` (one per
/// output), `INPUTS` (row-major), `EXPECTED` (`(mean, variance)` of every
/// output at each row, outputs in order within a row), `GRADIENTS` (row by
/// row, output by output, input by input) and, for a multi-class set,
/// `PROBABILITIES` (row by row, class by class). Every number is rounded
/// to the f32 the firmware compares in and printed as the shortest literal
/// that reads back as that f32, so the file passes clippy as it is.
///
/// # Errors
/// If a member cannot predict at `x`, or the set has no valid link.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn golden_rust(set: &ModelSet, x: &DMatrix<f64>) -> Result<String> {
    use std::fmt::Write;
    let link = set.link()?;
    let (n, d) = x.shape();
    let count = set.members.len();
    let predictions = set
        .members
        .iter()
        .map(|m| {
            Ok((
                m.predict_raw(x)?,
                crate::export::gradient::central_differences(m, x)?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by `sgp fit --golden`: f64 trainer predictions of {count} outputs."
    );
    let _ = writeln!(s, "/// Input dimension.\npub const DIM: usize = {d};");
    let _ = writeln!(
        s,
        "/// Outputs (classes of a multi-class model).\npub const OUTPUTS: usize = {count};"
    );
    let scales: Vec<String> = set
        .members
        .iter()
        .map(|m| f32_literal(m.transform.y_scale))
        .collect();
    let _ = writeln!(
        s,
        "/// Each output's target scale.\npub static Y_SCALES: [f32; {count}] = [{}];",
        scales.join(", ")
    );
    golden_inputs(&mut s, x);
    let _ = writeln!(
        s,
        "/// (mean, variance) of each output at each input row.\npub static EXPECTED: [(f32, f32); {}] = [",
        n * count
    );
    for i in 0..n {
        let cells: Vec<String> = predictions
            .iter()
            .map(|(p, _)| format!("({}, {})", f32_literal(p.mean[i]), f32_literal(p.var[i])))
            .collect();
        let _ = writeln!(s, "    {},", cells.join(", "));
    }
    let _ = writeln!(s, "];");
    let _ = writeln!(
        s,
        "/// (d mean / d x_j, d variance / d x_j): row by row, output by output.\npub static GRADIENTS: [(f32, f32); {}] = [",
        n * count * d
    );
    for i in 0..n {
        for (_, g) in &predictions {
            let _ = writeln!(s, "    {},", gradient_row(g, i));
        }
    }
    let _ = writeln!(s, "];");
    if link.is_multi_class() {
        let _ = writeln!(
            s,
            "/// Class probabilities at each input row.\npub static PROBABILITIES: [f32; {}] = [",
            n * count
        );
        for i in 0..n {
            let latents: Vec<(f64, f64)> = predictions
                .iter()
                .map(|(p, _)| (p.mean[i], p.var[i]))
                .collect();
            let cells: Vec<String> = class_probabilities(link, &latents)
                .into_iter()
                .map(f32_literal)
                .collect();
            let _ = writeln!(s, "    {},", cells.join(", "));
        }
        let _ = writeln!(s, "];");
    }
    Ok(s)
}

/// The golden files' `INPUTS`: the rows of `x`, row-major.
fn golden_inputs(s: &mut String, x: &DMatrix<f64>) {
    use std::fmt::Write;
    let _ = writeln!(
        s,
        "/// Row-major inputs.\npub static INPUTS: [f32; {}] = [",
        x.len()
    );
    for row in x.row_iter() {
        let cells: Vec<String> = row.iter().map(|&v| f32_literal(v)).collect();
        let _ = writeln!(s, "    {},", cells.join(", "));
    }
    let _ = writeln!(s, "];");
}

/// `v` rounded to f32, as the shortest Rust literal that reads back as that
/// f32 (Rust's `{:e}` of an f32 prints exactly that).
fn f32_literal(v: f64) -> String {
    format!("{:e}", v as f32)
}

/// The points golden values are taken at: up to `n_data` training rows
/// (evenly spread through the file) plus `n_far` points far outside the
/// inputs of `model` (any member of the set).
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn golden_points(
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

/// The export `Options` ask for; here, above the options, so that the
/// options never reach up into the export.
impl crate::options::Options {
    /// Exports `fit` as asked: a blob that learns on the device with
    /// `updatable` (`updatable::export_updatable`), else the fixed blob (`export`);
    /// `force` exports what fails the f32 check.
    ///
    /// # Errors
    /// As `export` and `updatable::export_updatable`.
    pub fn export(&self, fit: &mut Fit, check_x: &DMatrix<f64>, force: bool) -> Result<Exported> {
        if self.updatable {
            updatable::export_updatable(fit, check_x, force)
        } else {
            export(fit, check_x, force)
        }
    }
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod classify;

#[cfg(test)]
mod tests {
    use nalgebra::DVector;
    use rand_distr::{Distribution, Normal};

    use super::*;
    use crate::data::Dataset;
    use crate::fit::{fit, Fit, FitParams, SparseParams};
    use crate::numerics::optimise::OptimiseOptions;

    /// `n` rows of `y = offset + slope x + noise` on `x` in [0, 1], a quick
    /// SPGP fitted to them and its model.
    fn fitted_line(n: usize, offset: f64, slope: f64, noise: f64) -> (Dataset, TrainedModel) {
        let (data, fit) = line_fit(n, offset, slope, noise);
        (data, fit.set.members[0].clone())
    }

    fn line_fit(n: usize, offset: f64, slope: f64, noise: f64) -> (Dataset, Fit) {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let normal = Normal::new(0.0, noise).unwrap();
        let x = DMatrix::from_fn(n, 1, |i, _| i as f64 / (n - 1) as f64);
        let y = DVector::from_fn(n, |i, _| offset + slope * x[i] + normal.sample(&mut rng));
        let data = Dataset::from_raw(x, y, vec!["x".into()], "y".into()).unwrap();
        let params = FitParams::Spgp(SparseParams {
            m: 10,
            optimiser: OptimiseOptions {
                max_iter: 40,
                ..OptimiseOptions::default()
            },
            ..SparseParams::default()
        });
        let fitted = fit(&data, &params, &mut |_| {}).unwrap();
        (data, fitted)
    }

    /// `model` as a set of one.
    fn one(model: &TrainedModel) -> ModelSet {
        ModelSet::single(model.clone(), Vec::new())
    }

    #[test]
    fn golden_literals_are_the_shortest_that_read_back_as_the_f32() {
        // f64's own shortest form would carry 16 digits f32 cannot hold.
        assert_eq!(f32_literal(1.0 / 3.0), "3.3333334e-1");
        assert_eq!(f32_literal(0.1), "1e-1");
        assert_eq!(f32_literal(-2.5e7), "-2.5e7");
        let (data, model) = fitted_line(40, 1.0, 2.0, 0.1);
        let source =
            golden_rust(&one(&model), &golden_points(&model, &data.raw_x(), 4, 2)).unwrap();
        let mut literals = 0;
        let code = source.lines().filter(|l| !l.starts_with("//"));
        let tokens =
            code.flat_map(|l| l.split(|c: char| c.is_whitespace() || "[](),;".contains(c)));
        for token in tokens {
            if let Ok(v) = token.parse::<f32>() {
                if token.contains('e') {
                    literals += 1;
                    assert_eq!(f32_literal(f64::from(v)), token);
                }
            }
        }
        // Y_SCALES, 6 x 1 inputs, 6 (mean, variance) pairs, 6 x 1 gradient
        // pairs.
        assert_eq!(literals, 1 + 6 + 12 + 12, "{source}");
    }

    #[test]
    fn the_mean_tolerance_is_a_percent_of_the_sd_with_a_floor() {
        assert!((mean_tolerance(0.5, 2.0) - 5e-3).abs() < 1e-15);
        assert!((mean_tolerance(0.0, 2.0) - 2e-4).abs() < 1e-15);
    }

    #[test]
    fn half_a_percent_of_the_sd_passes_where_a_fixed_fraction_of_y_scale_did_not() {
        let (data, mut fitted) = line_fit(300, 0.0, 2.0, 0.3);
        let model = fitted.set.members[0].clone();
        let x = data.raw_x();
        let exported = export(&mut fitted, &x, false).unwrap();
        assert!(exported.fidelity.passes(), "{:?}", exported.fidelity);
        // Shift the f64 reference by 0.5% of the smallest predictive sd: the
        // blob now deviates from it by that much everywhere.
        let sd_min = model.predict_raw(&x).unwrap().var.min().sqrt();
        let mut shifted = model.clone();
        shifted.transform.y_mean += 0.005 * sd_min;
        let f = compare(&one(&shifted), &exported.blob, &x)
            .unwrap()
            .remove(0);
        // The old rule (1e-3 y_scale) refused this...
        assert!(f.worst_mean > 1e-3, "{f:?}");
        // ...the new one accepts it: about half of the tolerance.
        assert!(f.passes(), "{f:?}");
        assert!(f.worst_mean_sd > 0.004 && f.worst_mean_sd < 0.006, "{f:?}");
        assert!(
            f.worst_mean_ratio > 0.4 && f.worst_mean_ratio < 0.6,
            "{f:?}"
        );
    }

    /// A fit exports the product form, whose blob drops `L2`; a model
    /// whose `W` has no factor (here `L2 = L1 / 2`, so `W = -3 L1^-T
    /// L1^-1`) falls back to the solves and says why.
    #[test]
    fn the_product_form_is_chosen_when_it_passes_and_the_fallback_says_why() {
        let (data, model) = fitted_line(200, 0.0, 2.0, 0.1);
        let x = data.raw_x();
        let exported = check(&one(&model), &x).unwrap();
        assert_eq!(exported.product_refused, None);
        assert_eq!(exported.variance, VarianceForm::Product);
        let spec = sgp_runtime::ModelSpec::from_bytes(&exported.blob).unwrap();
        assert!(spec.l2.is_empty() && !spec.shape.two_factors);
        assert_eq!(spec.variance, VarianceForm::Product);

        let mut indefinite = model.clone();
        indefinite.form.l2 = Some(&indefinite.form.l1 * 0.5);
        let exported = check(&one(&indefinite), &x).unwrap();
        assert_eq!(exported.variance, VarianceForm::Solves);
        let why = exported.product_refused.expect("a reason");
        assert!(why.contains("not positive definite"), "{why}");
        assert!(exported.fidelity.passes(), "{:?}", exported.fidelity);
        let spec = sgp_runtime::ModelSpec::from_bytes(&exported.blob).unwrap();
        assert_eq!(spec.variance, VarianceForm::Solves);
    }

    #[test]
    fn a_wrong_blob_still_fails() {
        let (data, model) = fitted_line(200, 0.0, 2.0, 0.1);
        let x = data.raw_x();
        let exported = check(&one(&model), &x).unwrap();
        assert!(exported.fidelity.passes(), "{:?}", exported.fidelity);
        let mut wrong = model.clone();
        wrong.form.beta *= 1.05;
        let f = compare(&one(&wrong), &exported.blob, &x).unwrap().remove(0);
        assert!(!f.passes() && f.worst_mean_ratio > 1.0, "{f:?}");
        // A 2% (of the sd) shift of the mean fails too.
        let sd_max = model.predict_raw(&x).unwrap().var.max().sqrt();
        let mut shifted = model.clone();
        shifted.transform.y_mean += 0.02 * sd_max;
        let f = compare(&one(&shifted), &exported.blob, &x)
            .unwrap()
            .remove(0);
        assert!(!f.passes(), "{f:?}");
    }

    #[test]
    fn export_refuses_what_f32_cannot_resolve_points_to_it_and_force_overrides() {
        // A target of 1e6 varying by a few thousandths: the device returns
        // it in steps of 0.0625.
        let (data, mut fitted) = line_fit(100, 1e6, 2e-3, 1e-4);
        let model = fitted.set.members[0].clone();
        let x = data.raw_x();
        let checked = check(&one(&model), &x).unwrap();
        assert!(!checked.fidelity.passes(), "{:?}", checked.fidelity);
        assert_eq!(checked.precision.len(), 1, "{:?}", checked.precision);
        match export(&mut fitted, &x, false) {
            Err(Error::Fidelity(m)) => {
                assert!(m.contains("of its tolerance"), "{m}");
                assert!(m.contains("f32 cannot resolve the data: target 'y'"), "{m}");
                assert!(m.contains("offset such as 1000000"), "{m}");
                assert!(m.contains("--force"), "{m}");
            }
            other => panic!("expected a fidelity error, got {other:?}"),
        }
        let forced = export(&mut fitted, &x, true).unwrap();
        assert_eq!(forced.blob, checked.blob);
        assert_eq!(forced.fidelity, checked.fidelity);
    }

    /// A second output on `model`'s basis: its own weights (the first's
    /// reversed and scaled), noise, target scaling and name.
    fn second_output(model: &TrainedModel) -> TrainedModel {
        let mut other = model.clone();
        let m = other.form.beta.len();
        other.form.beta = DVector::from_fn(m, |i, _| -0.7 * model.form.beta[m - 1 - i]);
        other.form.noise_var *= 1.5;
        other.transform.y_mean += 3.0;
        other.transform.y_scale *= 2.0;
        other.target_name = "y2".into();
        other
    }

    #[test]
    fn a_set_exports_one_blob_whose_outputs_each_match_their_member() {
        let (data, model) = fitted_line(200, 0.0, 2.0, 0.1);
        let x = data.raw_x();
        let set = ModelSet {
            members: vec![model.clone(), second_output(&model)],
            class_labels: vec![],
        };
        let exported = check(&set, &x).unwrap();
        assert_eq!(exported.outputs.len(), 2);
        assert!(
            exported.outputs.iter().all(Fidelity::passes),
            "{:?}",
            exported.outputs
        );
        assert_eq!(exported.variance, VarianceForm::Product);
        let spec = sgp_runtime::ModelSpec::from_bytes(&exported.blob).unwrap();
        assert_eq!(spec.output_count(), 2);
        assert_eq!(spec.outputs[0].name, "y2");
        // The shared basis is written once: far less than two blobs.
        let alone = check(&one(&model), &x).unwrap().blob.len();
        assert!(
            exported.blob.len() < 2 * alone - 100,
            "{} vs {alone}",
            exported.blob.len()
        );
        // Output 0 is the single-output blob's numbers; each output is
        // checked against its own member: a wrong second member fails.
        let mut wrong = set.clone();
        wrong.members[1].form.beta *= 1.05;
        let fidelities = compare(&wrong, &exported.blob, &x).unwrap();
        assert!(
            fidelities[0].passes() && !fidelities[1].passes(),
            "{fidelities:?}"
        );
    }

    #[test]
    fn members_that_do_not_share_a_basis_or_a_link_are_refused() {
        let (data, model) = fitted_line(100, 0.0, 2.0, 0.1);
        let x = data.raw_x();
        let mut moved = second_output(&model);
        moved.form.basis.centres[(0, 0)] += 0.1;
        let set = ModelSet {
            members: vec![model.clone(), moved],
            class_labels: vec![],
        };
        match check(&set, &x) {
            Err(Error::BadInput(m)) => {
                assert!(m.contains("member 1") && m.contains("centres"), "{m}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let mut probit = second_output(&model);
        probit.link = Link::Probit;
        let set = ModelSet {
            members: vec![model.clone(), probit],
            class_labels: vec![],
        };
        assert!(matches!(check(&set, &x), Err(Error::BadInput(_))));
        let empty = ModelSet {
            members: vec![],
            class_labels: vec![],
        };
        assert!(matches!(check(&empty, &x), Err(Error::BadInput(_))));
    }

    /// Three class latents on one basis: the blob's class probabilities
    /// are held to the f64 ones, for both rules; several probit members
    /// name no rule and are refused.
    #[test]
    fn a_multi_class_set_is_held_to_its_class_probabilities() {
        let (data, model) = fitted_line(150, 0.0, 2.0, 0.1);
        let x = data.raw_x();
        let latent = |member: &TrainedModel, bias: f64, link: Link| {
            let mut m = member.clone();
            m.link = link;
            m.bias = bias;
            m
        };
        for link in [Link::OneVsRest, Link::Softmax] {
            let members = vec![
                latent(&model, 0.0, link),
                latent(&second_output(&model), 0.5, link),
                latent(&model, -1.0, link),
            ];
            let labels = vec!["cat".to_string(), "dog".into(), "emu".into()];
            let set = ModelSet {
                members,
                class_labels: labels.clone(),
            };
            let exported = check(&set, &x).unwrap();
            assert!(exported.fidelity.passes(), "{:?}", exported.outputs);
            let spec = sgp_runtime::ModelSpec::from_bytes(&exported.blob).unwrap();
            assert_eq!((spec.shape.link, spec.class_labels.clone()), (link, labels));
            let classes = crate::model::device::classify_all(&exported.blob, &x).unwrap();
            for (i, (class, p)) in classes.iter().enumerate() {
                let latents: Vec<(f64, f64)> = set
                    .members
                    .iter()
                    .map(|m| {
                        let r = m.predict_raw(&x.rows(i, 1).into_owned()).unwrap();
                        (r.mean[0], r.var[0])
                    })
                    .collect();
                let expected = class_probabilities(link, &latents);
                for (a, b) in p.iter().zip(&expected) {
                    assert!((f64::from(*a) - b).abs() < PROBABILITY_TOLERANCE, "{a} {b}");
                }
                assert!(p[*class] >= p.iter().copied().fold(0.0, f32::max));
            }
            // A class probability off by more than the tolerance fails.
            let mut shifted = set.clone();
            shifted.members[1].bias += 0.05;
            let f = compare(&shifted, &exported.blob, &x).unwrap();
            assert!(!Fidelity::worst(&f).passes(), "{f:?}");
        }
        let probits = ModelSet {
            members: vec![
                latent(&model, 0.0, Link::Probit),
                latent(&model, 1.0, Link::Probit),
            ],
            class_labels: vec![],
        };
        match check(&probits, &x) {
            Err(Error::BadInput(m)) => assert!(m.contains("softmax"), "{m}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn golden_values_of_a_set_list_every_output_at_every_point() {
        let (data, model) = fitted_line(60, 0.0, 2.0, 0.1);
        let x = golden_points(&model, &data.raw_x(), 3, 1);
        let set = ModelSet {
            members: vec![model.clone(), second_output(&model)],
            class_labels: vec![],
        };
        let source = golden_rust(&set, &x).unwrap();
        assert!(source.contains("pub const OUTPUTS: usize = 2;"), "{source}");
        assert!(source.contains("EXPECTED: [(f32, f32); 8]"), "{source}");
        assert!(source.contains("GRADIENTS: [(f32, f32); 8]"), "{source}");
        assert!(!source.contains("PROBABILITIES"), "{source}");
        // The second output's mean at the first point, as the trainer has it.
        let second = set.members[1].predict_raw(&x).unwrap();
        let first_row = source
            .lines()
            .skip_while(|l| !l.contains("EXPECTED"))
            .nth(1)
            .unwrap();
        assert!(
            first_row.contains(&f32_literal(second.mean[0])),
            "{first_row}"
        );
        let mut classes = set.clone();
        for m in &mut classes.members {
            m.link = Link::Softmax;
        }
        let source = golden_rust(&classes, &x).unwrap();
        assert!(source.contains("PROBABILITIES: [f32; 8]"), "{source}");
    }

    #[test]
    fn class_probabilities_sum_to_one_and_follow_the_latents() {
        for link in [Link::OneVsRest, Link::Softmax] {
            let p = class_probabilities(link, &[(1.0, 0.5), (-1.0, 0.1), (0.0, 2.0)]);
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert!(p[0] > p[2] && p[2] > p[1], "{p:?}");
            // Far in every tail: no class claims the point.
            let far = class_probabilities(link, &[(-60.0, 0.0), (-61.0, 0.0)]);
            assert!((far.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{far:?}");
        }
    }

    #[test]
    fn a_failing_check_without_a_precision_cause_says_nothing_about_it() {
        let (data, model) = fitted_line(100, 0.0, 2.0, 0.1);
        let exported = check(&one(&model), &data.raw_x()).unwrap();
        assert!(exported.precision.is_empty(), "{:?}", exported.precision);
    }
}
