//! The sparse variational GP classifier (Hensman, Matthews and Ghahramani
//! 2015): a Gaussian `q(u)` over the inducing values, the probit likelihood
//! `P(y | f) = Phi(y (f + b))`, and the negative evidence lower bound
//! written once for any `InducingFeatures`, with its gradient with respect
//! to the variational parameters, the bias, the features and the kernel.
//!
//! Whitened, as GPflow's `SVGP(whiten=True)`: `u = Lu v`, `q(v) = N(m, L L^T)`
//! (`L`'s diagonal through its logarithm), the bound
//! `F = -sum_n E_q[log Phi(y_n (f_n + b))] + KL(q(v) || p(v))`, the
//! expectations by Gauss-Hermite quadrature differentiated exactly
//! (docs/src/classification.md, "svgp"). The runtime form's variance factor
//! is `L2 = Lu R^T` from the QR factorisation `L^{-1} = Q R`, so no product
//! that squares `cond(S)` is factorised. Rows run in parallel chunks of
//! `SvgpConfig::chunk_rows`, summed in chunk order: the result does not
//! depend on the thread count.

use std::sync::OnceLock;

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use super::objective::ParamLayout;
use super::{sandwich_inv_factor, ModelGrad, RuntimeForm};
use crate::model::features::{FeatureGrad, InducingFeatures};
use crate::model::kernel::{KernelGrad, KernelParams};
use crate::model::likelihood::log_norm_cdf_and_ratio;
use crate::numerics::linalg::{
    cholesky_jittered, lower_inverse, mat_ref, mirror_lower, mul, mul_triangular,
    solve_lower_t_mut, JitterPolicy, Triangle,
};
use crate::{Error, Result};

/// Gauss-Hermite nodes per expectation: `log Phi` against a Gaussian to
/// within 2e-5 nats for latent variances up to 4.
pub(crate) const QUADRATURE_POINTS: usize = 12;

/// Smallest marginal variance the quadrature is evaluated at: the nodes
/// collapse onto the mean below it, and the variance derivative divides by
/// its square root.
const MIN_MARGINAL_VAR: f64 = 1e-12;

/// Default [`SvgpConfig::chunk_rows`]: small enough to keep both cores of
/// a 600-row set busy and the allocator from returning the blocks.
pub(crate) const CHUNK_ROWS: usize = 128;

/// Numerical settings of the bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SvgpConfig {
    /// Jitter added to `Kuu` (relative to `s2`) and its escalation.
    pub jitter: JitterPolicy,
    /// Most rows of data per parallel chunk; the rows are split into
    /// chunks of equal size (within one row).
    pub chunk_rows: usize,
}

impl Default for SvgpConfig {
    fn default() -> Self {
        SvgpConfig {
            jitter: JitterPolicy::default(),
            chunk_rows: CHUNK_ROWS,
        }
    }
}

/// Independent Gaussian priors on every `log l_d` (standardised units),
/// added to the negative bound by [`SvgpObjective::with_lengthscale_prior`]:
/// the objective becomes the negative bound plus
/// `sum_d (log l_d - centres_d)^2 / (2 sd^2)`, a MAP fit of the length
/// scales.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LengthscalePrior {
    /// Prior mean of each `log l_d`, one per input.
    pub centres: Vec<f64>,
    /// Prior standard deviation of every `log l_d`.
    pub sd: f64,
}

impl LengthscalePrior {
    /// The prior's negative log density (up to a constant) at `kernel`,
    /// its gradient added into `grad`.
    fn penalty(&self, kernel: &KernelParams, grad: &mut KernelGrad) -> f64 {
        let precision = self.sd.powi(-2);
        let mut value = 0.0;
        for ((d, log_l), centre) in grad
            .log_lengthscales
            .iter_mut()
            .zip(&kernel.log_lengthscales)
            .zip(&self.centres)
        {
            let gap = log_l - centre;
            value += 0.5 * gap * gap * precision;
            *d += gap * precision;
        }
        value
    }
}

/// The variational distribution `q(v) = N(mean, sqrt sqrt^T)` over the
/// whitened inducing values, and the probit bias `b`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Variational {
    /// `m` (M).
    pub mean: DVector<f64>,
    /// `L` (M x M, lower triangular, positive diagonal).
    pub sqrt: DMatrix<f64>,
    /// The probit's bias `b`.
    pub bias: f64,
}

impl Variational {
    /// The prior: `m = 0`, `S = I`, with bias `bias`.
    pub fn prior(m: usize, bias: f64) -> Self {
        Variational {
            mean: DVector::zeros(m),
            sqrt: DMatrix::identity(m, m),
            bias,
        }
    }

    /// Number of free parameters: bias, `m`, the lower triangle of `L`.
    pub(crate) fn num_params(m: usize) -> usize {
        1 + m + m * (m + 1) / 2
    }

    /// Packs `[b | m | L row by row, lower triangle, log of the diagonal]`.
    pub fn params(&self) -> Vec<f64> {
        let m = self.mean.len();
        let mut p = Vec::with_capacity(Self::num_params(m));
        p.push(self.bias);
        p.extend(self.mean.iter());
        for i in 0..m {
            for j in 0..i {
                p.push(self.sqrt[(i, j)]);
            }
            p.push(libm::log(self.sqrt[(i, i)]));
        }
        p
    }

