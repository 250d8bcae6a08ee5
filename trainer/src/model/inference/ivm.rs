//! The informative vector machine (Lawrence, Seeger & Herbrich 2002): greedy
//! selection of an active set by differential entropy with assumed density
//! filtering (ADF) site updates, and the approximate marginal likelihood of
//! the active set that the kernel is fitted to. Notation and equations are
//! the paper's (MATH.md, "IVM").
//!
//! After the first inclusions only a selection index of fixed size is
//! scored (the best-scoring fraction kept, the rest refilled at random), and
//! a column of `M` is updated only when its point enters it (the paper's
//! delayed updating). With a Gaussian likelihood the sites are exact and the
//! model is an exact GP on the active set.

use std::f64::consts::PI;

use nalgebra::{DMatrix, DVector};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::exact::gaussian_kernel_grad;
use super::RuntimeForm;
use crate::model::features::{InducingFeatures, PseudoInputs};
use crate::model::inference::objective::ParamLayout;
use crate::model::inference::ModelGrad;
use crate::model::kernel::KernelParams;
use crate::model::likelihood::{norm_cdf, norm_pdf, pdf_over_cdf, Likelihood};
use crate::numerics::linalg::{
    cholesky_jittered, solve_lower_t_vec, solve_lower_vec, JitterPolicy, JitteredCholesky,
};
use crate::{Error, Result};

/// How candidates are scored (the paper's randomised greedy selection).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SelectionOptions {
    /// Inclusions picked uniformly at random before scoring starts (with a
    /// kernel of constant diagonal every point scores the same at first).
    pub random_first: usize,
    /// Inclusions (random ones included) that score every remaining point.
    pub full_greedy: usize,
    /// Size of the selection index `J` after that.
    pub candidates: usize,
    /// Fraction of the best-scoring points of `J` kept from one inclusion
    /// to the next; the rest of `J` is drawn afresh.
    pub retain: f64,
}

/// The paper's MNIST settings scaled down: one random inclusion, full
/// greedy up to 200 inclusions, then `|J| = 500` with half retained.
impl Default for SelectionOptions {
    fn default() -> Self {
        SelectionOptions {
            random_first: 1,
            full_greedy: 200,
            candidates: 500,
            retain: 0.5,
        }
    }
}

/// A site update: what including a point with prior-to-inclusion marginal
/// `N(h, a)` gives (eq. 2), and its score (eq. 4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Site {
    /// Site precision `p_i`.
    pub p: f64,
    /// Site mean `m_i`.
    pub m: f64,
    /// `alpha_i`: d log Z / d h (the mean moves by `alpha a`).
    pub alpha: f64,
    /// `nu_i`: -d^2 log Z / d h^2 (the variance shrinks by `nu a^2`).
    pub nu: f64,
    /// Differential entropy score `-1/2 log(1 - a nu)` (>= 0).
    pub score: f64,
}

/// Site parameters and score for target `y` (a ±1 label for the probit)
/// at a point whose current marginal is `N(h, a)`; `bias` is the probit's
/// `b`; `noise` is the Gaussian's `sigma2`, or the probit's label-flip
/// rate `e`: `P(y | f) = e + (1 - 2 e) Phi(y (f + b))` (Kim and
/// Ghahramani's robust likelihood), whose moments differ from the plain
/// probit's only in `alpha`. With `e > 0` a point whose label contradicts
/// the posterior gets a negative `nu` and is not selected.
pub(crate) fn site(likelihood: Likelihood, y: f64, h: f64, a: f64, bias: f64, noise: f64) -> Site {
    let a = a.max(0.0);
    let (alpha, nu) = match likelihood {
        Likelihood::Gaussian => {
            let s = a + noise;
            ((y - h) / s, 1.0 / s)
        }
        Likelihood::Probit => {
            let scale = (1.0 + a).sqrt();
            let z = y * (h + bias) / scale;
            let alpha = if noise > 0.0 {
                let kept = 1.0 - 2.0 * noise;
                y * kept * norm_pdf(z) / (scale * (noise + kept * norm_cdf(z)))
            } else {
                y * pdf_over_cdf(z) / scale
            };
            (alpha, alpha * (alpha + (h + bias) / (1.0 + a)))
        }
    };
    let shrink = 1.0 - a * nu;
    let p = match likelihood {
        Likelihood::Gaussian => 1.0 / noise,
        Likelihood::Probit => nu / shrink,
    };
    let m = match likelihood {
        Likelihood::Gaussian => y,
        Likelihood::Probit => h + alpha / nu,
    };
    Site {
        p,
        m,
        alpha,
        nu,
        score: -0.5 * libm::log(shrink),
    }
}

