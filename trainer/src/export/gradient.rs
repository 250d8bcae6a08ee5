//! Gradients of a trained model's f64 predictions with respect to the raw
//! inputs, by central differences: the reference that the runtime's
//! analytic `Model::predict_with_gradient` is held to (cross-crate tests
//! and the firmware's golden values).

use nalgebra::DMatrix;

use sgp_runtime::Link;

use crate::model::likelihood::probit;
use crate::model::TrainedModel;
use crate::Result;

/// Step of the central differences, in units of each input's scale
/// (standardised units). With standardised length scales `l`, truncation
/// is `(STEP / l)^2 / 6` relative (1.7e-6 at `l = 0.03`); f64 rounding in
/// the predictions adds about `1e-16 cond / STEP`, 1e-4 of the variance's
/// size even at `cond(K_M) = 1e8`. Both are far below what f32 can match.
pub const STEP: f64 = 1e-4;

/// `d mean / d x` and `d variance / d x` at each row of the raw inputs, as
/// rows of two `N x D` matrices. Units and meaning as
/// [`TrainedModel::predict_raw`]: regression the target's mean and
/// variance (noise included, which does not depend on `x`); probit the
/// latent `f + b` and its variance.
#[derive(Clone, Debug, PartialEq)]
pub struct RawGradient {
    /// `d mean / d x_j` at row `i` in entry `(i, j)`.
    pub mean: DMatrix<f64>,
    /// `d variance / d x_j` at row `i` in entry `(i, j)`.
    pub var: DMatrix<f64>,
    /// Probit models: `d P(y = +1) / d x_j` at row `i` in entry `(i, j)`.
    pub probability: Option<DMatrix<f64>>,
}

/// Central differences of [`TrainedModel::predict_raw`] at the rows of `x`
/// (raw inputs), step [`STEP`] times each input's scale. A variance clamped
/// at zero within a step of a point gives a meaningless difference there;
/// in f64 that needs the model to interpolate its data exactly.
///
/// # Errors
/// As [`TrainedModel::predict_raw`] (wrong number of columns).
pub fn central_differences(model: &TrainedModel, x: &DMatrix<f64>) -> Result<RawGradient> {
    let (n, d) = x.shape();
    let steps: Vec<f64> = model.transform.x_scale.iter().map(|s| STEP * s).collect();
    // Rows 2 (i d + j) and 2 (i d + j) + 1: row i moved up and down in input j.
    let shifted = DMatrix::from_fn(2 * n * d, d, |r, c| {
        let (i, j, down) = (r / (2 * d), (r / 2) % d, r % 2 == 1);
        match (c == j, down) {
            (false, _) => x[(i, c)],
            (true, false) => x[(i, c)] + steps[c],
            (true, true) => x[(i, c)] - steps[c],
        }
    });
    let p = model.predict_raw(&shifted)?;
    let difference = |v: &nalgebra::DVector<f64>| {
        DMatrix::from_fn(n, d, |i, j| {
            let r = 2 * (i * d + j);
            let width = (x[(i, j)] + steps[j]) - (x[(i, j)] - steps[j]);
            (v[r] - v[r + 1]) / width
        })
    };
    let probability =
        (model.link == Link::Probit).then(|| difference(&p.mean.zip_map(&p.var, probit)));
    Ok(RawGradient {
        mean: difference(&p.mean),
        var: difference(&p.var),
        probability,
    })
}

#[cfg(test)]
#[path = "gradient_tests.rs"]
mod tests;
