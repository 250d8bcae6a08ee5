//! Replaying a log of observations through the device's own update
//! (`sgp_runtime::Model::update`, f32, the code a microcontroller runs):
//! what the model predicted at each row just before learning it, and the
//! model it ends as. `sgp replay` prints the error over time and draws it.

use nalgebra::{DMatrix, DVector};
use serde::Serialize;
use sgp_runtime::{Link, ModelSpec, UpdateSettings};

use crate::model::device::{DeviceModel, LoadedModel};
use crate::{Error, Result};

/// One observation of one output, as the model saw it before learning it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Step {
    /// Predicted mean (regression: of the target, raw units; classifier:
    /// `P(y = +1)`).
    pub mean: f64,
    /// Predictive variance, noise included (0 for a classifier).
    pub variance: f64,
    /// The observed target (a classifier: 1 for the positive class, else 0).
    pub target: f64,
    /// Whether the model learned it (false: refused by the gate).
    pub learned: bool,
}

/// Error figures over a window of consecutive rows of one output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Window {
    /// First row (0-based) and one past the last.
    pub start: usize,
    /// One past the last row.
    pub end: usize,
    /// Root mean squared error of the predicted mean (classifier: of
    /// `P(y = +1)` against the label, the Brier score's root).
    pub rmse: f64,
    /// Mean negative log predictive density (classifier: log loss), nats.
    pub nlpd: f64,
    /// Fraction inside the central 95% interval (regression), or of rows
    /// classified right (classifier).
    pub hits: f64,
}

/// The replay of one output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trace {
    /// The output's (target column's) name.
    pub name: String,
    /// One step per row.
    pub steps: Vec<Step>,
}

/// What a replay did.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// Each output's steps.
    pub outputs: Vec<Trace>,
    /// Whether the model is a classifier (its means are probabilities).
    pub classifier: bool,
    /// The model after the last row, as a blob (the input's length).
    pub blob: Vec<u8>,
}

impl Replay {
    /// Rows the gate refused for any output (one blob's outputs share
    /// their gate; a container's members each have their own).
    pub fn refused(&self) -> usize {
        let rows = self.outputs.first().map_or(0, |t| t.steps.len());
        (0..rows)
            .filter(|&i| {
                self.outputs
                    .iter()
                    .any(|t| t.steps.get(i).is_some_and(|s| !s.learned))
            })
            .count()
    }

    /// Error figures of output `p` over windows of `size` rows (the last
    /// may be shorter).
    pub fn windows(&self, p: usize, size: usize) -> Vec<Window> {
        let Some(trace) = self.outputs.get(p) else {
            return Vec::new();
        };
        let size = size.max(1);
        trace
            .steps
            .chunks(size)
            .enumerate()
            .map(|(i, steps)| window(i * size, steps, self.classifier))
            .collect()
    }
}