/// Sites with a precision below this (relative to nothing: latent units
/// are standardised) are not worth including: `1/p` would dwarf the kernel
/// and the point says nothing.
const MIN_SITE_PRECISION: f64 = 1e-10;

/// An active set and its sites, in inclusion order.
#[derive(Clone, Debug, PartialEq)]
pub struct ActiveSet {
    /// Training rows, in the order they were included.
    pub indices: Vec<usize>,
    /// Site precisions `p_i`.
    pub p: Vec<f64>,
    /// Site means `m_i`.
    pub m: Vec<f64>,
    /// Entropy score of each point when it was included.
    pub scores: Vec<f64>,
    /// Posterior mean `h` at every training row after the last inclusion
    /// (rows outside the last selection index may lag: see the module
    /// documentation); for tests and reports.
    pub h: Vec<f64>,
    /// `diag(A)` likewise.
    pub a: Vec<f64>,
}

/// The IVM selection problem: data, kernel, likelihood.
pub struct Ivm<'d> {
    /// Standardised inputs (N x D).
    pub x: &'d DMatrix<f64>,
    /// Targets: standardised values (Gaussian) or ±1 labels (probit).
    pub y: &'d DVector<f64>,
    /// The kernel (its noise is the Gaussian's `sigma2`).
    pub kern: &'d KernelParams,
    /// The likelihood.
    pub likelihood: Likelihood,
    /// The probit's bias `b` (ignored for the Gaussian).
    pub bias: f64,
    /// The probit's label-flip rate (see `site`; ignored for the
    /// Gaussian).
    pub label_noise: f64,
}

