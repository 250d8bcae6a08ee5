//! FITC (the SPGP likelihood) and VFE (Titsias' collapsed variational
//! bound, GPflow's SGPR), written once for any `InducingFeatures` and
//! selected by `FitcConfig::approximation`: objective, its adjoints with
//! respect to `Kuu`, `Kuf`, the prior diagonal and `sigma2`, the total
//! gradient, prediction and the runtime form. O(M^2 N) time, O(M N) memory;
//! never forms an N x N matrix. The formulation and its adjoints are in the
//! guide (docs/src/numerics.md, "FITC and VFE").
//!
//! The posterior is the same runtime form for both (`FitcPosterior`; with
//! VFE the DTC/SGPR predictive). The jitter `eps * s2` is part of the model:
//! it is in the exported `L1` and in the `log s2` derivative. Rows run in
//! chunks of `FitcConfig::chunk_rows` with rayon, each chunk's sums added.

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use super::{col_sq_norms, sandwich_inv_factor, Approximation, ModelGrad, Prediction, RuntimeForm};
use crate::model::features::{FeatureGrad, InducingFeatures};
use crate::model::kernel::KernelParams;
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) use crate::model::posterior_sums::FitcConfig;
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) use crate::model::posterior_sums::FitcPosterior;
use crate::model::posterior_sums::{PosteriorSums, Solved};
use crate::numerics::linalg::{
    cholesky_jittered, dot, lower_inverse, mat_ref, matmul_into, mul, solve_lower_mut,
    solve_lower_t_vec, symmetrise, JitteredCholesky,
};
use crate::{Error, Result};

/// The objectives evaluated here: the two a user picks ([`Approximation`],
/// through [`FitcConfig::approximation`]) and PLV, the projected latent
/// variables likelihood of Seeger et al. (2003), also called DTC: VFE's
/// `Gamma = sigma2 I` without its trace term, `-log N(y | 0, Q + sigma2 I)`.
/// No setting picks PLV: it learns pseudo-inputs poorly by gradients (the
/// SPGP paper's Figure 1, which `crate::demo` reproduces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Objective {
    /// SPGP's likelihood.
    Fitc,
    /// Titsias' bound.
    Vfe,
    /// The PLV (DTC) likelihood.
    Plv,
}

impl From<Approximation> for Objective {
    fn from(a: Approximation) -> Self {
        match a {
            Approximation::Fitc => Objective::Fitc,
            Approximation::Vfe => Objective::Vfe,
        }
    }
}

impl Objective {
    /// The approximation whose `Gamma` (and so whose posterior) this
    /// objective uses.
    pub(crate) fn gamma(self) -> Approximation {
        match self {
            Objective::Fitc => Approximation::Fitc,
            Objective::Vfe | Objective::Plv => Approximation::Vfe,
        }
    }
}

/// An objective evaluation, with gradient when asked for.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct FitcValue {
    /// The objective on the full data set: FITC's NLML or VFE's negative
    /// ELBO.
    pub(crate) nlml: f64,
    /// Gradient (features, kernel, noise), if requested.
    pub(crate) grad: Option<ModelGrad>,
    /// How many times the `Kuu` jitter had to be raised (the gradient
    /// checks need none: a finite difference across an escalation is not
    /// a derivative).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) jitter_escalations: u32,
}

/// The adjoints of the objective F with respect to its matrix inputs.
#[derive(Clone, Debug)]
#[cfg(test)]
struct FitcAdjoints {
    /// dF/dKuu (M x M, symmetric; equal to dF/d(Kuu + jitter I)).
    pub kuu: DMatrix<f64>,
    /// dF/dKuf (M x N).
    pub kuf: DMatrix<f64>,
    /// dF/dkdiag (N).
    pub kdiag: DVector<f64>,
    /// dF/dsigma2.
    pub noise_var: f64,
}

/// Per-chunk state kept between the forward and the adjoint pass.
struct Chunk {
    start: usize,
    kuf: DMatrix<f64>,
    v: DMatrix<f64>,
    gamma: DVector<f64>,
    /// An M x rows block the adjoint pass overwrites (a fresh one costs a
    /// zero fill).
    scratch: DMatrix<f64>,
}

/// Everything the forward pass computes.
struct Forward {
    kuu: DMatrix<f64>,
    chol: JitteredCholesky,
    /// `L^{-T}`: see [`lower_inverse`] for why explicit.
    linv_t: DMatrix<f64>,
    la: DMatrix<f64>,
    /// `A^{-1} = L_A^{-T} L_A^{-1}`: one GEMM with it gives both `A^{-1} V`
    /// and (through column dot products) `||L_A^{-1} V_n||^2`.
    ainv: DMatrix<f64>,
    /// `A^{-1} b = V alpha`.
    beta_v: DVector<f64>,
    nlml: f64,
    chunks: Vec<Chunk>,
    objective: Objective,
    sigma2: f64,
    /// `sum_n lambda_n`, for VFE's trace term.
    sum_lambda: f64,
}

