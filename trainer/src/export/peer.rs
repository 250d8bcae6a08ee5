//! Blobs from models fitted elsewhere (scikit-learn, GPflow, GPy): each
//! one's posterior rewritten in the one runtime form of MATH.md, then
//! exported through the same f32 check as a fit.
//!
//! A [`PeerModel`] is the training data the model was fitted on and its
//! kernel's hyperparameters; [`PeerModel::blob`] takes the peer's posterior
//! ([`PeerPosterior`]). The data validates the inputs, gives the blob its
//! input standardisation and training range, and supplies the points of
//! the export check. The kernel is an ARD one in raw input units; in the
//! blob's standardised units `z = (x - mean) / scale` its inverse squared
//! widths are `scale^2 / l^2`.

use nalgebra::{DMatrix, DVector};
use sgp_runtime::{Link, ModelKind};

use crate::data::{Dataset, Standardisation};
use crate::export::{check, refusal};
use crate::model::features::{BasisWidths, PseudoInputs, RuntimeBasis};
use crate::model::inference::fitc::{fitc_posterior, FitcConfig};
use crate::model::inference::{Approximation, RuntimeForm};
use crate::model::kernel::KernelParams;
use crate::model::{ModelSet, TrainedModel};
use crate::numerics::linalg::{
    cholesky, solve_lower_mut, solve_lower_t_vec, solve_lower_vec, JitterPolicy,
};
use crate::options::parse;
use crate::{Error, Result};

/// Largest number of training rows the export check runs the runtime on
/// (evenly spread over the data): the check of an exact GP costs O(N^2)
/// per point.
const MAX_CHECK_ROWS: usize = 1000;

/// A model fitted elsewhere: its training data (raw units) and its
/// kernel's hyperparameters.
#[derive(Clone, Debug)]
pub struct PeerModel {
    /// The data the peer was fitted on.
    pub data: Dataset,
    /// One length scale per input, in raw input units.
    pub lengthscales: Vec<f64>,
    /// The kernel's signal variance.
    pub signal_variance: f64,
    /// The Gaussian noise variance (0: no white-noise term).
    pub noise_variance: f64,
    /// The covariance function's name (`se`, `matern12`, `matern32`,
    /// `matern52`).
    pub kernel: String,
    /// Export a model that fails the f32 check anyway.
    pub force: bool,
}

/// The posterior a peer computed (or, for [`PeerPosterior::Inducing`], the
/// pseudo-inputs whose posterior the trainer computes).
#[derive(Clone, Debug)]
pub enum PeerPosterior {
    /// An exact GP (scikit-learn's `GaussianProcessRegressor`): basis on
    /// the training inputs, `beta = alpha` (`n`), `L1` the lower triangle
    /// of `factor` (`n x n`, the Cholesky factor of the training covariance,
    /// white noise included), no `L2`; predictions `y_mean + y_scale *
    /// mean` and `y_scale^2 * variance`.
    Exact {
        /// `alpha_`.
        alpha: DVector<f64>,
        /// `L_`.
        factor: DMatrix<f64>,
        /// The peer's target mean.
        y_mean: f64,
        /// The peer's target scale.
        y_scale: f64,
    },
    /// A sparse regression over inducing inputs `z` (`m x d`, raw units),
    /// FITC (GPflow's `GPRFITC`) or VFE (`SGPR`), `objective` by its name:
    /// the posterior of these hyperparameters on the training data,
    /// computed by the trainer with `jitter` (absolute, as GPflow's) on
    /// `Kuu`. The jitter matters: FITC draws inducing inputs together, and
    /// on such a fit the trainer's own default (`1e-6 s2`) moved the
    /// predictive sd by a fifth.
    Inducing {
        /// Inducing inputs, raw units.
        z: DMatrix<f64>,
        /// `fitc` or `vfe` (as `--objective` names them).
        objective: String,
        /// Absolute jitter on `Kuu`.
        jitter: f64,
    },
    /// A variational sparse GP (GPflow's `SVGP`): `q(u) = N(q_mu, S)`,
    /// `S = q_sqrt q_sqrt^T`, of `u = f(z)` or, whitened, of `v` with
    /// `u = L v`, `L L^T = Kuu + jitter I`. With `B = Kuu` (or `L^T` when
    /// whitened) the predictive is `mean = k^T B^{-1} q_mu` and
    /// `var = prior - ||L^{-1} k||^2 + k^T B^{-1} S B^{-T} k`; the last
    /// term is `||L2^{-1} k||^2` with `L2 L2^T = B^T S^{-1} B`, i.e.
    /// `L2 = chol(M^T M)` for `M = q_sqrt^{-1} B`. `probit`: a Bernoulli
    /// likelihood with the probit link, whose class probability
    /// `Phi(mean / sqrt(1 + var))` is the runtime's.
    Variational {
        /// Inducing inputs, raw units (`m x d`).
        z: DMatrix<f64>,
        /// `q_mu` (`m`).
        q_mu: DVector<f64>,
        /// `q_sqrt` (`m x m`; its lower triangle is read).
        q_sqrt: DMatrix<f64>,
        /// Whether `q(u)` is of the whitened `v`.
        whiten: bool,
        /// Absolute jitter on `Kuu`.
        jitter: f64,
        /// A probit classifier rather than a regression.
        probit: bool,
    },
}