    /// The inverse of [`Self::params`] for `m` inducing values.
    ///
    /// # Errors
    /// [`Error::Numerical`] for a slice of the wrong length.
    pub(crate) fn from_params(m: usize, p: &[f64]) -> Result<Self> {
        if p.len() != Self::num_params(m) {
            return Err(Error::Numerical(format!(
                "variational parameters: expected {}, got {}",
                Self::num_params(m),
                p.len()
            )));
        }
        let mut sqrt = DMatrix::zeros(m, m);
        let mut k = 1 + m;
        for i in 0..m {
            for j in 0..i {
                sqrt[(i, j)] = p[k];
                k += 1;
            }
            sqrt[(i, i)] = libm::exp(p[k]);
            k += 1;
        }
        Ok(Variational {
            bias: p[0],
            mean: DVector::from_column_slice(&p[1..=m]),
            sqrt,
        })
    }

    /// A gradient with respect to `(b, m, L)` in the packing of
    /// [`Self::params`] (the diagonal through its logarithm).
    fn pack_grad(&self, bias: f64, mean: &DVector<f64>, sqrt: &DMatrix<f64>) -> Vec<f64> {
        let m = self.mean.len();
        let mut g = Vec::with_capacity(Self::num_params(m));
        g.push(bias);
        g.extend(mean.iter());
        for i in 0..m {
            for j in 0..i {
                g.push(sqrt[(i, j)]);
            }
            g.push(sqrt[(i, i)] * self.sqrt[(i, i)]);
        }
        g
    }

    /// `KL(N(m, L L^T) || N(0, I))`.
    pub(crate) fn kl(&self) -> f64 {
        let m = self.mean.len() as f64;
        let log_diag: f64 = self.sqrt.diagonal().iter().map(|v| libm::log(*v)).sum();
        0.5 * (self.sqrt.norm_squared() + self.mean.norm_squared() - m) - log_diag
    }
}

/// An evaluation of the negative bound.
#[derive(Clone, Debug)]
pub(crate) struct SvgpValue {
    /// `F`, the negative ELBO (nats, whole data set).
    pub neg_elbo: f64,
    /// The gradient, if asked for.
    pub grad: Option<SvgpGrad>,
}

/// `dF` with respect to every parameter.
#[derive(Clone, Debug)]
pub(crate) struct SvgpGrad {
    /// Features and kernel (`log l`, `log s2`).
    pub feature: FeatureGrad,
    /// `(b, m, L)` of each latent in turn, in the packing of
    /// [`Variational::params`].
    pub variational: Vec<f64>,
}

/// Gauss-Hermite nodes and weights for `E[g(f)]`, `f ~ N(0, 1)`:
/// `sum_k w_k g(x_k)` (weights sum to 1), by the Golub-Welsch eigenvalue
/// method on the Jacobi matrix of the probabilists' Hermite polynomials.
pub(crate) fn gauss_hermite() -> &'static (Vec<f64>, Vec<f64>) {
    static NODES: OnceLock<(Vec<f64>, Vec<f64>)> = OnceLock::new();
    NODES.get_or_init(|| {
        let n = QUADRATURE_POINTS;
        let jacobi = DMatrix::from_fn(n, n, |i, j| {
            if i.abs_diff(j) == 1 {
                (i.max(j) as f64).sqrt()
            } else {
                0.0
            }
        });
        let eig = jacobi.symmetric_eigen();
        let mut pairs: Vec<(f64, f64)> = (0..n)
            .map(|k| (eig.eigenvalues[k], eig.eigenvectors[(0, k)].powi(2)))
            .collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        pairs.into_iter().unzip()
    })
}

/// `E[log Phi(y (f + b))]` for `f ~ N(mu, s)` by quadrature, and its
/// derivatives with respect to `mu` (also the one with respect to `b`) and
/// `s`.
pub(crate) fn expected_log_probit(y: f64, mu: f64, s: f64, b: f64) -> (f64, f64, f64) {
    let (nodes, weights) = gauss_hermite();
    let sd = s.max(MIN_MARGINAL_VAR).sqrt();
    let (mut value, mut d_mu, mut d_sd) = (0.0, 0.0, 0.0);
    for (x, w) in nodes.iter().zip(weights) {
        let z = y * (mu + sd * x + b);
        let (log_cdf, ratio) = log_norm_cdf_and_ratio(z);
        let slope = w * y * ratio;
        value += w * log_cdf;
        d_mu += slope;
        d_sd += slope * x;
    }
    (value, d_mu, d_sd / (2.0 * sd))
}

/// The sums one chunk of rows contributes.
struct ChunkSums {
    ell: f64,
    /// Per latent.
    d_bias: Vec<f64>,
    /// Per latent, `dF/dbeta = Kuf g`.
    d_beta: Vec<DVector<f64>>,
    /// Per latent, `dF/dP = Kuf diag(h) Kuf^T`.
    d_p: Vec<DMatrix<f64>>,
    feature: FeatureGrad,
}

/// Checks shapes: data against features, one label column and one
/// variational distribution per latent.
fn check_inputs<F: InducingFeatures + ?Sized>(
    feat: &F,
    qs: &[Variational],
    x: &DMatrix<f64>,
    y: &DMatrix<f64>,
) -> Result<()> {
    let m = feat.num_inducing();
    if x.nrows() != y.nrows() || x.ncols() != feat.input_dim() || y.ncols() != qs.len() {
        return Err(Error::BadInput(format!(
            "x is {}x{}, labels {}x{}, {} latents, features expect {} dimensions",
            x.nrows(),
            x.ncols(),
            y.nrows(),
            y.ncols(),
            qs.len(),
            feat.input_dim()
        )));
    }
    if qs.is_empty() {
        return Err(Error::BadInput("svgp: no latent function".into()));
    }
    if let Some(q) = qs
        .iter()
        .find(|q| q.mean.len() != m || q.sqrt.shape() != (m, m))
    {
        return Err(Error::Numerical(format!(
            "variational distribution of size {} for {m} inducing points",
            q.mean.len()
        )));
    }
    Ok(())
}

