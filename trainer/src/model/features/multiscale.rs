//! VSGP's multiscale basis functions (Walder, Kim & Schölkopf 2008; MATH.md,
//! "VSGP"): M centres `V`, each with its own width vector `Delta_i`
//! (variances, one per input dimension).
//!
//! - `k_i(x) = s2 prod_d sqrt(l_d^2/Delta_id) exp(-1/2 sum_d (x_d - v_id)^2/Delta_id)`
//! - `[Kuu]_ij = s2 prod_d sqrt(l_d^2/S_ijd) exp(-1/2 sum_d (v_id - v_jd)^2/S_ijd)`,
//!   `S_ijd = Delta_id + Delta_jd - l_d^2`
//! - `kdiag = s2`.
//!
//! `Delta_id = l_d^2 (1/2 + exp(rho_id))`: always valid, SPGP at
//! `rho = log(1/2)`; `|rho| <= RHO_LIMIT` ([`InducingFeatures::set_params`]
//! refuses the point outside). docs/src/vsgp.md derives the gradients.

use nalgebra::{DMatrix, DMatrixView, DVector};
use rayon::prelude::*;

use super::{
    constant_kdiag_grad, row_major, set_row_major, BasisWidths, FeatureGrad, InducingFeatures,
    PseudoInputs, RuntimeBasis,
};
use crate::model::kernel::{KernelGrad, KernelParams};
use crate::{Error, Result};

/// Largest `|rho|` accepted (see the module documentation).
pub(crate) const RHO_LIMIT: f64 = 20.0;

/// `rho` at which a width equals the kernel's `l^2` (SPGP): `log(1/2)`.
pub(crate) const RHO_SPGP: f64 = -std::f64::consts::LN_2;

/// Below this many `Kuf` entries the matrix is built serially.
const PAR_MIN_ENTRIES: usize = 1 << 16;

/// Multiscale inducing features: centres `V` (M x D) and relative width
/// parameters `rho` (M x D), `Delta_id = l_d^2 (1/2 + exp(rho_id))`.
///
/// Parameter layout: `[V row-major | rho row-major]`, `2 M D` numbers:
/// `p[i * D + d] = V[i, d]`, `p[M D + i * D + d] = rho[i, d]`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Multiscale {
    centres: DMatrix<f64>,
    rho: DMatrix<f64>,
}

impl Multiscale {
    /// Centres `v` (M x D) with width parameters `rho` (M x D).
    ///
    /// # Errors
    /// [`Error::BadInput`] for empty or mismatched shapes, non-finite values
    /// or `|rho| > RHO_LIMIT`.
    pub fn new(centres: DMatrix<f64>, rho: DMatrix<f64>) -> Result<Self> {
        if centres.nrows() == 0 || centres.ncols() == 0 {
            return Err(Error::BadInput("no multiscale centres".into()));
        }
        if rho.shape() != centres.shape() {
            return Err(Error::BadInput(format!(
                "width parameters are {}x{}, centres {}x{}",
                rho.nrows(),
                rho.ncols(),
                centres.nrows(),
                centres.ncols()
            )));
        }
        if centres.iter().any(|v| !v.is_finite()) {
            return Err(Error::BadInput("multiscale centres must be finite".into()));
        }
        if rho.iter().any(|v| !rho_ok(*v)) {
            return Err(Error::BadInput(format!(
                "width parameters must be finite and within +-{RHO_LIMIT}"
            )));
        }
        Ok(Self { centres, rho })
    }

    /// SPGP's pseudo-inputs as multiscale features whose widths all equal
    /// the kernel's `l^2` (`rho = log(1/2)`): the same covariances, the
    /// paper's starting point for VSGP.
    pub(crate) fn from_pseudo_inputs(z: &PseudoInputs) -> Self {
        let centres = z.z().clone();
        let rho = DMatrix::from_element(centres.nrows(), centres.ncols(), RHO_SPGP);
        Self { centres, rho }
    }

    /// The centres `V`, M x D.
    #[cfg(test)]
    pub fn centres(&self) -> &DMatrix<f64> {
        &self.centres
    }

    /// The width parameters `rho`, M x D.
    #[cfg(test)]
    pub fn rho(&self) -> &DMatrix<f64> {
        &self.rho
    }

    /// The widths `Delta` (variances, M x D) under the length scales of
    /// `kern`.
    #[cfg(test)]
    pub fn widths(&self, kern: &KernelParams) -> DMatrix<f64> {
        let l2: Vec<f64> = kern
            .log_lengthscales
            .iter()
            .map(|v| libm::exp(2.0 * v))
            .collect();
        DMatrix::from_fn(self.rho.nrows(), self.rho.ncols(), |i, d| {
            l2[d] * (0.5 + libm::exp(self.rho[(i, d)]))
        })
    }

