//! The runtime's analytic input gradients (f32, `predict_with_gradient`
//! and `probability_with_gradient`) against central differences of the
//! trainer's f64 predictions, for every model kind the trainer fits.

use nalgebra::DMatrix;
use sgp_runtime::Model;

use super::central_differences;
use crate::data::Dataset;
use crate::export::far_points;
use crate::export::updatable::export_updatable;
use crate::fit::{fit, FitParams, Method};
use crate::model::TrainedModel;
use crate::numerics::optimise::OptimiseOptions;
use crate::options::Options;
use crate::synth::{classification, classification_dataset, synthetic, ClassShape};

type Device = Model<64, 4, 4>;

/// `n` rows of the synthetic regression data in `d` inputs.
fn data(n: usize, d: usize, seed: u64) -> Dataset {
    let (x, y) = synthetic(n, d, seed);
    let names = (1..=d).map(|j| format!("x{j}")).collect();
    Dataset::from_raw(x, y, names, "y".into()).unwrap()
}

/// The defaults of `method` with `m` basis functions, `seed`, and at most
/// `max_iter` optimiser iterations.
fn params(method: Method, m: usize, seed: u64, max_iter: u64) -> FitParams {
    let mut params = Options::defaults(method, m, 2, seed).unwrap();
    *params.optimiser_mut() = OptimiseOptions {
        max_iter,
        ..OptimiseOptions::default()
    };
    params
}

/// A quick fit (60 iterations) of `method` with `m` basis functions to 300
/// rows of 3-input data.
fn fitted(method: Method, m: usize, seed: u64) -> TrainedModel {
    let train = data(300, 3, seed);
    let mut fitted = fit(&train, &params(method, m, seed, 60), &mut |_| {}).unwrap();
    fitted.set.members.remove(0)
}

/// Held-out rows of the model's data and points far outside it.
fn points(model: &TrainedModel, held_out: &Dataset) -> DMatrix<f64> {
    let near = held_out.raw_x();
    let far = far_points(model, 4, 3);
    DMatrix::from_rows(&near.row_iter().chain(far.row_iter()).collect::<Vec<_>>())
}

/// Relative part of the tolerance: of the reference gradient's largest
/// component at the same point.
const RELATIVE: f64 = 1e-3;
/// Absolute part: of the largest component over all the points (the
/// model's steepest slope there).
const OF_STEEPEST: f64 = 1e-4;

/// Worst `|g32_j - g64_j| / (RELATIVE |g64(x)|_inf + OF_STEEPEST max_x
/// |g64(x)|_inf)` over the rows and inputs; at most 1 passes.
///
/// Why these numbers: the f32 gradient is a sum of basis terms as large
/// as the steepest slope, pushed through the triangular solves, so its
/// error is a few f32 roundings (6e-8) of that size times the solves'
/// growth. Measured on these fits: 3e-7 to 1.4e-5 of the steepest slope,
/// at most 0.1 of this tolerance (SPGP+DR's variance; the others 0.001 to
/// 0.013), so there is room for worse-conditioned fits, while a wrong
/// sign, a missing term or a wrong scale is off by the size of the
/// gradient itself (a dropped second factor: 50x the tolerance). The
/// reference's own error ([`super::STEP`]) is below 1e-6
/// relative.
fn worst_ratio(device: &[Vec<f32>], reference: &DMatrix<f64>) -> f64 {
    let steepest = reference.amax();
    let mut worst = 0.0f64;
    for (got, want) in device.iter().zip(reference.row_iter()) {
        let tolerance = RELATIVE * want.amax() + OF_STEEPEST * steepest;
        for (&g, &w) in got.iter().zip(want.iter()) {
            worst = worst.max((f64::from(g) - w).abs() / tolerance);
        }
    }
    worst
}

/// The device's gradients pass, and the same gradients with the sign
/// flipped do not (a check that cannot fail proves nothing).
fn assert_gradient(label: &str, device: &[Vec<f32>], reference: &DMatrix<f64>) {
    let ratio = worst_ratio(device, reference);
    assert!(ratio <= 1.0, "{label}: {ratio:.3} x the tolerance");
    let flipped: Vec<Vec<f32>> = device
        .iter()
        .map(|g| g.iter().map(|v| -v).collect())
        .collect();
    assert!(
        worst_ratio(&flipped, reference) > 1.0,
        "{label}: a sign-flipped gradient passed"
    );
}