fn check_inputs<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
) -> Result<()> {
    if x.nrows() != y.len() || x.nrows() == 0 || x.ncols() != feat.input_dim() {
        return Err(Error::BadInput(format!(
            "FITC: x is {}x{}, y has {} entries, features expect {} dimensions",
            x.nrows(),
            x.ncols(),
            y.len(),
            feat.input_dim()
        )));
    }
    if !kern.is_finite() || feat.params().iter().any(|v| !v.is_finite()) {
        return Err(Error::Numerical("non-finite model parameters".into()));
    }
    Ok(())
}

fn forward<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    cfg: &FitcConfig,
    objective: Objective,
) -> Result<Forward> {
    check_inputs(feat, kern, x, y)?;
    let m = feat.num_inducing();
    let n = x.nrows();
    let sigma2 = kern.noise_var();
    let kuu = feat.kuu(kern);
    let chol = cholesky_jittered(&kuu, kern.signal_var(), &cfg.jitter)?;
    let linv = lower_inverse(&chol.l)?;
    let step = cfg.chunk_rows.max(1);
    let starts: Vec<usize> = (0..n).step_by(step).collect();
    let parts: Vec<(Chunk, PosteriorSums)> = starts
        .par_iter()
        .map(|&start| {
            let len = step.min(n - start);
            let xc = x.rows(start, len);
            let kuf = feat.kuf(kern, xc);
            let v = mul(mat_ref(&linv), mat_ref(&kuf));
            let kd = feat.kdiag(kern, xc);
            let yc = y.rows(start, len);
            let mut gamma = DVector::<f64>::zeros(len);
            // `V Gamma^{-1}`; the adjoint pass reuses its storage.
            let mut scratch = DMatrix::<f64>::zeros(m, len);
            let sums = PosteriorSums::of_whitened(
                &v,
                kd.as_slice(),
                yc.as_slice(),
                sigma2,
                objective.gamma(),
                gamma.as_mut_slice(),
                &mut scratch,
            );
            Ok((
                Chunk {
                    start,
                    kuf,
                    v,
                    gamma,
                    scratch,
                },
                sums,
            ))
        })
        .collect::<Result<_>>()?;
    let mut sums = PosteriorSums::zeros(m);
    let mut chunks = Vec::with_capacity(parts.len());
    for (c, s) in parts {
        sums.merge(&s)?;
        chunks.push(c);
    }
    let Solved { la, beta_v, nlml } = sums.solve(objective.gamma(), sigma2)?;
    let lainv = lower_inverse(&la)?;
    let sum_lambda = sums.sum_lambda;
    // PLV is VFE's Gamma without the trace term `solve` added.
    let nlml = match objective {
        Objective::Plv => nlml - 0.5 * sum_lambda / sigma2,
        Objective::Fitc | Objective::Vfe => nlml,
    };
    Ok(Forward {
        kuu,
        chol,
        linv_t: linv.transpose(),
        la,
        ainv: symmetrise(mul(mat_ref(&lainv).transpose(), mat_ref(&lainv))),
        beta_v,
        nlml,
        chunks,
        objective,
        sigma2,
        sum_lambda,
    })
}

/// One chunk's adjoints: `dF/dKuf` columns, `dF/dkdiag`, its share of
/// `H V^T` and of `sum w`. Consumes the chunk: `dF/dKuf` is written over
/// `V` and `H` over the scratch block.
struct ChunkAdjoint {
    kuf: DMatrix<f64>,
    adj_kuf: DMatrix<f64>,
    adj_kdiag: DVector<f64>,
    hvt: DMatrix<f64>,
    half_sum_w: f64,
}

