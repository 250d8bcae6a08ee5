//! SPGP+DR (`--model spgp-dr`) and its baseline, PCA-to-G followed by
//! plain SPGP (`--model spgp-pca`): both settings are [`SparseParams`] plus
//! the projected dimension G ([`ProjectedParams`]), and both export the same
//! runtime form, a G x D projection followed by shared unit-width basis
//! functions in G dims, as [`ModelKind::SpgpDr`] (the blob has no separate
//! PCA kind; the device code is the same).
//!
//! - DR learns `P` with the pseudo-inputs ([`Projected`]), for every
//!   output: starts from `Projected::pca_start` with the pseudo-inputs
//!   drawn in the projected space, then the restart driver over those
//!   features.
//! - PCA fixes `P` to the top-G principal directions of the standardised
//!   inputs, each divided by the component's standard deviation (unit
//!   variance per component, so SPGP's data-scale start suits every
//!   component alike), fits plain SPGP on the projected data, and composes
//!   the projection into the exported basis: `P_exported = diag(1/l) P`
//!   with unit widths, so the length scales SPGP learned on the components
//!   end up in the projection, as in DR.

use nalgebra::{DMatrix, DVector};

use crate::numerics::linalg::times_transpose;
use serde::Serialize;
use sgp_runtime::ModelKind;

use super::restarts::start_positions;
use super::sparse::{fit_restarted, StartChoice};
use super::spgp::{fit_spgp, initial_kernels};
use super::{Checked, Fit, Method, PseudoInit, Rebuilt, SparseParams};
use crate::data::{column_ranges, Dataset, Standardisation};
use crate::model::features::projected::principal_directions;
use crate::model::features::{BasisWidths, Projected, RuntimeBasis};
use crate::numerics::optimise::Progress;
use crate::{Error, Result};

/// Settings of a fit with a G x D projection (SPGP+DR, PCA + SPGP): those
/// of SPGP plus the projected dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectedParams {
    /// Everything a sparse fit takes; given pseudo-inputs (M x D) are
    /// mapped through the starting projection.
    pub sparse: SparseParams,
    /// Projected dimension G, `1 <= G <= D`.
    pub dim: usize,
}

impl ProjectedParams {
    /// Validates the settings against `data`.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the offending setting.
    #[cfg_attr(feature = "internals", visibility::make(pub))]
    pub(crate) fn check(&self, data: &Dataset) -> Result<Checked<'_, Self>> {
        self.sparse.check(data)?;
        let d = data.n_inputs();
        if self.dim == 0 {
            return Err(Error::BadInput("--dim must be at least 1".into()));
        }
        if self.dim > d {
            return Err(Error::BadInput(format!(
                "--dim {} is larger than the {d} (non-constant) inputs: a projection cannot \
                 add dimensions",
                self.dim
            )));
        }
        Ok(Checked(self))
    }
}

/// What a projected model learned, for the fit summary: `P`'s size and its
/// singular values (standardised input units; each is an inverse length
/// scale along one learned direction), largest first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProjectionReport {
    /// G.
    pub rows: usize,
    /// D (inputs the model uses).
    pub cols: usize,
    /// Singular values of `P`, descending.
    pub singular_values: Vec<f64>,
}

impl ProjectionReport {
    /// The report of projection `p` (G x D).
    pub fn of(p: &DMatrix<f64>) -> Self {
        ProjectionReport {
            rows: p.nrows(),
            cols: p.ncols(),
            singular_values: singular_values(p),
        }
    }
}

/// Singular values of `p`, descending.
pub fn singular_values(p: &DMatrix<f64>) -> Vec<f64> {
    let mut s: Vec<f64> = p
        .clone()
        .svd(false, false)
        .singular_values
        .iter()
        .copied()
        .collect();
    s.sort_by(|a, b| b.total_cmp(a));
    s
}

/// Given pseudo-inputs mapped through `p`.
pub(crate) fn mapped(sparse: &SparseParams, p: &DMatrix<f64>) -> SparseParams {
    let mut out = sparse.clone();
    if let PseudoInit::Given(z) = &mut out.pseudo_init {
        *z = times_transpose(&*z, p);
    }
    out
}

/// Fits SPGP+DR: the projection learned with the pseudo-inputs.
pub(crate) fn fit_dr(
    outputs: &[Dataset],
    params: &Checked<'_, ProjectedParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let kernels = initial_kernels(outputs, &params.sparse)?;
    let x = &outputs[0].x;
    let p0 = Projected::pca_start(x, &kernels[0], params.dim)?;
    let xp = times_transpose(x, &p0);
    let sparse = mapped(&params.sparse, &p0);
    let start = |k: usize| {
        let (label, zbar) = start_positions(&xp, &sparse, k)?;
        Ok((label, Projected::new(p0.clone(), zbar)?))
    };
    let choice = (StartChoice::Objective, sparse.sharing);
    let (fit, starts) = fit_restarted(outputs, &sparse, kernels, &start, choice, progress)?;
    let mut fit = fit.into_fit(outputs, ModelKind::SpgpDr, Method::SpgpDr)?;
    fit.report.starts = starts;
    report_projection(&mut fit);
    Ok(fit)
}

