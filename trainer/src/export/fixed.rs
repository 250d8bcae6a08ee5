//! The fixed-point form's error against f64 on a blob's training range:
//! what `sgp inspect` states for `sgp_runtime::FixedModel` (the guide's
//! device-cost chapter, "Fixed point").
//!
//! The runtime builds the form at load time from the blob's numbers, so
//! its error is measured here from the same numbers: the form's
//! prediction against the blob's model in f64, at inputs spread over the
//! training range (its box corners and pseudo-random points, a fixed
//! seed: the same figures on every run).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use sgp_runtime::ModelSpec;

use crate::model::device::with_device_model;
use crate::Result;

/// Most multiply-adds of the f64 reference over all points: the points
/// shrink for large models so that `sgp inspect` stays quick.
const WORK: usize = 50_000_000;
/// Fewest and most points.
const POINTS: (usize, usize) = (16, 1000);

/// The fixed-point form's worst error over the training range.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct FixedPointError {
    /// Inputs evaluated.
    pub points: usize,
    /// Worst `|mean - f64 mean|` over the f64 predictive sd.
    pub mean: f64,
    /// Worst `|variance - f64 variance|` over the f64 variance.
    pub variance: f64,
}

/// The model's fixed-point form and its error, or why it has none.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FixedPoint {
    /// The form exists; its error on the training range.
    Measured(FixedPointError),
    /// No fixed-point form (the runtime's `FixedError`, or no stored
    /// training range to measure on).
    Unavailable(String),
}

impl std::fmt::Display for FixedPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FixedPoint::Measured(e) => write!(
                f,
                "FixedModel (no FPU): worst error against f64 over {} points of the training \
                 range: mean {:.1e} x predictive sd, variance {:.1e} relative",
                e.points, e.mean, e.variance
            ),
            FixedPoint::Unavailable(why) => write!(f, "none ({why})"),
        }
    }
}

/// The fixed-point form of `blob`'s model against its f64 evaluation.
///
/// # Errors
/// If the blob does not load into the runtime.
pub(crate) fn fixed_point_error(blob: &[u8]) -> Result<FixedPoint> {
    let spec = ModelSpec::from_bytes(blob)?;
    if spec.x_min.is_empty() {
        return Ok(FixedPoint::Unavailable(
            "the blob stores no training range".into(),
        ));
    }
    let x = range_points(&spec);
    let fixed = with_device_model(blob, |model| model.fixed_predict_all(&x))?;
    let predictions = match fixed {
        Ok(p) => p,
        Err(why) => return Ok(FixedPoint::Unavailable(why)),
    };
    let (mut mean, mut variance) = (0.0f64, 0.0f64);
    for (xi, p) in x.iter().zip(&predictions) {
        let (m, v) = reference(&spec, xi);
        mean = mean.max((f64::from(p.mean) - m).abs() / v.sqrt());
        variance = variance.max((f64::from(p.variance) - v).abs() / v);
    }
    Ok(FixedPoint::Measured(FixedPointError {
        points: x.len(),
        mean,
        variance,
    }))
}

/// The training range's corners (up to 64) and pseudo-random points in it,
/// as f32 inputs.
fn range_points(spec: &ModelSpec) -> Vec<Vec<f32>> {
    let (m, g) = (usize::from(spec.shape.n_basis), spec.x_min.len());
    let count = (WORK / (m * m + m * g).max(1)).clamp(POINTS.0, POINTS.1);
    let corners = (0..(1usize << g.min(6))).map(|bits| {
        (0..g)
            .map(|j| {
                if bits >> j & 1 == 1 {
                    spec.x_max[j]
                } else {
                    spec.x_min[j]
                }
            })
            .collect::<Vec<f32>>()
    });
    let mut rng = ChaCha8Rng::seed_from_u64(54);
    let mut points: Vec<Vec<f32>> = corners.collect();
    while points.len() < count {
        let point = spec.x_min.iter().zip(&spec.x_max);
        points.push(
            point
                .map(|(&lo, &hi)| lo + (hi - lo) * rng.random_range(0.0f32..=1.0))
                .collect(),
        );
    }
    points
}

