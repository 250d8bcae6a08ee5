//! The IVM's kernel: a classifier's learned as svgp learns its own on an
//! active set, a regression's searched on held-out rows.

use super::*;

/// Multipliers of the data-scale length scales and signal variance tried as
/// starting kernels.
pub(super) const START_GRID: [(f64, f64); 6] = [
    (1.0, 1.0),
    (0.5, 1.0),
    (0.25, 1.0),
    (2.0, 1.0),
    (0.5, 4.0),
    (1.0, 4.0),
];

/// Fraction of the training rows held out to choose the kernel.
pub(crate) const VALIDATION_FRACTION: f64 = 0.2;

/// Below this many rows nothing is held out: the kernel is scored on the
/// rows it was selected from.
pub(super) const MIN_VALIDATION_ROWS: usize = 50;

/// The part the kernel is chosen on and the part it is scored on.
pub(super) struct Validation {
    pub(super) train: Dataset,
    pub(super) valid: Dataset,
}

impl Validation {
    fn new(data: &Dataset, seed: u64) -> Result<Self> {
        if data.n_rows() < MIN_VALIDATION_ROWS {
            return Ok(Validation {
                train: data.clone(),
                valid: data.clone(),
            });
        }
        let mut rows: Vec<usize> = (0..data.n_rows()).collect();
        rows.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x7A11_DA7E));
        let n_valid = (VALIDATION_FRACTION * data.n_rows() as f64).round() as usize;
        let (valid, train) = rows.split_at(n_valid);
        let (mut valid, mut train) = (valid.to_vec(), train.to_vec());
        valid.sort_unstable();
        train.sort_unstable();
        Ok(Validation {
            train: data.subset(&train)?,
            valid: data.subset(&valid)?,
        })
    }

    /// Selects on the training part with `kern` and scores the validation
    /// part; also returns the active set (for the round's optimisation).
    fn score(
        &self,
        kern: &KernelParams,
        sites: Sites,
        params: &IvmParams,
        stream: u64,
    ) -> Result<(f64, ActiveSet)> {
        let Sites {
            likelihood, bias, ..
        } = sites;
        let m = params.m.min(self.train.n_rows());
        let set = select(&self.train, kern, sites, m, params, stream)?;
        let x = self.train.x.select_rows(&set.indices);
        let jitter = JitterPolicy::default();
        let post = active_posterior(kern, &x, &set.p, &set.m, likelihood, &jitter)?;
        let pred = post.runtime_form()?.predict(&self.valid.x)?;
        let n = self.valid.n_rows() as f64;
        let total: f64 = (0..self.valid.n_rows())
            .map(|i| {
                let (mean, var, y) = (pred.mean[i], pred.var[i], self.valid.y[i]);
                match likelihood {
                    Likelihood::Probit => {
                        let z = y * (mean + bias) / (1.0 + var).sqrt();
                        libm::log(norm_cdf(z).max(1e-300))
                    }
                    Likelihood::Gaussian => {
                        let v = var + pred.noise_var;
                        -0.5 * (libm::log(2.0 * std::f64::consts::PI * v) + (y - mean).powi(2) / v)
                    }
                }
            })
            .sum();
        let score = total / n;
        Ok((
            if score.is_nan() {
                f64::NEG_INFINITY
            } else {
                score
            },
            set,
        ))
    }
}

/// Classifier: multipliers of svgp's starting length scales the first
/// round screens: from svgp's own alone, on the 6-D ring of 600 rows at M =
/// 64 the bound settles where the latent is flat (test error 52%, svgp's
/// 8%).
pub(super) const START_LENGTHSCALES: [f64; 3] = [1.0, 0.5, 0.25];

/// Classifier: iterations each screened start runs before the best goes on.
pub(super) const SCREEN_ITER: u64 = 20;