/// Fits PCA-to-G followed by SPGP as `params` asks.
pub(crate) fn fit_pca(
    data: &Dataset,
    params: &Checked<'_, ProjectedParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let g = params.dim;
    let (dirs, vars) = principal_directions(&data.x, g)?;
    if let Some(k) = vars.iter().position(|&v| v <= 1e-12) {
        return Err(Error::BadInput(format!(
            "--dim {g}: the inputs span only {k} directions"
        )));
    }
    let p = DMatrix::from_fn(g, data.n_inputs(), |r, j| dirs[(r, j)] / vars[r].sqrt());
    let x = times_transpose(&data.x, &p);
    let (x_min, x_max) = column_ranges(&x);
    let projected = Dataset {
        x,
        input_names: (1..=g).map(|k| format!("pc{k}")).collect(),
        transform: Standardisation {
            x_mean: vec![0.0; g],
            x_scale: vec![1.0; g],
            x_min,
            x_max,
            ..data.transform.clone()
        },
        constant_inputs: Vec::new(),
        ..data.clone()
    };
    let sparse = mapped(&params.sparse, &p);
    let outputs = std::slice::from_ref(&projected);
    let mut fit = fit_spgp(outputs, &sparse.check(&projected)?, progress)?;
    let model = &mut fit.set.members[0];
    compose(&mut model.form.basis, &p);
    model.kind = ModelKind::SpgpDr;
    model.transform = data.transform.clone();
    model.input_names = data.input_names.clone();
    let inner = std::mem::replace(
        &mut fit.rebuild,
        Box::new(|_, _| Err(Error::Numerical("unreachable".into()))),
    );
    fit.rebuild = Box::new(move |jitter, max_iter| {
        let mut rebuilt: Rebuilt = inner(jitter, max_iter)?;
        for form in &mut rebuilt.forms {
            compose(&mut form.basis, &p);
        }
        Ok(rebuilt)
    });
    fit.report.method = Method::SpgpPca;
    fit.report.inputs = data.input_names.clone();
    report_projection(&mut fit);
    fit.describe();
    Ok(fit)
}

/// Fills in the report's projection from the fitted basis.
fn report_projection(fit: &mut Fit) {
    let projection = fit.first().form.basis.projection.as_ref();
    fit.report.projection = projection.map(ProjectionReport::of);
}