fn chunk_adjoint(fw: &Forward, c: Chunk, y: &DVector<f64>) -> ChunkAdjoint {
    let Chunk {
        start,
        kuf,
        mut v,
        gamma,
        scratch: mut h,
    } = c;
    let (m, len) = v.shape();
    let yc = &y.as_slice()[start..start + len];
    let beta = fw.beta_v.as_slice();
    // h = A^{-1} V; turned into H in place, column by column.
    matmul_into(
        h.as_mut_slice(),
        m,
        false,
        mat_ref(&fw.ainv),
        mat_ref(&v),
        1.0,
    );
    let mut adj_kdiag = DVector::<f64>::zeros(len);
    let mut sum_w = 0.0;
    let columns = h
        .as_mut_slice()
        .chunks_exact_mut(m)
        .zip(v.as_slice().chunks_exact(m));
    for (i, (col, vcol)) in columns.enumerate() {
        let g = gamma[i];
        let alpha = (yc[i] - dot(vcol, beta)) / g;
        let w = 1.0 / g - dot(vcol, col) / (g * g) - alpha * alpha;
        // The weight `d` of `- V diag(d)` in H (module docs).
        let d = match fw.objective {
            Objective::Fitc => w,
            Objective::Vfe => 1.0 / fw.sigma2,
            Objective::Plv => 0.0,
        };
        let inv_g = 1.0 / g;
        for ((o, b), v) in col.iter_mut().zip(beta).zip(vcol) {
            *o = *o * inv_g - alpha * b - d * v;
        }
        adj_kdiag[i] = 0.5 * d;
        sum_w += w;
    }
    let hvt = mul(mat_ref(&h), mat_ref(&v).transpose());
    matmul_into(
        v.as_mut_slice(),
        m,
        false,
        mat_ref(&fw.linv_t),
        mat_ref(&h),
        1.0,
    );
    ChunkAdjoint {
        kuf,
        adj_kuf: v,
        adj_kdiag,
        hvt,
        half_sum_w: 0.5 * sum_w,
    }
}

/// `dF/dK` from the summed `H V^T`.
fn kuu_adjoint(fw: &Forward, hvt: &DMatrix<f64>) -> Result<DMatrix<f64>> {
    Ok(sandwich_inv_factor(&fw.chol.l, &symmetrise(hvt.clone()))? * -0.5)
}

/// `dF/dsigma2` from the summed `sum w / 2`: VFE's trace term depends on
/// `sigma2` directly, FITC and PLV have no such term.
fn noise_adjoint(fw: &Forward, half_sum_w: f64) -> f64 {
    match fw.objective {
        Objective::Fitc | Objective::Plv => half_sum_w,
        Objective::Vfe => half_sum_w - 0.5 * fw.sum_lambda / (fw.sigma2 * fw.sigma2),
    }
}

/// The objective only (cheaper than with the gradient: one pass over the
/// data).
#[cfg(test)]
pub(crate) fn fitc_nlml<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    cfg: &FitcConfig,
) -> Result<FitcValue> {
    objective_value(feat, kern, x, y, cfg, cfg.approximation.into())
}

/// [`fitc_nlml`] of any [`Objective`] (`cfg.approximation` is ignored).
#[cfg(test)]
pub(crate) fn objective_value<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    cfg: &FitcConfig,
    objective: Objective,
) -> Result<FitcValue> {
    let fw = forward(feat, kern, x, y, cfg, objective)?;
    Ok(FitcValue {
        nlml: fw.nlml,
        grad: None,
        jitter_escalations: fw.chol.escalations,
    })
}

/// The objective and its gradient with respect to the feature's parameters,
/// the kernel's log hyperparameters and `log_noise_excess`.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn fitc_nlml_grad<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    cfg: &FitcConfig,
) -> Result<FitcValue> {
    objective_grad(feat, kern, x, y, cfg, cfg.approximation.into())
}

/// [`fitc_nlml_grad`] of any [`Objective`] (`cfg.approximation` is
/// ignored).
pub(crate) fn objective_grad<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    cfg: &FitcConfig,
    objective: Objective,
) -> Result<FitcValue> {
    let mut fw = forward(feat, kern, x, y, cfg, objective)?;
    let m = feat.num_inducing();
    // Summed in chunk order, whatever thread ran which chunk: the gradient
    // is the same bit for bit from run to run.
    let parts = std::mem::take(&mut fw.chunks)
        .into_par_iter()
        .map(|c| {
            let xc = x.rows(c.start, c.gamma.len());
            let adj = chunk_adjoint(&fw, c, y);
            let g = feat.grad_kuf(kern, xc, &adj.kuf, &adj.adj_kuf, &adj.adj_kdiag);
            (g, adj.hvt, adj.half_sum_w)
        })
        .collect::<Vec<_>>();
    let mut fg = FeatureGrad::zeros(feat.num_params(), kern.dim());
    let mut hvt = DMatrix::<f64>::zeros(m, m);
    let mut half_sum_w = 0.0;
    for (g, h, s) in parts {
        fg.add_assign(&g);
        hvt += h;
        half_sum_w += s;
    }
    let adj_k = kuu_adjoint(&fw, &hvt)?;
    fg.add_assign(&feat.grad_kuu(kern, &fw.kuu, &adj_k));
    fg.kernel.log_signal_var += fw.chol.jitter * adj_k.trace();
    Ok(FitcValue {
        nlml: fw.nlml,
        grad: Some(ModelGrad {
            feature: fg.feature,
            kernel: fg.kernel,
            log_noise_excess: noise_adjoint(&fw, half_sum_w) * kern.noise_excess(),
        }),
        jitter_escalations: fw.chol.escalations,
    })
}

