//! SPGP+DR (Snelson & Ghahramani 2006, section 4; MATH.md, "SPGP+DR"): a
//! learned G x D projection `P` of the standardised inputs and M
//! pseudo-inputs `Zbar` in the projected space, with a unit-length-scale
//! kernel there: `Kuf[m, n] = s2 k_1(P x_n - zbar_m)`. `P` absorbs the
//! length scales, so [`InducingFeatures::uses_lengthscales`] is false.
//!
//! `Projected::pca_start` starts where plain SPGP would, less the least
//! varying directions: `P0 = V_G^T diag(1/l)` with `l` the starting
//! kernel's length scales and `V_G` the top-G principal directions of the
//! scaled inputs (docs/src/spgp-dr.md).

use nalgebra::{DMatrix, DMatrixView, DVector};

use super::{
    constant_kdiag_grad, row_major, set_row_major, BasisWidths, FeatureGrad, InducingFeatures,
    RuntimeBasis,
};
use crate::model::kernel::{KernelGrad, KernelParams};
use crate::{Error, Result};

/// SPGP+DR features: projection `P` (G x D) and pseudo-inputs `Zbar`
/// (M x G).
///
/// Parameter layout: `P` row-major (`p[g * D + d] = P[g, d]`), then `Zbar`
/// row-major (`p[G D + m * G + g] = Zbar[m, g]`): `(M + D) G` numbers.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct Projected {
    p: DMatrix<f64>,
    zbar: DMatrix<f64>,
}

/// The top `g` principal directions of the rows of `x` (N x D, centred or
/// not: the column means are removed here) and the variance along each:
/// a G x D matrix with orthonormal rows, largest variance first.
///
/// # Errors
/// [`Error::BadInput`] if `g` is 0 or above D, or `x` has fewer than 2 rows.
pub(crate) fn principal_directions(x: &DMatrix<f64>, g: usize) -> Result<(DMatrix<f64>, Vec<f64>)> {
    let (n, d) = x.shape();
    if g == 0 || g > d {
        return Err(Error::BadInput(format!(
            "projection dimension {g} must be between 1 and the {d} inputs"
        )));
    }
    if n < 2 {
        return Err(Error::BadInput("PCA needs at least 2 rows".into()));
    }
    let mean = x.row_mean();
    let centred = DMatrix::from_fn(n, d, |i, j| x[(i, j)] - mean[j]);
    let cov = centred.tr_mul(&centred) / (n as f64 - 1.0);
    let eig = cov.symmetric_eigen();
    let mut order: Vec<usize> = (0..d).collect();
    // Largest first; ties broken by index so the result is deterministic.
    order.sort_by(|&a, &b| {
        eig.eigenvalues[b]
            .total_cmp(&eig.eigenvalues[a])
            .then(a.cmp(&b))
    });
    let mut dirs = DMatrix::zeros(g, d);
    let mut vars = Vec::with_capacity(g);
    for (r, &k) in order.iter().take(g).enumerate() {
        let mut v = eig.eigenvectors.column(k).into_owned();
        // Sign convention: the largest-magnitude entry is positive.
        let imax = v.iamax();
        if v[imax] < 0.0 {
            v = -v;
        }
        dirs.set_row(r, &v.transpose());
        vars.push(eig.eigenvalues[k].max(0.0));
    }
    Ok((dirs, vars))
}

impl Projected {
    /// Features with projection `p` (G x D) and pseudo-inputs `zbar`
    /// (M x G); fails on empty, mismatched or non-finite matrices.
    pub fn new(p: DMatrix<f64>, zbar: DMatrix<f64>) -> Result<Self> {
        if p.nrows() == 0 || p.ncols() == 0 || zbar.nrows() == 0 {
            return Err(Error::BadInput(
                "empty projection or no pseudo-inputs".into(),
            ));
        }
        if zbar.ncols() != p.nrows() {
            return Err(Error::BadInput(format!(
                "pseudo-inputs have {} dimensions, the projection {}",
                zbar.ncols(),
                p.nrows()
            )));
        }
        if p.iter().chain(zbar.iter()).any(|v| !v.is_finite()) {
            return Err(Error::BadInput(
                "projection and pseudo-inputs must be finite".into(),
            ));
        }
        Ok(Self { p, zbar })
    }