/// Which derivatives an evaluation of the bound takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Derivatives {
    /// The value alone.
    None,
    /// With respect to `q(u)` and the biases only (the warm-up of a fit):
    /// the features' and kernel's adjoints are skipped and reported as zero.
    Variational,
    /// With respect to every parameter.
    All,
}

/// Per latent: `beta`, `C` and `P` of [`latent_terms`].
type LatentTerms = (Vec<DVector<f64>>, Vec<DMatrix<f64>>, Vec<DMatrix<f64>>);

/// Per latent, `beta = Lu^{-T} m`, `C = S - I`, `P = Lu^{-T} C Lu^{-1}`: then
/// `mu = Kuf^T beta`, `s = kdiag + diag(Kuf^T P Kuf)` take one M x M product.
fn latent_terms(qs: &[Variational], lu_inv: &DMatrix<f64>) -> LatentTerms {
    let betas: Vec<DVector<f64>> = qs.iter().map(|q| lu_inv.tr_mul(&q.mean)).collect();
    let cs: Vec<DMatrix<f64>> = qs
        .iter()
        .map(|q| {
            let mut c = mirror_lower(mul_triangular(
                (mat_ref(&q.sqrt), Triangle::TriangularLower),
                (mat_ref(&q.sqrt).transpose(), Triangle::TriangularUpper),
                Triangle::TriangularLower,
            ));
            for i in 0..c.nrows() {
                c[(i, i)] -= 1.0;
            }
            c
        })
        .collect();
    let ps: Vec<DMatrix<f64>> = cs
        .iter()
        .map(|c| {
            let c_li = mul_triangular(
                (mat_ref(c), Triangle::Rectangular),
                (mat_ref(lu_inv), Triangle::TriangularLower),
                Triangle::Rectangular,
            );
            mirror_lower(mul_triangular(
                (mat_ref(lu_inv).transpose(), Triangle::TriangularUpper),
                (mat_ref(&c_li), Triangle::Rectangular),
                Triangle::TriangularLower,
            ))
        })
        .collect();
    (betas, cs, ps)
}

/// One chunk's sums (rows `r0..r0 + rows`): each latent's expected log
/// likelihood and, as `wanted`, its derivatives.
fn chunk_sums<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    qs: &[Variational],
    (betas, ps): (&[DVector<f64>], &[DMatrix<f64>]),
    (x, y): (&DMatrix<f64>, &DMatrix<f64>),
    (r0, rows): (usize, usize),
    wanted: Derivatives,
) -> ChunkSums {
    let with_grad = wanted != Derivatives::None;
    let adjoints = wanted == Derivatives::All;
    let xc = x.rows(r0, rows);
    let kuf = feat.kuf(kern, xc);
    let kdiag = feat.kdiag(kern, xc);
    let mut sums = ChunkSums {
        ell: 0.0,
        d_bias: Vec::with_capacity(qs.len()),
        d_beta: Vec::with_capacity(qs.len()),
        d_p: Vec::with_capacity(qs.len()),
        feature: FeatureGrad::zeros(0, 0),
    };
    let mut adj_kuf = DMatrix::zeros(kuf.nrows(), rows);
    let mut h_sum = DVector::zeros(rows);
    for (k, (q, (beta, p))) in qs.iter().zip(betas.iter().zip(ps)).enumerate() {
        let pk = mul(mat_ref(p), mat_ref(&kuf));
        let mu = kuf.tr_mul(beta);
        let mut g = DVector::zeros(rows);
        let mut h = DVector::zeros(rows);
        for n in 0..rows {
            let var = kdiag[n] + kuf.column(n).dot(&pk.column(n));
            let (v, d_mu, d_s) = expected_log_probit(y[(r0 + n, k)], mu[n], var, q.bias);
            sums.ell += v;
            g[n] = -d_mu;
            h[n] = -d_s;
        }
        sums.d_bias.push(g.sum());
        if !with_grad {
            continue;
        }
        sums.d_beta.push(&kuf * &g);
        let mut kuf_h = kuf.clone();
        for (mut col, hn) in kuf_h.column_iter_mut().zip(h.iter()) {
            col *= *hn;
        }
        sums.d_p
            .push(mul(mat_ref(&kuf_h), mat_ref(&kuf).transpose()));
        if !adjoints {
            continue;
        }
        // dF/dKuf = beta g^T + 2 P Kuf diag(h), summed over the latents.
        let mut pk_h = pk;
        for (mut col, hn) in pk_h.column_iter_mut().zip(h.iter()) {
            col *= 2.0 * *hn;
        }
        adj_kuf += pk_h;
        adj_kuf.ger(1.0, beta, &g, 1.0);
        h_sum += h;
    }
    if adjoints {
        sums.feature = feat.grad_kuf(kern, xc, &kuf, &adj_kuf, &h_sum);
    }
    sums
}

