//! SPGP+HS (Snelson & Ghahramani 2006, section 5; MATH.md, "SPGP+HS"):
//! SPGP's pseudo-inputs, each with its own uncertainty `h_m >= 0`:
//! `Kuu = K(Z, Z) + diag(h)`, `Kuf = K(Z, X)`, `kdiag = s2`.
//!
//! The basis functions are SPGP's, so the blob has SPGP's shape (`h` is
//! folded into the factors, not stored). `h_m = exp(log_h_m)` in
//! standardised target-variance units, kept within `[LOG_H_MIN, LOG_H_MAX]`
//! ([`set_params`](InducingFeatures::set_params) refuses the point outside).

use nalgebra::{DMatrix, DMatrixView, DVector};

use super::{FeatureGrad, InducingFeatures, PseudoInputs, RuntimeBasis};
use crate::model::kernel::KernelParams;
use crate::{Error, Result};

/// Smallest `log h` accepted (see the module documentation).
pub(crate) const LOG_H_MIN: f64 = -40.0;

/// Largest `log h` accepted.
pub(crate) const LOG_H_MAX: f64 = 20.0;

fn log_h_ok(v: f64) -> bool {
    v.is_finite() && (LOG_H_MIN..=LOG_H_MAX).contains(&v)
}

/// Pseudo-inputs with per-pseudo-input uncertainties `h`.
///
/// Parameter layout: `[Z row-major | log h]`, `M D + M` numbers:
/// `p[m * D + d] = Z[m, d]` (as [`PseudoInputs`]), `p[M D + m] = log h_m`.
#[derive(Clone, Debug, PartialEq)]
pub struct Heteroscedastic {
    inputs: PseudoInputs,
    log_h: Vec<f64>,
}

impl Heteroscedastic {
    /// Pseudo-inputs `inputs` with uncertainties `exp(log_h)`.
    ///
    /// # Errors
    /// [`Error::BadInput`] if `log_h` does not have one entry per
    /// pseudo-input or an entry is outside `[LOG_H_MIN, LOG_H_MAX]`.
    pub fn new(inputs: PseudoInputs, log_h: Vec<f64>) -> Result<Self> {
        if log_h.len() != inputs.num_inducing() {
            return Err(Error::BadInput(format!(
                "{} uncertainties for {} pseudo-inputs",
                log_h.len(),
                inputs.num_inducing()
            )));
        }
        if !log_h.iter().all(|v| log_h_ok(*v)) {
            return Err(Error::BadInput(format!(
                "log uncertainties must be finite and within [{LOG_H_MIN}, {LOG_H_MAX}]"
            )));
        }
        Ok(Self { inputs, log_h })
    }

    /// SPGP's pseudo-inputs with every `h_m = h` (clamped into the accepted
    /// range; `h <= 0` gives the smallest).
    pub(crate) fn from_pseudo_inputs(inputs: &PseudoInputs, h: f64) -> Self {
        let log_h = if h > 0.0 { libm::log(h) } else { LOG_H_MIN };
        Self {
            log_h: vec![log_h.clamp(LOG_H_MIN, LOG_H_MAX); inputs.num_inducing()],
            inputs: inputs.clone(),
        }
    }

    /// The uncertainties `h` (standardised target-variance units).
    pub fn h(&self) -> Vec<f64> {
        self.log_h.iter().map(|v| libm::exp(*v)).collect()
    }
}

impl InducingFeatures for Heteroscedastic {
    fn num_inducing(&self) -> usize {
        self.inputs.num_inducing()
    }

    fn input_dim(&self) -> usize {
        self.inputs.input_dim()
    }

    fn num_params(&self) -> usize {
        self.inputs.num_params() + self.log_h.len()
    }