impl PeerModel {
    /// The blob of this peer's `posterior` (`PeerModel::model`),
    /// through the export check on (at most 1000 of) the training rows.
    ///
    /// # Errors
    /// As `PeerModel::model`; [`Error::Fidelity`] when the f32 blob fails
    /// the check and `force` is not set.
    pub fn blob(&self, posterior: PeerPosterior) -> Result<Vec<u8>> {
        let data = &self.data;
        let n = data.n_rows();
        let step = n.div_ceil(MAX_CHECK_ROWS).max(1);
        let rows: Vec<usize> = (0..n).step_by(step).collect();
        let check_x = data.raw_x().select_rows(&rows);
        let exported = check(
            &ModelSet::single(self.model(posterior)?, Vec::new()),
            &check_x,
        )?;
        if !exported.fidelity.passes() && !self.force {
            return Err(refusal(&exported, ""));
        }
        Ok(exported.blob)
    }

    /// This peer's `posterior` as a trained model in runtime form, with
    /// the data's input standardisation.
    ///
    /// # Errors
    /// [`Error::BadInput`] for hyperparameters that do not fit the data
    /// (a length scale per input, a finite non-negative noise) or an
    /// unknown kernel or objective; [`Error::Numerical`] when a factor
    /// fails.
    #[cfg_attr(feature = "internals", visibility::make(pub))]
    pub(crate) fn model(&self, posterior: PeerPosterior) -> Result<TrainedModel> {
        let t = &self.data.transform;
        let kern = self.kernel(t)?;
        let (kind, link, form, y) = match posterior {
            PeerPosterior::Exact {
                alpha,
                factor,
                y_mean,
                y_scale,
            } => {
                let form = RuntimeForm {
                    basis: basis(self.data.x.clone(), &kern),
                    beta: alpha,
                    l1: factor.lower_triangle(),
                    l2: None,
                    prior: kern.signal_var(),
                    noise_var: 0.0,
                };
                (ModelKind::Exact, Link::Identity, form, (y_mean, y_scale))
            }
            PeerPosterior::Inducing {
                z,
                objective,
                jitter,
            } => {
                let approximation: Approximation = parse(&objective, "--objective")?;
                let form = self.inducing(&kern, &z, approximation, jitter)?;
                (ModelKind::Spgp, Link::Identity, form, (0.0, 1.0))
            }
            PeerPosterior::Variational {
                z,
                q_mu,
                q_sqrt,
                whiten,
                jitter,
                probit,
            } => {
                let form = variational(&kern, t.apply_x(&z), &q_mu, &q_sqrt, whiten, jitter)?;
                let link = if probit { Link::Probit } else { Link::Identity };
                (ModelKind::Spgp, link, form, (0.0, 1.0))
            }
        };
        self.trained(kind, link, form, y)
    }

