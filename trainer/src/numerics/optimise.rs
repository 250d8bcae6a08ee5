//! L-BFGS minimisation that never loses the best point it has seen.
//!
//! The L-BFGS iteration of `super::lbfgs` run by `argmin`'s executor. GP
//! likelihoods go non-finite at absurd trial steps, where argmin's line
//! searches abort, so the line search here first halves the step until the
//! objective is finite and then hands over to More–Thuente with that step
//! as its bound. Every evaluation passes a tracker of the lowest finite
//! objective; that point is what `minimise` returns.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use argmin::core::{
    CostFunction, Error as ArgminError, Executor, Gradient, LineSearch, Problem, Solver, State,
    TerminationReason, TerminationStatus, KV,
};
use argmin::solver::linesearch::MoreThuenteLineSearch;

use super::lbfgs::{Lbfgs, VecState};

use crate::numerics::reproducible::trajectory_variant;
use crate::{Error, Result};

/// Settings for `minimise`. Check them with [`OptimiseOptions::validate`]
/// (which `minimise` also does).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct OptimiseOptions {
    /// Upper bound on L-BFGS iterations (line searches), over all restarts.
    pub max_iter: u64,
    /// Stop when `|f_prev - f| <= rel_tol * max(|f_prev|, |f|, 1)` between
    /// two iterations (the SciPy `ftol` convention, so objectives near zero
    /// are judged absolutely). Zero disables the test.
    pub rel_tol: f64,
    /// Number of (step, gradient change) pairs L-BFGS remembers; `None`
    /// (the default) picks it from the number of parameters, see
    /// `auto_memory`.
    pub memory: Option<usize>,
    /// Largest change of any one parameter in one line search (parameters
    /// are log hyperparameters and standardised coordinates: 1 is a factor
    /// of e, or one standard deviation of the data). Infinite: no cap.
    pub max_step: f64,
    /// Stop early when progress has stalled; `None`: run to `max_iter` (or
    /// the `rel_tol` test).
    pub stall: Option<Stall>,
    /// Rows the objective sums over: the scale of [`Stall::per_row`]. Fits
    /// set it from their data; 1 by default.
    pub rows: usize,
    /// The objective's value on a plateau the run may start on (a
    /// classifier's base-rate log loss): the stall test waits until the
    /// best value is below it by the stall's decrease, since a run that
    /// has not yet left the plateau creeps at first and is not done.
    /// `None`: no plateau.
    pub plateau: Option<f64>,
}

/// A stopping test on slow progress: stop once the lowest objective seen
/// fell by less than `per_row * rows` over the last `window` iterations
/// (GP likelihoods creep down long valleys where [`OptimiseOptions::rel_tol`]
/// never fires; per row the objective is on the scale of the test NLPD).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct Stall {
    /// Iterations the decrease is measured over.
    pub window: u64,
    /// Smallest decrease per row of the objective over `window` iterations
    /// that keeps the run going.
    pub per_row: f64,
}

impl Default for OptimiseOptions {
    fn default() -> Self {
        OptimiseOptions {
            max_iter: 500,
            rel_tol: 1e-9,
            memory: None,
            max_step: DEFAULT_MAX_STEP,
            stall: None,
            rows: 1,
            plateau: None,
        }
    }
}

impl OptimiseOptions {
    /// These options for an objective summed over `rows` rows, the scale
    /// of [`Stall::per_row`].
    pub(crate) fn for_rows(&self, rows: usize) -> Self {
        OptimiseOptions {
            rows,
            ..self.clone()
        }
    }

