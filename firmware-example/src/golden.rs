//! Comparison of on-target predictions with golden values computed on the host.
//!
//! Tolerances follow the project's acceptance criteria: the mean within
//! `1e-3 * y_scale` absolute (y_scale = the target's scale in training data, so
//! the bound means the same thing for every data set) and the variance within
//! 1 % relative (variances span orders of magnitude, an absolute bound would be
//! meaningless near the noise floor). Comparisons are written so NaN fails.

/// Acceptance bounds for one prediction.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    pub mean_abs: f32,
    pub var_rel: f32,
}

impl Tolerance {
    pub const fn for_y_scale(y_scale: f32) -> Self {
        Self {
            mean_abs: 1e-3 * y_scale,
            var_rel: 1e-2,
        }
    }
}

/// The inputs and expected pairs don't describe the same number of points.
#[derive(Clone, Copy, Debug)]
pub struct ShapeError {
    pub inputs: usize,
    pub dim: usize,
    pub expected: usize,
}

/// A prediction outside tolerance.
#[derive(Clone, Copy, Debug)]
pub struct Mismatch {
    pub index: usize,
    /// (mean, variance) computed on target.
    pub got: (f32, f32),
    /// (mean, variance) from the host tool.
    pub want: (f32, f32),
}

/// Outcome of a full comparison.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    pub checked: usize,
    pub failed: usize,
    pub first_failure: Option<Mismatch>,
    /// Worst |mean error| / mean tolerance, and worst relative variance error /
    /// variance tolerance: 1.0 is the limit, so these show the remaining margin.
    pub worst_mean_ratio: f32,
    pub worst_var_ratio: f32,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.failed == 0 && self.checked > 0
    }
}

/// Runs `predict` on each `dim`-wide row of `inputs` (row-major) and compares it
/// with the matching `expected` (mean, variance) pair.
pub fn check(
    inputs: &[f32],
    dim: usize,
    expected: &[(f32, f32)],
    tol: Tolerance,
    mut predict: impl FnMut(&[f32]) -> (f32, f32),
) -> Result<Report, ShapeError> {
    // dim == 0 would also make chunks_exact panic.
    if dim == 0 || inputs.len() != dim * expected.len() {
        return Err(ShapeError {
            inputs: inputs.len(),
            dim,
            expected: expected.len(),
        });
    }
    let mut report = Report::default();
    for (index, (x, &want)) in inputs.chunks_exact(dim).zip(expected).enumerate() {
        let got = predict(x);
        let mean_ratio = (got.0 - want.0).abs() / tol.mean_abs;
        let var_ratio = (got.1 - want.1).abs() / (tol.var_rel * want.1.abs());
        report.checked += 1;
        report.worst_mean_ratio = report.worst_mean_ratio.max(mean_ratio);
        report.worst_var_ratio = report.worst_var_ratio.max(var_ratio);
        // Written as "within" so that NaN (all comparisons false) fails.
        let within = mean_ratio <= 1.0 && var_ratio <= 1.0;
        if !within {
            report.failed += 1;
            report
                .first_failure
                .get_or_insert(Mismatch { index, got, want });
        }
    }
    Ok(report)
}

/// Gradient bounds, the host tests' rule (tests/tests/gradient.rs): each
/// component of `d mean / d x` within `GRADIENT_RELATIVE` of the largest
/// golden component at the same input plus `GRADIENT_OF_STEEPEST` of the
/// largest over all inputs (the model's steepest slope), and the same for
/// `d variance / d x`. The relative part alone would be meaningless where
/// the gradient vanishes (far from the data).
pub const GRADIENT_RELATIVE: f32 = 1e-3;
pub const GRADIENT_OF_STEEPEST: f32 = 1e-4;

/// Outcome of a gradient comparison.
#[derive(Clone, Copy, Debug, Default)]
pub struct GradientReport {
    pub checked: usize,
    pub failed: usize,
    /// Worst error / tolerance of the mean's and the variance's gradient
    /// (1.0 is the limit).
    pub worst_mean_ratio: f32,
    pub worst_var_ratio: f32,
}

impl GradientReport {
    pub fn passed(&self) -> bool {
        self.failed == 0 && self.checked > 0
    }
}

/// Runs `gradient` on each `dim`-wide row of `inputs` and compares its
/// `(d mean / d x, d variance / d x)` with the matching `dim` golden pairs
/// of `expected` (row-major like `inputs`).
pub fn check_gradients<const D: usize>(
    inputs: &[f32],
    dim: usize,
    expected: &[(f32, f32)],
    mut gradient: impl FnMut(&[f32]) -> ([f32; D], [f32; D]),
) -> Result<GradientReport, ShapeError> {
    if dim == 0 || dim > D || inputs.len() != expected.len() {
        return Err(ShapeError {
            inputs: inputs.len(),
            dim,
            expected: expected.len(),
        });
    }
    let largest = |pairs: &[(f32, f32)]| {
        pairs.iter().fold((0.0f32, 0.0f32), |(m, v), &(gm, gv)| {
            (m.max(gm.abs()), v.max(gv.abs()))
        })
    };
    let (steepest_mean, steepest_var) = largest(expected);
    let mut report = GradientReport::default();
    for (x, want) in inputs.chunks_exact(dim).zip(expected.chunks_exact(dim)) {
        let (mean, var) = gradient(x);
        let (here_mean, here_var) = largest(want);
        let tol_mean = GRADIENT_RELATIVE * here_mean + GRADIENT_OF_STEEPEST * steepest_mean;
        let tol_var = GRADIENT_RELATIVE * here_var + GRADIENT_OF_STEEPEST * steepest_var;
        let mut within = true;
        for ((&gm, &gv), &(wm, wv)) in mean.iter().zip(&var).zip(want) {
            let mean_ratio = (gm - wm).abs() / tol_mean;
            let var_ratio = (gv - wv).abs() / tol_var;
            report.worst_mean_ratio = report.worst_mean_ratio.max(mean_ratio);
            report.worst_var_ratio = report.worst_var_ratio.max(var_ratio);
            // Written as "within" so that NaN fails.
            within &= mean_ratio <= 1.0 && var_ratio <= 1.0;
        }
        report.checked += 1;
        if !within {
            report.failed += 1;
        }
    }
    Ok(report)
}