    /// The starting projection for data `x` (standardised, N x D) and the
    /// starting kernel `kern`: `P0 = V_G^T diag(1/l)`, `V_G` the top-`g`
    /// principal directions of `x diag(1/l)` (see the module documentation
    /// for why this scaling).
    ///
    /// # Errors
    /// As [`principal_directions`].
    pub(crate) fn pca_start(
        x: &DMatrix<f64>,
        kern: &KernelParams,
        g: usize,
    ) -> Result<DMatrix<f64>> {
        let inv_l = kern.inv_lengthscales();
        let scaled = DMatrix::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)] * inv_l[j]);
        let (dirs, _) = principal_directions(&scaled, g)?;
        Ok(DMatrix::from_fn(g, x.ncols(), |r, j| {
            dirs[(r, j)] * inv_l[j]
        }))
    }

    /// The projection `P`, G x D.
    pub fn projection(&self) -> &DMatrix<f64> {
        &self.p
    }

    /// Projected dimension G.
    pub fn feature_dim(&self) -> usize {
        self.p.nrows()
    }

    /// The data in the projected space, `X P^T` (N x G).
    pub fn project(&self, x: DMatrixView<'_, f64>) -> DMatrix<f64> {
        crate::numerics::linalg::times_transpose(&x, &self.p)
    }

    fn unit(&self) -> Vec<f64> {
        vec![1.0; self.feature_dim()]
    }
}

impl InducingFeatures for Projected {
    fn num_inducing(&self) -> usize {
        self.zbar.nrows()
    }

    fn input_dim(&self) -> usize {
        self.p.ncols()
    }

    fn uses_lengthscales(&self) -> bool {
        false
    }

    fn num_params(&self) -> usize {
        self.p.len() + self.zbar.len()
    }

