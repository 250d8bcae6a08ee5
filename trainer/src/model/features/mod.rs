//! Inducing features, GPflow style: each kind supplies the covariances FITC
//! needs (`Kuu`, `Kuf`, the prior diagonal), the chain rule from their
//! adjoints back to its own parameters and the kernel's, and its basis
//! functions in the runtime form. FITC ([`crate::model::inference::fitc`]) is written
//! once against `InducingFeatures`; a new kind of feature is one new file
//! here.
//!
//! The kinds: `PseudoInputs` (SPGP), `Heteroscedastic` (SPGP+HS:
//! `Kuu + diag(h)`, the basis SPGP's), `Projected` (SPGP+DR: a G x D
//! projection, unit length scales in G dims) and `Multiscale` (VSGP:
//! per-basis widths). Each module documents its covariances.
//!
//! # Conventions
//!
//! - `kuu` is returned **without** jitter: inference adds `eps * s2 * I` (see
//!   [`crate::numerics::linalg`]) and accounts for its `log s2` derivative itself.
//! - Adjoints treat every matrix entry as independent (the usual matrix
//!   calculus `dF/dK_ij`); for the symmetric `Kuu` pass the full symmetric
//!   adjoint.
//! - Gradients from `InducingFeatures::grad_kuu` and
//!   `InducingFeatures::grad_kuf` add up: FITC calls `grad_kuf` once per
//!   chunk of data (in parallel) and `grad_kuu` once, then sums.

pub(crate) mod heteroscedastic;
pub(crate) mod multiscale;
pub(crate) mod projected;
mod pseudo_inputs;

#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) use heteroscedastic::Heteroscedastic;
pub(crate) use multiscale::Multiscale;
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) use projected::Projected;
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) use pseudo_inputs::PseudoInputs;

use nalgebra::{DMatrix, DMatrixView, DVector};

use crate::model::kernel::{KernelGrad, KernelParams};
use crate::{Error, Result};

/// The entries of `matrices`, each row-major, one after another: how the
/// features pack their parameters and gradients.
pub(crate) fn row_major(matrices: &[&DMatrix<f64>]) -> Vec<f64> {
    matrices
        .iter()
        .flat_map(|m| m.transpose().as_slice().to_vec())
        .collect()
}

/// Sets `matrices` from `p` as [`row_major`] packs them; `what` names the
/// features when `p` has the wrong length.
pub(crate) fn set_row_major(
    matrices: &mut [&mut DMatrix<f64>],
    p: &[f64],
    what: &str,
) -> Result<()> {
    let expected: usize = matrices.iter().map(|m| m.len()).sum();
    if p.len() != expected {
        return Err(Error::Numerical(format!(
            "{what} expect {expected} parameters, got {}",
            p.len()
        )));
    }
    let mut rest = p;
    for m in matrices.iter_mut() {
        let (head, tail) = rest.split_at(m.len());
        m.copy_from(&DMatrix::from_row_slice(m.nrows(), m.ncols(), head));
        rest = tail;
    }
    Ok(())
}

/// Gradient of a scalar with respect to a feature's own parameters (in the
/// order of [`InducingFeatures::params`]) and the kernel's log
/// hyperparameters.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct FeatureGrad {
    /// d/d(feature parameters).
    pub feature: Vec<f64>,
    /// d/d(log l, log s2).
    pub kernel: KernelGrad,
}

impl FeatureGrad {
    /// A zero gradient for `n_params` feature parameters and a `dim`-D kernel.
    pub fn zeros(n_params: usize, dim: usize) -> Self {
        Self {
            feature: vec![0.0; n_params],
            kernel: KernelGrad::zeros(dim),
        }
    }

    /// Adds `other` into `self`.
    pub(crate) fn add_assign(&mut self, other: &FeatureGrad) {
        for (a, b) in self.feature.iter_mut().zip(&other.feature) {
            *a += b;
        }
        self.kernel.add_assign(&other.kernel);
    }
}

/// Inverse squared widths of the runtime basis functions (MATH.md, "One
/// runtime form", step 3).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) enum BasisWidths {
    /// One vector `w_g` shared by every basis function (SPGP, HS, DR, exact).
    Shared(Vec<f64>),
    /// One row `w_i` per basis function, M x G (VSGP).
    PerBasis(DMatrix<f64>),
}