/// The objective and the full adjoints (materialising the M x N `dF/dKuf`)
/// of any [`Objective`] (`cfg.approximation` is ignored); for the tests,
/// the gradient path never collects them.
#[cfg(test)]
fn objective_adjoints<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    cfg: &FitcConfig,
    objective: Objective,
) -> Result<(f64, FitcAdjoints)> {
    let mut fw = forward(feat, kern, x, y, cfg, objective)?;
    let (m, n) = (feat.num_inducing(), x.nrows());
    let mut adj_kuf = DMatrix::<f64>::zeros(m, n);
    let mut adj_kdiag = DVector::<f64>::zeros(n);
    let mut hvt = DMatrix::<f64>::zeros(m, m);
    let mut noise = 0.0;
    for c in std::mem::take(&mut fw.chunks) {
        let (start, len) = (c.start, c.gamma.len());
        let a = chunk_adjoint(&fw, c, y);
        adj_kuf.columns_mut(start, len).copy_from(&a.adj_kuf);
        adj_kdiag.rows_mut(start, len).copy_from(&a.adj_kdiag);
        hvt += a.hvt;
        noise += a.half_sum_w;
    }
    Ok((
        fw.nlml,
        FitcAdjoints {
            kuu: kuu_adjoint(&fw, &hvt)?,
            kuf: adj_kuf,
            kdiag: adj_kdiag,
            noise_var: noise_adjoint(&fw, noise),
        },
    ))
}

/// Fits the posterior of `cfg.approximation` for the given parameters.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn fitc_posterior<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    cfg: &FitcConfig,
) -> Result<FitcPosterior> {
    let fw = forward(feat, kern, x, y, cfg, cfg.approximation.into())?;
    let beta = solve_lower_t_vec(&fw.chol.l, &fw.beta_v)?;
    let l2 = mul(mat_ref(&fw.chol.l), mat_ref(&fw.la));
    Ok(FitcPosterior {
        l1: fw.chol.l,
        l2,
        beta,
        kuu_jitter: fw.chol.jitter,
        jitter_escalations: fw.chol.escalations,
        nlml: fw.nlml,
    })
}

impl FitcPosterior {
    /// Predictive mean and latent variance at the rows of `xs`:
    /// `var = kdiag - ||L1^{-1} k||^2 + ||L2^{-1} k||^2`.
    pub fn predict<F: InducingFeatures + ?Sized>(
        &self,
        feat: &F,
        kern: &KernelParams,
        xs: &DMatrix<f64>,
    ) -> Result<Prediction> {
        if xs.ncols() != feat.input_dim() || feat.num_inducing() != self.beta.len() {
            return Err(Error::BadInput(format!(
                "prediction inputs have {} columns, features expect {}",
                xs.ncols(),
                feat.input_dim()
            )));
        }
        let k = feat.kuf(kern, xs.as_view());
        let mean = k.tr_mul(&self.beta);
        let mut v1 = k.clone();
        solve_lower_mut(&self.l1, &mut v1)?;
        let mut v2 = k;
        solve_lower_mut(&self.l2, &mut v2)?;
        let kd = feat.kdiag(kern, xs.as_view());
        let var = kd - col_sq_norms(&v1) + col_sq_norms(&v2);
        Ok(Prediction {
            mean,
            var: var.map(|v| v.max(0.0)),
            noise_var: kern.noise_var(),
        })
    }

