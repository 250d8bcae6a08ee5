//! Warnings about a value so far from the rest of its column that it alone
//! sets the column's scale (`1e15` among values near 1): standardised by
//! that scale, every other row is about zero and the model learns nothing
//! from them. Nearly always a typing or unit error.

use crate::data::{Dataset, TargetKind};

/// How much one value must inflate its column's standard deviation (with
/// it, against without it) to be warned about: far above what a
/// heavy-tailed column (a lognormal) reaches.
pub(crate) const DOMINANCE: f64 = 100.0;

/// One warning per column (inputs, then a continuous target) whose most
/// extreme value inflates the column's standard deviation more than
/// `DOMINANCE` times, naming the data row, the value and the range of
/// the other rows.
///
/// ```
/// use nalgebra::{DMatrix, DVector};
/// use sgp_trainer::data::{extremes, Dataset};
///
/// let x = DMatrix::from_fn(50, 1, |i, _| i as f64);
/// let mut y = DVector::from_fn(50, |i, _| (i as f64).sin());
/// y[5] = 1e15;
/// let data = Dataset::from_raw(x, y, vec!["x".into()], "y".into()).unwrap();
/// let warnings = extremes::warnings(&data);
/// assert!(warnings[0].contains("data row 6"), "{warnings:?}");
/// ```
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn warnings(data: &Dataset) -> Vec<String> {
    let raw_x = data.raw_x();
    let mut out: Vec<String> = raw_x
        .column_iter()
        .zip(&data.input_names)
        .filter_map(|(col, name)| {
            let values: Vec<f64> = col.iter().copied().collect();
            warning(&values, &format!("input '{name}'"))
        })
        .collect();
    if data.target == TargetKind::Continuous {
        let y: Vec<f64> = data.raw_y().iter().copied().collect();
        out.extend(warning(&y, &format!("target '{}'", data.target_name)));
    }
    out
}

fn warning(values: &[f64], what: &str) -> Option<String> {
    let n = values.len();
    if n < 3 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let (far, _) = values
        .iter()
        .enumerate()
        .max_by(|a, b| (a.1 - mean).abs().total_cmp(&(b.1 - mean).abs()))?;
    let others: Vec<f64> = values
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != far)
        .map(|(_, &v)| v)
        .collect();
    let sd = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
    };
    let (with, without) = (sd(values), sd(&others));
    if !(with.is_finite() && with > DOMINANCE * without) || without == 0.0 {
        return None;
    }
    let lo = others.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = others.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(format!(
        "{what}, data row {}: {} is far from every other row (they lie in [{}, {}]): it alone \
         sets the column's scale (sd {} with it, {} without), so the other rows standardise to \
         about 0; a typing or unit error?",
        far + 1,
        short(values.get(far).copied().unwrap_or(f64::NAN)),
        short(lo),
        short(hi),
        short(with),
        short(without)
    ))
}

/// Four significant digits, in scientific notation outside [1e-3, 1e6).
fn short(v: f64) -> String {
    if v != 0.0 && !(1e-3..1e6).contains(&v.abs()) {
        format!("{v:.3e}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_and_heavy_tailed_columns_are_not_warned_about() {
        let normalish: Vec<f64> = (0..1000)
            .map(|i| libm::sin((i as f64) * 0.37) * 3.0)
            .collect();
        assert!(warning(&normalish, "c").is_none());
        // Lognormal-like: exp of a spread of 3.
        let heavy: Vec<f64> = (0..1000)
            .map(|i| libm::exp(libm::sin((i as f64) * 0.61) * 3.0))
            .collect();
        assert!(warning(&heavy, "c").is_none());
        let mut stray = normalish.clone();
        stray[400] = 1e15;
        let w = warning(&stray, "target 'y'").expect("warned");
        assert!(
            w.starts_with("target 'y', data row 401: 1.000e15 is far"),
            "{w}"
        );
    }
}