/// Classifier: the kernel learned as svgp learns its own (the bound on
/// every row, svgp's prior on the log length scales), with the inducing
/// inputs held at an active set instead of searched for. Each round selects
/// the active set with the kernel of the round before; the first screens
/// svgp's starting kernel and shorter length scales ([`START_LENGTHSCALES`],
/// [`SCREEN_ITER`] iterations each) by the bound and goes on from the
/// best. On at most [`IvmParams::kernel_points`] rows.
pub(super) fn probit_kernel(
    data: &Dataset,
    bias: f64,
    params: &IvmParams,
    seconds: &mut Seconds,
    progress: &mut dyn FnMut(Progress),
) -> Result<Learned> {
    let subset = match params.kernel_points {
        0 => data.clone(),
        rows => data.at_most_rows(rows.max(params.m), params.seed)?,
    };
    let rounds = params.rounds_for(Likelihood::Probit);
    let learner = BasisLearner {
        subset: &subset,
        sites: Sites {
            likelihood: Likelihood::Probit,
            bias,
            label_noise: 0.0,
        },
        params,
    };
    let base = starting_kernel(&subset, params.kernel)?;
    let mut kern = base.clone();
    let mut candidates = Vec::new();
    let mut last_run = None;
    let mut carried = None;
    for round in 1..=rounds {
        let started = Instant::now();
        let mut state = if round == 1 {
            let screen = OptimiseOptions {
                max_iter: SCREEN_ITER,
                ..params.optimiser.clone()
            };
            let mut best: Option<BasisState> = None;
            for (stream, factor) in START_LENGTHSCALES.into_iter().enumerate() {
                let mut start = base.clone();
                for v in &mut start.log_lengthscales {
                    *v += libm::log(factor);
                }
                let state = learner.start(&start, 1000 + stream as u64)?;
                let state = learner.learn(state, &screen, &mut |_| {})?;
                candidates.push(CandidateReport {
                    origin: format!("start l x{factor}: {SCREEN_ITER} iterations"),
                    label_noise: 0.0,
                    validation_log_predictive: None,
                    objective: state.run.as_ref().map(|run| run.value),
                });
                if best.as_ref().is_none_or(|b| state.value() < b.value()) {
                    best = Some(state);
                }
            }
            best.ok_or_else(|| Error::Numerical("IVM: no starting kernel".into()))?
        } else {
            learner.start(&kern, round as u64)?
        };
        state = learner.learn(state, &with_stall(&params.optimiser), progress)?;
        seconds.optimise += started.elapsed().as_secs_f64();
        let run = state.run.take();
        candidates.push(CandidateReport {
            origin: format!("round {round}: svgp bound on {} rows", subset.n_rows()),
            label_noise: 0.0,
            validation_log_predictive: None,
            objective: run.as_ref().map(|run| run.value),
        });
        kern = state.kern;
        last_run = run;
        carried = Some((subset.x.select_rows(&state.set.indices), state.q));
    }
    Ok(Learned {
        kern,
        sites: learner.sites,
        candidates,
        last_run,
        carried,
    })
}

/// A classifier's kernel, active set and `q(u)` on that basis, and the
/// run that learned them.
pub(super) struct BasisState {
    pub(super) kern: KernelParams,
    pub(super) set: ActiveSet,
    pub(super) q: Variational,
    pub(super) run: Option<OptimiseReport>,
}

impl BasisState {
    /// The penalised negative bound reached (infinite before any run).
    fn value(&self) -> f64 {
        self.run.as_ref().map_or(f64::INFINITY, |run| run.value)
    }
}

/// Selects a classifier's active set and learns its kernel on the rows
/// `subset`.
pub(super) struct BasisLearner<'a> {
    pub(super) subset: &'a Dataset,
    pub(super) sites: Sites,
    pub(super) params: &'a IvmParams,
}

impl BasisLearner<'_> {
    /// The active set `kern` selects (random stream `stream`) and the
    /// active set's posterior as the start of `q(u)`.
    fn start(&self, kern: &KernelParams, stream: u64) -> Result<BasisState> {
        let set = select(
            self.subset,
            kern,
            self.sites,
            self.params.m,
            self.params,
            stream,
        )?;
        let z = self.subset.x.select_rows(&set.indices);
        let q = whitened_active_posterior(&z, &set, kern, self.sites.bias)?;
        Ok(BasisState {
            kern: kern.clone(),
            set,
            q,
            run: None,
        })
    }

    /// The kernel and `q(u)` on `state`'s basis after a run of `options`.
    fn learn(
        &self,
        state: BasisState,
        options: &OptimiseOptions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<BasisState> {
        let z = self.subset.x.select_rows(&state.set.indices);
        let (kern, q, run) =
            fit_kernel_on_basis(self.subset, z, (&state.kern, state.q), options, progress)?;
        Ok(BasisState {
            kern,
            set: state.set,
            q,
            run: Some(run),
        })
    }
}