    /// Rejects settings the optimiser cannot honour: zero iterations, a
    /// negative or non-finite tolerance, an empty L-BFGS memory, a stall
    /// test with an empty window or a negative or non-finite tolerance.
    pub fn validate(&self) -> Result<()> {
        if self.max_iter == 0 {
            return Err(Error::BadInput(
                "optimiser: max_iter must be at least 1".into(),
            ));
        }
        if !(self.rel_tol.is_finite() && self.rel_tol >= 0.0) {
            return Err(Error::BadInput(format!(
                "optimiser: rel_tol must be finite and >= 0, got {}",
                self.rel_tol
            )));
        }
        if self.max_step.is_nan() || self.max_step <= 0.0 {
            return Err(Error::BadInput(format!(
                "optimiser: max_step must be positive, got {}",
                self.max_step
            )));
        }
        if let Some(stall) = self.stall {
            if !(stall.per_row.is_finite() && stall.per_row >= 0.0) {
                return Err(Error::BadInput(format!(
                    "optimiser: the stall tolerance (--tol) must be finite and >= 0, got {}",
                    stall.per_row
                )));
            }
            if stall.window == 0 {
                return Err(Error::BadInput(
                    "optimiser: the stall test's window must be at least 1 iteration".into(),
                ));
            }
        }
        if self.memory == Some(0) {
            return Err(Error::BadInput(
                "optimiser: L-BFGS memory must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// Why the optimiser stopped. Whatever the status, the report carries the
/// best finite point seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) enum OptimiseStatus {
    /// The relative-improvement or gradient-norm test was met.
    Converged,
    /// The [`Stall`] test was met: the objective still falls, but too
    /// slowly to matter.
    Stalled,
    /// `max_iter` iterations were used.
    MaxIterations,
    /// The line search could not make progress (and restarting from the best
    /// point did not help).
    LineSearchFailed,
    /// The line search stopped on a non-finite objective or gradient (or an
    /// objective error, which is treated the same way).
    NonFinite,
    /// The internal budget of objective evaluations was used up.
    EvaluationLimit,
}

/// Sent to the progress callback after every iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Iterations completed so far (1-based, counted over restarts).
    pub iteration: u64,
    /// Lowest finite objective value seen so far.
    pub best_value: f64,
    /// Objective evaluations so far.
    pub evaluations: u64,
}

/// Outcome of `minimise`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct OptimiseReport {
    /// Parameters with the lowest finite objective seen.
    pub x: Vec<f64>,
    /// Objective at `x`.
    pub value: f64,
    /// Objective at the starting point, for judging progress.
    pub initial_value: f64,
    /// Why the optimiser stopped.
    pub status: OptimiseStatus,
    /// Detail behind `status` (e.g. the line search's own message, or the
    /// last objective error that was treated as non-finite); empty if none.
    pub message: String,
    /// L-BFGS iterations used, over all restarts.
    pub iterations: u64,
    /// Objective evaluations (repeat requests for the same point are served
    /// from a cache and not counted).
    pub evaluations: u64,
    /// Times L-BFGS was restarted from the best point after a failed line
    /// search that still made progress.
    pub restarts: u32,
    /// Wall-clock time spent in `minimise`.
    pub elapsed: Duration,
}

/// The L-BFGS memory for `params` parameters when
/// [`OptimiseOptions::memory`] is `None`: one (step, gradient change) pair
/// per 32 parameters, at least 10 (SciPy's default) and at most 50
/// (docs/src/numerics.md, "L-BFGS memory").
pub(crate) fn auto_memory(params: usize) -> usize {
    (params / 32).clamp(10, 50)
}

/// Default [`OptimiseOptions::max_step`]: a factor of e^4 (about 55) in a
/// length scale or variance per line search: it stops the first,
/// curvature-free step of L-BFGS from jumping orders of magnitude
/// (docs/src/numerics.md, "Conventions").
pub(crate) const DEFAULT_MAX_STEP: f64 = 4.0;

/// The [`Driver`]'s exit message for a met [`Stall`] test (argmin has no
/// termination reason of its own for it).
const STALLED: &str = "progress stalled";

/// Upper bound on step halvings before the line search gives up on finding
/// a finite point; 2^-60 of a step is below any useful resolution.
const MAX_HALVINGS: u32 = 60;

/// `x0` moved by `n` units in the last place per coordinate (up and down
/// in turn) for the test switch [`trajectory_variant`] `n`; else unchanged.
fn nudged(mut x0: Vec<f64>) -> Vec<f64> {
    let n = trajectory_variant();
    for (i, v) in x0.iter_mut().enumerate() {
        for _ in 0..n {
            *v = if (i + n).is_multiple_of(2) {
                v.next_up()
            } else {
                v.next_down()
            };
        }
    }
    x0
}

/// Evaluations allowed per iteration before the run is cut off; More–Thuente
/// rarely needs more than a handful, so this only catches runaway searches.
const EVALS_PER_ITER: u64 = 100;

/// Minimises `objective` (value and gradient) with L-BFGS from `x0`,
/// calling `progress` once per iteration; deterministic.
///
/// An error or a non-finite value or gradient at a trial point counts as
/// `+inf` there (the last message is kept in [`OptimiseReport::message`]).
/// At `x0` an error is returned unchanged and a non-finite value is
/// [`Error::Numerical`]; so is a gradient of the wrong length.
pub(crate) fn minimise<F>(
    mut objective: F,
    x0: Vec<f64>,
    opts: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<OptimiseReport>
where
    F: FnMut(&[f64]) -> Result<(f64, Vec<f64>)>,
{
    minimise_dyn(&mut objective, x0, opts, progress)
}

/// An objective behind a trait object: value and gradient at a point.
type DynObjective<'a> = dyn FnMut(&[f64]) -> Result<(f64, Vec<f64>)> + 'a;

/// [`minimise`] compiled once: the solver behind a trait object, so each
/// objective's closure does not instantiate the whole of argmin again
/// (build time; the arithmetic is the same).
fn minimise_dyn(
    objective: &mut DynObjective<'_>,
    x0: Vec<f64>,
    opts: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<OptimiseReport> {
    let started = Instant::now();
    opts.validate()?;
    check_start(&x0)?;

    let x0 = nudged(x0);
    let tracker = Tracker::new(objective, x0.len(), opts.max_iter);
    let (f0, g0) = tracker.evaluate_start(&x0)?;

    let mut start = x0;
    let mut start_value = f0;
    let mut start_grad = g0;
    let mut iterations = 0u64;
    let mut restarts = 0u32;
    let (status, mut message) = loop {
        let remaining = opts.max_iter.saturating_sub(iterations);
        let segment_best = tracker.best_value();
        let from = (start.clone(), start_value, start_grad.clone());
        let (used, reason) = run_segment(&tracker, from, remaining, iterations, opts, progress);
        if let Some(err) = tracker.take_fatal() {
            return Err(err);
        }
        iterations = iterations.saturating_add(used);
        let (status, message) = tracker.classify(reason);

        let retry = matches!(
            status,
            OptimiseStatus::LineSearchFailed | OptimiseStatus::NonFinite
        ) && iterations < opts.max_iter
            && tracker.best_value() < segment_best;
        if !retry {
            break (status, message);
        }
        // Memory built on a failed search is suspect: restart from the best
        // point as steepest descent, which the line search can always shorten.
        restarts += 1;
        let (x, f, g) = tracker.best();
        start = x;
        start_value = f;
        start_grad = g;
    };

    // A trial point the line search backed off from is routine; its message
    // explains a stop only when the stop was a failure.
    let failed = matches!(
        status,
        OptimiseStatus::LineSearchFailed | OptimiseStatus::NonFinite
    );
    if message.is_empty() && failed {
        message = tracker.last_problem().unwrap_or_default();
    }
    let (x, value, _) = tracker.best();
    Ok(OptimiseReport {
        x,
        value,
        initial_value: f0,
        status,
        message,
        iterations,
        evaluations: tracker.evaluations.get(),
        restarts,
        elapsed: started.elapsed(),
    })
}

/// Refuses a start with no parameters or a non-finite one.
fn check_start(x0: &[f64]) -> Result<()> {
    if x0.is_empty() {
        return Err(Error::BadInput(
            "optimiser: no parameters to optimise".into(),
        ));
    }
    if let Some(i) = x0.iter().position(|v| !v.is_finite()) {
        return Err(Error::BadInput(format!(
            "optimiser: starting parameter {i} is not finite"
        )));
    }
    Ok(())
}

/// One L-BFGS run of at most `remaining` iterations from `from` (point,
/// value, gradient), `iterations_before` already done: the iterations it
/// used and why it stopped.
fn run_segment<F>(
    tracker: &Tracker<F>,
    (start, start_value, start_grad): (Vec<f64>, f64, Vec<f64>),
    remaining: u64,
    iterations_before: u64,
    opts: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> (u64, Option<TerminationReason>)
where
    F: FnMut(&[f64]) -> Result<(f64, Vec<f64>)>,
{
    let solver = Driver {
        inner: Lbfgs::new(
            ProbingLineSearch {
                direction: None,
                max_step: opts.max_step,
                inner: MoreThuente::new(),
            },
            opts.memory.unwrap_or_else(|| auto_memory(start.len())),
        ),
        rel_tol: opts.rel_tol,
        stall: opts.stall.map(|s| (s.window, s.per_row * opts.rows as f64)),
        plateau: opts.plateau,
        bests: Vec::new(),
        iterations_before,
        progress,
    };
    let run = Executor::new(Objective { tracker }, solver)
        .configure(|state| {
            state
                .param(start)
                .cost(start_value)
                .gradient(start_grad)
                .max_iters(remaining)
        })
        .ctrlc(false)
        .timer(false)
        .run();
    match run {
        Ok(result) => (
            result.state.get_iter(),
            result.state.get_termination_reason().cloned(),
        ),
        Err(e) => (0, Some(TerminationReason::SolverExit(e.to_string()))),
    }
}

/// One evaluated point: parameters, value, gradient.
#[derive(Clone)]
struct Eval {
    x: Vec<f64>,
    f: f64,
    g: Vec<f64>,
}

/// Wraps the user's objective: caches the last point (argmin asks for cost
/// and gradient separately), records the best finite point, maps failures
/// to `+inf`, and enforces the evaluation budget.
struct Tracker<F> {
    objective: RefCell<F>,
    dim: usize,
    last: RefCell<Option<Eval>>,
    best: RefCell<Option<Eval>>,
    evaluations: Cell<u64>,
    max_evaluations: u64,
    budget_hit: Cell<bool>,
    last_was_nonfinite: Cell<bool>,
    last_problem: RefCell<Option<String>>,
    fatal: RefCell<Option<Error>>,
}

impl<F> Tracker<F>
where
    F: FnMut(&[f64]) -> Result<(f64, Vec<f64>)>,
{
    fn new(objective: F, dim: usize, max_iter: u64) -> Self {
        Tracker {
            objective: RefCell::new(objective),
            dim,
            last: RefCell::new(None),
            best: RefCell::new(None),
            evaluations: Cell::new(0),
            max_evaluations: max_iter.saturating_mul(EVALS_PER_ITER).saturating_add(100),
            budget_hit: Cell::new(false),
            last_was_nonfinite: Cell::new(false),
            last_problem: RefCell::new(None),
            fatal: RefCell::new(None),
        }
    }

    /// The starting point is evaluated outside argmin so that an objective
    /// error there reaches the caller unchanged.
    fn evaluate_start(&self, x0: &[f64]) -> Result<(f64, Vec<f64>)> {
        self.evaluations.set(1);
        let (f, g) = (self.objective.borrow_mut())(x0)?;
        self.check_gradient_len(&g)?;
        if !f.is_finite() || g.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical(format!(
                "objective is not finite at the starting point (value {f})"
            )));
        }
        let eval = Eval {
            x: x0.to_vec(),
            f,
            g: g.clone(),
        };
        *self.best.borrow_mut() = Some(eval.clone());
        *self.last.borrow_mut() = Some(eval);
        Ok((f, g))
    }

    fn check_gradient_len(&self, g: &[f64]) -> Result<()> {
        if g.len() == self.dim {
            Ok(())
        } else {
            Err(Error::Numerical(format!(
                "objective returned a gradient of length {} for {} parameters",
                g.len(),
                self.dim
            )))
        }
    }

    fn evaluate(&self, x: &[f64]) -> std::result::Result<(f64, Vec<f64>), ArgminError> {
        if let Some(last) = self.last.borrow().as_ref() {
            if last.x == x {
                return Ok((last.f, last.g.clone()));
            }
        }
        if self.evaluations.get() >= self.max_evaluations {
            self.budget_hit.set(true);
            return Err(ArgminError::msg("objective evaluation budget exhausted"));
        }
        self.evaluations.set(self.evaluations.get() + 1);

        // A non-finite trial point is never shown to the objective: user code
        // should not have to defend against NaN parameters.
        let outcome = if x.iter().all(|v| v.is_finite()) {
            (self.objective.borrow_mut())(x)
        } else {
            Err(Error::Numerical("trial parameters are not finite".into()))
        };
        let usable = match outcome {
            Ok((f, g)) => {
                if let Err(e) = self.check_gradient_len(&g) {
                    let msg = e.to_string();
                    *self.fatal.borrow_mut() = Some(e);
                    return Err(ArgminError::msg(msg));
                }
                if f.is_finite() && g.iter().all(|v| v.is_finite()) {
                    Some((f, g))
                } else {
                    *self.last_problem.borrow_mut() =
                        Some(format!("objective value {f} or its gradient is not finite"));
                    None
                }
            }
            Err(e) => {
                *self.last_problem.borrow_mut() = Some(e.to_string());
                None
            }
        };
        let (f, g) = match usable {
            Some((f, g)) => {
                self.last_was_nonfinite.set(false);
                let better = self.best.borrow().as_ref().is_none_or(|b| f < b.f);
                if better {
                    *self.best.borrow_mut() = Some(Eval {
                        x: x.to_vec(),
                        f,
                        g: g.clone(),
                    });
                }
                (f, g)
            }
            None => {
                self.last_was_nonfinite.set(true);
                (f64::INFINITY, vec![f64::NAN; self.dim])
            }
        };
        *self.last.borrow_mut() = Some(Eval {
            x: x.to_vec(),
            f,
            g: g.clone(),
        });
        Ok((f, g))
    }

    fn best_value(&self) -> f64 {
        self.best.borrow().as_ref().map_or(f64::INFINITY, |b| b.f)
    }

    fn best(&self) -> (Vec<f64>, f64, Vec<f64>) {
        match self.best.borrow().as_ref() {
            Some(b) => (b.x.clone(), b.f, b.g.clone()),
            // Unreachable after evaluate_start succeeded; kept total anyway.
            None => (Vec::new(), f64::INFINITY, Vec::new()),
        }
    }

    fn take_fatal(&self) -> Option<Error> {
        self.fatal.borrow_mut().take()
    }

    fn last_problem(&self) -> Option<String> {
        self.last_problem.borrow().clone()
    }

    fn classify(&self, reason: Option<TerminationReason>) -> (OptimiseStatus, String) {
        match reason {
            Some(TerminationReason::SolverConverged)
            | Some(TerminationReason::TargetCostReached) => {
                (OptimiseStatus::Converged, String::new())
            }
            Some(TerminationReason::MaxItersReached) => {
                (OptimiseStatus::MaxIterations, String::new())
            }
            Some(TerminationReason::SolverExit(msg)) if msg == STALLED => {
                (OptimiseStatus::Stalled, String::new())
            }
            Some(TerminationReason::SolverExit(msg)) => {
                let status = if self.budget_hit.get() {
                    OptimiseStatus::EvaluationLimit
                } else if self.last_was_nonfinite.get() {
                    OptimiseStatus::NonFinite
                } else {
                    OptimiseStatus::LineSearchFailed
                };
                (status, msg)
            }
            Some(other) => (
                OptimiseStatus::LineSearchFailed,
                format!("optimiser stopped: {other:?}"),
            ),
            None => (
                OptimiseStatus::LineSearchFailed,
                "optimiser stopped without a reason".into(),
            ),
        }
    }
}

/// The argmin-facing view of the tracker. Borrowing keeps the tracker (and
/// the best point) alive even if argmin returns an error.
struct Objective<'t, F> {
    tracker: &'t Tracker<F>,
}

impl<F> CostFunction for Objective<'_, F>
where
    F: FnMut(&[f64]) -> Result<(f64, Vec<f64>)>,
{
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, param: &Vec<f64>) -> std::result::Result<f64, ArgminError> {
        self.tracker.evaluate(param).map(|(f, _)| f)
    }
}

impl<F> Gradient for Objective<'_, F>
where
    F: FnMut(&[f64]) -> Result<(f64, Vec<f64>)>,
{
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, param: &Vec<f64>) -> std::result::Result<Vec<f64>, ArgminError> {
        self.tracker.evaluate(param).map(|(_, g)| g)
    }
}