    fn params(&self) -> Vec<f64> {
        let mut p = self.inputs.params();
        p.extend_from_slice(&self.log_h);
        p
    }

    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        if p.len() != self.num_params() {
            return Err(Error::Numerical(format!(
                "SPGP+HS features expect {} parameters, got {}",
                self.num_params(),
                p.len()
            )));
        }
        let (z, log_h) = p.split_at(self.inputs.num_params());
        if !log_h.iter().all(|v| log_h_ok(*v)) {
            return Err(Error::Numerical(format!(
                "log uncertainty outside [{LOG_H_MIN}, {LOG_H_MAX}]"
            )));
        }
        self.inputs.set_params(z)?;
        self.log_h.copy_from_slice(log_h);
        Ok(())
    }

    fn kuu(&self, kern: &KernelParams) -> DMatrix<f64> {
        let mut k = self.inputs.kuu(kern);
        for (m, lh) in self.log_h.iter().enumerate() {
            k[(m, m)] += libm::exp(*lh);
        }
        k
    }

    fn kuf(&self, kern: &KernelParams, x: DMatrixView<'_, f64>) -> DMatrix<f64> {
        self.inputs.kuf(kern, x)
    }

    fn grad_kuu(&self, kern: &KernelParams, kuu: &DMatrix<f64>, adj: &DMatrix<f64>) -> FeatureGrad {
        // The pseudo-inputs' part must see K(Z, Z) alone (`PseudoInputs`
        // scales the adjoint by the entries it is given); recomputed, as
        // `kuu - diag(h)` would cancel badly for a large `h`.
        assert_eq!(kuu.shape(), adj.shape(), "Kuu and adjoint shapes");
        let g = self.inputs.grad_kuu(kern, &self.inputs.kuu(kern), adj);
        let mut feature = g.feature;
        feature.extend(
            self.log_h
                .iter()
                .enumerate()
                .map(|(m, lh)| adj[(m, m)] * libm::exp(*lh)),
        );
        FeatureGrad {
            feature,
            kernel: g.kernel,
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
        let mut g = self.inputs.grad_kuf(kern, x, kuf, adj_kuf, adj_kdiag);
        g.feature.resize(self.num_params(), 0.0);
        g
    }

    fn runtime_basis(&self, kern: &KernelParams) -> RuntimeBasis {
        self.inputs.runtime_basis(kern)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::features::test_util::{
        adjoints, check_matrix_level as check_matrix_level_of,
        check_objective as check_objective_of, model_differences,
    };
    use crate::model::inference::fitc::{fitc_nlml_grad, FitcConfig};
    use crate::model::inference::objective::SparseObjective;
    use crate::model::inference::test_util::{assert_grad_close, problem};
    use crate::model::inference::Approximation::{self, Fitc, Vfe};

    const D: usize = 2;

    /// Pseudo-inputs near data points, uncertainties spread over three
    /// orders of magnitude around `s2 / 10`.
    fn setup(seed: u64, n: usize, m: usize) -> (DMatrix<f64>, DVector<f64>, Heteroscedastic) {
        let (x, y) = problem(seed, n, D);
        let z = DMatrix::from_fn(m, D, |i, d| x[(i * n / m, d)] + 0.05 * (d as f64 + 1.0));
        let log_h = (0..m)
            .map(|i| -2.3 + 2.0 * libm::sin(i as f64 * 1.7))
            .collect();
        let f = Heteroscedastic::new(PseudoInputs::new(z).expect("valid"), log_h).expect("valid");
        (x, y, f)
    }

    fn kern() -> KernelParams {
        KernelParams::new(&[0.9, 1.4], 1.3, 0.05).expect("valid")
    }

    fn check_matrix_level(seed: u64) {
        let (x, _, f) = setup(seed, 9, 4);
        // A non-zero diagonal in dF/dKuu, which is what h sees.
        let ana = check_matrix_level_of(&f, &kern(), &x, &adjoints(4, 9, 0.5));
        // The h block is exercised: not all zero.
        assert!(ana[4 * D..4 * D + 4].iter().all(|v| v.abs() > 1e-3));
    }

    #[test]
    fn matrix_level_gradients_match_finite_differences() {
        check_matrix_level(1);
        check_matrix_level(2);
    }

    fn check_objective(approximation: Approximation, seed: u64) {
        let (x, y, f) = setup(seed, 30, 5);
        let n = check_objective_of(&x, &y, &f, kern(), approximation);
        assert_eq!(n, 5 * D + 5 + D + 2);
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

    #[test]
    fn with_every_h_near_zero_it_is_spgp() {
        let (x, y) = problem(5, 25, D);
        let z = DMatrix::from_fn(6, D, |i, d| x[(i * 4, d)] - 0.02 * d as f64);
        let spgp = PseudoInputs::new(z).expect("valid");
        let hs = Heteroscedastic::from_pseudo_inputs(&spgp, 1e-12);
        assert!(hs.h().iter().all(|h| (h - 1e-12).abs() < 1e-24));
        let k = kern();
        let xt = DMatrix::from_fn(7, D, |i, d| -2.5 + 0.8 * i as f64 + 0.3 * d as f64);
        let differences = |hs: &Heteroscedastic, cfg: &FitcConfig| {
            model_differences(hs, &spgp, &k, (&x, &y), &xt, cfg)
        };
        for approximation in [Fitc, Vfe] {
            let cfg = FitcConfig {
                approximation,
                ..FitcConfig::default()
            };
            let (nlml, mean, var) = differences(&hs, &cfg);
            assert!(nlml < 1e-8, "{approximation:?}: NLML differs by {nlml}");
            assert!(mean < 1e-8 && var < 1e-8, "{approximation:?}: {mean} {var}");
            // The gradients agree on the pseudo-inputs and the kernel.
            let ga = fitc_nlml_grad(&hs, &k, &x, &y, &cfg)
                .expect("ok")
                .grad
                .expect("asked");
            let gb = fitc_nlml_grad(&spgp, &k, &x, &y, &cfg)
                .expect("ok")
                .grad
                .expect("asked");
            assert_eq!(ga.feature.len(), gb.feature.len() + 6);
            assert_grad_close(&ga.feature[..6 * D], &gb.feature, 1e-8);
            assert_grad_close(
                &ga.kernel.log_lengthscales,
                &gb.kernel.log_lengthscales,
                1e-8,
            );
            // One uncertainty of s2 / 10 changes the model (so the checks
            // above can fail).
            let mut other = hs.clone();
            let mut p = other.params();
            p[6 * D + 2] = libm::log(0.1 * k.signal_var());
            other.set_params(&p).expect("in range");
            let (nlml, mean, var) = differences(&other, &cfg);
            assert!(nlml > 1e-3 && mean.max(var) > 1e-3, "{nlml} {mean} {var}");
        }
    }

    #[test]
    fn kuu_is_spgps_plus_the_diagonal() {
        let (x, _, f) = setup(9, 12, 4);
        let k = kern();
        let spgp = &f.inputs;
        let diff = f.kuu(&k) - spgp.kuu(&k);
        let h = f.h();
        for i in 0..4 {
            for j in 0..4 {
                let want = if i == j { h[i] } else { 0.0 };
                assert!((diff[(i, j)] - want).abs() < 1e-14, "Kuu {i},{j}");
            }
        }
        assert_eq!(f.kuf(&k, x.as_view()), spgp.kuf(&k, x.as_view()));
    }

    #[test]
    fn runtime_basis_reproduces_kuf() {
        let (x, _, f) = setup(6, 20, 5);
        let k = kern();
        let basis = f.runtime_basis(&k);
        assert_eq!(basis, f.inputs.runtime_basis(&k));
        let diff = basis.eval(&x) - f.kuf(&k, x.as_view());
        assert!(diff.amax() < 1e-14, "{}", diff.amax());
    }

    #[test]
    fn extreme_uncertainties_give_finite_values_or_a_clean_error() {
        let (x, y, f) = setup(8, 30, 5);
        let k = kern();
        for approximation in [Fitc, Vfe] {
            let cfg = FitcConfig {
                approximation,
                ..FitcConfig::default()
            };
            for log_h in [LOG_H_MIN, -10.0, 0.0, 10.0, LOG_H_MAX] {
                let mut g = f.clone();
                let mut p = g.params();
                for v in &mut p[5 * D..] {
                    *v = log_h;
                }
                // One pseudo-input at the other extreme, too.
                p[5 * D] = LOG_H_MIN + LOG_H_MAX - log_h;
                g.set_params(&p).expect("at the limit");
                let v = fitc_nlml_grad(&g, &k, &x, &y, &cfg).expect("factorises");
                assert!(v.nlml.is_finite(), "log h {log_h}: {}", v.nlml);
                let gr = v.grad.expect("asked");
                assert!(gr.feature.iter().all(|v| v.is_finite()), "log h {log_h}");
                assert!(gr.kernel.log_signal_var.is_finite());
            }
            // Beyond the limits: a clean numerical error the optimiser
            // backs off from.
            let obj = SparseObjective::new(&x, &y, f.clone(), k.clone(), cfg).expect("valid");
            let mut p = obj.initial();
            for bad in [LOG_H_MIN - 1.0, LOG_H_MAX + 1.0, f64::INFINITY] {
                p[5 * D + 1] = bad;
                assert!(matches!(obj.objective(&p), Err(Error::Numerical(_))));
            }
        }
    }

    #[test]
    fn constructor_checks_and_round_trip() {
        let z =
            PseudoInputs::new(DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 3.0, 4.0])).expect("valid");
        let mut f = Heteroscedastic::new(z.clone(), vec![-1.0, -2.0]).expect("valid");
        assert_eq!(f.params(), vec![1.0, 2.0, 3.0, 4.0, -1.0, -2.0]);
        f.set_params(&[4.0, 3.0, 2.0, 1.0, 0.5, -0.5])
            .expect("valid");
        assert_eq!(f.inputs.z()[(0, 1)], 3.0);
        assert!((f.h()[1] - libm::exp(-0.5_f64)).abs() < 1e-15);
        assert!(f.set_params(&[1.0]).is_err());
        assert!(Heteroscedastic::new(z.clone(), vec![0.0]).is_err());
        assert!(Heteroscedastic::new(z.clone(), vec![0.0, LOG_H_MAX + 1.0]).is_err());
        assert!(Heteroscedastic::new(z.clone(), vec![0.0, f64::NAN]).is_err());
        let tiny = Heteroscedastic::from_pseudo_inputs(&z, 0.0);
        assert_eq!(tiny.params()[4..], [LOG_H_MIN, LOG_H_MIN]);
    }
}