/// The basis functions as the runtime evaluates them, in standardised input
/// space: `k_i(z) = a_i exp(-1/2 sum_g w_ig (u_g - c_ig)^2)` with `u = P z`
/// when a projection is present, else `u = z`.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct RuntimeBasis {
    /// Optional projection `P` (G x D) applied to standardised inputs.
    pub projection: Option<DMatrix<f64>>,
    /// Centres `c_i`, M x G.
    pub centres: DMatrix<f64>,
    /// Inverse squared widths.
    pub widths: BasisWidths,
    /// Amplitudes `a_i`, one per basis function.
    pub amplitudes: Vec<f64>,
    /// The profile of the scaled distance (squared exponential or Matérn).
    pub kernel: sgp_runtime::Kernel,
}

impl RuntimeBasis {
    /// Number of basis functions M.
    pub fn len(&self) -> usize {
        self.centres.nrows()
    }

    /// True when there are no basis functions.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Dimension D of the standardised inputs the basis expects.
    pub fn input_dim(&self) -> usize {
        match &self.projection {
            Some(p) => p.ncols(),
            None => self.centres.ncols(),
        }
    }

    /// This basis, fitted without the inputs `ignored` (indices into the
    /// `full_dim` inputs, e.g. [`crate::data::Dataset::constant_inputs`]),
    /// extended to take all `full_dim` inputs and ignore those: zero columns
    /// of `P`, or zero centre columns and zero width weights, so the runtime
    /// needs no notion of an ignored input.
    ///
    /// # Panics
    /// If `full_dim - ignored.len()` (distinct indices below `full_dim`)
    /// is not [`Self::input_dim`].
    pub(crate) fn with_ignored_inputs(&self, full_dim: usize, ignored: &[usize]) -> RuntimeBasis {
        let used: Vec<usize> = (0..full_dim).filter(|j| !ignored.contains(j)).collect();
        assert_eq!(
            used.len(),
            self.input_dim(),
            "{full_dim} inputs less {ignored:?} do not match the basis's {} inputs",
            self.input_dim()
        );
        // Column `used[k]` of the result is column `k` of `m`; the others 0.
        let spread = |m: &DMatrix<f64>| {
            let mut out = DMatrix::zeros(m.nrows(), full_dim);
            for (k, &j) in used.iter().enumerate() {
                out.set_column(j, &m.column(k));
            }
            out
        };
        match &self.projection {
            Some(p) => RuntimeBasis {
                projection: Some(spread(p)),
                ..self.clone()
            },
            None => RuntimeBasis {
                projection: None,
                centres: spread(&self.centres),
                widths: match &self.widths {
                    BasisWidths::Shared(w) => {
                        let row = DMatrix::from_row_slice(1, w.len(), w);
                        BasisWidths::Shared(spread(&row).iter().copied().collect())
                    }
                    BasisWidths::PerBasis(w) => BasisWidths::PerBasis(spread(w)),
                },
                amplitudes: self.amplitudes.clone(),
                kernel: self.kernel,
            },
        }
    }

    /// Evaluates every basis function at every row of `z` (standardised
    /// inputs, N x D) in f64: an M x N matrix. This is the reference the f32
    /// runtime is compared against.
    ///
    /// # Panics
    /// If `z` does not have [`Self::input_dim`] columns.
    pub fn eval(&self, z: &DMatrix<f64>) -> DMatrix<f64> {
        assert_eq!(z.ncols(), self.input_dim(), "input dimension");
        let u = match &self.projection {
            Some(p) => crate::numerics::linalg::times_transpose(z, p),
            None => z.clone(),
        };
        let (m, g) = self.centres.shape();
        DMatrix::from_fn(m, u.nrows(), |i, n| {
            let mut r2 = 0.0;
            for t in 0..g {
                let w = match &self.widths {
                    BasisWidths::Shared(w) => w[t],
                    BasisWidths::PerBasis(w) => w[(i, t)],
                };
                let d = u[(n, t)] - self.centres[(i, t)];
                r2 += w * d * d;
            }
            self.amplitudes[i] * profile(self.kernel, r2)
        })
    }
}

/// `kernel`'s profile at the scaled squared distance `r2` (1 at 0).
pub(crate) fn profile(kernel: sgp_runtime::Kernel, r2: f64) -> f64 {
    match kernel {
        sgp_runtime::Kernel::SquaredExponential => libm::exp(-0.5 * r2),
        matern => crate::model::kernel::matern::profile(matern, r2).0,
    }
}

