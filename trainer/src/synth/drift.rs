//! A plant that drifts, and what learning on the device makes of it: the
//! generator and the measurement behind the guide's drift figures
//! (`cargo run --release -p sgp-trainer --example drift`) and their test.
//!
//! The plant is `crate::synth::ridge_function` on inputs uniform
//! in `[-3, 3]^d`, with Gaussian noise; at the shift its function changes
//! (`Shift`). A model fitted in the lab on the old plant then sees a
//! stream of observations, the shift halfway, and is judged on fresh rows
//! of the new plant against the batch posterior of the same basis and
//! hyperparameters on the last rows only (what a refit on the device's own
//! recent data would give).

use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::Serialize;
use sgp_runtime::UpdateSettings;

use crate::evaluate::metrics::mean_nlpd;
use crate::evaluate::replay::replay;
use crate::model::device::predict_all;
use crate::model::inference::Approximation;
use crate::model::updatable::conditioned;
use crate::model::TrainedModel;
use crate::synth::ridge_function;
use crate::Result;

/// How the plant changes at the shift.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) enum Shift {
    /// `f -> 1.6 f + 0.4`: a gain and an offset (a sensor that ages).
    Gain,
    /// `f -> f + 1`: an offset alone.
    Offset,
    /// `f -> 1.5 f + 0.3 + 0.2 x_1`: a gain, an offset and a slope along
    /// the first input (issue 52's plant).
    GainOffsetSlope,
}

impl Shift {
    /// The plant's function at `x`, before (`shifted` false) or after.
    pub fn plant(self, x: &[f64], shifted: bool) -> f64 {
        let f = ridge_function(x);
        match (shifted, self) {
            (false, _) => f,
            (true, Shift::Gain) => 1.6 * f + 0.4,
            (true, Shift::Offset) => f + 1.0,
            (true, Shift::GainOffsetSlope) => {
                1.5 * f + 0.3 + 0.2 * x.first().copied().unwrap_or(0.0)
            }
        }
    }

    /// `n` rows of the plant in `d` inputs (raw units), noise of standard
    /// deviation `noise`.
    pub fn rows(
        self,
        n: usize,
        d: usize,
        shifted: bool,
        noise: f64,
        seed: u64,
    ) -> (DMatrix<f64>, DVector<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let x = DMatrix::from_fn(n, d, |_, _| rng.random_range(-3.0..3.0));
        let y = DVector::from_fn(n, |i, _| {
            let row: Vec<f64> = x.row(i).iter().copied().collect();
            self.plant(&row, shifted) + noise * rng.sample::<f64, _>(StandardNormal)
        });
        (x, y)
    }
}

/// The drift figures of one model and stream.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct DriftFigures {
    /// Rows of the old plant streamed before the shift.
    pub before: usize,
    /// Rows of the new plant streamed after it.
    pub after: usize,
    /// Test NLPD (raw units) on the new plant of the model that learned
    /// with forgetting.
    pub forgetting: f64,
    /// The same without forgetting.
    pub no_forgetting: f64,
    /// The batch posterior of the same basis and hyperparameters on the
    /// last `after` rows alone.
    pub refit: f64,
    /// The lab model, learning nothing.
    pub fixed: f64,
}

/// Streams `stream` (raw inputs and targets, in time order) through the
/// device's update of the updatable `blob` of `model` (fitted with
/// `approximation`), with and without forgetting `lam`, and measures each
/// on the test rows; the refit is on the last `after` rows of the stream.
///
/// # Errors
/// The runtime's refusal of the blob or of a row; a failed refit.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn drift_figures(
    model: &TrainedModel,
    blob: &[u8],
    approximation: Approximation,
    stream: (&DMatrix<f64>, &DVector<f64>),
    after: usize,
    test: (&DMatrix<f64>, &DVector<f64>),
    lam: f32,
) -> Result<DriftFigures> {
    let (x, y) = stream;
    let targets = DMatrix::from_column_slice(y.len(), 1, y.as_slice());
    let run = |forgetting: f32| -> Result<f64> {
        let settings = UpdateSettings {
            forgetting,
            ..UpdateSettings::default()
        };
        let learned = replay(blob, x, &targets, settings)?;
        test_nlpd(&learned.blob, test)
    };
    let last = x.nrows().saturating_sub(after);
    let recent_x = model.transform.apply_x(&x.rows(last, after).into_owned());
    let recent_y = model.transform.apply_y(&DVector::from_iterator(
        after,
        y.rows(last, after).iter().copied(),
    ));
    let refitted = TrainedModel {
        form: conditioned(&model.form, &recent_x, &recent_y, approximation)?,
        ..model.clone()
    };
    let p = refitted.predict_raw(test.0)?;
    Ok(DriftFigures {
        before: last,
        after,
        forgetting: run(lam)?,
        no_forgetting: run(1.0)?,
        refit: mean_nlpd(p.mean.as_slice(), p.var.as_slice(), test.1.as_slice()),
        fixed: test_nlpd(blob, test)?,
    })
}

/// The mean NLPD (raw units) of the device's predictions of `blob` on the
/// test rows.
fn test_nlpd(blob: &[u8], (x, y): (&DMatrix<f64>, &DVector<f64>)) -> Result<f64> {
    let predicted = predict_all(blob, x)?;
    let mean: Vec<f64> = predicted.iter().map(|p| f64::from(p.mean)).collect();
    let var: Vec<f64> = predicted.iter().map(|p| f64::from(p.variance)).collect();
    Ok(mean_nlpd(&mean, &var, y.as_slice()))
}
