//! Whether f32 — the device's arithmetic — can resolve the data at all.
//!
//! The device standardises raw f32 inputs and unstandardises its output in
//! f32. A column far from zero compared with its spread (GPS degrees
//! `123.456789` varying by `1e-3`) loses its information in the rounding,
//! which no jitter cures: the user must subtract an offset. This module
//! warns, one warning per affected column, when the rounding step in
//! standardised units `q = ulp(a) / sd` exceeds `RESOLUTION_LIMIT` (1e-3,
//! what the export check allows for an ordinary fit; the derivation is in
//! docs/src/numerics.md, "Can f32 resolve the data?").

use nalgebra::DMatrix;
use sgp_runtime::Link;

use crate::data::{Dataset, Standardisation};
use crate::model::TrainedModel;

/// Largest f32 spacing, as a fraction of a column's standard deviation,
/// that passes without a warning (see the module documentation).
pub(crate) const RESOLUTION_LIMIT: f64 = 1e-3;

/// Spacing of f32 values at magnitude `a`: the step f32 resolves there.
/// Infinite when `a` is beyond f32's range.
pub(crate) fn f32_spacing(a: f64) -> f64 {
    let b = (a.abs() as f32).abs();
    if !b.is_finite() {
        return f64::INFINITY;
    }
    let next = f32::from_bits(b.to_bits() + 1);
    f64::from(next) - f64::from(b)
}

/// One warning per column (inputs, then the target) that f32 cannot resolve.
/// `input_ranges` and `target_range` are the observed `(min, max)` in raw
/// units; a column with no spread (a constant input, ignored by the model)
/// is skipped.
pub fn warnings(
    transform: &Standardisation,
    input_ranges: &[(f64, f64)],
    target_range: Option<(f64, f64)>,
    input_names: &[String],
    target_name: &str,
) -> Vec<String> {
    let inputs = input_names
        .iter()
        .zip(transform.x_mean.iter().zip(&transform.x_scale))
        .zip(input_ranges)
        .filter_map(|((name, (&mean, &sd)), &range)| {
            column_warning(&format!("input '{name}'"), name, mean, sd, range, false)
        });
    let target = target_range.and_then(|range| {
        column_warning(
            &format!("target '{target_name}'"),
            target_name,
            transform.y_mean,
            transform.y_scale,
            range,
            true,
        )
    });
    inputs.chain(target).collect()
}

/// [`warnings`] for a data set, from its own values.
pub(crate) fn for_dataset(data: &Dataset) -> Vec<String> {
    let y = data.raw_y();
    warnings(
        &data.transform,
        &column_ranges(&data.raw_x()),
        Some((y.min(), y.max())),
        &data.input_names,
        &data.target_name,
    )
}

/// [`warnings`] for a trained model checked at raw inputs `check_x`: input
/// ranges from `check_x`; the target's from its mean and scale (mean ± 3
/// scales: the magnitude is what matters, and it is the mean's whenever a
/// warning is due). No target warning for probit models, whose output is a
/// probability.
pub(crate) fn for_model(model: &TrainedModel, check_x: &DMatrix<f64>) -> Vec<String> {
    let t = &model.transform;
    let target = (model.link == Link::Identity)
        .then_some((t.y_mean - 3.0 * t.y_scale, t.y_mean + 3.0 * t.y_scale));
    warnings(
        t,
        &column_ranges(check_x),
        target,
        &model.input_names,
        &model.target_name,
    )
}

/// `(min, max)` of every column.
fn column_ranges(x: &DMatrix<f64>) -> Vec<(f64, f64)> {
    x.column_iter().map(|c| (c.min(), c.max())).collect()
}

