//! How a fit went: what `sgp fit` prints and `--json` serialises. One
//! report for every fit, of one output, `P` outputs or `K` classes.

use serde::Serialize;

use super::choice_record::Choice;
use super::dr::ProjectionReport;
use super::sparse::SharingReport;
use super::{gplasso, ivm, streamed, Method};
use crate::data::Standardisation;
use crate::model::inference::Approximation;
use crate::model::kernel::KernelParams;
use crate::numerics::optimise::{OptimiseReport, OptimiseStatus};

/// How a fit went.
#[derive(Clone, Debug, Serialize)]
pub struct FitReport {
    /// The family fitted (the blob's kind).
    pub method: Method,
    /// The objective of a sparse fit.
    pub approximation: Option<Approximation>,
    /// Training rows used.
    pub rows: usize,
    /// Training objective at the returned parameters, summed over the
    /// outputs (NLML, VFE's or SVGP's bound; standardised units).
    pub nlml: f64,
    /// Wall time of the whole fit, in seconds.
    pub seconds: f64,
    /// The inputs the model uses, in the order of `lengthscales`.
    pub inputs: Vec<String>,
    /// Inputs constant in the training data, which the model ignores.
    pub ignored_inputs: Vec<String>,
    /// Length scales in raw input units, shared by every output (empty for
    /// a projected model: see `projection`).
    pub lengthscales: Vec<f64>,
    /// The covariance function's name (`se`, `matern12`, `matern32`,
    /// `matern52`).
    pub kernel: &'static str,
    /// A projected model's projection (SPGP+DR, PCA).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection: Option<ProjectionReport>,
    /// Each output's (or class's) own figures, in blob order.
    pub outputs: Vec<OutputReport>,
    /// How many times a Cholesky needed more jitter in the final model.
    pub jitter_escalations: u32,
    /// The final gradient run.
    pub optimiser: Option<OptimiserReport>,
    /// Every start of a restarted fit, in the order tried (empty for one
    /// start); the lowest `nlml` was continued.
    pub starts: Vec<StartReport>,
    /// Whether several outputs share one variance factor, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variance: Option<SharingReport>,
    /// SPGP+HS: the spread of the uncertainties `h_m` (raw target variance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncertainties: Option<WidthSpread>,
    /// SPGP+HS: the strength of the prior on `h` fitted, and how it was
    /// chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h_prior: Option<PriorStrength>,
    /// The choices made above the family ([`crate::choose`]), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choice: Option<Choice>,
    /// GPLasso's selection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gplasso: Option<gplasso::GplassoReport>,
    /// IVM's active set and kernel candidates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ivm: Option<ivm::IvmReport>,
    /// A fit on a growing subset, conditioned on every row in a pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streamed: Option<streamed::StreamReport>,
    /// What went wrong in a part of the fit its result did not need.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One output's (or class's) figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutputReport {
    /// Its target column (or class label).
    pub name: String,
    /// Its term of the training objective (absent where the objective is
    /// not a sum over outputs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nlml: Option<f64>,
    /// Signal variance in raw target units.
    pub signal_variance: f64,
    /// Noise variance in raw target units (0 for a classifier).
    pub noise_variance: f64,
    /// The noise sits on its floor (FITC's known tendency).
    pub noise_on_floor: bool,
}

impl OutputReport {
    /// The figures of output `name` with objective term `nlml`, its
    /// variances to be filled in from its kernel.
    pub(crate) fn named(name: &str, nlml: Option<f64>) -> Self {
        OutputReport {
            name: name.to_owned(),
            nlml,
            signal_variance: 0.0,
            noise_variance: 0.0,
            noise_on_floor: false,
        }
    }
}

impl FitReport {
    /// A report of `method` on `rows` rows with objective `nlml`; the rest
    /// empty until the fit fills it in.
    pub(crate) fn new(method: Method, rows: usize, nlml: f64) -> Self {
        FitReport {
            method,
            approximation: None,
            rows,
            nlml,
            seconds: 0.0,
            inputs: Vec::new(),
            ignored_inputs: Vec::new(),
            lengthscales: Vec::new(),
            kernel: sgp_runtime::Kernel::SquaredExponential.name(),
            projection: None,
            outputs: Vec::new(),
            jitter_escalations: 0,
            optimiser: None,
            starts: Vec::new(),
            variance: None,
            uncertainties: None,
            h_prior: None,
            choice: None,
            gplasso: None,
            ivm: None,
            streamed: None,
            warnings: Vec::new(),
        }
    }