    /// Row-major per-basis quantities shared by `kuf` and `grad_kuf`:
    /// centres, `1/Delta`, `e/(2h)`, and amplitudes `s2 prod h^{-1/2}`.
    fn basis_tables(&self, kern: &KernelParams) -> BasisTables {
        let (m, d) = self.centres.shape();
        let inv_l2: Vec<f64> = kern.inv_sq_lengthscales();
        let s2 = kern.signal_var();
        let mut t = BasisTables {
            v: Vec::with_capacity(m * d),
            inv_delta: Vec::with_capacity(m * d),
            half_e_over_h: Vec::with_capacity(m * d),
            amp: Vec::with_capacity(m),
        };
        for i in 0..m {
            let mut log_amp = 0.0;
            for (k, il2) in inv_l2.iter().enumerate() {
                let e = libm::exp(self.rho[(i, k)]);
                let h = 0.5 + e;
                t.v.push(self.centres[(i, k)]);
                t.inv_delta.push(il2 / h);
                t.half_e_over_h.push(0.5 * e / h);
                log_amp -= 0.5 * libm::log(h);
            }
            t.amp.push(s2 * libm::exp(log_amp));
        }
        t
    }

    fn pack(&self, gv: &[f64], grho: &[f64]) -> Vec<f64> {
        let mut out = Vec::with_capacity(gv.len() + grho.len());
        out.extend_from_slice(gv);
        out.extend_from_slice(grho);
        out
    }
}

fn rho_ok(v: f64) -> bool {
    v.is_finite() && v.abs() <= RHO_LIMIT
}

/// Per-basis tables, row-major (`[i * D + d]`).
struct BasisTables {
    v: Vec<f64>,
    inv_delta: Vec<f64>,
    half_e_over_h: Vec<f64>,
    amp: Vec<f64>,
}

/// Rows of `x`, flattened row-major.
fn rows(x: &DMatrixView<'_, f64>) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.row_iter() {
        out.extend(row.iter());
    }
    out
}

impl InducingFeatures for Multiscale {
    fn num_inducing(&self) -> usize {
        self.centres.nrows()
    }

    fn input_dim(&self) -> usize {
        self.centres.ncols()
    }

    fn num_params(&self) -> usize {
        2 * self.centres.len()
    }