/// The negative ELBO at the given parameters, with the derivatives `wanted`
/// asks for: one latent function per column of the -1/+1 labels `y`
/// (N x K), each with its own `q(v_k)` and bias, all on the same inducing
/// features and kernel. `K = 1` is the binary classifier; `K > 2` is one
/// probit latent per class against the rest, the bound the sum of the `K`
/// binary bounds (their features and kernel shared).
///
/// # Errors
/// Shape mismatches, or a `Kuu` that jitter escalation cannot factorise.
pub(crate) fn svgp_objective<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    qs: &[Variational],
    (x, y): (&DMatrix<f64>, &DMatrix<f64>),
    cfg: &SvgpConfig,
    wanted: Derivatives,
) -> Result<SvgpValue> {
    let with_grad = wanted != Derivatives::None;
    let adjoints = wanted == Derivatives::All;
    check_inputs(feat, qs, x, y)?;
    let kuu = feat.kuu(kern);
    let chol = cholesky_jittered(&kuu, kern.signal_var(), &cfg.jitter)?;
    let lu = &chol.l;
    let lu_inv = lower_inverse(lu)?;
    let (betas, cs, ps) = latent_terms(qs, &lu_inv);
    let step = x
        .nrows()
        .div_ceil(x.nrows().div_ceil(cfg.chunk_rows.max(1)).max(1))
        .max(1);
    let starts: Vec<usize> = (0..x.nrows()).step_by(step).collect();
    let chunk = |&r0: &usize| -> ChunkSums {
        let rows = step.min(x.nrows() - r0);
        chunk_sums(feat, kern, qs, (&betas, &ps), (x, y), (r0, rows), wanted)
    };
    let parts: Vec<ChunkSums> = starts.par_iter().map(chunk).collect();
    let ell: f64 = parts.iter().map(|p| p.ell).sum();
    let kl: f64 = qs.iter().map(Variational::kl).sum();
    let neg_elbo = kl - ell;
    if !neg_elbo.is_finite() {
        return Err(Error::Numerical(format!(
            "the variational bound is not finite ({neg_elbo})"
        )));
    }
    let kuu = adjoints.then_some((&kuu, chol.jitter));
    let grad = with_grad
        .then(|| {
            let latents = (betas.as_slice(), cs.as_slice());
            gradient(feat, kern, qs, (lu, &lu_inv), latents, kuu, parts)
        })
        .transpose()?;
    Ok(SvgpValue { neg_elbo, grad })
}

/// Adds the chunks' sums and the KL terms into the gradient, taking
/// `dF/dbeta` and `dF/dP` back to `m`, `L` and, given `Kuu` and its jitter
/// (the features' and kernel's adjoints wanted), `Lu` (`Li = Lu^{-1}`,
/// `C_k = S_k - I`, `beta_k = Li^T m_k`):
///
/// - `dF/dm = Li dF/dbeta + m`,
/// - `dF/dS = D = Li (dF/dP) Li^T`, `dF/dL = tril(2 D L + L - diag(1 / L_ii))`,
/// - `dF/dLu = -tril(sum_k 2 Li^T C_k D_k + beta_k (Li dF/dbeta_k)^T)`,
///   then through the Cholesky factorisation to `dF/dKuu`
///   ([`cholesky_adjoint`]).
///
/// The last is `-tril(Li^T (dF/dLi) Li^T)` for `dF/dLi = sum_k 2 C_k Li
/// (dF/dP_k) + m_k (dF/dbeta_k)^T`, rewritten with `Li dF/dP = D Lu^T` and
/// `Lu^T Li^T = I` to save two `M x M` products.
fn gradient<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    qs: &[Variational],
    (lu, lu_inv): (&DMatrix<f64>, &DMatrix<f64>),
    (betas, cs): (&[DVector<f64>], &[DMatrix<f64>]),
    kuu: Option<(&DMatrix<f64>, f64)>,
    parts: Vec<ChunkSums>,
) -> Result<SvgpGrad> {
    let m = lu.nrows();
    let mut d_bias = vec![0.0; qs.len()];
    let mut d_beta = vec![DVector::zeros(m); qs.len()];
    let mut d_p = vec![DMatrix::zeros(m, m); qs.len()];
    let mut fg = FeatureGrad::zeros(feat.num_params(), kern.dim());
    for p in parts {
        for k in 0..qs.len() {
            d_bias[k] += p.d_bias[k];
            d_beta[k] += &p.d_beta[k];
            d_p[k] += &p.d_p[k];
        }
        if kuu.is_some() {
            fg.add_assign(&p.feature);
        }
    }
    let mut variational = Vec::with_capacity(qs.len() * Variational::num_params(m));
    // sum_k 2 C_k D_k, and sum_k beta_k (Li dF/dbeta_k)^T.
    let mut c_d = DMatrix::zeros(m, m);
    let mut outer = DMatrix::zeros(m, m);
    for (k, q) in qs.iter().enumerate() {
        let li_d_beta = lu_inv * &d_beta[k];
        let li_dp = mul_triangular(
            (mat_ref(lu_inv), Triangle::TriangularLower),
            (mat_ref(&d_p[k]), Triangle::Rectangular),
            Triangle::Rectangular,
        );
        let d_s = mirror_lower(mul_triangular(
            (mat_ref(&li_dp), Triangle::Rectangular),
            (mat_ref(lu_inv).transpose(), Triangle::TriangularUpper),
            Triangle::TriangularLower,
        ));
        let (mut d_sqrt, c_d_s) = rayon::join(
            || {
                let d_s_l = mul_triangular(
                    (mat_ref(&d_s), Triangle::Rectangular),
                    (mat_ref(&q.sqrt), Triangle::TriangularLower),
                    Triangle::TriangularLower,
                );
                d_s_l * 2.0 + &q.sqrt
            },
            || kuu.map(|_| mul(mat_ref(&cs[k]), mat_ref(&d_s))),
        );
        for i in 0..m {
            d_sqrt[(i, i)] -= 1.0 / q.sqrt[(i, i)];
        }
        d_sqrt.fill_upper_triangle(0.0, 1);
        variational.extend(q.pack_grad(d_bias[k], &(&li_d_beta + &q.mean), &d_sqrt));
        if let Some(c_d_s) = c_d_s {
            c_d += c_d_s * 2.0;
        }
        outer.ger(1.0, &betas[k], &li_d_beta, 1.0);
    }
    let Some((kuu, jitter)) = kuu else {
        return Ok(SvgpGrad {
            feature: fg,
            variational,
        });
    };
    let mut d_lu = mul_triangular(
        (mat_ref(lu_inv).transpose(), Triangle::TriangularUpper),
        (mat_ref(&c_d), Triangle::Rectangular),
        Triangle::TriangularLower,
    ) + outer;
    d_lu.neg_mut();
    d_lu.fill_upper_triangle(0.0, 1);
    let adj_kuu = cholesky_adjoint(lu, &d_lu)?;
    fg.add_assign(&feat.grad_kuu(kern, kuu, &adj_kuu));
    fg.kernel.log_signal_var += jitter * adj_kuu.trace();
    Ok(SvgpGrad {
        feature: fg,
        variational,
    })
}