/// A kind of inducing feature: SPGP pseudo-inputs, HS, DR, VSGP (see the
/// module documentation for how each maps onto these methods).
///
/// Implementations must be cheap to clone-and-modify: the optimiser's
/// objective unpacks a parameter vector into a copy on every evaluation.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) trait InducingFeatures: Send + Sync + std::fmt::Debug {
    /// Number of basis functions M.
    fn num_inducing(&self) -> usize;

    /// Dimension D of the (standardised) data inputs.
    fn input_dim(&self) -> usize;

    /// Whether the kernel's length scales enter the covariances. False for
    /// DR, whose projection absorbs them; the optimiser then leaves them out
    /// of the parameter vector.
    fn uses_lengthscales(&self) -> bool {
        true
    }

    /// Number of the feature's own free parameters.
    fn num_params(&self) -> usize;

    /// The feature's own parameters, packed (layout documented by each kind).
    fn params(&self) -> Vec<f64>;

    /// Sets the parameters from a slice of length [`Self::num_params`].
    fn set_params(&mut self, p: &[f64]) -> Result<()>;

    /// `Kuu`, M x M, **without** jitter.
    fn kuu(&self, kern: &KernelParams) -> DMatrix<f64>;

    /// `Kuf`, M x N, for data rows `x` (N x D).
    fn kuf(&self, kern: &KernelParams, x: DMatrixView<'_, f64>) -> DMatrix<f64>;

    /// Prior variances `k(x_n, x_n)`; `s2` for every kind in this crate.
    fn kdiag(&self, kern: &KernelParams, x: DMatrixView<'_, f64>) -> DVector<f64> {
        DVector::from_element(x.nrows(), kern.signal_var())
    }

    /// Chain rule through `Kuu`: `kuu` as returned by [`Self::kuu`] and
    /// `adj = dF/dKuu` (M x M, symmetric).
    fn grad_kuu(&self, kern: &KernelParams, kuu: &DMatrix<f64>, adj: &DMatrix<f64>) -> FeatureGrad;

    /// Chain rule through `Kuf` and `kdiag` for a chunk of data rows `x`:
    /// `kuf` as returned by [`Self::kuf`] for those rows, `adj_kuf = dF/dKuf`
    /// (M x N) and `adj_kdiag = dF/dkdiag` (N).
    fn grad_kuf(
        &self,
        kern: &KernelParams,
        x: DMatrixView<'_, f64>,
        kuf: &DMatrix<f64>,
        adj_kuf: &DMatrix<f64>,
        adj_kdiag: &DVector<f64>,
    ) -> FeatureGrad;

    /// The basis functions in runtime form (standardised input space).
    fn runtime_basis(&self, kern: &KernelParams) -> RuntimeBasis;
}