    fn params(&self) -> Vec<f64> {
        row_major(&[&self.centres, &self.rho])
    }

    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        let n = self.centres.len();
        let widths = if p.len() == 2 * n { &p[n..] } else { &[] };
        if let Some(v) = widths.iter().find(|v| !rho_ok(**v)) {
            return Err(Error::Numerical(format!(
                "width parameter {v} is outside +-{RHO_LIMIT}"
            )));
        }
        set_row_major(
            &mut [&mut self.centres, &mut self.rho],
            p,
            "multiscale features",
        )
    }

    fn kuu(&self, kern: &KernelParams) -> DMatrix<f64> {
        let (m, d) = self.centres.shape();
        kern_dims(kern, d);
        let s2 = kern.signal_var();
        let inv_l2 = kern.inv_sq_lengthscales();
        let e = self.rho.map(libm::exp);
        let mut out = DMatrix::zeros(m, m);
        for j in 0..m {
            for i in 0..=j {
                let mut log_k = 0.0;
                for k in 0..d {
                    let t = e[(i, k)] + e[(j, k)];
                    let q = self.centres[(i, k)] - self.centres[(j, k)];
                    log_k -= 0.5 * (libm::log(t) + q * q * inv_l2[k] / t);
                }
                let v = s2 * libm::exp(log_k);
                out[(i, j)] = v;
                out[(j, i)] = v;
            }
        }
        out
    }

    fn kuf(&self, kern: &KernelParams, x: DMatrixView<'_, f64>) -> DMatrix<f64> {
        let (m, d) = self.centres.shape();
        kern_dims(kern, d);
        assert_eq!(x.ncols(), d, "input dimension");
        let t = self.basis_tables(kern);
        let xr = rows(&x);
        let n = x.nrows();
        let mut out = DMatrix::<f64>::zeros(m, n);
        if n == 0 {
            return out;
        }
        // Column-major output: one task owns whole columns (as in
        // `KernelParams::cross`).
        let fill = |(j0, block): (usize, &mut [f64])| {
            for (jj, col) in block.chunks_mut(m).enumerate() {
                let xn = &xr[(j0 + jj) * d..(j0 + jj + 1) * d];
                for (i, o) in col.iter_mut().enumerate() {
                    let v = &t.v[i * d..(i + 1) * d];
                    let w = &t.inv_delta[i * d..(i + 1) * d];
                    let mut r2 = 0.0;
                    for k in 0..d {
                        let r = xn[k] - v[k];
                        r2 += r * r * w[k];
                    }
                    *o = t.amp[i] * libm::exp(-0.5 * r2);
                }
            }
        };
        if m * n < PAR_MIN_ENTRIES {
            fill((0, out.as_mut_slice()));
        } else {
            let cols_per_task = (PAR_MIN_ENTRIES / 4 / m).max(1);
            out.as_mut_slice()
                .par_chunks_mut(cols_per_task * m)
                .enumerate()
                .map(|(k, block)| (k * cols_per_task, block))
                .for_each(fill);
        }
        out
    }

    fn grad_kuu(&self, kern: &KernelParams, kuu: &DMatrix<f64>, adj: &DMatrix<f64>) -> FeatureGrad {
        let (m, d) = self.centres.shape();
        assert_eq!(kuu.shape(), (m, m), "Kuu shape");
        assert_eq!(adj.shape(), (m, m), "adjoint shape");
        let inv_l2 = kern.inv_sq_lengthscales();
        let e = self.rho.map(libm::exp);
        let mut gv = vec![0.0; m * d];
        let mut grho = vec![0.0; m * d];
        let mut kernel = KernelGrad::zeros(d);
        for j in 0..m {
            for i in 0..m {
                let b = adj[(i, j)] * kuu[(i, j)];
                if b == 0.0 {
                    continue;
                }
                kernel.log_signal_var += b;
                for k in 0..d {
                    let (ei, ej) = (e[(i, k)], e[(j, k)]);
                    let t = ei + ej;
                    let inv_s = inv_l2[k] / t;
                    let q = self.centres[(i, k)] - self.centres[(j, k)];
                    let q2s = q * q * inv_s;
                    kernel.log_lengthscales[k] += b * q2s;
                    gv[i * d + k] -= b * q * inv_s;
                    gv[j * d + k] += b * q * inv_s;
                    let common = b * (q2s - 1.0) / (2.0 * t);
                    grho[i * d + k] += common * ei;
                    grho[j * d + k] += common * ej;
                }
            }
        }
        FeatureGrad {
            feature: self.pack(&gv, &grho),
            kernel,
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
        let (m, d) = self.centres.shape();
        let n = x.nrows();
        assert_eq!(kuf.shape(), (m, n), "Kuf shape");
        assert_eq!(adj_kuf.shape(), (m, n), "adjoint shape");
        let t = self.basis_tables(kern);
        let xr = rows(&x);
        let mut gv = vec![0.0; m * d];
        let mut grho = vec![0.0; m * d];
        let mut kernel = KernelGrad::zeros(d);
        for j in 0..n {
            let xn = &xr[j * d..(j + 1) * d];
            let (kc, ac) = (kuf.column(j), adj_kuf.column(j));
            for i in 0..m {
                let b = ac[i] * kc[i];
                if b == 0.0 {
                    continue;
                }
                kernel.log_signal_var += b;
                for (k, xk) in xn.iter().enumerate() {
                    let at = i * d + k;
                    let r = xk - t.v[at];
                    let w = t.inv_delta[at];
                    let r2w = r * r * w;
                    kernel.log_lengthscales[k] += b * r2w;
                    gv[at] += b * r * w;
                    grho[at] += b * t.half_e_over_h[at] * (r2w - 1.0);
                }
            }
        }
        kernel.log_signal_var += constant_kdiag_grad(kern, adj_kdiag);
        FeatureGrad {
            feature: self.pack(&gv, &grho),
            kernel,
        }
    }

    fn runtime_basis(&self, kern: &KernelParams) -> RuntimeBasis {
        let (m, d) = self.centres.shape();
        let t = self.basis_tables(kern);
        RuntimeBasis {
            projection: None,
            centres: self.centres.clone(),
            widths: BasisWidths::PerBasis(DMatrix::from_fn(m, d, |i, k| t.inv_delta[i * d + k])),
            amplitudes: t.amp,
            kernel: kern.kernel,
        }
    }
}