type MoreThuente = MoreThuenteLineSearch<Vec<f64>, Vec<f64>, f64>;

/// More–Thuente preceded by step halving until the trial point is finite.
#[derive(Clone)]
struct ProbingLineSearch {
    direction: Option<Vec<f64>>,
    max_step: f64,
    inner: MoreThuente,
}

impl LineSearch<Vec<f64>, f64> for ProbingLineSearch {
    fn search_direction(&mut self, direction: Vec<f64>) {
        self.direction = Some(direction);
    }

    fn initial_step_length(&mut self, step_length: f64) -> std::result::Result<(), ArgminError> {
        self.inner.initial_step_length(step_length)
    }
}

impl<O> Solver<O, VecState> for ProbingLineSearch
where
    O: CostFunction<Param = Vec<f64>, Output = f64>
        + Gradient<Param = Vec<f64>, Gradient = Vec<f64>>,
{
    fn name(&self) -> &str {
        "finite-probing More-Thuente"
    }

    fn init(
        &mut self,
        problem: &mut Problem<O>,
        state: VecState,
    ) -> std::result::Result<(VecState, Option<KV>), ArgminError> {
        let direction = self
            .direction
            .clone()
            .ok_or_else(|| ArgminError::msg("line search: no search direction"))?;
        let origin = state
            .get_param()
            .ok_or_else(|| ArgminError::msg("line search: no starting point"))?
            .clone();

        // No trial step moves a parameter by more than `max_step`: an
        // uncapped first step flings pseudo-inputs out of the data for good.
        let longest = direction.iter().fold(0.0_f64, |m, d| m.max(d.abs()));
        let mut step = if longest > self.max_step {
            self.max_step / longest
        } else {
            1.0
        };
        let capped = step < 1.0;
        let mut halvings = 0;
        loop {
            let trial: Vec<f64> = origin
                .iter()
                .zip(&direction)
                .map(|(x, d)| x + step * d)
                .collect();
            if problem.cost(&trial)?.is_finite() {
                break;
            }
            halvings += 1;
            if halvings > MAX_HALVINGS {
                return Err(ArgminError::msg(
                    "line search: no finite objective along the search direction",
                ));
            }
            step *= 0.5;
        }

        let mut inner = MoreThuente::new();
        if halvings > 0 || capped {
            // Never search beyond the step known to be finite: the region
            // past it has already produced a non-finite value.
            inner = inner.with_bounds(step * f64::EPSILON.sqrt(), step)?;
        }
        inner.search_direction(direction);
        inner.initial_step_length(step)?;
        self.inner = inner;
        self.inner.init(problem, state)
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<O>,
        state: VecState,
    ) -> std::result::Result<(VecState, Option<KV>), ArgminError> {
        self.inner.next_iter(problem, state)
    }
}