/// Regression: every kernel of a small grid around the data's scales, and
/// each round of the select-then-optimise alternation from the best,
/// selects on 80% of the rows and is scored on the rest; the best wins.
pub(super) fn searched_kernel(
    data: &Dataset,
    params: &IvmParams,
    seconds: &mut Seconds,
    progress: &mut dyn FnMut(Progress),
) -> Result<Learned> {
    let likelihood = Likelihood::Gaussian;
    let validation = Validation::new(data, params.seed)?;
    let mut candidates = Vec::new();
    let base = data_scale_kernel(data, params.kernel)?;
    let started = Instant::now();
    let sites = Sites {
        likelihood,
        bias: 0.0,
        label_noise: 0.0,
    };
    let mut best: Option<(f64, KernelParams, ActiveSet)> = None;
    for (stream, (l_factor, s2_factor)) in START_GRID.into_iter().enumerate() {
        let mut start = base.clone();
        for v in &mut start.log_lengthscales {
            *v += libm::log(l_factor);
        }
        start.log_signal_var += libm::log(s2_factor);
        let (score, set) = validation.score(&start, sites, params, stream as u64)?;
        candidates.push(CandidateReport {
            origin: format!("start l x{l_factor} s2 x{s2_factor}"),
            label_noise: 0.0,
            validation_log_predictive: Some(score),
            objective: None,
        });
        if best.as_ref().is_none_or(|(s, ..)| score > *s) {
            best = Some((score, start, set));
        }
    }
    seconds.select += started.elapsed().as_secs_f64();
    let Some((_, mut kern, mut set)) = best.clone() else {
        return Err(Error::Numerical("IVM: no starting kernel".into()));
    };
    // Alternation from the best start, on the training part.
    let mut last_run: Option<OptimiseReport> = None;
    for round in 1..=params.rounds_for(Likelihood::Gaussian) {
        let started = Instant::now();
        let (next, run) = optimise_kernel(
            &validation.train,
            &set,
            &kern,
            likelihood,
            &params.optimiser,
            progress,
        )?;
        seconds.optimise += started.elapsed().as_secs_f64();
        let started = Instant::now();
        let (score, next_set) = validation.score(&next, sites, params, 100 + round as u64)?;
        seconds.select += started.elapsed().as_secs_f64();
        candidates.push(CandidateReport {
            origin: format!("round {round}"),
            label_noise: 0.0,
            validation_log_predictive: Some(score),
            objective: Some(run.value),
        });
        last_run = Some(run);
        if best.as_ref().is_none_or(|(s, ..)| score > *s) {
            best = Some((score, next.clone(), next_set.clone()));
        }
        kern = next;
        set = next_set;
    }
    let Some((_, kern, _)) = best else {
        return Err(Error::Numerical("IVM: no kernel".into()));
    };
    Ok(Learned {
        kern,
        sites,
        candidates,
        last_run,
        carried: None,
    })
}

/// Minimises the active set's approximate marginal likelihood over the
/// kernel (and the Gaussian's noise), sites fixed.
pub(super) fn optimise_kernel(
    data: &Dataset,
    set: &ActiveSet,
    kern: &KernelParams,
    likelihood: Likelihood,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(KernelParams, OptimiseReport)> {
    let x: DMatrix<f64> = data.x.select_rows(&set.indices);
    let jitter = JitterPolicy::default();
    match likelihood {
        Likelihood::Gaussian => {
            let y = data.y.select_rows(&set.indices);
            optimise_exact_from(&x, &y, kern.clone(), optimiser, progress)
        }
        Likelihood::Probit => {
            let objective = ActiveObjective::new(&x, &set.p, &set.m, kern.clone(), jitter);
            let run = minimise(
                |p| objective.objective(p),
                objective.initial(),
                optimiser,
                progress,
            )?;
            Ok((objective.unpack(&run.x)?, run))
        }
    }
}