/// Exports `model`, evaluates the blob's gradients at the rows of `x` and
/// checks them against central differences of the f64 predictions; the
/// values must be `predict`'s (and `probability`'s) bit for bit.
fn assert_gradients_match(label: &str, model: &TrainedModel, x: &DMatrix<f64>) {
    let blob = model.to_spec().unwrap().to_bytes().unwrap();
    assert_blob_gradients_match(label, &blob, model, x);
}

/// [`assert_gradients_match`] for a blob of `model` exported already.
fn assert_blob_gradients_match(label: &str, blob: &[u8], model: &TrainedModel, x: &DMatrix<f64>) {
    let device = Box::new(Device::from_bytes(blob).unwrap());
    let reference = central_differences(model, x).unwrap();
    let d = x.ncols();
    let (mut mean, mut var, mut probability) = (vec![], vec![], vec![]);
    for row in x.row_iter() {
        let row: Vec<f32> = row.iter().map(|&v| v as f32).collect();
        let g = device.predict_with_gradient(&row).unwrap();
        let p = device.predict(&row).unwrap();
        assert_eq!(
            (g.mean.to_bits(), g.variance.to_bits()),
            (p.mean.to_bits(), p.variance.to_bits()),
            "{label}: not predict's values at {row:?}"
        );
        assert!(g.mean_gradient[d..].iter().all(|v| *v == 0.0));
        mean.push(g.mean_gradient[..d].to_vec());
        var.push(g.variance_gradient[..d].to_vec());
        if reference.probability.is_some() {
            let q = device.probability_with_gradient(&row).unwrap();
            assert_eq!(
                q.probability.to_bits(),
                device.probability(&row).unwrap().to_bits()
            );
            probability.push(q.gradient[..d].to_vec());
        }
    }
    assert_gradient(&format!("{label} mean"), &mean, &reference.mean);
    assert_gradient(&format!("{label} variance"), &var, &reference.var);
    if let Some(want) = &reference.probability {
        assert_gradient(&format!("{label} probability"), &probability, want);
    }
}

/// Regression: every kind the trainer fits, one short fit each (as in the
/// end-to-end tests), at 50 held-out rows and 4 far points.
#[test]
fn regression_gradients_match_differences_of_the_f64_trainer() {
    for (label, method, m) in [
        ("spgp", Method::Spgp, 15),
        ("vsgp", Method::Vsgp, 15),
        ("spgp-hs", Method::SpgpHs, 15),
        ("spgp-dr", Method::SpgpDr, 15),
        ("gplasso", Method::Gplasso, 15),
        ("ivm", Method::Ivm, 25),
    ] {
        let model = fitted(method, m, 1);
        assert_gradients_match(label, &model, &points(&model, &data(50, 3, 99)));
    }
}

/// An updatable blob (`--updatable`: the covariance form, its variance
/// from the pairs `(z, W z)`), before it has learned anything: the same
/// posterior as the plain export's, so the same differences.
#[test]
fn updatable_gradients_match_differences_of_the_f64_trainer() {
    let train = data(300, 3, 1);
    let mut fitted = fit(&train, &params(Method::Spgp, 15, 1, 60), &mut |_| {}).unwrap();
    let model = fitted.set.members[0].clone();
    let blob = export_updatable(&mut fitted, &train.raw_x(), false)
        .unwrap()
        .blob;
    assert!(Device::from_bytes(&blob).unwrap().is_updatable());
    assert_blob_gradients_match(
        "updatable spgp",
        &blob,
        &model,
        &points(&model, &data(50, 3, 99)),
    );
}

/// The probit classifiers (IVM, SVGP): latent mean and variance, and the
/// class probability's gradient by the chain rule.
#[test]
fn classifier_gradients_match_differences_of_the_f64_trainer() {
    let (x, y) = classification(ClassShape::Moons, 300, 11);
    let train = Dataset::from_raw(x, y, vec!["x1".into(), "x2".into()], "class".into())
        .unwrap()
        .into_binary(None)
        .unwrap();
    let held_out = classification_dataset(ClassShape::Moons, 50, 12).unwrap();
    for (label, method) in [("ivm probit", Method::Ivm), ("svgp", Method::Svgp)] {
        let model = fit(&train, &params(method, 40, 1, 60), &mut |_| {})
            .unwrap()
            .set
            .members
            .remove(0);
        assert_gradients_match(label, &model, &points(&model, &held_out));
    }
}
