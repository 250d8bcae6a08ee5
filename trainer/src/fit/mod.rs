//! The fitting procedures users pick with `--model`. Each takes a validated
//! [`FitParams`] and a [`Dataset`] and ends in a [`TrainedModel`] in the
//! runtime form of MATH.md, plus a [`FitReport`].
//!
//! `exact` is the reference (full GP on at most `max_points` rows); `spgp`
//! is gradient fitting of FITC over pseudo-inputs. Other feature kinds (HS,
//! DR, VSGP) reuse [`spgp::fit_sparse`] with a different
//! [`crate::features::InducingFeatures`].

pub mod exact;
pub mod spgp;

use std::time::Duration;

use nalgebra::DMatrix;
use serde::Serialize;

use crate::data::Dataset;
use crate::kernel::KernelParams;
use crate::model::TrainedModel;
use crate::optimise::{OptimiseOptions, OptimiseReport, Progress};
use crate::{Error, Result};

/// Largest number of rows an exact GP may be fitted on.
pub const MAX_EXACT_POINTS: usize = 4096;

/// Which model to fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Exact GP on (a random subset of) the data.
    Exact,
    /// SPGP / FITC with `m` pseudo-inputs.
    Spgp,
}

/// Where the pseudo-inputs start.
#[derive(Clone, Debug, PartialEq)]
pub enum PseudoInit {
    /// A random subset of the training inputs (the SPGP paper's choice).
    RandomSubset,
    /// k-means centres of the training inputs.
    KMeans,
    /// Given positions (standardised units, M x D).
    Given(DMatrix<f64>),
}

/// Where the kernel hyperparameters start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HyperInit {
    /// From the data's scales (see [`crate::init::default_hyperparameters`]).
    DataScales,
    /// From an exact GP fitted to a random subset of `max_points` rows.
    ExactSubset,
}

/// What to fit and how; check with [`FitParams::validate`].
#[derive(Clone, Debug, PartialEq)]
pub struct FitParams {
    /// Model family.
    pub method: Method,
    /// Number of pseudo-inputs (SPGP).
    pub m: usize,
    /// Seed for every random choice: same data, same seed, same model.
    pub seed: u64,
    /// Optimiser settings.
    pub optimiser: OptimiseOptions,
    /// Pseudo-input initialisation.
    pub pseudo_init: PseudoInit,
    /// Hyperparameter initialisation.
    pub hyper_init: HyperInit,
    /// Largest number of rows an exact GP is fitted on.
    pub max_points: usize,
}

impl Default for FitParams {
    fn default() -> Self {
        FitParams {
            method: Method::Spgp,
            m: 20,
            seed: 0,
            optimiser: OptimiseOptions {
                max_iter: 200,
                ..OptimiseOptions::default()
            },
            pseudo_init: PseudoInit::RandomSubset,
            hyper_init: HyperInit::DataScales,
            max_points: 1000,
        }
    }
}

impl FitParams {
    /// Checks the parameters against each other and against `data`.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the offending parameter.
    pub fn validate(&self, data: &Dataset) -> Result<()> {
        self.optimiser.validate()?;
        if self.max_points < 2 {
            return Err(Error::BadInput("--max-points must be at least 2".into()));
        }
        // The exported exact GP has one basis function per row, and the
        // host's runtime check holds at most 4096 (crate::device).
        if self.max_points > MAX_EXACT_POINTS {
            return Err(Error::BadInput(format!(
                "--max-points {} is too large: an exact GP is exported with one basis \
                 function per row, at most {MAX_EXACT_POINTS}",
                self.max_points
            )));
        }
        data.require_rows(2, "a Gaussian process")?;
        if self.method == Method::Spgp {
            if self.m == 0 {
                return Err(Error::BadInput("--m must be at least 1".into()));
            }
            data.require_rows(self.m, "pseudo-inputs (--m)")?;
            if let PseudoInit::Given(z) = &self.pseudo_init {
                if z.shape() != (self.m, data.n_inputs()) {
                    return Err(Error::BadInput(format!(
                        "given pseudo-inputs are {}x{}, expected {}x{}",
                        z.nrows(),
                        z.ncols(),
                        self.m,
                        data.n_inputs()
                    )));
                }
            }
        }
        Ok(())
    }
}