/// `dF/dK` (symmetric) from `dF/dL` (lower triangular) for `L = chol(K)`
/// (Murray 2016): `L^{-T} Phi(L^T dF/dL) L^{-1}`, symmetrised, where `Phi`
/// keeps the lower triangle and halves the diagonal.
pub(crate) fn cholesky_adjoint(l: &DMatrix<f64>, d_l: &DMatrix<f64>) -> Result<DMatrix<f64>> {
    let mut p = mul(mat_ref(l).transpose(), mat_ref(d_l));
    p.fill_upper_triangle(0.0, 1);
    for i in 0..p.nrows() {
        p[(i, i)] *= 0.5;
    }
    sandwich_inv_factor(l, &p)
}

/// The fitted classifier in the runtime form of MATH.md, and how many
/// times the `Kuu` jitter had to be raised.
///
/// # Errors
/// If `Kuu` cannot be factorised or `L` is singular.
pub(crate) fn svgp_runtime_form<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    q: &Variational,
    cfg: &SvgpConfig,
) -> Result<(RuntimeForm, u32)> {
    let chol = cholesky_jittered(&feat.kuu(kern), kern.signal_var(), &cfg.jitter)?;
    let lu = chol.l;
    let mut beta = DMatrix::from_column_slice(q.mean.len(), 1, q.mean.as_slice());
    solve_lower_t_mut(&lu, &mut beta)?;
    // S^{-1} = L^{-T} L^{-1} = R^T Q^T Q R = R^T R with L^{-1} = Q R.
    let r = lower_inverse(&q.sqrt)?.qr().r();
    let mut r_t = r.transpose();
    for (j, mut col) in r_t.column_iter_mut().enumerate() {
        if col[j] < 0.0 {
            col.neg_mut();
        }
    }
    let l2 = mul(mat_ref(&lu), mat_ref(&r_t));
    let mut l2 = l2;
    l2.fill_upper_triangle(0.0, 1);
    Ok((
        RuntimeForm {
            basis: feat.runtime_basis(kern),
            beta: beta.column(0).into_owned(),
            l1: lu,
            l2: Some(l2),
            prior: kern.signal_var(),
            noise_var: 0.0,
        },
        chol.escalations,
    ))
}

/// The marginals `N(mu_n, s_n)` of the latent at the rows of `xs` under
/// `q`, computed directly (not through the runtime form): the reference the
/// runtime form is tested against.
#[cfg(test)]
pub(crate) fn svgp_marginals<F: InducingFeatures + ?Sized>(
    feat: &F,
    kern: &KernelParams,
    q: &Variational,
    xs: &DMatrix<f64>,
    cfg: &SvgpConfig,
) -> Result<(DVector<f64>, DVector<f64>)> {
    let chol = cholesky_jittered(&feat.kuu(kern), kern.signal_var(), &cfg.jitter)?;
    let mut a = feat.kuf(kern, xs.as_view());
    crate::numerics::linalg::solve_lower_mut(&chol.l, &mut a)?;
    let b = q.sqrt.tr_mul(&a);
    let var = feat.kdiag(kern, xs.as_view()) - super::col_sq_norms(&a) + super::col_sq_norms(&b);
    Ok((a.tr_mul(&q.mean), var))
}

/// The negative bound over one feature kind as a function of the flat
/// vector `[feature parameters | log l (free form) | log s2 | q_1 | ... |
/// q_K]` (the first three blocks in [`ParamLayout`]'s packing, without a
/// noise entry; each `q_k = (b, m, L)` in [`Variational::params`]'s).
#[derive(Clone, Debug)]
pub(crate) struct SvgpObjective<'d, F> {
    x: &'d DMatrix<f64>,
    y: &'d DMatrix<f64>,
    feature: F,
    kernel: KernelParams,
    variational: Vec<Variational>,
    layout: ParamLayout,
    config: SvgpConfig,
    prior: Option<LengthscalePrior>,
}

impl<'d, F: InducingFeatures + Clone> SvgpObjective<'d, F> {
    /// An objective starting from `feature`, `kernel` and one
    /// `variational` distribution per column of the labels `y`.
    ///
    /// # Errors
    /// Shape mismatches between the data, the features and `variational`.
    pub fn new(
        (x, y): (&'d DMatrix<f64>, &'d DMatrix<f64>),
        feature: F,
        kernel: KernelParams,
        variational: Vec<Variational>,
        config: SvgpConfig,
    ) -> Result<Self> {
        check_inputs(&feature, &variational, x, y)?;
        let layout = ParamLayout {
            noise: false,
            ..ParamLayout::sparse(&feature, &kernel)
        };
        Ok(SvgpObjective {
            x,
            y,
            feature,
            kernel,
            variational,
            layout,
            config,
            prior: None,
        })
    }

    /// This objective plus the penalty of `prior` on the log length scales
    /// (without one: maximum likelihood).
    ///
    /// # Errors
    /// [`Error::BadInput`] if `prior` does not have one centre per input.
    pub(crate) fn with_lengthscale_prior(mut self, prior: LengthscalePrior) -> Result<Self> {
        if prior.centres.len() != self.kernel.dim() {
            return Err(Error::BadInput(format!(
                "length-scale prior with {} centres for {} inputs",
                prior.centres.len(),
                self.kernel.dim()
            )));
        }
        self.prior = Some(prior);
        Ok(self)
    }