    /// The runtime form (MATH.md): the feature's basis, `beta`, `L1`, `L2`,
    /// prior `s2`, noise `sigma2`.
    pub fn runtime_form<F: InducingFeatures + ?Sized>(
        &self,
        feat: &F,
        kern: &KernelParams,
    ) -> RuntimeForm {
        RuntimeForm {
            basis: feat.runtime_basis(kern),
            beta: self.beta.clone(),
            l1: self.l1.clone(),
            l2: Some(self.l2.clone()),
            prior: kern.signal_var(),
            noise_var: kern.noise_var(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::f64::consts::PI;

    use super::*;
    use crate::model::features::PseudoInputs;
    use crate::model::inference::exact::exact_posterior;
    use crate::model::inference::test_util::{assert_grad_close, fd_grad, problem};
    use crate::model::inference::Approximation::{Fitc, Vfe};
    use crate::model::kernel::DEFAULT_NOISE_FLOOR;
    use crate::numerics::linalg::JitterPolicy;

    const D: usize = 2;

    fn setup(seed: u64, n: usize, m: usize) -> (DMatrix<f64>, DVector<f64>, PseudoInputs) {
        let (x, y) = problem(seed, n, D);
        // Pseudo-inputs on a spread of data points, nudged off them so no
        // gamma_n sits exactly at sigma2.
        let z = DMatrix::from_fn(m, D, |i, d| x[(i * n / m, d)] + 0.05 * (d as f64 + 1.0));
        (x, y, PseudoInputs::new(z).expect("valid"))
    }

    /// Parameter vector: pseudo-inputs, log l, log s2, log noise excess.
    fn unpack(p: &[f64], f: &PseudoInputs) -> (PseudoInputs, KernelParams) {
        unpack_with(p, f, sgp_runtime::Kernel::SquaredExponential)
    }

    fn unpack_with(
        p: &[f64],
        f: &PseudoInputs,
        kernel: sgp_runtime::Kernel,
    ) -> (PseudoInputs, KernelParams) {
        let nz = f.num_params();
        let mut f = f.clone();
        f.set_params(&p[..nz]).expect("length");
        let k = KernelParams {
            log_lengthscales: p[nz..nz + D].to_vec(),
            log_signal_var: p[nz + D],
            log_noise_excess: p[nz + D + 1],
            noise_floor: DEFAULT_NOISE_FLOOR,
            kernel,
        };
        (f, k)
    }

    fn config(approximation: Approximation) -> FitcConfig {
        FitcConfig {
            approximation,
            ..FitcConfig::default()
        }
    }

    fn check_gradient(
        objective: Objective,
        seed: u64,
        extra: &[f64],
        chunk_rows: usize,
        jitter_eps: f64,
    ) {
        let (x, y, f) = setup(seed, 36, 5);
        let cfg = FitcConfig {
            chunk_rows,
            jitter: JitterPolicy {
                initial: jitter_eps,
                ..JitterPolicy::default()
            },
            approximation: objective.gamma(),
        };
        let mut p = f.params();
        p.extend_from_slice(extra);
        let (f0, k0) = unpack(&p, &f);
        let v = objective_grad(&f0, &k0, &x, &y, &cfg, objective).expect("ok");
        assert_eq!(v.jitter_escalations, 0);
        let g = v.grad.expect("asked");
        let mut ana = g.feature.clone();
        ana.extend_from_slice(&g.kernel.log_lengthscales);
        ana.push(g.kernel.log_signal_var);
        ana.push(g.log_noise_excess);
        let obj = |q: &[f64]| {
            let (fq, kq) = unpack(q, &f);
            objective_value(&fq, &kq, &x, &y, &cfg, objective)
                .expect("ok")
                .nlml
        };
        let num = fd_grad(obj, &p, 1e-5);
        assert_grad_close(&num, &ana, 1e-6);
        // The value must not depend on the chunking: compare against one
        // row per chunk, or one chunk for all rows when the case itself
        // uses single rows, so two different chunkings always meet.
        let other = if chunk_rows == 1 { x.nrows() } else { 1 };
        let again = objective_value(
            &f0,
            &k0,
            &x,
            &y,
            &FitcConfig {
                chunk_rows: other,
                ..cfg
            },
            objective,
        )
        .expect("ok");
        assert!((again.nlml - v.nlml).abs() < 1e-10 * v.nlml.abs());
    }

    fn gradient_cases(objective: Objective) {
        let check = |seed, extra: &[f64], chunk_rows, jitter_eps| {
            check_gradient(objective, seed, extra, chunk_rows, jitter_eps)
        };
        check(21, &[0.2, -0.3, 0.3, -2.0], 7, 1e-8);
        check(22, &[-0.4, 0.5, -0.2, -4.0], 1024, 1e-8);
        // Noise close to the floor: the regime FITC drifts into.
        check(23, &[0.1, 0.1, 0.0, -12.0], 10, 1e-8);
        // A jitter large enough for its `log s2` derivative to matter.
        check(24, &[0.3, 0.2, 0.1, -3.0], 9, 1e-3);
        // One row per chunk.
        check(25, &[-0.1, 0.2, 0.2, -2.5], 1, 1e-8);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        gradient_cases(Objective::Fitc);
    }

    /// FITC and VFE with each Matérn kernel: every gradient, pseudo-inputs
    /// included, against central differences, with one pseudo-input
    /// exactly on a data point (Matérn 1/2's kink: its symmetric
    /// derivative is the central difference, and never NaN).
    #[test]
    fn matern_gradients_match_finite_differences_even_on_a_data_point() {
        use sgp_runtime::Kernel;
        for approximation in [Fitc, Vfe] {
            for kernel in [Kernel::Matern12, Kernel::Matern32, Kernel::Matern52] {
                let (x, y, f) = setup(31, 36, 5);
                let mut z = f.z().clone();
                for d in 0..D {
                    z[(1, d)] = x[(7, d)];
                }
                let f = PseudoInputs::new(z).expect("valid");
                let cfg = config(approximation);
                let mut p = f.params();
                p.extend_from_slice(&[0.2, -0.3, 0.3, -2.0]);
                let (f0, k0) = unpack_with(&p, &f, kernel);
                let g = fitc_nlml_grad(&f0, &k0, &x, &y, &cfg)
                    .expect("ok")
                    .grad
                    .expect("asked");
                let mut ana = g.feature.clone();
                ana.extend_from_slice(&g.kernel.log_lengthscales);
                ana.push(g.kernel.log_signal_var);
                ana.push(g.log_noise_excess);
                assert!(ana.iter().all(|v| v.is_finite()), "{kernel:?}");
                let obj = |q: &[f64]| {
                    let (fq, kq) = unpack_with(q, &f, kernel);
                    fitc_nlml(&fq, &kq, &x, &y, &cfg).expect("ok").nlml
                };
                // Near Matérn 1/2's kink the objective has `h |h|` terms,
                // odd, so the central difference carries an O(h) error.
                let step = if kernel == Kernel::Matern12 {
                    1e-7
                } else {
                    1e-5
                };
                let num = fd_grad(obj, &p, step);
                assert_grad_close(&num, &ana, 1e-6);
            }
        }
    }

    #[test]
    fn vfe_gradient_matches_finite_differences() {
        gradient_cases(Objective::Vfe);
    }

    #[test]
    fn plv_gradient_matches_finite_differences() {
        gradient_cases(Objective::Plv);
    }

    /// Checks the matrix-level adjoints directly against a dense evaluation
    /// of the objective as a function of (Kuu, Kuf, kdiag, sigma2).
    fn check_adjoints(objective: Objective) {
        let (x, y, f) = setup(24, 20, 4);
        let kern = KernelParams::new(&[0.9, 1.2], 1.1, 0.05).expect("valid");
        let cfg = config(objective.gamma());
        let (nlml, adj) = objective_adjoints(&f, &kern, &x, &y, &cfg, objective).expect("ok");
        let kuu0 = f.kuu(&kern);
        let jitter = cfg.jitter.initial * kern.signal_var();
        let kuf0 = f.kuf(&kern, x.as_view());
        let dense = |kuu: &DMatrix<f64>, kuf: &DMatrix<f64>, kd: &DVector<f64>, s2n: f64| {
            let mut k = kuu.clone();
            for i in 0..k.nrows() {
                k[(i, i)] += jitter;
            }
            let q = kuf.transpose() * k.try_inverse().expect("inv") * kuf;
            let mut c = q.clone();
            let mut trace = 0.0;
            for i in 0..c.nrows() {
                match objective {
                    // -log N(y | 0, Q - diag(Q) + diag(kdiag) + s2 I)
                    Objective::Fitc => c[(i, i)] = kd[i] + s2n,
                    // -log N(y | 0, Q + s2 I) + tr(Kff - Q) / (2 s2)
                    Objective::Vfe => {
                        c[(i, i)] += s2n;
                        trace += (kd[i] - q[(i, i)]) / (2.0 * s2n);
                    }
                    // -log N(y | 0, Q + s2 I)
                    Objective::Plv => c[(i, i)] += s2n,
                }
            }
            let ci = c.clone().try_inverse().expect("inv");
            0.5 * (y.transpose() * ci * &y)[0]
                + 0.5 * libm::log(c.determinant())
                + 0.5 * y.len() as f64 * libm::log(2.0 * PI)
                + trace
        };
        let kd0 = DVector::from_element(20, kern.signal_var());
        let s0 = kern.noise_var();
        assert!((dense(&kuu0, &kuf0, &kd0, s0) - nlml).abs() < 1e-9 * nlml.abs());
        let h = 1e-6;
        let tol = 1e-6;
        for &(i, j) in &[(0, 0), (1, 3), (3, 2)] {
            // Symmetric perturbation: the adjoint of a symmetric matrix
            // counts both (i, j) and (j, i).
            let mut kp = kuu0.clone();
            let mut km = kuu0.clone();
            kp[(i, j)] += h;
            km[(i, j)] -= h;
            if i != j {
                kp[(j, i)] += h;
                km[(j, i)] -= h;
            }
            let num = (dense(&kp, &kuf0, &kd0, s0) - dense(&km, &kuf0, &kd0, s0)) / (2.0 * h);
            let ana = if i == j {
                adj.kuu[(i, i)]
            } else {
                2.0 * adj.kuu[(i, j)]
            };
            assert!(
                (num - ana).abs() < tol * (1.0 + ana.abs()),
                "Kuu {i},{j}: {num} vs {ana}"
            );
        }
        for &(i, n) in &[(0, 0), (2, 7), (3, 19)] {
            let mut kp = kuf0.clone();
            let mut km = kuf0.clone();
            kp[(i, n)] += h;
            km[(i, n)] -= h;
            let num = (dense(&kuu0, &kp, &kd0, s0) - dense(&kuu0, &km, &kd0, s0)) / (2.0 * h);
            let ana = adj.kuf[(i, n)];
            assert!(
                (num - ana).abs() < tol * (1.0 + ana.abs()),
                "Kuf {i},{n}: {num} vs {ana}"
            );
        }
        for &n in &[0, 11] {
            let mut kp = kd0.clone();
            let mut km = kd0.clone();
            kp[n] += h;
            km[n] -= h;
            let num = (dense(&kuu0, &kuf0, &kp, s0) - dense(&kuu0, &kuf0, &km, s0)) / (2.0 * h);
            assert!((num - adj.kdiag[n]).abs() < tol * (1.0 + adj.kdiag[n].abs()));
        }
        let num =
            (dense(&kuu0, &kuf0, &kd0, s0 + h) - dense(&kuu0, &kuf0, &kd0, s0 - h)) / (2.0 * h);
        assert!(
            (num - adj.noise_var).abs() < tol * (1.0 + adj.noise_var.abs()),
            "sigma2: {num} vs {}",
            adj.noise_var
        );
    }

    #[test]
    fn adjoints_match_finite_differences_of_the_matrices() {
        check_adjoints(Objective::Fitc);
    }

    #[test]
    fn vfe_adjoints_match_finite_differences_of_the_matrices() {
        check_adjoints(Objective::Vfe);
    }

    #[test]
    fn plv_adjoints_match_finite_differences_of_the_matrices() {
        check_adjoints(Objective::Plv);
    }

    fn check_equals_exact_gp(approximation: Approximation) {
        let (x, y) = problem(25, 20, D);
        let kern = KernelParams::new(&[0.8, 1.3], 1.4, 0.05).expect("valid");
        let tiny = JitterPolicy {
            initial: 1e-13,
            ..JitterPolicy::default()
        };
        let cfg = FitcConfig {
            jitter: tiny,
            chunk_rows: 6,
            approximation,
        };
        let f = PseudoInputs::new(x.clone()).expect("valid");
        let fitc = fitc_posterior(&f, &kern, &x, &y, &cfg).expect("ok");
        let exact = exact_posterior(&kern, &x, &y, &tiny).expect("ok");
        let rel = |a: f64, b: f64| (a - b).abs() / b.abs().max(1e-3);
        assert!(
            rel(fitc.nlml, exact.nlml()) < 1e-6,
            "{} vs {}",
            fitc.nlml,
            exact.nlml()
        );
        let (xs, _) = problem(26, 15, D);
        let a = fitc.predict(&f, &kern, &xs).expect("ok");
        let b = exact.predict(&xs).expect("ok");
        for i in 0..15 {
            assert!(rel(a.mean[i], b.mean[i]) < 1e-6, "mean {i}");
            assert!(
                rel(a.var[i], b.var[i]) < 1e-6,
                "var {i}: {} vs {}",
                a.var[i],
                b.var[i]
            );
        }
    }

    #[test]
    fn equals_exact_gp_with_pseudo_inputs_on_the_data() {
        check_equals_exact_gp(Fitc);
    }

    #[test]
    fn vfe_equals_exact_gp_with_pseudo_inputs_on_the_data() {
        check_equals_exact_gp(Vfe);
    }

    #[test]
    fn vfe_bounds_the_exact_nlml_and_tightens_with_more_inducing_points() {
        // Titsias' bound: F >= exact NLML for any pseudo-inputs, and adding
        // pseudo-inputs (nested sets) can only lower F. A tiny jitter keeps
        // the jitter's own effect on F far below the gaps being compared.
        let n = 40;
        let tiny = JitterPolicy {
            initial: 1e-10,
            ..JitterPolicy::default()
        };
        let cfg = FitcConfig {
            jitter: tiny,
            ..config(Vfe)
        };
        for (seed, ls, s2, noise) in [
            (31, [0.8, 1.3], 1.4, 0.05),
            (32, [0.4, 0.6], 0.7, 0.01),
            (33, [1.5, 2.0], 2.0, 0.3),
        ] {
            let (x, y) = problem(seed, n, D);
            let kern = KernelParams::new(&ls, s2, noise).expect("valid");
            let exact = exact_posterior(&kern, &x, &y, &tiny).expect("ok").nlml();
            let mut last = f64::INFINITY;
            for m in [2, 5, 10, 20] {
                // Every 4th, then every 2nd... data point nudged off it: the
                // sets are nested.
                let z =
                    DMatrix::from_fn(m, D, |i, d| x[(i * (n / m), d)] + 0.05 * (d as f64 + 1.0));
                let f = PseudoInputs::new(z).expect("valid");
                let vfe = fitc_nlml(&f, &kern, &x, &y, &cfg).expect("ok").nlml;
                assert!(vfe > exact, "seed {seed}, M {m}: {vfe} < exact {exact}");
                assert!(vfe < last, "seed {seed}, M {m}: {vfe} >= {last}");
                last = vfe;
            }
        }
    }

    #[test]
    fn variance_far_from_data_tends_to_prior_plus_noise() {
        for approximation in [Fitc, Vfe] {
            check_variance_far_and_near(approximation);
        }
    }

    fn check_variance_far_and_near(approximation: Approximation) {
        let (x, y, f) = setup(27, 30, 5);
        let kern = KernelParams::new(&[0.7, 0.9], 1.6, 0.03).expect("valid");
        let post = fitc_posterior(&f, &kern, &x, &y, &config(approximation)).expect("ok");
        let far = DMatrix::from_row_slice(2, D, &[40.0, -40.0, -1e3, 5.0]);
        let p = post.predict(&f, &kern, &far).expect("ok");
        let want = kern.signal_var() + kern.noise_var();
        for (v, m) in p.var_y().iter().zip(p.mean.iter()) {
            assert!((v - want).abs() < 1e-12 * want, "{v} vs {want}");
            assert!(m.abs() < 1e-12);
        }
        // Near the data the variance is far below the prior plus noise: at
        // every pseudo-input and at the data points they were placed beside
        // (elsewhere the training inputs can be as far from every
        // pseudo-input as `far` is, in units of the length scales).
        let at_z = post.predict(&f, &kern, f.z()).expect("ok").var_y();
        let beside = DMatrix::from_fn(5, D, |i, d| x[(i * 30 / 5, d)]);
        let at_x = post.predict(&f, &kern, &beside).expect("ok").var_y();
        for v in at_z.iter().chain(at_x.iter()) {
            assert!(*v < 0.1 * want, "{approximation:?}: {v} vs {want}");
        }
    }

    fn check_runtime_form(approximation: Approximation) {
        let (x, y, f) = setup(28, 40, 6);
        let kern = KernelParams::new(&[0.6, 1.1], 0.9, 0.02).expect("valid");
        let post = fitc_posterior(&f, &kern, &x, &y, &config(approximation)).expect("ok");
        let (xs, _) = problem(29, 12, D);
        let a = post.predict(&f, &kern, &xs).expect("ok");
        let b = post.runtime_form(&f, &kern).predict(&xs).expect("ok");
        assert!((&a.mean - &b.mean).amax() < 1e-10);
        assert!((&a.var - &b.var).amax() < 1e-10);
        assert_eq!(a.noise_var, b.noise_var);
    }

    #[test]
    fn runtime_form_reproduces_predictions() {
        check_runtime_form(Fitc);
    }

    #[test]
    fn vfe_runtime_form_reproduces_predictions() {
        check_runtime_form(Vfe);
    }

    /// `beta = Q^{-1} Kuf Gamma^{-1} y` and
    /// `var = kdiag - k^T K^{-1} k + k^T Q^{-1} k`, `Q = K + Kuf Gamma^{-1} Kfu`,
    /// computed densely with the approximation's own `Gamma`.
    fn check_dense_posterior(approximation: Approximation) {
        let (x, y, f) = setup(30, 25, 4);
        let kern = KernelParams::new(&[0.9, 0.8], 1.2, 0.04).expect("valid");
        let post = fitc_posterior(&f, &kern, &x, &y, &config(approximation)).expect("ok");
        let mut kuu = f.kuu(&kern);
        for i in 0..4 {
            kuu[(i, i)] += post.kuu_jitter;
        }
        let kuf = f.kuf(&kern, x.as_view());
        let kinv = kuu.clone().try_inverse().expect("inv");
        let gamma = DVector::from_fn(25, |n, _| match approximation {
            Fitc => {
                kern.signal_var() - (kuf.column(n).transpose() * &kinv * kuf.column(n))[0]
                    + kern.noise_var()
            }
            Vfe => kern.noise_var(),
        });
        let kg = DMatrix::from_fn(4, 25, |i, n| kuf[(i, n)] / gamma[n]);
        let qinv = (&kuu + &kg * kuf.transpose()).try_inverse().expect("inv");
        let beta = &qinv * &kg * &y;
        assert!((&beta - &post.beta).amax() < 1e-8 * beta.amax());
        let (xs, _) = problem(31, 10, D);
        let ks = f.kuf(&kern, xs.as_view());
        let got = post.predict(&f, &kern, &xs).expect("ok");
        for (i, k) in ks.column_iter().enumerate() {
            let var =
                kern.signal_var() - (k.transpose() * &kinv * k)[0] + (k.transpose() * &qinv * k)[0];
            assert!(
                (var - got.var[i]).abs() < 1e-8 * kern.signal_var(),
                "{approximation:?} var {i}: {var} vs {}",
                got.var[i]
            );
        }
    }

    #[test]
    fn mean_matches_dense_formula() {
        check_dense_posterior(Fitc);
    }

    #[test]
    fn vfe_mean_and_variance_match_dense_formula() {
        check_dense_posterior(Vfe);
    }
}