fn kern_dims(kern: &KernelParams, d: usize) {
    assert_eq!(
        kern.dim(),
        d,
        "kernel has {} dimensions, centres have {d}",
        kern.dim()
    );
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
    use crate::model::inference::test_util::problem;
    use crate::model::inference::Approximation::{self, Fitc, Vfe};

    const D: usize = 2;

    /// Centres near data points and widths spread around `l^2` (some
    /// narrower, some wider).
    fn setup(seed: u64, n: usize, m: usize) -> (DMatrix<f64>, DVector<f64>, Multiscale) {
        let (x, y) = problem(seed, n, D);
        let v = DMatrix::from_fn(m, D, |i, d| x[(i * n / m, d)] + 0.05 * (d as f64 + 1.0));
        let rho = DMatrix::from_fn(m, D, |i, d| {
            RHO_SPGP + 0.9 * libm::sin((i * D + d) as f64 * 1.7)
        });
        (x, y, Multiscale::new(v, rho).expect("valid"))
    }

    fn kern() -> KernelParams {
        KernelParams::new(&[0.9, 1.4], 1.3, 0.05).expect("valid")
    }

    fn check_matrix_level(seed: u64) {
        let (x, _, f) = setup(seed, 9, 4);
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
        assert_eq!(n, 2 * 5 * D + D + 2);
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
    fn with_widths_at_l2_it_is_spgp() {
        let (x, y) = problem(5, 25, D);
        let z = DMatrix::from_fn(6, D, |i, d| x[(i * 4, d)] - 0.02 * d as f64);
        let spgp = PseudoInputs::new(z).expect("valid");
        let vsgp = Multiscale::from_pseudo_inputs(&spgp);
        let k = kern();
        let w = vsgp.widths(&k);
        let l2: Vec<f64> = k.lengthscales().iter().map(|l| l * l).collect();
        for i in 0..6 {
            for d in 0..D {
                assert!((w[(i, d)] - l2[d]).abs() < 1e-14 * l2[d]);
            }
        }
        assert!((vsgp.kuu(&k) - spgp.kuu(&k)).amax() < 1e-10);
        assert!((vsgp.kuf(&k, x.as_view()) - spgp.kuf(&k, x.as_view())).amax() < 1e-10);
        let xt = DMatrix::from_fn(7, D, |i, d| -2.5 + 0.8 * i as f64 + 0.3 * d as f64);
        for approximation in [Fitc, Vfe] {
            let cfg = FitcConfig {
                approximation,
                ..FitcConfig::default()
            };
            let (nlml, mean, var) = model_differences(&vsgp, &spgp, &k, (&x, &y), &xt, &cfg);
            assert!(nlml < 1e-10, "{approximation:?}: NLML differs by {nlml}");
            assert!(
                mean < 1e-10 && var < 1e-10,
                "{approximation:?}: {mean} {var}"
            );
            // The gradients agree on the shared parameters too: centres and
            // kernel (VSGP has extra width parameters after the centres).
            let ga = fitc_nlml_grad(&vsgp, &k, &x, &y, &cfg)
                .expect("ok")
                .grad
                .expect("asked");
            let gb = fitc_nlml_grad(&spgp, &k, &x, &y, &cfg)
                .expect("ok")
                .grad
                .expect("asked");
            for (a, b) in ga.feature.iter().zip(&gb.feature) {
                assert!((a - b).abs() < 1e-9 * (1.0 + b.abs()));
            }
            for (a, b) in ga
                .kernel
                .log_lengthscales
                .iter()
                .zip(&gb.kernel.log_lengthscales)
            {
                assert!((a - b).abs() < 1e-9 * (1.0 + b.abs()));
            }
        }
        // A width away from l^2 changes the model (so the checks above can
        // fail).
        let mut other = vsgp.clone();
        let mut p = other.params();
        p[6 * D] += 0.5;
        other.set_params(&p).expect("in range");
        assert!((other.kuu(&k) - spgp.kuu(&k)).amax() > 1e-3);
    }

    /// `Kuu` and `Kuf` against MATH.md's formulas written in terms of the
    /// widths `Delta` (independently of the `rho` tables the code uses).
    #[test]
    fn kuu_and_kuf_match_the_definition() {
        let (x, _, f) = setup(9, 12, 4);
        let k = kern();
        let delta = f.widths(&k);
        let l2: Vec<f64> = k.lengthscales().iter().map(|l| l * l).collect();
        let s2 = k.signal_var();
        let v = f.centres();
        let kuf = f.kuf(&k, x.as_view());
        for i in 0..4 {
            for n in 0..12 {
                let mut want = s2;
                for d in 0..D {
                    let r = x[(n, d)] - v[(i, d)];
                    want *=
                        (l2[d] / delta[(i, d)]).sqrt() * libm::exp(-0.5 * r * r / delta[(i, d)]);
                }
                assert!((kuf[(i, n)] - want).abs() < 1e-13, "Kuf {i},{n}");
            }
        }
        let kuu = f.kuu(&k);
        for i in 0..4 {
            for j in 0..4 {
                let mut want = s2;
                for d in 0..D {
                    let s = delta[(i, d)] + delta[(j, d)] - l2[d];
                    let q = v[(i, d)] - v[(j, d)];
                    want *= (l2[d] / s).sqrt() * libm::exp(-0.5 * q * q / s);
                }
                assert!((kuu[(i, j)] - want).abs() < 1e-13, "Kuu {i},{j}");
            }
        }
        // Widths on both sides of l^2 are exercised.
        assert!((0..4).any(|i| delta[(i, 0)] < l2[0]) && (0..4).any(|i| delta[(i, 0)] > l2[0]));
    }

    #[test]
    fn runtime_basis_reproduces_kuf() {
        let (x, _, f) = setup(6, 20, 5);
        let k = kern();
        let basis = f.runtime_basis(&k);
        assert!(matches!(basis.widths, BasisWidths::PerBasis(_)));
        let diff = basis.eval(&x) - f.kuf(&k, x.as_view());
        assert!(diff.amax() < 1e-14, "{}", diff.amax());
    }

    #[test]
    fn kuf_parallel_path_matches_serial() {
        let (x, _, f) = setup(7, 3000, 30);
        let k = kern();
        let big = f.kuf(&k, x.as_view());
        let small = f.kuf(&k, x.rows(0, 100));
        assert_eq!(big.columns(0, 100), small);
        let last = f.kuf(&k, x.rows(2999, 1));
        assert_eq!(big.column(2999), last.column(0));
    }

    #[test]
    fn extreme_widths_give_finite_values_or_a_clean_error() {
        let (x, y, f) = setup(8, 30, 5);
        let k = kern();
        for approximation in [Fitc, Vfe] {
            let cfg = FitcConfig {
                approximation,
                ..FitcConfig::default()
            };
            for rho in [-RHO_LIMIT, -10.0, RHO_SPGP, 10.0, RHO_LIMIT] {
                let mut g = f.clone();
                let mut p = g.params();
                for v in &mut p[5 * D..] {
                    *v = rho;
                }
                // One basis function at the other extreme, too.
                p[5 * D] = -rho;
                g.set_params(&p).expect("at the limit");
                match fitc_nlml_grad(&g, &k, &x, &y, &cfg) {
                    Ok(v) => {
                        assert!(v.nlml.is_finite(), "rho {rho}: {}", v.nlml);
                        let gr = v.grad.expect("asked");
                        assert!(gr.feature.iter().all(|v| v.is_finite()), "rho {rho}");
                        assert!(gr.kernel.log_lengthscales.iter().all(|v| v.is_finite()));
                        assert!(gr.kernel.log_signal_var.is_finite());
                        assert!(gr.log_noise_excess.is_finite());
                    }
                    Err(e) => assert!(matches!(e, Error::Numerical(_)), "rho {rho}: {e}"),
                }
            }
            // Beyond the limit: a clean numerical error the optimiser backs
            // off from, through the objective as well.
            let obj = SparseObjective::new(&x, &y, f.clone(), k.clone(), cfg).expect("valid");
            let mut p = obj.initial();
            p[5 * D + 1] = -RHO_LIMIT - 1.0;
            assert!(matches!(obj.objective(&p), Err(Error::Numerical(_))));
            p[5 * D + 1] = f64::INFINITY;
            assert!(matches!(obj.objective(&p), Err(Error::Numerical(_))));
        }
    }

    #[test]
    fn constructor_checks_and_round_trip() {
        let v = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 3.0, 4.0]);
        let rho = DMatrix::from_row_slice(2, 2, &[0.1, 0.2, 0.3, 0.4]);
        let mut f = Multiscale::new(v.clone(), rho.clone()).expect("valid");
        assert_eq!(f.params(), vec![1.0, 2.0, 3.0, 4.0, 0.1, 0.2, 0.3, 0.4]);
        f.set_params(&[4.0, 3.0, 2.0, 1.0, 0.0, -1.0, -2.0, -3.0])
            .expect("valid");
        assert_eq!(f.centres()[(0, 1)], 3.0);
        assert_eq!(f.rho()[(1, 0)], -2.0);
        assert!(f.set_params(&[1.0]).is_err());
        assert!(Multiscale::new(v.clone(), DMatrix::zeros(1, 2)).is_err());
        assert!(Multiscale::new(v.clone(), rho.add_scalar(RHO_LIMIT)).is_err());
        assert!(Multiscale::new(DMatrix::zeros(0, 2), DMatrix::zeros(0, 2)).is_err());
    }
}