fn column_warning(
    what: &str,
    name: &str,
    mean: f64,
    sd: f64,
    (min, max): (f64, f64),
    is_target: bool,
) -> Option<String> {
    if max <= min || sd <= 0.0 {
        return None;
    }
    let magnitude = min.abs().max(max.abs()).max(mean.abs());
    let spacing = f32_spacing(magnitude);
    let q = spacing / sd;
    if q <= RESOLUTION_LIMIT {
        return None;
    }
    let offset = round_offset(mean, sd);
    // Enough decimals to show the spread.
    let decimals = usize::try_from(1 - libm::log10(sd).floor() as i32)
        .unwrap_or(0)
        .min(12);
    let device = if is_target {
        "add it back to the device's output"
    } else {
        "subtract it on the device too"
    };
    Some(format!(
        "{what}: values around {mean:.decimals$} with a standard deviation of only {sd:.2e}; \
         f32 (the device's arithmetic) resolves steps of {spacing:.2e} there, {q:.2e} of the \
         standard deviation (more than {RESOLUTION_LIMIT:.0e}), so the device cannot \
         reproduce the model; subtract an offset such as {offset} from '{name}' before \
         fitting and {device}"
    ))
}

/// A round number near `mean`: `mean` rounded to a power of ten at most 100
/// times `sd`, so what is left after subtracting it is at most ~100 standard
/// deviations from zero, where f32 resolves about `1e-5` of one.
fn round_offset(mean: f64, sd: f64) -> String {
    let exponent = libm::log10(100.0 * sd).floor() as i32;
    let step = 10f64.powi(exponent);
    let offset = (mean / step).round() * step;
    let decimals = usize::try_from(-exponent).unwrap_or(0);
    let text = format!("{offset:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DVector;

    /// A 1-D data set whose input is `around + spread * u` and target
    /// `target_around + target_spread * v` with `u, v` spread over [-1, 1].
    fn data(around: f64, spread: f64, target_around: f64, target_spread: f64) -> Dataset {
        let n = 101;
        let u = |i: usize| 2.0 * i as f64 / (n - 1) as f64 - 1.0;
        let x = DMatrix::from_fn(n, 1, |i, _| around + spread * u(i));
        let y = DVector::from_fn(n, |i, _| {
            target_around + target_spread * libm::sin(3.0 * u(i))
        });
        Dataset::from_raw(x, y, vec!["x".into()], "y".into()).unwrap()
    }

    #[test]
    fn kelvin_and_pascal_do_not_warn() {
        assert_eq!(
            for_dataset(&data(293.15, 0.5, 0.0, 1.0)),
            Vec::<String>::new()
        );
        assert_eq!(
            for_dataset(&data(101_325.0, 50.0, 0.0, 1.0)),
            Vec::<String>::new()
        );
        // Also as targets.
        assert_eq!(
            for_dataset(&data(0.0, 1.0, 293.15, 0.5)),
            Vec::<String>::new()
        );
        assert_eq!(
            for_dataset(&data(0.0, 1.0, 101_325.0, 50.0)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn gps_degrees_varying_by_a_thousandth_warn_with_an_offset() {
        let w = for_dataset(&data(123.456_789, 0.5e-3, 0.0, 1.0));
        assert_eq!(w.len(), 1, "{w:?}");
        let w = &w[0];
        assert!(w.starts_with("input 'x'"), "{w}");
        assert!(w.contains("values around 123.45679 with"), "magnitude: {w}");
        assert!(w.contains("standard deviation of only 2.9"), "spread: {w}");
        assert!(w.contains("steps of 7.63e-6"), "spacing: {w}");
        assert!(w.contains("offset such as 123.46 from 'x'"), "{w}");
    }

    #[test]
    fn a_target_of_a_million_varying_by_a_thousandth_warns() {
        let w = for_dataset(&data(0.0, 1.0, 1e6, 0.5e-3));
        assert_eq!(w.len(), 1, "{w:?}");
        let w = &w[0];
        assert!(w.starts_with("target 'y'"), "{w}");
        assert!(w.contains("steps of 6.25e-2"), "spacing: {w}");
        assert!(w.contains("offset such as 1000000 from 'y'"), "{w}");
        assert!(w.contains("add it back to the device's output"), "{w}");
    }

    #[test]
    fn spacing_is_f32s() {
        assert_eq!(f32_spacing(1.0), f64::from(f32::EPSILON));
        assert_eq!(f32_spacing(-1e6), 0.0625);
        assert!(f32_spacing(1e40).is_infinite());
    }
}