/// Puts the fixed projection `p` in front of an SPGP basis fitted on
/// `X p^T`, and folds its shared widths `1/l^2` into it:
/// `P = diag(1/l) p`, widths 1 — the DR form.
fn compose(basis: &mut RuntimeBasis, p: &DMatrix<f64>) {
    let w = match &basis.widths {
        BasisWidths::Shared(w) => DVector::from_iterator(w.len(), w.iter().map(|v| v.sqrt())),
        // SPGP's widths are shared; a per-basis basis keeps them as they are.
        BasisWidths::PerBasis(_) => DVector::from_element(p.nrows(), 1.0),
    };
    if let BasisWidths::Shared(widths) = &mut basis.widths {
        widths.iter_mut().for_each(|v| *v = 1.0);
        basis.centres = DMatrix::from_fn(basis.centres.nrows(), basis.centres.ncols(), |i, t| {
            basis.centres[(i, t)] * w[t]
        });
    }
    basis.projection = Some(DMatrix::from_fn(p.nrows(), p.ncols(), |r, j| {
        w[r] * p[(r, j)]
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{fit, FitParams};
    use crate::model::inference::Approximation;
    use crate::numerics::optimise::OptimiseOptions;
    use crate::synth::synthetic;

    fn data(n: usize, d: usize) -> Dataset {
        let (x, y) = synthetic(n, d, 3);
        let names = (0..d).map(|j| format!("x{j}")).collect();
        Dataset::from_raw(x, y, names, "y".into()).expect("valid")
    }

    fn params(
        m: usize,
        dim: usize,
        approximation: Approximation,
        restarts: usize,
    ) -> ProjectedParams {
        ProjectedParams {
            sparse: SparseParams {
                m,
                approximation,
                restarts,
                optimiser: OptimiseOptions {
                    max_iter: 25,
                    ..OptimiseOptions::default()
                },
                ..SparseParams::default()
            },
            dim,
        }
    }

    #[test]
    fn compose_is_the_same_basis() {
        let basis = RuntimeBasis {
            projection: None,
            centres: DMatrix::from_fn(3, 2, |i, t| 0.4 * i as f64 - 0.3 * t as f64),
            widths: BasisWidths::Shared(vec![0.5, 4.0]),
            amplitudes: vec![1.3; 3],
            kernel: sgp_runtime::Kernel::SquaredExponential,
        };
        let p = DMatrix::from_fn(2, 4, |g, d| libm::sin((g * 4 + d) as f64));
        let x = DMatrix::from_fn(6, 4, |i, d| 0.2 * i as f64 - 0.5 * d as f64);
        let mut composed = basis.clone();
        compose(&mut composed, &p);
        assert_eq!(composed.widths, BasisWidths::Shared(vec![1.0, 1.0]));
        let want = basis.eval(&(&x * p.transpose()));
        assert!((composed.eval(&x) - want).amax() < 1e-12);
    }

    #[test]
    fn dr_and_pca_fit_export_form_and_rebuild() {
        let train = data(120, 4);
        for (method, approximation, restarts) in [
            (Method::SpgpDr, Approximation::Fitc, 1),
            (Method::SpgpDr, Approximation::Vfe, 2),
            (Method::SpgpPca, Approximation::Fitc, 2),
            (Method::SpgpPca, Approximation::Vfe, 1),
        ] {
            let p = params(6, 2, approximation, restarts);
            let fp = match method {
                Method::SpgpDr => FitParams::SpgpDr(p),
                _ => FitParams::SpgpPca(p),
            };
            let mut last = 0;
            let mut fitted = fit(&train, &fp, &mut |pr| last = pr.iteration).expect("fits");
            // Trainer -> blob -> f32 runtime, within the fidelity tolerance
            // (export_fitted checks it on these and far-away points).
            let exported =
                crate::export::export(&mut fitted, &train.raw_x(), false).expect("exports");
            assert!(exported.fidelity.worst_mean_ratio <= 1.0);
            assert!(last <= fp.iteration_budget());
            let (model, report) = (&fitted.set.members[0], &fitted.report);
            assert_eq!(model.kind, ModelKind::SpgpDr);
            assert_eq!(report.method, method);
            assert_eq!(report.approximation, Some(approximation));
            assert_eq!(report.starts.len(), if restarts > 1 { restarts } else { 0 });
            assert!(report.lengthscales.is_empty());
            let proj = report.projection.as_ref().expect("projected");
            assert_eq!((proj.rows, proj.cols), (2, 4));
            assert_eq!(model.input_names.len(), 4);
            let basis = &model.form.basis;
            assert_eq!(basis.projection.as_ref().map(|p| p.shape()), Some((2, 4)));
            assert_eq!(basis.centres.shape(), (6, 2));
            assert_eq!(basis.widths, BasisWidths::Shared(vec![1.0, 1.0]));
            let spec = model.to_spec().expect("fits a blob");
            assert!(spec.shape.projected);
            assert_eq!((spec.shape.feature_dim, spec.shape.input_dim), (2, 4));
            // The cure rebuilds through the same features / composition:
            // at the fit's own jitter, the same model.
            let rebuilt = fitted
                .with_jitter(fitted.jitter(), 0)
                .expect("rebuilds")
                .set
                .members
                .remove(0);
            let a = rebuilt.predict_raw(&train.raw_x()).expect("predicts");
            let b = model.predict_raw(&train.raw_x()).expect("predicts");
            assert!(
                (a.mean - b.mean).amax() < 1e-9 * train.transform.y_scale,
                "{method:?}"
            );
            assert!((&a.var - &b.var).amax() < 1e-9 * b.var.amax(), "{method:?}");
            let mut cured = fitted.with_jitter(1e-4, 3).expect("rebuilds");
            let cured = cured.set.members.remove(0);
            assert_eq!(cured.form.basis.centres.shape(), (6, 2));
            assert!(cured.form.basis.projection.is_some());
        }
    }

    #[test]
    fn the_projection_dimension_is_checked() {
        let train = data(60, 3);
        for (dim, needle) in [(0, "at least 1"), (4, "larger than the 3")] {
            for fp in [
                FitParams::SpgpDr(params(5, dim, Approximation::Fitc, 1)),
                FitParams::SpgpPca(params(5, dim, Approximation::Fitc, 1)),
            ] {
                let err = fit(&train, &fp, &mut |_| {}).expect_err("bad --dim");
                assert!(matches!(err, Error::BadInput(_)), "{err}");
                assert!(err.to_string().contains(needle), "{err}");
            }
        }
    }
}