    fn params(&self) -> Vec<f64> {
        row_major(&[&self.p, &self.zbar])
    }

    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        set_row_major(&mut [&mut self.p, &mut self.zbar], p, "projected features")
    }

    fn kuu(&self, kern: &KernelParams) -> DMatrix<f64> {
        kern.scaled(&self.unit()).cross(&self.zbar, &self.zbar)
    }

    fn kuf(&self, kern: &KernelParams, x: DMatrixView<'_, f64>) -> DMatrix<f64> {
        kern.scaled(&self.unit())
            .cross(&self.zbar, &self.project(x))
    }

    fn grad_kuu(&self, kern: &KernelParams, kuu: &DMatrix<f64>, adj: &DMatrix<f64>) -> FeatureGrad {
        let unit = self.unit();
        let g = kern
            .scaled(&unit)
            .cross_grad(&self.zbar, &self.zbar, kuu, adj, true, true);
        let gz = match (g.a, g.b) {
            (Some(a), Some(b)) => a + b,
            // se_cross_grad returns both when both are asked for.
            _ => DMatrix::zeros(self.zbar.nrows(), self.zbar.ncols()),
        };
        FeatureGrad {
            feature: row_major(&[&DMatrix::zeros(self.p.nrows(), self.p.ncols()), &gz]),
            // The unit scales are not parameters: only log s2.
            kernel: KernelGrad {
                log_signal_var: g.kernel.log_signal_var,
                ..KernelGrad::zeros(kern.dim())
            },
        }
    }

    fn grad_kuf(
        &self,
        kern: &KernelParams,
        x: DMatrixView<'_, f64>,
        kuf: &DMatrix<f64>,
        adj_kuf: &DMatrix<f64>,
        adj_kdiag: &DVector<f64>,
    ) -> FeatureGrad {
        let u = self.project(x);
        let unit = self.unit();
        let g = kern
            .scaled(&unit)
            .cross_grad(&self.zbar, &u, kuf, adj_kuf, true, true);
        let (gz, gu) = match (g.a, g.b) {
            (Some(a), Some(b)) => (a, b),
            _ => (
                DMatrix::zeros(self.zbar.nrows(), self.zbar.ncols()),
                DMatrix::zeros(u.nrows(), u.ncols()),
            ),
        };
        // U = X P^T, so dF/dP = (dF/dU)^T X.
        let gp = gu.tr_mul(&x);
        FeatureGrad {
            feature: row_major(&[&gp, &gz]),
            kernel: KernelGrad {
                log_signal_var: g.kernel.log_signal_var + constant_kdiag_grad(kern, adj_kdiag),
                ..KernelGrad::zeros(kern.dim())
            },
        }
    }

    fn runtime_basis(&self, kern: &KernelParams) -> RuntimeBasis {
        RuntimeBasis {
            projection: Some(self.p.clone()),
            centres: self.zbar.clone(),
            widths: BasisWidths::Shared(self.unit()),
            amplitudes: vec![kern.signal_var(); self.zbar.nrows()],
            kernel: kern.kernel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::features::test_util::{
        adjoints, check_matrix_level as check_matrix_level_of,
        check_objective as check_objective_of, model_differences,
    };
    use crate::model::features::PseudoInputs;
    use crate::model::inference::fitc::FitcConfig;
    use crate::model::inference::test_util::problem;
    use crate::model::inference::Approximation::{self, Fitc, Vfe};

    const D: usize = 3;
    const G: usize = 2;

    fn kern() -> KernelParams {
        KernelParams::new(&[0.9, 1.4, 1.1], 1.3, 0.05).expect("valid")
    }

    /// A projection mixing every input into every row, and pseudo-inputs
    /// near projected data points.
    fn setup(seed: u64, n: usize, m: usize) -> (DMatrix<f64>, DVector<f64>, Projected) {
        let (x, y) = problem(seed, n, D);
        let p = DMatrix::from_fn(G, D, |g, d| 0.8 * libm::sin((g * D + d) as f64 * 1.3 + 0.4));
        let u = &x * p.transpose();
        let zbar = DMatrix::from_fn(m, G, |i, g| u[(i * n / m, g)] + 0.05 * (g as f64 + 1.0));
        (x, y, Projected::new(p, zbar).expect("valid"))
    }

    /// `F = <adj_u, Kuu> + <adj_f, Kuf> + <adj_d, kdiag>` as a function of
    /// `[P | Zbar | log s2]` (no length scales: P absorbs them).
    fn check_matrix_level(seed: u64) {
        let (x, _, f) = setup(seed, 9, 4);
        assert_eq!(f.num_params(), (4 + D) * G);
        check_matrix_level_of(&f, &kern(), &x, &adjoints(4, 9, 0.0));
    }

    #[test]
    fn matrix_level_gradients_match_finite_differences() {
        check_matrix_level(1);
        check_matrix_level(2);
    }

    fn check_objective(approximation: Approximation, seed: u64) {
        let (x, y, f) = setup(seed, 30, 5);
        let n = check_objective_of(&x, &y, &f, kern(), approximation);
        // No length scales: (M + D) G + log s2 + noise.
        assert_eq!(n, (5 + D) * G + 2);
    }

    #[test]
    fn fitc_objective_gradient_matches_finite_differences() {
        check_objective(Fitc, 3);
        check_objective(Fitc, 4);
    }

    #[test]
    fn vfe_objective_gradient_matches_finite_differences() {
        check_objective(Vfe, 3);
        check_objective(Vfe, 4);
    }

    /// G = D and `P = diag(1/l)` with pseudo-inputs `Z P^T` is SPGP with
    /// pseudo-inputs `Z` and length scales `l`.
    #[test]
    fn with_a_diagonal_projection_it_is_spgp() {
        let (x, y) = problem(5, 25, D);
        let k = kern();
        let z = DMatrix::from_fn(6, D, |i, d| x[(i * 4, d)] - 0.02 * d as f64);
        let spgp = PseudoInputs::new(z.clone()).expect("valid");
        let p = DMatrix::from_diagonal(&DVector::from_vec(k.inv_lengthscales()));
        let dr = Projected::new(p.clone(), &z * p.transpose()).expect("valid");
        assert!((dr.kuu(&k) - spgp.kuu(&k)).amax() < 1e-10);
        assert!((dr.kuf(&k, x.as_view()) - spgp.kuf(&k, x.as_view())).amax() < 1e-10);
        let xt = DMatrix::from_fn(7, D, |i, d| -2.5 + 0.8 * i as f64 + 0.3 * d as f64);
        for approximation in [Fitc, Vfe] {
            let cfg = FitcConfig {
                approximation,
                ..FitcConfig::default()
            };
            let (nlml, mean, var) = model_differences(&dr, &spgp, &k, (&x, &y), &xt, &cfg);
            assert!(nlml < 1e-10, "{approximation:?}: NLML differs by {nlml}");
            assert!(
                mean < 1e-10 && var < 1e-10,
                "{approximation:?}: {mean} {var}"
            );
        }
        // Another projection changes the model (so the checks can fail).
        let mut other = dr.clone();
        let mut q = other.params();
        q[1] += 0.5;
        other.set_params(&q).expect("in range");
        assert!((other.kuf(&k, x.as_view()) - spgp.kuf(&k, x.as_view())).amax() > 1e-3);
    }

    #[test]
    fn runtime_basis_reproduces_kuf() {
        let (x, _, f) = setup(6, 12, 4);
        let k = kern();
        let basis = f.runtime_basis(&k);
        assert_eq!(basis.input_dim(), D);
        assert_eq!(basis.centres.shape(), (4, G));
        let diff = basis.eval(&x) - f.kuf(&k, x.as_view());
        assert!(diff.amax() < 1e-14);
    }

    #[test]
    fn pca_finds_the_direction_of_largest_variance() {
        // Rows along (1, 2, 0) with a little spread along (0, 0, 1).
        let x = DMatrix::from_fn(40, 3, |i, d| {
            let t = i as f64 - 19.5;
            [t, 2.0 * t, 0.1 * libm::sin(i as f64 * 1.7)][d]
        });
        let (dirs, vars) = principal_directions(&x, 2).expect("valid");
        let want = [1.0 / 5f64.sqrt(), 2.0 / 5f64.sqrt(), 0.0];
        for d in 0..3 {
            assert!((dirs[(0, d)] - want[d]).abs() < 1e-3, "{dirs}");
        }
        assert!(vars[0] > 100.0 * vars[1]);
        assert!((dirs.row(0).dot(&dirs.row(1))).abs() < 1e-12);
        assert!(principal_directions(&x, 0).is_err());
        assert!(principal_directions(&x, 4).is_err());
        // The start divides by the length scales: l = 2 halves P.
        let k = KernelParams::new(&[2.0, 2.0, 2.0], 1.0, 0.1).expect("valid");
        let p0 = Projected::pca_start(&x, &k, 1).expect("valid");
        assert!((p0[(0, 1)] - want[1] / 2.0).abs() < 1e-3);
    }

    #[test]
    fn constructor_checks_and_round_trip() {
        let (_, _, f) = setup(7, 10, 3);
        let mut g = f.clone();
        let p = f.params();
        assert_eq!(&p[..G * D], f.projection().transpose().as_slice());
        g.set_params(&p).expect("right length");
        assert_eq!(g, f);
        assert!(g.set_params(&p[1..]).is_err());
        assert!(Projected::new(DMatrix::zeros(2, 3), DMatrix::zeros(4, 3)).is_err());
        assert!(Projected::new(DMatrix::zeros(0, 3), DMatrix::zeros(4, 0)).is_err());
        let mut bad = DMatrix::zeros(2, 3);
        bad[(0, 0)] = f64::NAN;
        assert!(Projected::new(bad, DMatrix::zeros(4, 2)).is_err());
    }
}