/// The figures of `steps`, which start at row `start`.
fn window(start: usize, steps: &[Step], classifier: bool) -> Window {
    let n = steps.len().max(1) as f64;
    let rmse = (steps
        .iter()
        .map(|s| (s.target - s.mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    let (nlpd, hits) = if classifier {
        let p = |s: &Step| {
            let p = if s.target > 0.5 { s.mean } else { 1.0 - s.mean };
            p.clamp(1e-12, 1.0)
        };
        let loss = steps.iter().map(|s| -libm::log(p(s))).sum::<f64>() / n;
        let right = steps.iter().filter(|s| p(s) > 0.5).count() as f64 / n;
        (loss, right)
    } else {
        let loss = steps
            .iter()
            .map(|s| {
                0.5 * (libm::log(2.0 * std::f64::consts::PI * s.variance)
                    + (s.target - s.mean).powi(2) / s.variance)
            })
            .sum::<f64>()
            / n;
        let inside = steps
            .iter()
            .filter(|s| (s.target - s.mean).abs() <= 1.959_964 * s.variance.sqrt())
            .count() as f64
            / n;
        (loss, inside)
    };
    Window {
        start,
        end: start + steps.len(),
        rmse,
        nlpd,
        hits,
    }
}

/// Replays the rows of `x` (raw inputs, the model's input order) with
/// targets `y` (one column per output, raw units; a classifier: 1 for the
/// positive class, 0 else) through the device's update of `blob`, with
/// `settings`. A row the gate refuses is recorded, not learned.
///
/// # Errors
/// [`Error::BadInput`] naming the row for an input or target the device
/// refuses; the runtime's refusal of the blob (one that does not learn:
/// `sgp fit --updatable` writes one that does).
pub fn replay(
    blob: &[u8],
    x: &DMatrix<f64>,
    y: &DMatrix<f64>,
    settings: UpdateSettings,
) -> Result<Replay> {
    learns(&ModelSpec::from_bytes(blob)?)?;
    let mut loaded = LoadedModel::load(blob)?;
    let outputs = replay_loaded(&mut loaded, x, y, settings)?;
    Ok(Replay {
        outputs,
        classifier: loaded.spec().shape.link == Link::Probit,
        blob: loaded.to_bytes()?,
    })
}

/// Refuses a model that does not learn on the device.
///
/// # Errors
/// [`Error::BadInput`] saying how to get one that does.
pub fn learns(spec: &ModelSpec) -> Result<()> {
    if spec.learning.is_none() {
        return Err(Error::BadInput(
            "the model does not learn on the device (no learning block): fit it again with \
             --updatable"
                .into(),
        ));
    }
    Ok(())
}

/// [`replay`] on a model already loaded, which ends updated: each output's
/// steps. On an error at some row, the rows before it have been learned.
///
/// # Errors
/// As [`replay`].
pub(crate) fn replay_loaded(
    loaded: &mut LoadedModel,
    x: &DMatrix<f64>,
    y: &DMatrix<f64>,
    settings: UpdateSettings,
) -> Result<Vec<Trace>> {
    let spec = loaded.spec();
    learns(spec)?;
    let count = spec.output_count();
    if y.ncols() != count || y.nrows() != x.nrows() {
        return Err(Error::BadInput(format!(
            "{} rows of {} targets for {} rows of inputs and a model of {count} outputs",
            y.nrows(),
            y.ncols(),
            x.nrows()
        )));
    }
    let classifier = spec.shape.link == Link::Probit;
    let names: Vec<String> = std::iter::once(spec.target_name.clone())
        .chain(spec.outputs.iter().map(|o| o.name.clone()))
        .collect();
    let mut steps: Vec<Vec<Step>> = vec![Vec::with_capacity(x.nrows()); count];
    let narrow =
        |row: nalgebra::RowDVector<f64>| -> Vec<f32> { row.iter().map(|&v| v as f32).collect() };
    for (r, (input, target)) in x.row_iter().zip(y.row_iter()).enumerate() {
        let (input, target) = (narrow(input.into_owned()), narrow(target.into_owned()));
        let row = step(
            loaded.device_mut(),
            &input,
            &target,
            settings,
            classifier,
            r,
        )?;
        for (trace, s) in steps.iter_mut().zip(row) {
            trace.push(s);
        }
    }
    Ok(names
        .into_iter()
        .zip(steps)
        .map(|(name, steps)| Trace { name, steps })
        .collect())
}

/// Conditions `model` on one observation (`target`: one value per output)
/// with `settings`: per output, what it predicted before learning it. A
/// row the gate refuses is recorded, not learned; any other refusal leaves
/// the model as it was.
///
/// # Errors
/// The runtime's refusal of the input or target, as [`Error::BadInput`]
/// naming data row `r` (0-based).
pub fn step(
    model: &mut dyn DeviceModel,
    input: &[f32],
    target: &[f32],
    settings: UpdateSettings,
    classifier: bool,
    r: usize,
) -> Result<Vec<Step>> {
    let (seen, learned) = match model.update_with(input, target, settings) {
        Ok(seen) => (
            seen.iter()
                .map(|i| (i.prediction, i.residual))
                .collect::<Vec<_>>(),
            true,
        ),
        Err(sgp_runtime::Error::Outlier) => {
            let all = model.predict_all(input).map_err(|e| at_row(r, e))?;
            let seen = all
                .iter()
                .zip(target)
                .map(|(p, &t)| (*p, t - p.mean))
                .collect();
            (seen, false)
        }
        Err(e) => return Err(at_row(r, e)),
    };
    Ok(seen
        .into_iter()
        .zip(target)
        .map(|((prediction, residual), &t)| {
            let (mean, variance) = if classifier {
                (f64::from(t - residual), 0.0)
            } else {
                (f64::from(prediction.mean), f64::from(prediction.variance))
            };
            Step {
                mean,
                variance,
                target: f64::from(t),
                learned,
            }
        })
        .collect())
}

/// A device error at data row `r` (0-based) as the user's error.
fn at_row(r: usize, e: sgp_runtime::Error) -> Error {
    Error::BadInput(format!("data row {}: {e}", r + 1))
}

/// The classifier targets of raw labels: 1 where a label is the blob's
/// positive class, 0 else.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn labels_as_targets(labels: &DVector<f64>, positive: f64) -> DMatrix<f64> {
    DMatrix::from_iterator(
        labels.len(),
        1,
        labels
            .iter()
            .map(|&v| if v == positive { 1.0 } else { 0.0 }),
    )
}

impl LoadedModel {
    /// [`replay`] on this model, which ends updated: each output's steps.
    /// On an error at some row, the rows before it have been learned.
    ///
    /// # Errors
    /// As [`replay`].
    pub fn replay(
        &mut self,
        x: &DMatrix<f64>,
        y: &DMatrix<f64>,
        settings: UpdateSettings,
    ) -> Result<Vec<Trace>> {
        replay_loaded(self, x, y, settings)
    }
}