/// How a fit went: what `sgp fit` prints.
#[derive(Clone, Debug, Serialize)]
pub struct FitReport {
    /// Negative log marginal likelihood at the start (standardised data).
    pub initial_nlml: f64,
    /// NLML at the returned parameters.
    pub nlml: f64,
    /// Optimiser iterations.
    pub iterations: u64,
    /// Objective evaluations.
    pub evaluations: u64,
    /// Wall time of the optimisation.
    pub elapsed: Duration,
    /// Why the optimiser stopped.
    pub stop_reason: String,
    /// Training rows used.
    pub rows: usize,
    /// Length scales in raw input units, one per input the model uses (in
    /// input order; the [`Self::ignored_inputs`] are left out).
    pub lengthscales: Vec<f64>,
    /// Inputs constant in the training data, which the model ignores.
    pub ignored_inputs: Vec<String>,
    /// Signal variance in raw target units.
    pub signal_variance: f64,
    /// Noise variance in raw target units.
    pub noise_variance: f64,
    /// The optimum sits on the noise floor (FITC's known tendency).
    pub noise_on_floor: bool,
    /// How many times a Cholesky needed more jitter in the final model.
    pub jitter_escalations: u32,
}

impl FitReport {
    fn new(
        data: &Dataset,
        rows: usize,
        kern: &KernelParams,
        run: &OptimiseReport,
        jitter_escalations: u32,
    ) -> Self {
        let t = &data.transform;
        FitReport {
            initial_nlml: run.initial_value,
            nlml: run.value,
            iterations: run.iterations,
            evaluations: run.evaluations,
            elapsed: run.elapsed,
            stop_reason: if run.message.is_empty() {
                format!("{:?}", run.status)
            } else {
                format!("{:?}: {}", run.status, run.message)
            },
            rows,
            lengthscales: kern
                .lengthscales()
                .iter()
                .zip(&t.x_scale)
                .map(|(l, s)| l * s)
                .collect(),
            signal_variance: t.unapply_var(kern.signal_var()),
            noise_variance: t.unapply_var(kern.noise_var()),
            noise_on_floor: kern.noise_on_floor(),
            jitter_escalations,
            ignored_inputs: Vec::new(),
        }
    }
}

/// Fits the model `params` asks for. `progress` is called once per
/// optimiser iteration.
///
/// Constant inputs ([`Dataset::constant_inputs`]) are left out of the fit
/// and the model is then extended to take every input and ignore those
/// ([`crate::features::RuntimeBasis::with_ignored_inputs`]): on the device
/// their value, whatever it is, does not change the prediction.
///
/// # Errors
/// [`Error::BadInput`] for parameters that do not fit the data, or a
/// numerical failure that jitter escalation could not cure.
pub fn fit(
    data: &Dataset,
    params: &FitParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<(TrainedModel, FitReport)> {
    params.validate(data)?;
    let ignored = &data.constant_inputs;
    if ignored.is_empty() {
        return fit_method(data, params, progress);
    }
    let used = data.without_inputs(ignored)?;
    let mut params = params.clone();
    if let PseudoInit::Given(z) = &params.pseudo_init {
        let keep: Vec<usize> = (0..z.ncols()).filter(|j| !ignored.contains(j)).collect();
        params.pseudo_init = PseudoInit::Given(z.select_columns(&keep));
    }
    let (mut model, mut report) = fit_method(&used, &params, progress)?;
    model.form.basis = model
        .form
        .basis
        .with_ignored_inputs(data.n_inputs(), ignored);
    model.transform = data.transform.clone();
    model.input_names = data.input_names.clone();
    report.ignored_inputs = ignored
        .iter()
        .filter_map(|&j| data.input_names.get(j).cloned())
        .collect();
    Ok((model, report))
}

/// The procedure `params.method` names, on data without constant inputs.
fn fit_method(
    data: &Dataset,
    params: &FitParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<(TrainedModel, FitReport)> {
    match params.method {
        Method::Exact => exact::fit_exact(data, params, progress),
        Method::Spgp => spgp::fit_spgp(data, params, progress),
    }
}

/// Starting kernel hyperparameters from the data's scales.
pub(crate) fn data_scale_kernel(data: &Dataset) -> Result<KernelParams> {
    let h = crate::init::default_hyperparameters(&data.x, data.y.as_slice());
    let l: Vec<f64> = h.log_lengthscales.iter().map(|v| v.exp()).collect();
    KernelParams::new(&l, h.log_signal_var.exp(), h.log_noise_var.exp())
}