impl Ivm<'_> {
    /// Selects an active set of (at most) `d` points, deterministically in
    /// `seed`. Fewer points are selected only when no remaining candidate
    /// would change the posterior (every site precision negligible).
    ///
    /// # Errors
    /// [`Error::BadInput`] if `d` is 0 or more than the rows;
    /// [`Error::Numerical`] for a non-finite update.
    pub(crate) fn select(
        &self,
        d: usize,
        options: &SelectionOptions,
        seed: u64,
    ) -> Result<ActiveSet> {
        let n = self.x.nrows();
        if d == 0 || d > n {
            return Err(Error::BadInput(format!(
                "IVM active set of {d} points from {n} rows"
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let noise = match self.likelihood {
            Likelihood::Gaussian => self.kern.noise_var(),
            Likelihood::Probit => self.label_noise,
        };
        let mut state = Selection::new(n, d, self.kern.signal_var());
        let mut set = ActiveSet {
            indices: Vec::with_capacity(d),
            p: Vec::with_capacity(d),
            m: Vec::with_capacity(d),
            scores: Vec::with_capacity(d),
            h: Vec::new(),
            a: Vec::new(),
        };
        // The selection index: every row at first.
        let mut pool: Vec<usize> = (0..n).collect();
        for k in 0..d {
            let site_of = |st: &Selection, j: usize| {
                site(
                    self.likelihood,
                    self.y[j],
                    st.h[j],
                    st.a[j],
                    self.bias,
                    noise,
                )
            };
            let full = k < options.full_greedy || options.candidates >= n - k;
            if !full {
                state.narrow(&mut pool, k, options, &mut rng, |st, j| {
                    site_of(st, j).score
                });
            } else if pool.len() + k != n {
                pool = (0..n).filter(|&j| !state.included[j]).collect();
            }
            state.catch_up_all(&pool, k);
            let usable = |st: &Selection, j: usize| {
                let st = site_of(st, j);
                (st.p.is_finite()
                    && st.p > MIN_SITE_PRECISION
                    && st.m.is_finite()
                    && st.score.is_finite())
                .then_some(st)
            };
            let random = if k < options.random_first && !pool.is_empty() {
                pool.get(rng.random_range(0..pool.len()))
                    .copied()
                    .filter(|&j| usable(&state, j).is_some())
            } else {
                None
            };
            let pick = random.or_else(|| {
                let mut best: Option<(usize, f64)> = None;
                for &j in &pool {
                    if let Some(st) = usable(&state, j) {
                        if best.is_none_or(|(_, s)| st.score > s) {
                            best = Some((j, st.score));
                        }
                    }
                }
                best.map(|(j, _)| j)
            });
            // No candidate would change the posterior: stop early.
            let Some(i) = pick else { break };
            let Some(st) = usable(&state, i) else { break };
            state.include(self, i, k, &st)?;
            pool.retain(|&j| j != i);
            set.indices.push(i);
            set.p.push(st.p);
            set.m.push(st.m);
            set.scores.push(st.score);
        }
        let k = set.indices.len();
        let rest: Vec<usize> = (0..n).filter(|&j| !state.included[j]).collect();
        state.catch_up_all(&rest, k);
        set.h = state.h;
        set.a = state.a;
        Ok(set)
    }
}

/// One selection's state: the factor `L` of the active set, the columns of
/// `M` brought up to date lazily (`done[j]` rows of column `j`), and the
/// marginals `a`, `h` of every row.
struct Selection {
    a: Vec<f64>,
    h: Vec<f64>,
    done: Vec<usize>,
    mm: DMatrix<f64>,
    l: DMatrix<f64>,
    /// Kernel columns K[., i_k] (N x d), the sqrt site precisions and the
    /// coefficients of h's update, one per inclusion.
    kcols: DMatrix<f64>,
    sqrt_p: Vec<f64>,
    h_coef: Vec<f64>,
    included: Vec<bool>,
    s2: f64,
}

impl Selection {
    fn new(n: usize, d: usize, s2: f64) -> Self {
        Selection {
            a: vec![s2; n],
            h: vec![0.0; n],
            done: vec![0usize; n],
            mm: DMatrix::<f64>::zeros(d, n),
            l: DMatrix::<f64>::zeros(d, d),
            kcols: DMatrix::<f64>::zeros(n, d),
            sqrt_p: Vec::with_capacity(d),
            h_coef: Vec::with_capacity(d),
            included: vec![false; n],
            s2,
        }
    }

    /// The candidate pool of a step that is not fully greedy: the best
    /// `retain` share of the last pool on current scores, filled up with
    /// random rows not yet included.
    fn narrow(
        &mut self,
        pool: &mut Vec<usize>,
        k: usize,
        options: &SelectionOptions,
        rng: &mut ChaCha8Rng,
        score: impl Fn(&Selection, usize) -> f64,
    ) {
        let n = self.a.len();
        let keep = ((options.retain * options.candidates as f64) as usize).min(options.candidates);
        if pool.len() > keep {
            self.catch_up_all(pool, k);
            // Best scorers first, on current scores.
            pool.sort_by(|&i, &j| score(self, j).total_cmp(&score(self, i)).then(i.cmp(&j)));
            pool.truncate(keep);
        }
        let mut in_pool = vec![false; n];
        for &j in pool.iter() {
            in_pool[j] = true;
        }
        let mut rest: Vec<usize> = (0..n)
            .filter(|&j| !self.included[j] && !in_pool[j])
            .collect();
        rest.shuffle(rng);
        let fill = options.candidates.saturating_sub(pool.len());
        pool.extend(rest.into_iter().take(fill));
    }

    /// Includes row `i` with site `st` as the `k`-th active point: Eq. 3's
    /// new row of `L` from column `i` of `M`.
    fn include(&mut self, ivm: &Ivm<'_>, i: usize, k: usize, st: &Site) -> Result<()> {
        let sp = st.p.sqrt();
        let mut lsq = 0.0;
        for q in 0..k {
            let v = sp * self.mm[(q, i)];
            self.l[(k, q)] = v;
            lsq += v * v;
        }
        let diag = 1.0 + st.p * self.s2 - lsq;
        let diag = if diag > 0.0 {
            diag
        } else {
            1.0 + st.p * self.a[i]
        };
        if !(diag > 0.0 && diag.is_finite()) {
            return Err(Error::Numerical(format!(
                "IVM inclusion {k}: factor diagonal {diag}"
            )));
        }
        let lkk = diag.sqrt();
        self.l[(k, k)] = lkk;
        let xi = ivm.x.rows(i, 1).into_owned();
        let col = ivm.kern.cross(ivm.x, &xi);
        self.kcols.set_column(k, &col.column(0));
        self.sqrt_p.push(sp);
        // h moves by sqrt(p) (m - h_i) / l times the new row of M.
        self.h_coef.push(sp * (st.m - self.h[i]) / lkk);
        self.included[i] = true;
        Ok(())
    }

    /// Brings the columns `rows` of `M`, and their `a`, `h`, up to the
    /// first `k` rows.
    fn catch_up_all(&mut self, rows: &[usize], k: usize) {
        for &j in rows {
            self.catch_up(j, k);
        }
    }

    /// Brings column `j` of `M`, and `a_j`, `h_j`, up to the first `k` rows.
    fn catch_up(&mut self, j: usize, k: usize) {
        for r in self.done[j]..k {
            let mut v = self.sqrt_p[r] * self.kcols[(j, r)];
            for q in 0..r {
                v -= self.mm[(q, j)] * self.l[(r, q)];
            }
            v /= self.l[(r, r)];
            self.mm[(r, j)] = v;
            self.a[j] -= v * v;
            self.h[j] += self.h_coef[r] * v;
        }
        self.done[j] = self.done[j].max(k);
    }
}

/// The factorised active-set model: `C = K_I + Pi^{-1} + jitter I`,
/// `L1 = chol(C)`, `beta = C^{-1} m_I`, and the approximate marginal
/// likelihood `-log N(m_I | 0, C)` that the kernel is fitted to (GPmat's
/// `ivmLogLikelihood`; for Gaussian sites the exact GP's NLML on the active
/// set).
#[derive(Clone, Debug)]
pub(crate) struct ActivePosterior {
    x: DMatrix<f64>,
    kern: KernelParams,
    chol: JitteredCholesky,
    beta: DVector<f64>,
    nlml: f64,
    noise_var: f64,
}

/// Factorises the active set `x_active` with sites `p`, `m`.
///
/// # Errors
/// [`Error::Numerical`] if the factorisation fails at every jitter.
pub(crate) fn active_posterior(
    kern: &KernelParams,
    x_active: &DMatrix<f64>,
    p: &[f64],
    m: &[f64],
    likelihood: Likelihood,
    jitter: &JitterPolicy,
) -> Result<ActivePosterior> {
    let mut c = kern.cross(x_active, x_active);
    for (i, &pi) in p.iter().enumerate() {
        c[(i, i)] += 1.0 / pi;
    }
    let chol = cholesky_jittered(&c, kern.signal_var(), jitter)?;
    let m = DVector::from_column_slice(m);
    let w = solve_lower_vec(&chol.l, &m)?;
    let beta = solve_lower_t_vec(&chol.l, &w)?;
    let d = m.len() as f64;
    let nlml = 0.5 * w.norm_squared() + 0.5 * chol.log_det() + 0.5 * d * libm::log(2.0 * PI);
    Ok(ActivePosterior {
        x: x_active.clone(),
        kern: kern.clone(),
        chol,
        beta,
        nlml,
        noise_var: match likelihood {
            Likelihood::Gaussian => kern.noise_var(),
            Likelihood::Probit => 0.0,
        },
    })
}

impl ActivePosterior {
    /// `-log N(m_I | 0, C)`.
    pub fn nlml(&self) -> f64 {
        self.nlml
    }

    /// How many times the jitter had to be raised.
    pub fn jitter_escalations(&self) -> u32 {
        self.chol.escalations
    }

    /// MATH.md's runtime form: basis = active inputs, `L1 = chol(C)`, no
    /// `L2`, prior `s2`.
    pub fn runtime_form(&self) -> Result<RuntimeForm> {
        let basis = PseudoInputs::new(self.x.clone())?.runtime_basis(&self.kern);
        Ok(RuntimeForm {
            basis,
            beta: self.beta.clone(),
            l1: self.chol.l.clone(),
            l2: None,
            prior: self.kern.signal_var(),
            noise_var: self.noise_var,
        })
    }
}

/// `-log N(m | 0, K_I + Pi^{-1})` and its gradient with respect to the
/// kernel's `(log l, log s2)`, sites fixed (probit: the sites do not
/// depend on the kernel once selected, as in GPmat's kernel optimisation).
/// `dNLML/dtheta = 1/2 tr(W dC/dtheta)`, `W = C^{-1} - beta beta^T`.
pub(crate) fn active_nlml_grad(
    kern: &KernelParams,
    x_active: &DMatrix<f64>,
    p: &[f64],
    m: &[f64],
    jitter: &JitterPolicy,
) -> Result<(f64, ModelGrad)> {
    let post = active_posterior(kern, x_active, p, m, Likelihood::Probit, jitter)?;
    let (kernel, _) = gaussian_kernel_grad(kern, x_active, &post.chol, &post.beta)?;
    Ok((
        post.nlml,
        ModelGrad {
            feature: Vec::new(),
            kernel,
            log_noise_excess: 0.0,
        },
    ))
}

/// The probit active-set objective over the flat vector
/// `[free length scales | log s2]` ([`ParamLayout::latent`]: no noise).
pub(crate) struct ActiveObjective<'d> {
    x: &'d DMatrix<f64>,
    p: &'d [f64],
    m: &'d [f64],
    kernel: KernelParams,
    layout: ParamLayout,
    jitter: JitterPolicy,
}

impl<'d> ActiveObjective<'d> {
    /// The objective for active inputs `x` with sites `p`, `m`, starting at
    /// `kernel`.
    pub fn new(
        x: &'d DMatrix<f64>,
        p: &'d [f64],
        m: &'d [f64],
        kernel: KernelParams,
        jitter: JitterPolicy,
    ) -> Self {
        let layout = ParamLayout::latent(&kernel, Likelihood::Probit);
        ActiveObjective {
            x,
            p,
            m,
            kernel,
            layout,
            jitter,
        }
    }

    /// The starting vector.
    pub fn initial(&self) -> Vec<f64> {
        self.layout.pack(&[], &self.kernel)
    }

    /// The kernel at `v`.
    pub fn unpack(&self, v: &[f64]) -> Result<KernelParams> {
        let mut kern = self.kernel.clone();
        self.layout.unpack(v, &mut kern)?;
        Ok(kern)
    }

    /// Value and gradient at `v`.
    pub fn objective(&self, v: &[f64]) -> Result<(f64, Vec<f64>)> {
        let kern = self.unpack(v)?;
        let (value, grad) = active_nlml_grad(&kern, self.x, self.p, self.m, &self.jitter)?;
        Ok((value, self.layout.pack_grad(v, &grad)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::inference::exact::exact_posterior;
    use crate::model::inference::test_util::{assert_grad_close, fd_grad, problem};

    fn labels(x: &DMatrix<f64>) -> DVector<f64> {
        DVector::from_fn(x.nrows(), |i, _| {
            if x[(i, 0)] + 0.5 * x[(i, 1)] > 0.0 {
                1.0
            } else {
                -1.0
            }
        })
    }

    /// The marginal of `Q(u)` at every row, computed directly:
    /// `A = (K^{-1} + Pi)^{-1} = K - K_{.I} (K_I + Pi^{-1})^{-1} K_{I.}`,
    /// `h = K_{.I} (K_I + Pi^{-1})^{-1} m_I`.
    fn direct_marginals(
        kern: &KernelParams,
        x: &DMatrix<f64>,
        idx: &[usize],
        p: &[f64],
        m: &[f64],
    ) -> (Vec<f64>, Vec<f64>) {
        let xi = x.select_rows(idx);
        let mut c = kern.cross(&xi, &xi);
        for (k, pk) in p.iter().enumerate() {
            c[(k, k)] += 1.0 / pk;
        }
        let cinv = c.try_inverse().unwrap();
        let kx = kern.cross(x, &xi);
        let h = &kx * (&cinv * DVector::from_column_slice(m));
        let a: Vec<f64> = (0..x.nrows())
            .map(|j| {
                let r = kx.row(j);
                kern.signal_var() - (r * &cinv * r.transpose())[(0, 0)]
            })
            .collect();
        (h.iter().copied().collect(), a)
    }

    #[test]
    fn probit_site_matches_moment_matching_by_quadrature() {
        // Moments of N(u | h, a) (e + (1 - 2e) Phi(y (u + b))) by
        // brute-force quadrature, for the plain (e = 0) and the robust probit.
        let cases = [
            (1.0, 0.3, 0.8, 0.1),
            (-1.0, 1.2, 2.0, -0.4),
            (1.0, -2.0, 0.5, 0.0),
        ];
        for ((y, h, a, b), e) in cases
            .into_iter()
            .flat_map(|c| [0.0, 0.05, 0.2].map(|e| (c, e)))
        {
            let st = site(Likelihood::Probit, y, h, a, b, e);
            let (mut z0, mut z1, mut z2) = (0.0, 0.0, 0.0);
            let sd: f64 = a.sqrt();
            let steps = 200_000;
            let du = 20.0 * sd / steps as f64;
            for s in 0..=steps {
                let u = h - 10.0 * sd + s as f64 * du;
                let w = libm::exp(-(u - h).powi(2) / (2.0 * a))
                    * (e + (1.0 - 2.0 * e) * crate::model::likelihood::norm_cdf(y * (u + b)))
                    * du;
                z0 += w;
                z1 += w * u;
                z2 += w * u * u;
            }
            let mean = z1 / z0;
            let var = z2 / z0 - mean * mean;
            // ADF: new mean h + alpha a, new variance a - nu a^2.
            assert!((h + st.alpha * a - mean).abs() < 1e-6, "{mean}");
            assert!((a - st.nu * a * a - var).abs() < 1e-6, "{var}");
            // The site is the Gaussian that turns N(h, a) into that.
            let post_var = 1.0 / (1.0 / a + st.p);
            let post_mean = post_var * (h / a + st.p * st.m);
            assert!((post_var - var).abs() < 1e-6 && (post_mean - mean).abs() < 1e-6);
            assert!((st.score + 0.5 * libm::log(var / a)).abs() < 1e-6);
        }
    }

    #[test]
    fn gaussian_site_is_exact_and_scores_by_variance() {
        let st = site(Likelihood::Gaussian, 0.7, 0.2, 0.5, 0.0, 0.1);
        assert_eq!(st.m, 0.7);
        assert!((st.p - 10.0).abs() < 1e-12);
        assert!((st.score - 0.5 * libm::log(1.0_f64 + 0.5 / 0.1)).abs() < 1e-12);
    }

    #[test]
    fn incremental_updates_match_a_direct_computation() {
        let (x, _) = problem(3, 40, 2);
        let y = labels(&x);
        let kern = KernelParams::new(&[0.8, 1.1], 1.5, 0.1).unwrap();
        for (likelihood, options, label_noise) in [
            (Likelihood::Probit, SelectionOptions::default(), 0.0),
            (Likelihood::Probit, SelectionOptions::default(), 0.05),
            (
                Likelihood::Probit,
                SelectionOptions {
                    random_first: 2,
                    full_greedy: 4,
                    candidates: 7,
                    retain: 0.5,
                },
                0.0,
            ),
            (Likelihood::Gaussian, SelectionOptions::default(), 0.0),
        ] {
            let ivm = Ivm {
                x: &x,
                y: &y,
                kern: &kern,
                likelihood,
                bias: 0.2,
                label_noise,
            };
            let noise = match likelihood {
                Likelihood::Gaussian => kern.noise_var(),
                Likelihood::Probit => label_noise,
            };
            let set = ivm.select(12, &options, 5).unwrap();
            assert_eq!(set.indices.len(), 12);
            let (h, a) = direct_marginals(&kern, &x, &set.indices, &set.p, &set.m);
            for j in 0..x.nrows() {
                if set.indices.contains(&j) {
                    continue;
                }
                assert!(
                    (set.h[j] - h[j]).abs() < 1e-9,
                    "h[{j}]: {} vs {}",
                    set.h[j],
                    h[j]
                );
                assert!(
                    (set.a[j] - a[j]).abs() < 1e-9,
                    "a[{j}]: {} vs {}",
                    set.a[j],
                    a[j]
                );
            }
            // Each inclusion's site and score from the direct marginals of
            // the sites before it.
            for k in 1..set.indices.len() {
                let (h, a) =
                    direct_marginals(&kern, &x, &set.indices[..k], &set.p[..k], &set.m[..k]);
                let i = set.indices[k];
                let st = site(likelihood, y[i], h[i], a[i], 0.2, noise);
                assert!((st.p - set.p[k]).abs() < 1e-8 * st.p.max(1.0));
                assert!((st.m - set.m[k]).abs() < 1e-8 * st.m.abs().max(1.0));
                assert!((st.score - set.scores[k]).abs() < 1e-9);
            }
            // Same seed, same set.
            assert_eq!(ivm.select(12, &options, 5).unwrap(), set);
        }
    }

    #[test]
    fn full_greedy_picks_the_best_score_each_time() {
        let (x, _) = problem(4, 30, 2);
        let y = labels(&x);
        let kern = KernelParams::new(&[0.7, 0.9], 1.0, 0.1).unwrap();
        let ivm = Ivm {
            x: &x,
            y: &y,
            kern: &kern,
            likelihood: Likelihood::Probit,
            bias: 0.0,
            label_noise: 0.0,
        };
        let set = ivm.select(8, &SelectionOptions::default(), 1).unwrap();
        for k in 1..8 {
            let (h, a) = direct_marginals(&kern, &x, &set.indices[..k], &set.p[..k], &set.m[..k]);
            let best = (0..x.nrows())
                .filter(|j| !set.indices[..k].contains(j))
                .map(|j| site(Likelihood::Probit, y[j], h[j], a[j], 0.0, 0.0).score)
                .fold(f64::NEG_INFINITY, f64::max);
            assert!((set.scores[k] - best).abs() < 1e-9);
        }
    }

    #[test]
    fn regression_ivm_equals_an_exact_gp_on_its_active_set() {
        let (x, y) = problem(7, 60, 2);
        let kern = KernelParams::new(&[0.9, 1.3], 1.2, 0.05).unwrap();
        let ivm = Ivm {
            x: &x,
            y: &y,
            kern: &kern,
            likelihood: Likelihood::Gaussian,
            bias: 0.0,
            label_noise: 0.0,
        };
        let set = ivm.select(15, &SelectionOptions::default(), 2).unwrap();
        let xi = x.select_rows(&set.indices);
        let jitter = JitterPolicy::default();
        let post =
            active_posterior(&kern, &xi, &set.p, &set.m, Likelihood::Gaussian, &jitter).unwrap();
        let yi = y.select_rows(&set.indices);
        let exact = exact_posterior(&kern, &xi, &yi, &jitter).unwrap();
        assert!((post.nlml() - exact.nlml()).abs() < 1e-8);
        let (test, _) = problem(8, 25, 2);
        let a = post.runtime_form().unwrap().predict(&test).unwrap();
        let b = exact.predict(&test).unwrap();
        for i in 0..test.nrows() {
            assert!((a.mean[i] - b.mean[i]).abs() < 1e-8);
            assert!((a.var[i] - b.var[i]).abs() < 1e-8);
        }
        assert_eq!(a.noise_var, b.noise_var);
    }

    #[test]
    fn active_set_gradient_matches_finite_differences() {
        let (x, _) = problem(9, 30, 2);
        let y = labels(&x);
        let kern = KernelParams::new(&[0.8, 1.4], 1.3, 0.1).unwrap();
        let ivm = Ivm {
            x: &x,
            y: &y,
            kern: &kern,
            likelihood: Likelihood::Probit,
            bias: 0.1,
            label_noise: 0.0,
        };
        let set = ivm.select(10, &SelectionOptions::default(), 3).unwrap();
        let xi = x.select_rows(&set.indices);
        let objective = ActiveObjective::new(&xi, &set.p, &set.m, kern, JitterPolicy::default());
        let v0 = objective.initial();
        assert_eq!(v0.len(), 3, "two length scales and log s2, no noise");
        let (_, g) = objective.objective(&v0).unwrap();
        let num = fd_grad(|v| objective.objective(v).unwrap().0, &v0, 1e-5);
        assert_grad_close(&num, &g, 1e-6);
    }
}