    /// Sets the hyperparameters from each output's `kernels` (standardised
    /// units of the inputs the fit used, `x_scale`) and its target units
    /// (`transforms`); `classifier`: no noise; `projected`: no length
    /// scales (a projection replaces them).
    pub(crate) fn describe_kernels(
        &mut self,
        kernels: &[KernelParams],
        (x_scale, transforms): (&[f64], &[&Standardisation]),
        (classifier, projected): (bool, bool),
    ) {
        if let Some(k) = kernels.first() {
            self.kernel = k.kernel.name();
        }
        self.lengthscales = match kernels.first() {
            Some(k) if !projected => k
                .lengthscales()
                .iter()
                .zip(x_scale)
                .map(|(l, s)| l * s)
                .collect(),
            _ => Vec::new(),
        };
        let names: Vec<String> = self.outputs.iter().map(|o| o.name.clone()).collect();
        let terms: Vec<Option<f64>> = self.outputs.iter().map(|o| o.nlml).collect();
        self.outputs = kernels
            .iter()
            .zip(transforms)
            .enumerate()
            .map(|(p, (kern, t))| OutputReport {
                name: names.get(p).cloned().unwrap_or_default(),
                nlml: terms.get(p).copied().flatten(),
                signal_variance: t.unapply_var(kern.signal_var()),
                noise_variance: if classifier {
                    0.0
                } else {
                    t.unapply_var(kern.noise_var())
                },
                noise_on_floor: !classifier && kern.noise_on_floor(),
            })
            .collect();
    }
}

/// How the gradient optimiser went.
#[derive(Clone, Debug, Serialize)]
pub struct OptimiserReport {
    /// Objective at the start of the final run (standardised data).
    pub initial_nlml: f64,
    /// Iterations of the final run.
    pub iterations: u64,
    /// The final run's iteration budget.
    pub max_iter: u64,
    /// Objective evaluations of the final run.
    pub evaluations: u64,
    /// Why the final run stopped.
    pub stop_reason: String,
    /// The final run stopped on its budget, not on convergence.
    pub budget_exhausted: bool,
}

impl OptimiserReport {
    pub(crate) fn new(run: &OptimiseReport, max_iter: u64) -> Self {
        OptimiserReport {
            initial_nlml: run.initial_value,
            iterations: run.iterations,
            max_iter,
            evaluations: run.evaluations,
            stop_reason: if run.message.is_empty() {
                format!("{:?}", run.status)
            } else {
                format!("{:?}: {}", run.status, run.message)
            },
            budget_exhausted: run.status == OptimiseStatus::MaxIterations,
        }
    }
}

/// One start of a restarted fit and where its screening ended.
#[derive(Clone, Debug, Serialize)]
pub struct StartReport {
    /// How the start was drawn, e.g. `kmeans (seed 3)`.
    pub init: String,
    /// Its score after screening: the training objective on the rows it
    /// saw, or its validation NLPD (a streamed fit).
    pub nlml: f64,
}

/// SPGP+HS's prior on `h`: the strength fitted and the held-out figures
/// it was chosen on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PriorStrength {
    /// The weight `beta` of the prior, as a fraction of SPGP's average
    /// noise variance (0: no prior, the noise floor alone).
    pub strength: f64,
    /// Each strength tried, with its mean held-out NLPD over the folds
    /// (raw units; infinite where a fit failed). Empty where none were
    /// tried.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tried: Vec<StrengthScore>,
    /// Rows the strengths were scored on (every row held out once).
    pub rows: usize,
    /// What was decided and why, in one sentence.
    pub reason: String,
}

/// One prior strength scored over the folds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StrengthScore {
    /// The strength (fraction of SPGP's average noise variance).
    pub strength: f64,
    /// Mean held-out NLPD (raw units).
    pub nlpd: f64,
}

/// Minimum, median and maximum of one quantity over the basis functions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WidthSpread {
    /// Smallest value.
    pub min: f64,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Largest value.
    pub max: f64,
}

impl WidthSpread {
    /// The spread of `values` (not empty, no NaN).
    pub(crate) fn of(mut values: Vec<f64>) -> Self {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            0.5 * (values[n / 2 - 1] + values[n / 2])
        };
        WidthSpread {
            min: values[0],
            median,
            max: values[n - 1],
        }
    }
}