    /// The starting vector.
    pub fn initial(&self) -> Vec<f64> {
        let mut p = self.layout.pack(&self.feature.params(), &self.kernel);
        for q in &self.variational {
            p.extend(q.params());
        }
        p
    }

    /// Entries of the vector before the variational parameters.
    pub(crate) fn n_shared(&self) -> usize {
        self.layout.len()
    }

    /// The model at `p`.
    ///
    /// # Errors
    /// A vector of the wrong length or with non-finite entries.
    pub fn unpack(&self, p: &[f64]) -> Result<(F, KernelParams, Vec<Variational>)> {
        let n = self.layout.len();
        let m = self.feature.num_inducing();
        let per_latent = Variational::num_params(m);
        if p.len() != n + per_latent * self.variational.len() {
            return Err(Error::Numerical(
                "svgp: parameter vector of the wrong length".into(),
            ));
        }
        let mut kern = self.kernel.clone();
        let fp = self.layout.unpack(&p[..n], &mut kern)?;
        let mut feat = self.feature.clone();
        feat.set_params(fp)?;
        let qs = p[n..]
            .chunks(per_latent)
            .map(|c| Variational::from_params(m, c))
            .collect::<Result<Vec<_>>>()?;
        Ok((feat, kern, qs))
    }

    /// The negative bound at `p` with the derivatives `wanted`, plus the
    /// length-scale prior's penalty (its gradient added to the kernel's).
    fn evaluate(&self, p: &[f64], wanted: Derivatives) -> Result<(f64, Option<SvgpGrad>)> {
        let (f, k, qs) = self.unpack(p)?;
        let v = svgp_objective(&f, &k, &qs, (self.x, self.y), &self.config, wanted)?;
        let mut grad = v.grad;
        let mut unused = KernelGrad::zeros(k.dim());
        let kernel_grad = grad.as_mut().map_or(&mut unused, |g| &mut g.feature.kernel);
        let penalty = self
            .prior
            .as_ref()
            .map_or(0.0, |prior| prior.penalty(&k, kernel_grad));
        Ok((v.neg_elbo + penalty, grad))
    }

    /// The negative bound at `p`.
    ///
    /// # Errors
    /// As [`svgp_objective`].
    pub fn value(&self, p: &[f64]) -> Result<f64> {
        Ok(self.evaluate(p, Derivatives::None)?.0)
    }

    /// The negative bound and its gradient at `p`.
    ///
    /// # Errors
    /// As [`svgp_objective`].
    pub fn objective(&self, p: &[f64]) -> Result<(f64, Vec<f64>)> {
        let (value, g) = self.evaluate(p, Derivatives::All)?;
        let g = g.ok_or_else(no_gradient)?;
        let model = ModelGrad {
            feature: g.feature.feature,
            kernel: g.feature.kernel,
            log_noise_excess: 0.0,
        };
        let mut out = self.layout.pack_grad(&p[..self.layout.len()], &model);
        out.extend(g.variational);
        Ok((value, out))
    }

    /// The negative bound at `p` and its gradient with respect to the
    /// variational parameters alone (the entries after
    /// [`Self::n_shared`]), for a run that holds the features and the
    /// kernel.
    ///
    /// # Errors
    /// As [`svgp_objective`].
    pub(crate) fn variational_objective(&self, p: &[f64]) -> Result<(f64, Vec<f64>)> {
        let (value, g) = self.evaluate(p, Derivatives::Variational)?;
        Ok((value, g.ok_or_else(no_gradient)?.variational))
    }
}