/// Mean and variance (noise included) in raw units of the model the
/// fixed-point form covers (squared exponential, shared widths, no
/// projection, product form, one output), in f64 from the blob's numbers.
fn reference(spec: &ModelSpec, x: &[f32]) -> (f64, f64) {
    let (m, g) = (usize::from(spec.shape.n_basis), x.len());
    let f = f64::from;
    let z: Vec<f64> = (0..g)
        .map(|j| (f(x[j]) - f(spec.x_mean[j])) / f(spec.x_scale[j]))
        .collect();
    let amplitude = spec.amplitudes.first().copied().map_or(0.0, f);
    let k: Vec<f64> = (0..m)
        .map(|i| {
            let r2: f64 = (0..g)
                .map(|j| f(spec.widths[j]) * (z[j] - f(spec.centres[i * g + j])).powi(2))
                .sum();
            amplitude * libm::exp(-0.5 * r2)
        })
        .collect();
    let mean: f64 = k.iter().zip(&spec.beta).map(|(k, &b)| k * f(b)).sum();
    let explained: f64 = (0..m)
        .map(|i| {
            let row = i * (i + 1) / 2;
            let u: f64 = (0..=i).map(|j| f(spec.l1[row + j]) * k[j]).sum();
            u * u
        })
        .sum();
    let y_scale = f(spec.y_scale);
    let latent = (f(spec.prior) - explained).max(0.0);
    (
        f(spec.y_mean) + y_scale * mean,
        y_scale * y_scale * (latent + f(spec.noise)),
    )
}

#[cfg(test)]
mod tests {
    use nalgebra::{DMatrix, DVector};
    use rand_distr::{Distribution, Normal};

    use super::*;
    use crate::data::Dataset;
    use crate::fit::{fit, FitParams, SparseParams};
    use crate::numerics::optimise::OptimiseOptions;

    /// A quick SPGP of a noisy sine over two inputs, in product form, over
    /// seeds.
    fn product_blob(seed: u64) -> Vec<u8> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let normal = Normal::new(0.0, 0.1).unwrap();
        let x = DMatrix::from_fn(120, 2, |_, _| rng.random_range(-3.0f64..3.0));
        let y = DVector::from_fn(120, |i, _| {
            libm::sin(x[(i, 0)]) + 0.5 * x[(i, 1)] + normal.sample(&mut rng)
        });
        let data = Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).unwrap();
        let params = FitParams::Spgp(SparseParams {
            m: 12,
            optimiser: OptimiseOptions {
                max_iter: 30,
                ..OptimiseOptions::default()
            },
            ..SparseParams::default()
        });
        let fitted = fit(&data, &params, &mut |_| {}).unwrap();
        let spec = fitted.set.members[0].to_product_spec().unwrap();
        spec.to_bytes().unwrap()
    }

    #[test]
    fn the_fixed_point_error_is_measured_within_the_device_tolerances() {
        for seed in 0..3 {
            let blob = product_blob(seed);
            let FixedPoint::Measured(e) = fixed_point_error(&blob).unwrap() else {
                panic!("seed {seed}: no fixed-point form");
            };
            // The f64 reference is the model: the f32 runtime agrees with it
            // within the export check's limits (1e-2 of the sd, 1e-2).
            let spec = ModelSpec::from_bytes(&blob).unwrap();
            let x = range_points(&spec);
            let device = with_device_model(&blob, |model| {
                x.iter()
                    .map(|xi| model.predict(xi).unwrap())
                    .collect::<Vec<_>>()
            })
            .unwrap();
            for (xi, p) in x.iter().zip(&device) {
                let (mean, variance) = reference(&spec, xi);
                assert!((f64::from(p.mean) - mean).abs() < 1e-2 * variance.sqrt());
                assert!((f64::from(p.variance) - variance).abs() < 1e-2 * variance);
            }
            // Half the device check's tolerances (1% of the sd, 2%).
            assert!(e.points >= POINTS.0, "seed {seed}: {e:?}");
            assert!(e.mean < 5e-3 && e.variance < 1e-2, "seed {seed}: {e:?}");
        }
    }

    #[test]
    fn a_model_without_the_form_says_why() {
        let mut spec = ModelSpec::from_bytes(&product_blob(0)).unwrap();
        spec.kernel = sgp_runtime::Kernel::Matern32;
        let blob = spec.to_bytes().unwrap();
        assert_eq!(
            fixed_point_error(&blob).unwrap(),
            FixedPoint::Unavailable("no fixed-point form: a Matérn kernel".into())
        );
        spec.x_min.clear();
        spec.x_max.clear();
        assert!(matches!(
            fixed_point_error(&spec.to_bytes().unwrap()).unwrap(),
            FixedPoint::Unavailable(_)
        ));
    }
}