/// L-BFGS plus the relative-improvement and stall stopping tests and the
/// progress callback, none of which argmin's L-BFGS offers.
struct Driver<'p> {
    inner: Lbfgs<ProbingLineSearch>,
    rel_tol: f64,
    /// The stall test's window and smallest decrease in objective units.
    stall: Option<(u64, f64)>,
    /// See [`OptimiseOptions::plateau`].
    plateau: Option<f64>,
    /// Lowest objective seen after each iteration of this segment.
    bests: Vec<f64>,
    iterations_before: u64,
    progress: &'p mut dyn FnMut(Progress),
}

impl<F> Solver<Objective<'_, F>, VecState> for Driver<'_>
where
    F: FnMut(&[f64]) -> Result<(f64, Vec<f64>)>,
{
    fn name(&self) -> &str {
        "L-BFGS (keep-best)"
    }

    fn init(
        &mut self,
        problem: &mut Problem<Objective<'_, F>>,
        state: VecState,
    ) -> std::result::Result<(VecState, Option<KV>), ArgminError> {
        self.inner.init(problem, state)
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<Objective<'_, F>>,
        state: VecState,
    ) -> std::result::Result<(VecState, Option<KV>), ArgminError> {
        let iteration = self.iterations_before + state.get_iter() + 1;
        let out = self.inner.next_iter(problem, state)?;
        if let Some(objective) = problem.problem.as_ref() {
            let best_value = objective.tracker.best_value();
            self.bests.push(best_value);
            (self.progress)(Progress {
                iteration,
                best_value,
                evaluations: objective.tracker.evaluations.get(),
            });
        }
        Ok(out)
    }

    fn terminate(&mut self, state: &VecState) -> TerminationStatus {
        let inner =
            <Lbfgs<_> as Solver<Objective<'_, F>, VecState>>::terminate(&mut self.inner, state);
        if inner.terminated() {
            return inner;
        }
        // Before the first iteration argmin's state holds the start cost twice
        // (L-BFGS's init stores it again), which would look like no change.
        let (prev, cur) = (state.get_prev_cost(), state.get_cost());
        if state.get_iter() > 0
            && prev.is_finite()
            && cur.is_finite()
            && (prev - cur).abs() <= self.rel_tol * prev.abs().max(cur.abs()).max(1.0)
        {
            return TerminationStatus::Terminated(TerminationReason::SolverConverged);
        }
        if let Some((window, min_decrease)) = self.stall {
            let window = usize::try_from(window).unwrap_or(usize::MAX);
            if let (Some(&now), Some(&then)) =
                (self.bests.last(), self.bests.iter().rev().nth(window))
            {
                let left = self.plateau.is_none_or(|p| now < p - min_decrease);
                if left && then - now < min_decrease {
                    return TerminationStatus::Terminated(TerminationReason::SolverExit(
                        STALLED.into(),
                    ));
                }
            }
        }
        TerminationStatus::NotTerminated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automatic_memory_grows_with_the_parameters_between_10_and_50() {
        assert_eq!(auto_memory(1), 10);
        assert_eq!(auto_memory(319), 10);
        assert_eq!(auto_memory(818), 25);
        assert_eq!(auto_memory(1634), 50);
        assert_eq!(auto_memory(100_000), 50);
    }

    fn rosenbrock(x: &[f64]) -> Result<(f64, Vec<f64>)> {
        let (a, b) = (x[0], x[1]);
        let f = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
        let g = vec![
            -2.0 * (1.0 - a) - 400.0 * a * (b - a * a),
            200.0 * (b - a * a),
        ];
        Ok((f, g))
    }

    /// Ill-conditioned quadratic sum_i (i+1) (x_i - c_i)^2 with c_i = i/10.
    fn quadratic(x: &[f64]) -> Result<(f64, Vec<f64>)> {
        let mut f = 0.0;
        let mut g = vec![0.0; x.len()];
        for (i, (xi, gi)) in x.iter().zip(g.iter_mut()).enumerate() {
            let w = (i + 1) as f64;
            let d = xi - i as f64 / 10.0;
            f += w * d * d;
            *gi = 2.0 * w * d;
        }
        Ok((f, g))
    }

    fn opts(max_iter: u64) -> OptimiseOptions {
        OptimiseOptions {
            max_iter,
            rel_tol: 1e-15,
            ..OptimiseOptions::default()
        }
    }

    #[test]
    fn max_step_bounds_every_trial_point() {
        // A steep quadratic: the uncapped first step would land at about
        // -1e6 * 2 from x = 1.
        let seen = std::cell::RefCell::new(Vec::new());
        let steep = |x: &[f64]| {
            seen.borrow_mut().push(x[0]);
            Ok((1e6 * x[0] * x[0], vec![2e6 * x[0]]))
        };
        let capped = OptimiseOptions {
            max_iter: 1,
            max_step: 0.1,
            ..opts(1)
        };
        let report = minimise(steep, vec![1.0], &capped, &mut |_| {}).unwrap();
        assert!(report.value < 1e6, "{report:?}");
        let far = seen
            .borrow()
            .iter()
            .fold(0.0_f64, |m, x| m.max((x - 1.0).abs()));
        assert!(far <= 0.1 + 1e-12, "a trial point moved {far}");
        assert!(OptimiseOptions {
            max_step: 0.0,
            ..opts(1)
        }
        .validate()
        .is_err());
    }

    #[test]
    fn stall_test_stops_a_slow_run_on_the_decrease_per_row() {
        // -ln(1 + x) falls forever, ever more slowly, and its gradient never
        // gets small within the budget (steps are capped at 4): only a stall
        // test ends the run early.
        let creeping = |x: &[f64]| {
            if x[0] <= -1.0 {
                return Ok((f64::INFINITY, vec![0.0]));
            }
            Ok((-libm::log(1.0 + x[0]), vec![-1.0 / (1.0 + x[0])]))
        };
        let with = |per_row: f64, rows: usize| OptimiseOptions {
            rel_tol: 0.0,
            stall: Some(Stall { window: 5, per_row }),
            rows,
            ..opts(200)
        };
        // 1e-9 per row over 1e12 rows: no five iterations gain 1000.
        let scaled = minimise(
            creeping,
            vec![0.0],
            &with(1e-9, 1_000_000_000_000),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(scaled.status, OptimiseStatus::Stalled, "{scaled:?}");
        assert_eq!(scaled.iterations, 6, "{scaled:?}");
        // 0.05 over one row: five iterations keep gaining that for a while.
        let one_row = minimise(creeping, vec![0.0], &with(0.05, 1), &mut |_| {}).unwrap();
        assert_eq!(one_row.status, OptimiseStatus::Stalled, "{one_row:?}");
        assert!(
            one_row.iterations > 20 && one_row.iterations < 200,
            "{one_row:?}"
        );
        // No stall test: the run uses its whole budget.
        let none = OptimiseOptions {
            stall: None,
            ..with(0.0, 1)
        };
        let endless = minimise(creeping, vec![0.0], &none, &mut |_| {}).unwrap();
        assert_eq!(endless.status, OptimiseStatus::MaxIterations, "{endless:?}");
        assert!(endless.value < one_row.value, "{endless:?}");
        // A plateau at the start value: the run never gets 1000 below it,
        // so the stall test that stopped it after 6 iterations never fires;
        // a plateau the start is already 1000 below changes nothing.
        let on = |plateau: f64| OptimiseOptions {
            plateau: Some(plateau),
            ..with(1e-9, 1_000_000_000_000)
        };
        let held = minimise(creeping, vec![0.0], &on(0.0), &mut |_| {}).unwrap();
        assert_eq!(held.status, OptimiseStatus::MaxIterations, "{held:?}");
        let below = minimise(creeping, vec![0.0], &on(2000.0), &mut |_| {}).unwrap();
        assert_eq!(below.iterations, scaled.iterations, "{below:?}");
    }

    #[test]
    fn rosenbrock_reaches_the_minimum() {
        let report = minimise(rosenbrock, vec![-1.2, 1.0], &opts(500), &mut |_| {}).unwrap();
        assert!((report.x[0] - 1.0).abs() < 1e-4, "{report:?}");
        assert!((report.x[1] - 1.0).abs() < 1e-4, "{report:?}");
        assert!(report.value < 1e-8);
        assert!(report.iterations < 500);
        assert!(report.evaluations >= report.iterations);
    }

    #[test]
    fn ten_dimensional_quadratic_converges() {
        let report = minimise(quadratic, vec![5.0; 10], &opts(200), &mut |_| {}).unwrap();
        for (i, xi) in report.x.iter().enumerate() {
            assert!((xi - i as f64 / 10.0).abs() < 1e-5, "x[{i}] = {xi}");
        }
        assert_eq!(report.status, OptimiseStatus::Converged);
    }

    #[test]
    fn nan_region_is_backtracked_out_of() {
        // Minimum at (1, -2) is inside the finite region x0 <= 1.5, but the
        // first steepest-descent step from (-10, 5) overshoots far into NaN.
        let f = |x: &[f64]| -> Result<(f64, Vec<f64>)> {
            if x[0] > 1.5 {
                return Ok((f64::NAN, vec![0.0, 0.0]));
            }
            let v = (x[0] - 1.0).powi(2) + 10.0 * (x[1] + 2.0).powi(2);
            Ok((v, vec![2.0 * (x[0] - 1.0), 20.0 * (x[1] + 2.0)]))
        };
        let report = minimise(f, vec![-10.0, 5.0], &opts(200), &mut |_| {}).unwrap();
        assert!(report.value.is_finite());
        assert!((report.x[0] - 1.0).abs() < 1e-4, "{report:?}");
        assert!((report.x[1] + 2.0).abs() < 1e-4, "{report:?}");
    }

    #[test]
    fn minimum_beyond_nan_boundary_returns_best_finite_point() {
        // Unconstrained minimum at x = 3 lies in the NaN region x > 2.
        let f = |x: &[f64]| -> Result<(f64, Vec<f64>)> {
            if x[0] > 2.0 {
                return Err(Error::Numerical("Cholesky failed".into()));
            }
            Ok(((x[0] - 3.0).powi(2), vec![2.0 * (x[0] - 3.0)]))
        };
        let report = minimise(f, vec![0.0], &opts(100), &mut |_| {}).unwrap();
        assert!(report.value.is_finite());
        assert!(report.x[0] <= 2.0);
        assert!(report.x[0] > 1.9, "{report:?}");
        assert!((report.value - (report.x[0] - 3.0).powi(2)).abs() < 1e-12);
    }

    #[test]
    fn max_iter_is_honoured_and_progress_reported_each_iteration() {
        let mut seen = Vec::new();
        let report =
            minimise(rosenbrock, vec![-1.2, 1.0], &opts(3), &mut |p| seen.push(p)).unwrap();
        assert_eq!(report.status, OptimiseStatus::MaxIterations);
        assert_eq!(report.iterations, 3);
        let iters: Vec<u64> = seen.iter().map(|p| p.iteration).collect();
        assert_eq!(iters, vec![1, 2, 3]);
        assert!(seen.windows(2).all(|w| w[1].best_value <= w[0].best_value));
        assert_eq!(seen[2].best_value, report.value);
        assert!(report.value < report.initial_value);
    }

    #[test]
    fn runs_are_deterministic() {
        let a = minimise(rosenbrock, vec![-1.2, 1.0], &opts(50), &mut |_| {}).unwrap();
        let b = minimise(rosenbrock, vec![-1.2, 1.0], &opts(50), &mut |_| {}).unwrap();
        assert_eq!(a.x, b.x);
        assert_eq!(a.evaluations, b.evaluations);
    }

    #[test]
    fn error_at_start_is_returned_unchanged() {
        let f = |_: &[f64]| -> Result<(f64, Vec<f64>)> { Err(Error::BadInput("no data".into())) };
        match minimise(f, vec![0.0], &opts(10), &mut |_| {}) {
            Err(Error::BadInput(m)) => assert_eq!(m, "no data"),
            other => panic!("unexpected {other:?}"),
        }
        let g = |_: &[f64]| -> Result<(f64, Vec<f64>)> { Ok((f64::NAN, vec![0.0])) };
        assert!(matches!(
            minimise(g, vec![0.0], &opts(10), &mut |_| {}),
            Err(Error::Numerical(_))
        ));
    }

    #[test]
    fn wrong_gradient_length_is_an_error() {
        let f = |_: &[f64]| -> Result<(f64, Vec<f64>)> { Ok((1.0, vec![0.0])) };
        assert!(matches!(
            minimise(f, vec![0.0, 1.0], &opts(10), &mut |_| {}),
            Err(Error::Numerical(_))
        ));
    }

    #[test]
    fn options_are_validated() {
        let bad = [
            OptimiseOptions {
                max_iter: 0,
                ..Default::default()
            },
            OptimiseOptions {
                rel_tol: -1.0,
                ..Default::default()
            },
            OptimiseOptions {
                rel_tol: f64::NAN,
                ..Default::default()
            },
            OptimiseOptions {
                memory: Some(0),
                ..Default::default()
            },
            OptimiseOptions {
                stall: Some(Stall {
                    window: 0,
                    per_row: 0.1,
                }),
                ..Default::default()
            },
            OptimiseOptions {
                stall: Some(Stall {
                    window: 5,
                    per_row: -0.1,
                }),
                ..Default::default()
            },
            OptimiseOptions {
                stall: Some(Stall {
                    window: 5,
                    per_row: f64::NAN,
                }),
                ..Default::default()
            },
        ];
        for o in bad {
            assert!(o.validate().is_err(), "{o:?}");
            assert!(minimise(quadratic, vec![1.0], &o, &mut |_| {}).is_err());
        }
        assert!(OptimiseOptions::default().validate().is_ok());
        assert!(minimise(quadratic, vec![], &opts(10), &mut |_| {}).is_err());
    }
}