fn no_gradient() -> Error {
    Error::Numerical("svgp objective returned no gradient".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::features::PseudoInputs;
    use crate::model::inference::test_util::{assert_grad_close, fd_grad};
    use crate::model::likelihood::{norm_cdf, norm_pdf};

    fn problem(n: usize, m: usize) -> (DMatrix<f64>, DMatrix<f64>, PseudoInputs, KernelParams) {
        let x = DMatrix::from_fn(n, 2, |i, j| libm::sin((i * 7 + j * 3) as f64 * 0.37) * 1.5);
        let y = DMatrix::from_fn(n, 1, |i, _| {
            if x[(i, 0)] * x[(i, 1)] + 0.3 * libm::cos((i * 13) as f64) > 0.0 {
                1.0
            } else {
                -1.0
            }
        });
        let z = DMatrix::from_fn(m, 2, |i, j| x[(i * n / m, j)] + 0.03 * (j as f64 + 1.0));
        let kern = KernelParams::new(&[0.8, 1.3], 1.7, 1e-3).expect("valid");
        (x, y, PseudoInputs::new(z).expect("valid"), kern)
    }

    fn some_q(m: usize) -> Variational {
        let mut sqrt = DMatrix::from_fn(m, m, |i, j| 0.2 * libm::sin((i * 5 + j * 3) as f64));
        sqrt.fill_upper_triangle(0.0, 1);
        for i in 0..m {
            sqrt[(i, i)] = 0.4 + 0.1 * i as f64;
        }
        Variational {
            mean: DVector::from_fn(m, |i, _| libm::cos((i * 3) as f64)),
            sqrt,
            bias: 0.3,
        }
    }

    #[test]
    fn quadrature_integrates_polynomials_and_the_probit() {
        let (x, w) = gauss_hermite();
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-13);
        let moment = |p: i32| x.iter().zip(w).map(|(x, w)| w * x.powi(p)).sum::<f64>();
        assert!(moment(1).abs() < 1e-12);
        assert!((moment(2) - 1.0).abs() < 1e-12);
        assert!((moment(4) - 3.0).abs() < 1e-11);
        // E[Phi(f)] = Phi(mu / sqrt(1 + s)), exact for the integral.
        for (mu, s) in [(0.3, 0.5), (-1.0, 4.0), (2.0, 2.0)] {
            let sd = f64::sqrt(s);
            let quad: f64 = x
                .iter()
                .zip(w)
                .map(|(x, w)| w * norm_cdf(mu + sd * x))
                .sum();
            let err = (quad - norm_cdf(mu / (1.0 + s).sqrt())).abs();
            assert!(err < 3e-4, "mu {mu} s {s}: error {err}");
            // E[log Phi(f)], against a fine midpoint rule.
            let (steps, width) = (20_000, 24.0);
            let h = width / steps as f64;
            let fine: f64 = (0..steps)
                .map(|i| {
                    let t = -width / 2.0 + (i as f64 + 0.5) * h;
                    h * norm_pdf(t) * log_norm_cdf_and_ratio(mu + sd * t).0
                })
                .sum();
            let quad: f64 = x
                .iter()
                .zip(w)
                .map(|(x, w)| w * log_norm_cdf_and_ratio(mu + sd * x).0)
                .sum();
            assert!(
                (quad - fine).abs() < 2e-5,
                "mu {mu} s {s}: {quad} vs {fine}"
            );
        }
    }

    #[test]
    fn expected_log_probit_derivatives_match_differences() {
        for (y, mu, s, b) in [
            (1.0, 0.3, 0.5, 0.1),
            (-1.0, 2.0, 3.0, -0.4),
            (1.0, -6.0, 1e-3, 0.0),
        ] {
            let f = |p: &[f64]| expected_log_probit(y, p[0], p[1], b).0;
            let (_, d_mu, d_s) = expected_log_probit(y, mu, s, b);
            let num = fd_grad(f, &[mu, s], 1e-6);
            assert_grad_close(&num, &[d_mu, d_s], 1e-6);
        }
    }

    #[test]
    fn variational_packing_round_trips() {
        let q = some_q(4);
        let back = Variational::from_params(4, &q.params()).expect("right length");
        assert!((back.sqrt - &q.sqrt).amax() < 1e-15);
        assert_eq!(back.mean, q.mean);
        assert!(Variational::from_params(3, &q.params()).is_err());
        assert!(Variational::prior(3, 0.0).kl().abs() < 1e-15);
    }

    #[test]
    fn cholesky_adjoint_matches_differences() {
        let k = DMatrix::from_fn(4, 4, |i, j| libm::exp(-0.3 * (i as f64 - j as f64).powi(2)))
            + DMatrix::identity(4, 4) * 0.1;
        let w = DMatrix::from_fn(4, 4, |i, j| libm::sin((i * 3 + j) as f64));
        let f = |k: &DMatrix<f64>| {
            let l = k.clone().cholesky().expect("pd").unpack();
            l.component_mul(&w).sum()
        };
        let l = k.clone().cholesky().expect("pd").unpack();
        let mut d_l = w.clone();
        d_l.fill_upper_triangle(0.0, 1);
        let adj = cholesky_adjoint(&l, &d_l).expect("ok");
        // Symmetric perturbations, one pair of entries at a time.
        for (i, j) in [(0, 0), (1, 0), (3, 1), (2, 2), (3, 3)] {
            let mut e = DMatrix::zeros(4, 4);
            e[(i, j)] = 1.0;
            e[(j, i)] = 1.0;
            let h = 1e-6;
            let num = (f(&(&k + &e * h)) - f(&(&k - &e * h))) / (2.0 * h);
            let ana = adj.component_mul(&e).sum();
            assert!((num - ana).abs() < 1e-7, "({i},{j}): {num} vs {ana}");
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let (x, y, feat, kern) = problem(37, 5);
        let q = some_q(5);
        // Several chunks, so the chunk sums are exercised too.
        let cfg = SvgpConfig {
            chunk_rows: 10,
            ..SvgpConfig::default()
        };
        let np = feat.num_params();
        let pack = |f: &PseudoInputs, k: &KernelParams, q: &Variational| {
            let mut p = f.params();
            p.extend(&k.log_lengthscales);
            p.push(k.log_signal_var);
            p.extend(q.params());
            p
        };
        let value = |p: &[f64]| {
            let mut f = feat.clone();
            f.set_params(&p[..np]).expect("ok");
            let mut k = kern.clone();
            k.log_lengthscales = p[np..np + 2].to_vec();
            k.log_signal_var = p[np + 2];
            let q = Variational::from_params(5, &p[np + 3..]).expect("ok");
            svgp_objective(&f, &k, &[q], (&x, &y), &cfg, Derivatives::None)
                .expect("ok")
                .neg_elbo
        };
        let v = svgp_objective(
            &feat,
            &kern,
            std::slice::from_ref(&q),
            (&x, &y),
            &cfg,
            Derivatives::All,
        )
        .expect("ok");
        let g = v.grad.expect("asked for");
        let mut ana = g.feature.feature.clone();
        ana.extend(&g.feature.kernel.log_lengthscales);
        ana.push(g.feature.kernel.log_signal_var);
        ana.extend(&g.variational);
        let p = pack(&feat, &kern, &q);
        assert!((value(&p) - v.neg_elbo).abs() < 1e-12 * v.neg_elbo.abs());
        let num = fd_grad(value, &p, 1e-6);
        assert_grad_close(&num, &ana, 1e-6);
    }

    #[test]
    fn packed_objective_gradient_matches_differences() {
        let (x, y, feat, kern) = problem(25, 4);
        let obj = SvgpObjective::new(
            (&x, &y),
            feat.clone(),
            kern,
            vec![some_q(4)],
            SvgpConfig::default(),
        )
        .expect("valid");
        let p = obj.initial();
        let (f2, _, q2) = obj.unpack(&p).expect("ok");
        assert_eq!(f2, feat);
        assert!((&q2[0].sqrt - some_q(4).sqrt).amax() < 1e-15);
        let (v, g) = obj.objective(&p).expect("ok");
        assert!((v - obj.value(&p).expect("ok")).abs() < 1e-12 * v.abs());
        let num = fd_grad(|q| obj.value(q).expect("ok"), &p, 1e-6);
        assert_grad_close(&num, &g, 1e-6);
    }

    /// The prior on the log length scales, one centre per input, adds its
    /// penalty to the value and its gradient passes the difference test;
    /// a prior with a centre missing is refused.
    #[test]
    fn the_lengthscale_prior_adds_a_penalty_that_passes_the_difference_test() {
        let (x, y, feat, kern) = problem(25, 4);
        let plain = SvgpObjective::new(
            (&x, &y),
            feat.clone(),
            kern.clone(),
            vec![some_q(4)],
            SvgpConfig::default(),
        )
        .expect("valid");
        let p = plain.initial();
        let elsewhere = LengthscalePrior {
            centres: vec![
                kern.log_lengthscales[0] + 0.7,
                kern.log_lengthscales[1] - 1.2,
            ],
            sd: 0.5,
        };
        let with_prior = plain
            .clone()
            .with_lengthscale_prior(elsewhere.clone())
            .expect("one centre per input");
        let penalty = with_prior.value(&p).expect("ok") - plain.value(&p).expect("ok");
        let gaps: f64 = kern
            .log_lengthscales
            .iter()
            .zip(&elsewhere.centres)
            .map(|(l, c)| (l - c).powi(2) / (2.0 * 0.25))
            .sum();
        assert!((penalty - gaps).abs() < 1e-9 * gaps);
        assert!(gaps > 0.5);
        let (v, g) = with_prior.objective(&p).expect("ok");
        assert!((v - with_prior.value(&p).expect("ok")).abs() < 1e-12 * v.abs());
        let num = fd_grad(|q| with_prior.value(q).expect("ok"), &p, 1e-6);
        assert_grad_close(&num, &g, 1e-6);
        let short = LengthscalePrior {
            centres: vec![0.0],
            sd: 1.0,
        };
        assert!(plain.with_lengthscale_prior(short).is_err());
    }

    /// Three latents, one per class against the rest, on shared features:
    /// the bound is the sum of the three binary bounds and its gradient
    /// passes the difference test.
    #[test]
    fn several_latents_sum_their_bounds_and_pass_the_difference_test() {
        let (x, _, feat, kern) = problem(31, 4);
        let class = |i: usize| (i * 7 + i / 3) % 3;
        let y = DMatrix::from_fn(31, 3, |i, k| if class(i) == k { 1.0 } else { -1.0 });
        let mut qs = vec![some_q(4), some_q(4), some_q(4)];
        qs[1].mean *= -0.5;
        qs[2].sqrt *= 1.3;
        qs[2].bias = -0.7;
        let cfg = SvgpConfig {
            chunk_rows: 12,
            ..SvgpConfig::default()
        };
        let all = svgp_objective(&feat, &kern, &qs, (&x, &y), &cfg, Derivatives::None).expect("ok");
        let sum: f64 = (0..3)
            .map(|k| {
                let yk = y.columns(k, 1).into_owned();
                svgp_objective(&feat, &kern, &qs[k..=k], (&x, &yk), &cfg, Derivatives::None)
                    .expect("ok")
                    .neg_elbo
            })
            .sum();
        assert!((all.neg_elbo - sum).abs() < 1e-10 * sum.abs());
        let obj = SvgpObjective::new((&x, &y), feat, kern, qs, cfg).expect("valid");
        let p = obj.initial();
        let (v, g) = obj.objective(&p).expect("ok");
        assert!((v - all.neg_elbo).abs() < 1e-12 * v.abs());
        // Holding the features and the kernel changes no other derivative.
        let (held, g_q) = obj.variational_objective(&p).expect("ok");
        assert_eq!(held, v);
        assert_eq!(g_q, g[obj.n_shared()..]);
        let num = fd_grad(|q| obj.value(q).expect("ok"), &p, 1e-6);
        assert_grad_close(&num, &g, 1e-6);
        assert!(obj.unpack(&p[1..]).is_err());
    }

    #[test]
    fn runtime_form_reproduces_the_marginals() {
        let (x, _, feat, kern) = problem(30, 6);
        let q = some_q(6);
        let cfg = SvgpConfig::default();
        let (form, _) = svgp_runtime_form(&feat, &kern, &q, &cfg).expect("ok");
        let far = DMatrix::from_fn(3, 2, |i, j| 5.0 + (i + j) as f64);
        for xs in [x, far] {
            let (mu, var) = svgp_marginals(&feat, &kern, &q, &xs, &cfg).expect("ok");
            let p = form.predict(&xs).expect("ok");
            assert!((p.mean - &mu).amax() < 1e-10);
            assert!((p.var - var).amax() < 1e-9);
        }
    }

    #[test]
    fn the_prior_q_gives_the_prior_marginals() {
        let (x, _, feat, kern) = problem(20, 4);
        let q = Variational::prior(4, 0.0);
        let (mu, var) = svgp_marginals(&feat, &kern, &q, &x, &SvgpConfig::default()).expect("ok");
        assert!(mu.amax() < 1e-15);
        assert!((var.add_scalar(-kern.signal_var())).amax() < 1e-8);
    }
}