    /// The kernel in the standardised units of `t` (noise 0 is allowed: a
    /// model without a white-noise term).
    fn kernel(&self, t: &Standardisation) -> Result<KernelParams> {
        if self.lengthscales.len() != t.x_scale.len() {
            return Err(Error::BadInput(format!(
                "{} length scales for {} inputs",
                self.lengthscales.len(),
                t.x_scale.len()
            )));
        }
        let l: Vec<f64> = self
            .lengthscales
            .iter()
            .zip(&t.x_scale)
            .map(|(l, s)| l / s)
            .collect();
        // KernelParams needs a positive noise. Only the inducing posterior
        // reads it, and there it is a Gaussian likelihood's, never 0; the
        // exact and variational forms take the basis and covariances alone.
        Ok(KernelParams::with_noise_floor(
            &l,
            self.signal_variance,
            self.noise_variance.max(f64::MIN_POSITIVE),
            0.0,
        )?
        .with_kernel(parse(&self.kernel, "kernel")?))
    }

    /// The trainer's FITC or VFE posterior on pseudo-inputs `z` (raw).
    fn inducing(
        &self,
        kern: &KernelParams,
        z: &DMatrix<f64>,
        approximation: Approximation,
        jitter: f64,
    ) -> Result<RuntimeForm> {
        let data = &self.data;
        let feat = PseudoInputs::new(data.transform.apply_x(z))?;
        let relative = jitter / kern.signal_var();
        let default = JitterPolicy::default();
        let cfg = FitcConfig {
            approximation,
            jitter: JitterPolicy {
                initial: relative,
                max: default.max.max(relative),
                ..default
            },
            ..FitcConfig::default()
        };
        let raw_y = data.raw_y();
        let posterior = fitc_posterior(&feat, kern, &data.x, &raw_y, &cfg)?;
        Ok(posterior.runtime_form(&feat, kern))
    }

    /// A model in runtime form with this data's input transform and the
    /// target transform `(y_mean, y_scale)`.
    fn trained(
        &self,
        kind: ModelKind,
        link: Link,
        form: RuntimeForm,
        y: (f64, f64),
    ) -> Result<TrainedModel> {
        if !(self.noise_variance.is_finite() && self.noise_variance >= 0.0) {
            return Err(Error::BadInput(format!(
                "noise variance must be finite and non-negative, got {}",
                self.noise_variance
            )));
        }
        let data = &self.data;
        Ok(TrainedModel {
            kind,
            link,
            form: RuntimeForm {
                noise_var: self.noise_variance,
                ..form
            },
            transform: Standardisation {
                y_mean: y.0,
                y_scale: y.1,
                ..data.transform.clone()
            },
            input_names: data.input_names.clone(),
            target_name: data.target_name.clone(),
            bias: 0.0,
            positive_class: if link == Link::Probit { 1.0 } else { 0.0 },
        })
    }
}

/// Basis functions centred on `centres` (standardised) with kernel `kern`.
fn basis(centres: DMatrix<f64>, kern: &KernelParams) -> RuntimeBasis {
    RuntimeBasis {
        projection: None,
        amplitudes: vec![kern.signal_var(); centres.nrows()],
        centres,
        widths: BasisWidths::Shared(kern.inv_sq_lengthscales()),
        kernel: kern.kernel,
    }
}

/// The runtime form of a variational `q(u)` on the standardised
/// `centres` ([`PeerPosterior::Variational`]).
fn variational(
    kern: &KernelParams,
    centres: DMatrix<f64>,
    q_mu: &DVector<f64>,
    q_sqrt: &DMatrix<f64>,
    whiten: bool,
    jitter: f64,
) -> Result<RuntimeForm> {
    let m = centres.nrows();
    let q_sqrt = q_sqrt.lower_triangle();
    let kuu = kern.cross(&centres, &centres) + DMatrix::identity(m, m) * jitter;
    let l1 = cholesky(&kuu)?;
    let (beta, b) = if whiten {
        (solve_lower_t_vec(&l1, q_mu)?, l1.transpose())
    } else {
        let half = solve_lower_vec(&l1, q_mu)?;
        (solve_lower_t_vec(&l1, &half)?, kuu)
    };
    let mut root_inv_b = b;
    solve_lower_mut(&q_sqrt, &mut root_inv_b)?;
    let l2 = cholesky(&root_inv_b.tr_mul(&root_inv_b))?;
    Ok(RuntimeForm {
        basis: basis(centres, kern),
        beta,
        l1,
        l2: Some(l2),
        prior: kern.signal_var(),
        noise_var: 0.0,
    })
}