/// `dF/d log s2` through a prior diagonal equal to `s2` everywhere: the
/// shared part of every kind's [`InducingFeatures::grad_kuf`].
pub(crate) fn constant_kdiag_grad(kern: &KernelParams, adj_kdiag: &DVector<f64>) -> f64 {
    kern.signal_var() * adj_kdiag.sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Standardised inputs with `full_dim` columns; the columns in
    /// `ignored` hold wild values, the others those of `used_z`.
    fn with_wild_columns(
        used_z: &DMatrix<f64>,
        full_dim: usize,
        ignored: &[usize],
    ) -> DMatrix<f64> {
        let mut k = 0;
        let mut z = DMatrix::zeros(used_z.nrows(), full_dim);
        for j in 0..full_dim {
            if ignored.contains(&j) {
                z.set_column(
                    j,
                    &DVector::from_fn(used_z.nrows(), |i, _| 1e4 * (i as f64 - 1.5)),
                );
            } else {
                z.set_column(j, &used_z.column(k));
                k += 1;
            }
        }
        z
    }

    fn assert_ignores(basis: &RuntimeBasis, full_dim: usize, ignored: &[usize]) {
        let used_z = DMatrix::from_fn(4, basis.input_dim(), |i, j| 0.3 * i as f64 - 0.2 * j as f64);
        let full = basis.with_ignored_inputs(full_dim, ignored);
        assert_eq!(full.input_dim(), full_dim);
        assert_eq!(full.len(), basis.len());
        let z = with_wild_columns(&used_z, full_dim, ignored);
        let (a, b) = (basis.eval(&used_z), full.eval(&z));
        assert!(
            (a - b).amax() < 1e-12,
            "the ignored inputs changed the basis"
        );
    }

    fn centres(m: usize, g: usize) -> DMatrix<f64> {
        DMatrix::from_fn(m, g, |i, j| 0.5 * i as f64 - 0.7 * j as f64)
    }

    #[test]
    fn ignored_inputs_with_shared_widths() {
        let basis = RuntimeBasis {
            projection: None,
            centres: centres(3, 2),
            widths: BasisWidths::Shared(vec![0.5, 2.0]),
            amplitudes: vec![1.5; 3],
            kernel: sgp_runtime::Kernel::SquaredExponential,
        };
        assert_ignores(&basis, 4, &[0, 2]);
        let full = basis.with_ignored_inputs(3, &[1]);
        assert_eq!(full.widths, BasisWidths::Shared(vec![0.5, 0.0, 2.0]));
        assert_eq!(full.centres.column(1).amax(), 0.0);
    }

    #[test]
    fn ignored_inputs_with_per_basis_widths() {
        let basis = RuntimeBasis {
            projection: None,
            centres: centres(3, 2),
            widths: BasisWidths::PerBasis(DMatrix::from_fn(3, 2, |i, j| 1.0 + (i + j) as f64)),
            amplitudes: vec![1.0, 0.5, 2.0],
            kernel: sgp_runtime::Kernel::SquaredExponential,
        };
        assert_ignores(&basis, 3, &[2]);
        match basis.with_ignored_inputs(3, &[2]).widths {
            BasisWidths::PerBasis(w) => assert_eq!(w.column(2).amax(), 0.0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ignored_inputs_with_a_projection() {
        let basis = RuntimeBasis {
            projection: Some(DMatrix::from_fn(2, 3, |i, j| {
                0.4 * (i + 1) as f64 - 0.3 * j as f64
            })),
            centres: centres(4, 2),
            widths: BasisWidths::Shared(vec![1.0, 1.0]),
            amplitudes: vec![1.0; 4],
            kernel: sgp_runtime::Kernel::SquaredExponential,
        };
        assert_ignores(&basis, 5, &[1, 4]);
        let full = basis.with_ignored_inputs(5, &[1, 4]);
        // Only P grows; the feature space (centres, widths) is unchanged.
        assert_eq!(full.centres, basis.centres);
        assert_eq!(full.widths, basis.widths);
        let p = full.projection.unwrap();
        assert_eq!(p.shape(), (2, 5));
        assert_eq!(p.column(1).amax() + p.column(4).amax(), 0.0);
    }

    #[test]
    fn no_ignored_inputs_is_the_identity() {
        let basis = RuntimeBasis {
            projection: None,
            centres: centres(3, 2),
            widths: BasisWidths::Shared(vec![0.5, 2.0]),
            amplitudes: vec![1.5; 3],
            kernel: sgp_runtime::Kernel::SquaredExponential,
        };
        assert_eq!(basis.with_ignored_inputs(2, &[]), basis);
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Finite-difference checks every feature kind runs on its chain rule.

    use nalgebra::{DMatrix, DVector};

    use super::InducingFeatures;
    use crate::model::inference::fitc::FitcConfig;
    use crate::model::inference::objective::SparseObjective;
    use crate::model::inference::test_util::{assert_grad_close, fd_grad};
    use crate::model::inference::Approximation;
    use crate::model::kernel::KernelParams;

    /// Fixed adjoints for an M-feature, N-row check: a symmetric `dF/dKuu`
    /// with `diagonal` added to its diagonal, `dF/dKuf` and `dF/dkdiag`.
    pub fn adjoints(
        m: usize,
        n: usize,
        diagonal: f64,
    ) -> (DMatrix<f64>, DMatrix<f64>, DVector<f64>) {
        let a = DMatrix::from_fn(m, m, |i, j| libm::sin((i * 7 + j * 3) as f64));
        let adj_u = &a + a.transpose() + DMatrix::from_diagonal_element(m, m, diagonal);
        let adj_f = DMatrix::from_fn(m, n, |i, j| libm::cos((i * 5 + j * 11) as f64));
        let adj_d = DVector::from_fn(n, |i, _| 0.1 * i as f64 - 0.3);
        (adj_u, adj_f, adj_d)
    }

    /// `F = <adj_u, Kuu> + <adj_f, Kuf> + <adj_d, kdiag>` differentiated by
    /// `grad_kuu + grad_kuf` against central differences, over `[feature
    /// parameters | log l (when the feature uses them) | log s2]`. Returns
    /// the analytic gradient for further checks.
    pub fn check_matrix_level<F: InducingFeatures + Clone>(
        f: &F,
        kern: &KernelParams,
        x: &DMatrix<f64>,
        adjoints: &(DMatrix<f64>, DMatrix<f64>, DVector<f64>),
    ) -> Vec<f64> {
        let (adj_u, adj_f, adj_d) = adjoints;
        let np = f.num_params();
        let nl = if f.uses_lengthscales() { kern.dim() } else { 0 };
        let value = |p: &[f64]| {
            let mut fp = f.clone();
            fp.set_params(&p[..np]).expect("in range");
            let mut kp = kern.clone();
            if nl > 0 {
                kp.log_lengthscales = p[np..np + nl].to_vec();
            }
            kp.log_signal_var = p[np + nl];
            fp.kuu(&kp).component_mul(adj_u).sum()
                + fp.kuf(&kp, x.as_view()).component_mul(adj_f).sum()
                + fp.kdiag(&kp, x.as_view()).dot(adj_d)
        };
        let mut p = f.params();
        if nl > 0 {
            p.extend_from_slice(&kern.log_lengthscales);
        }
        p.push(kern.log_signal_var);
        let mut g = f.grad_kuu(kern, &f.kuu(kern), adj_u);
        g.add_assign(&f.grad_kuf(kern, x.as_view(), &f.kuf(kern, x.as_view()), adj_f, adj_d));
        if nl == 0 {
            assert!(g.kernel.log_lengthscales.iter().all(|&v| v == 0.0));
        }
        let mut ana = g.feature.clone();
        if nl > 0 {
            ana.extend_from_slice(&g.kernel.log_lengthscales);
        }
        ana.push(g.kernel.log_signal_var);
        let num = fd_grad(value, &p, 1e-6);
        assert_grad_close(&num, &ana, 1e-7);
        ana
    }

    /// How far two feature sets' models are apart: the absolute differences
    /// of their NLML and the largest of their predictive means and
    /// variances at `xt`, under `cfg`.
    pub fn model_differences<A: InducingFeatures, B: InducingFeatures>(
        a: &A,
        b: &B,
        kern: &KernelParams,
        (x, y): (&DMatrix<f64>, &DVector<f64>),
        xt: &DMatrix<f64>,
        cfg: &FitcConfig,
    ) -> (f64, f64, f64) {
        use crate::model::inference::fitc::{fitc_nlml, fitc_posterior};
        let nlml_a = fitc_nlml(a, kern, x, y, cfg).expect("ok").nlml;
        let nlml_b = fitc_nlml(b, kern, x, y, cfg).expect("ok").nlml;
        let pa = fitc_posterior(a, kern, x, y, cfg).expect("ok");
        let pb = fitc_posterior(b, kern, x, y, cfg).expect("ok");
        let qa = pa.predict(a, kern, xt).expect("ok");
        let qb = pb.predict(b, kern, xt).expect("ok");
        (
            (nlml_a - nlml_b).abs(),
            (qa.mean - qb.mean).amax(),
            (qa.var - qb.var).amax(),
        )
    }

    /// The FITC or VFE objective's gradient over `f` and the kernel (noise
    /// included) against central differences, and its pack/unpack round
    /// trip. Returns the parameter count.
    pub fn check_objective<F: InducingFeatures + Clone + PartialEq>(
        x: &DMatrix<f64>,
        y: &DVector<f64>,
        f: &F,
        kern: KernelParams,
        approximation: Approximation,
    ) -> usize {
        let config = FitcConfig {
            approximation,
            ..FitcConfig::default()
        };
        let obj = SparseObjective::new(x, y, f.clone(), kern, config).expect("valid");
        let p = obj.initial();
        let (f2, _) = obj.unpack(&p).expect("ok");
        assert!(f2 == *f, "the features survive a pack/unpack round trip");
        let (v, g) = obj.objective(&p).expect("ok");
        assert!((v - obj.value(&p).expect("ok")).abs() < 1e-12 * v.abs());
        let num = fd_grad(|q| obj.value(q).expect("ok"), &p, 1e-5);
        assert_grad_close(&num, &g, 1e-6);
        p.len()
    }
}
