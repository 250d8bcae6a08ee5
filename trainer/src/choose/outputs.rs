//! Several outputs: one basis for all of them, or one model per output,
//! decided on held-out rows. A shared basis of `M` functions with shared
//! length scales must cover what `P` separate sets of `M` cover; where the
//! outputs vary with different inputs, or in different places (a kinematic
//! chain's x, y, z), it predicts some output clearly worse than that
//! output's own fit (docs/src/multi-output.md, "One basis or one model per
//! output"). The blob format holds one kernel for every output, so the
//! alternative is each output's own model: the separate blobs, never
//! larger than their sum.
//!
//! Where `held_out::applies`, the shared fit and each output's own fit
//! are fitted on the same random three quarters of the rows (of at most
//! `CONTEST_ROWS`: `crate::evaluate::contest`) and scored on the rest,
//! output by output; the outputs are fitted separately (on every row) if
//! for some output its own fit wins by more than `TOLERANCE` nats per
//! row and by more than `MARGIN_SE` standard errors. Classifiers keep the
//! shared fit without a comparison.
//!
//! Under `--kernel auto` the kernel is chosen first, by the shared fit
//! (on the outputs together); the comparison and the separate fits use
//! that kernel, so what is weighed is what is exported.

use serde::Serialize;
use sgp_runtime::Kernel;

use super::held_out;
use super::{Asked, Request};
use crate::data::multi_target::Outputs;
use crate::data::Dataset;
use crate::evaluate::contest::{contest_rows, sampled_note, Contest};
use crate::evaluate::metrics::row_nlpds;
use crate::fit::{self, Fit, FitParams, KernelVerdict, Method};
use crate::numerics::optimise::Progress;
use crate::Result;

/// Nats per held-out row by which an output's own fit must beat the
/// shared fit (half the 0.05 accuracy budget of docs/src/multi-output.md):
/// a smaller loss is worth the shared blob's size and single device call.
pub(crate) const TOLERANCE: f64 = 0.025;

/// The fit of several outputs: one fit on one basis, or one per output.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct OutputsFit {
    /// One fit of every output on one basis, or one fit per output, in
    /// output order.
    pub fits: Vec<Fit>,
    /// What was weighed and kept (`None` for one output).
    pub basis: Option<BasisChoice>,
}

/// Which basis the outputs got, and why.
#[derive(Clone, Debug, Serialize)]
pub struct BasisChoice {
    /// `shared` (one basis, one blob) or `separate` (one model per output).
    pub kept: &'static str,
    /// Held-out rows each output was scored on (0: not weighed).
    pub rows: usize,
    /// Each output's held-out figures (empty: not weighed).
    /// (Both declarations carry the serde attribute: `sgp --json` is built
    /// without `internals`, the tests with it.)
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg(feature = "internals")]
    pub outputs: Vec<OutputVerdict>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg(not(feature = "internals"))]
    pub(crate) outputs: Vec<OutputVerdict>,
    /// What was decided and why, in one sentence.
    pub reason: String,
}

/// One output's shared fit against its own fit on held-out rows.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct OutputVerdict {
    /// The output's target column.
    pub name: String,
    /// Mean held-out NLPD of the shared fit (raw units; infinite if its
    /// fit or prediction failed).
    pub shared_nlpd: f64,
    /// Mean held-out NLPD of the output's own fit.
    pub separate_nlpd: f64,
    /// Standard error of the mean per-row difference.
    pub standard_error: f64,
    /// Its own fit won by more than `TOLERANCE` and the margin.
    pub separate_clearly_better: bool,
}

impl BasisChoice {
    /// Whether every output got its own model.
    pub fn separate(&self) -> bool {
        self.kept == SEPARATE
    }
}

const SHARED: &str = "shared";
const SEPARATE: &str = "separate";

/// Fits what `request` asks to every output of `data` (as [`super::fit`]),
/// and, where the outputs are several and the family shares a basis, weighs the shared fit against one fit per output on
/// held-out rows (module docs). Each separate fit is the fit of that
/// output alone under `request`, its own choices included.
///
/// # Errors
/// As [`super::fit`]; a failed comparison keeps the shared fit.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn fit_outputs(
    data: &(impl Outputs + ?Sized),
    request: &Request,
    progress: &mut dyn FnMut(Progress),
) -> Result<OutputsFit> {
    let outputs = data.outputs();
    let shared = super::fit(data, request, progress)?;
    if outputs.len() < 2 {
        return Ok(OutputsFit {
            fits: vec![shared],
            basis: None,
        });
    }
    let Some(params) = weighable(outputs, request, &shared) else {
        return Ok(keep_shared(shared, NOT_WEIGHED.into()));
    };
    let verdicts = match weigh(outputs, &params) {
        Ok(v) => v,
        Err(e) => return Ok(keep_shared(shared, failed(&e))),
    };
    let mut basis = decide(verdicts);
    basis.reason += &sampled_note(outputs[0].n_rows());
    let kernel = params.kernel();
    if request.choose_kernel {
        let verdict = shared
            .report
            .choice
            .as_ref()
            .and_then(|c| c.kernel.as_ref());
        note_kernel(&mut basis, kernel, verdict);
    }
    if !basis.separate() {
        return Ok(OutputsFit {
            fits: vec![shared],
            basis: Some(basis),
        });
    }
    let separate = with_kernel_chosen(request, kernel);
    let mut fits = Vec::with_capacity(outputs.len());
    for output in outputs {
        match super::fit(output, &separate, progress) {
            Ok(f) => fits.push(f),
            Err(e) => {
                basis.kept = SHARED;
                basis.reason = format!(
                    "{}; but the fit of {} alone failed ({e}), so the shared fit is kept",
                    basis.reason, output.target_name
                );
                return Ok(OutputsFit {
                    fits: vec![shared],
                    basis: Some(basis),
                });
            }
        }
    }
    Ok(OutputsFit {
        fits,
        basis: Some(basis),
    })
}

/// The shared fit kept without a weighing, for `reason`.
fn keep_shared(shared: Fit, reason: String) -> OutputsFit {
    OutputsFit {
        fits: vec![shared],
        basis: Some(shared_unweighed(reason)),
    }
}

/// Why the outputs keep one basis unweighed.
const NOT_WEIGHED: &str = "one basis for every output (not weighed against one model per \
                           output: held-out comparisons are made for a regression family that \
                           shares a basis, on enough rows to hold a quarter out, and not with \
                           --no-held-out-choice)";

/// One basis, kept for `reason` without a weighing.
fn shared_unweighed(reason: String) -> BasisChoice {
    BasisChoice {
        kept: SHARED,
        rows: 0,
        outputs: Vec::new(),
        reason,
    }
}

/// Why one basis is kept when the comparison failed with `e`.
fn failed(e: &crate::Error) -> String {
    format!("one basis for every output (the comparison with one model per output failed: {e})")
}

/// `--kernel auto`: the basis choice was weighed with `kernel`, chosen by
/// the shared fit (whose `verdict`, kept, its report states; separate, this
/// reason does).
pub(crate) fn note_kernel(
    basis: &mut BasisChoice,
    kernel: Kernel,
    verdict: Option<&KernelVerdict>,
) {
    let why = verdict
        .filter(|_| basis.separate())
        .map_or(String::new(), |k| format!(" ({})", k.reason));
    basis.reason += &format!(
        "; both fitted with kernel {}, the one --kernel auto chose for the shared fit{why}",
        kernel.name()
    );
}

/// One basis for every output or one model per output, for a regression
/// fitted with `params` on the rows of `outputs` (module docs), as
/// [`fit_outputs`] decides it: what a streamed fit decides on its sample.
/// With `held_out` off, or too few rows, one basis unweighed.
pub(crate) fn basis_choice(outputs: &[Dataset], params: &FitParams, held_out: bool) -> BasisChoice {
    let n = outputs.first().map_or(0, Dataset::n_rows);
    let m = params.m().unwrap_or(1);
    if !(held_out && params.method().shares_basis().is_ok() && held_out::applies(n, m)) {
        return shared_unweighed(NOT_WEIGHED.into());
    }
    match weigh(outputs, params) {
        Ok(verdicts) => {
            let mut basis = decide(verdicts);
            basis.reason += &sampled_note(n);
            basis
        }
        Err(e) => shared_unweighed(failed(&e)),
    }
}

/// `request` with its kernel `kernel`, decided, where `--kernel auto` left
/// it open (the families that do not take `kernel` left out of `auto`'s).
fn with_kernel_chosen(request: &Request, kernel: Kernel) -> Request {
    if !request.choose_kernel {
        return request.clone();
    }
    let takes = |p: &&FitParams| kernel == Kernel::SquaredExponential || p.method() != Method::Vsgp;
    let asked = match &request.asked {
        Asked::Family(p) => Asked::Family(p.with_kernel(kernel)),
        Asked::Auto(candidates) => Asked::Auto(
            candidates
                .iter()
                .filter(takes)
                .map(|p| p.with_kernel(kernel))
                .collect(),
        ),
    };
    Request {
        asked,
        choose_kernel: false,
        ..request.clone()
    }
}

/// The settings of `shared` (its family, objective and kernel), if the
/// shared fit is to be weighed against one fit per output.
fn weighable(outputs: &[Dataset], request: &Request, shared: &Fit) -> Option<FitParams> {
    let regression = shared.set.members[0].link == sgp_runtime::Link::Identity;
    let method = shared.report.method;
    let params = match &request.asked {
        Asked::Family(p) => p.clone(),
        Asked::Auto(candidates) => candidates.iter().find(|p| p.method() == method)?.clone(),
    };
    let params = match shared.report.approximation {
        Some(a) if params.approximation().is_some() => params.with_approximation(a),
        _ => params,
    };
    let kernel = Kernel::ALL
        .into_iter()
        .find(|k| k.name() == shared.report.kernel)?;
    let params = params.with_kernel(kernel);
    let n = outputs[0].n_rows();
    let m = params.m().unwrap_or(1);
    (regression && request.held_out && method.shares_basis().is_ok() && held_out::applies(n, m))
        .then_some(params)
}

/// Per output, its name and the contest of the shared fit (candidate 0)
/// and the output's own fit (1) on each held-out row, both fitted with
/// `params` on the same rows.
fn weigh(outputs: &[Dataset], params: &FitParams) -> Result<Vec<(String, Contest)>> {
    let outputs = contest_rows(outputs, params.seed())?;
    let parts: Vec<(Dataset, Dataset)> = outputs
        .iter()
        .map(|d| d.split(held_out::HELD_OUT_FRACTION, params.seed()))
        .collect::<Result<_>>()?;
    let (train, valid): (Vec<Dataset>, Vec<Dataset>) = parts.into_iter().unzip();
    let (shared, own) = rayon::join(
        || fit::fit(train.as_slice(), params, &mut |_| {}),
        || {
            use rayon::prelude::*;
            train
                .par_iter()
                .map(|d| fit::fit(d, params, &mut |_| {}))
                .collect::<Vec<_>>()
        },
    );
    let shared = shared?;
    let mut scores = Vec::with_capacity(outputs.len());
    for (p, (own, valid)) in own.into_iter().zip(&valid).enumerate() {
        let shared_rows = row_nlpds(&shared.set.members[p], valid)?;
        let own_rows = match own {
            Ok(f) => Some(row_nlpds(&f.set.members[0], valid)?),
            Err(_) => None,
        };
        let names = vec![SHARED.into(), "own".into()];
        let contest = Contest::new(names, vec![Some(shared_rows), own_rows]);
        scores.push((valid.target_name.clone(), contest));
    }
    Ok(scores)
}

/// The choice from each output's contest: separate where some output's
/// own fit wins by the margin and by more than [`TOLERANCE`].
fn decide(scores: Vec<(String, Contest)>) -> BasisChoice {
    let rows = scores.first().map_or(0, |s| s.1.rows);
    let outputs: Vec<OutputVerdict> = scores
        .into_iter()
        .map(|(name, contest)| {
            let v = contest.verdict_beyond(0, 1, TOLERANCE);
            OutputVerdict {
                name,
                shared_nlpd: v.incumbent_nlpd,
                separate_nlpd: v.challenger_nlpd,
                standard_error: v.standard_error,
                separate_clearly_better: v.challenger_chosen,
            }
        })
        .collect();
    let figures = |o: &OutputVerdict| {
        format!(
            "{} {:+.4} (shared {:.4}, own {:.4}, standard error {:.4})",
            o.name,
            o.shared_nlpd - o.separate_nlpd,
            o.shared_nlpd,
            o.separate_nlpd,
            o.standard_error
        )
    };
    let all: Vec<String> = outputs.iter().map(figures).collect();
    let losers: Vec<&str> = outputs
        .iter()
        .filter(|o| o.separate_clearly_better)
        .map(|o| o.name.as_str())
        .collect();
    let (kept, reason) = if losers.is_empty() {
        (
            SHARED,
            format!(
                "one basis for every output: no output's own fit beat it by more than \
                 {TOLERANCE} nats per row and {} standard error on {rows} held-out rows \
                 (held-out NLPD, shared - own: {})",
                held_out::MARGIN_SE,
                all.join("; ")
            ),
        )
    } else {
        (
            SEPARATE,
            format!(
                "one model per output: the shared basis predicted {} clearly worse than \
                 {} own fit on {rows} held-out rows (held-out NLPD, shared - own: {})",
                losers.join(", "),
                if losers.len() == 1 { "its" } else { "their" },
                all.join("; ")
            ),
        )
    };
    BasisChoice {
        kept,
        rows,
        outputs,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(mean: f64, spread: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| mean + spread * if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect()
    }

    fn held_out(name: &str, shared: Vec<f64>, own: Vec<f64>) -> (String, Contest) {
        let names = vec![SHARED.into(), "own".into()];
        (
            name.into(),
            Contest::new(names, vec![Some(shared), Some(own)]),
        )
    }

    use nalgebra::{DMatrix, DVector};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use rand_distr::StandardNormal;

    use crate::fit::ExactParams;

    /// Two outputs over 300 inputs on [0, 5]: independent draws of a
    /// Matérn 1/2 GP of length scale 1 (Ornstein-Uhlenbeck paths), noise
    /// sd 0.1.
    fn rough_pair(seed: u64) -> Vec<Dataset> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut x: Vec<f64> = (0..300).map(|_| rng.random_range(0.0..5.0)).collect();
        x.sort_by(f64::total_cmp);
        let mut normal = move || rng.sample::<f64, _>(StandardNormal);
        (0..2)
            .map(|p| {
                let mut f = vec![normal()];
                for w in x.windows(2) {
                    let a = libm::exp(-(w[1] - w[0]));
                    let next = a * f[f.len() - 1] + libm::sqrt(1.0 - a * a) * normal();
                    f.push(next);
                }
                let y = DVector::from_iterator(300, f.iter().map(|f| f + 0.1 * normal()));
                let x = DMatrix::from_column_slice(300, 1, &x);
                Dataset::from_raw(x, y, vec!["x".into()], format!("y{p}")).expect("valid")
            })
            .collect()
    }

    /// Under `--kernel auto` the shared fit's kernel (a Matérn one, on
    /// rough paths) is the kernel the shared basis was weighed with: the
    /// verdict's figures are those of that kernel's comparison, and the
    /// reason names it.
    #[test]
    fn under_kernel_auto_the_outputs_are_weighed_with_the_kernel_chosen() {
        for seed in 0..2 {
            let data = rough_pair(seed);
            let exact = FitParams::Exact(ExactParams {
                seed,
                ..ExactParams::default()
            });
            let request = Request {
                asked: Asked::Family(exact.clone()),
                held_out: true,
                choose_objective: false,
                choose_kernel: true,
            };
            let fitted = fit_outputs(&data, &request, &mut |_| {}).expect("fits");
            let chosen = fitted.fits[0].report.kernel;
            assert_ne!(chosen, "se", "seed {seed}: rough paths");
            let basis = fitted.basis.expect("weighed");
            assert!(
                basis.reason.contains(&format!("with kernel {chosen}")),
                "{}",
                basis.reason
            );
            let kernel = Kernel::ALL.into_iter().find(|k| k.name() == chosen);
            let with_chosen = weigh(&data, &exact.with_kernel(kernel.expect("known")));
            let shared: Vec<f64> = with_chosen
                .expect("weighs")
                .iter()
                .map(|(_, contest)| contest.mean(0))
                .collect();
            let reported: Vec<f64> = basis.outputs.iter().map(|o| o.shared_nlpd).collect();
            assert_eq!(shared, reported, "seed {seed}");
            for fit in &fitted.fits {
                assert_eq!(fit.report.kernel, chosen);
            }
        }
    }

    /// The separate fits take the kernel chosen, decided: `auto`'s
    /// families that do not take it are left out.
    #[test]
    fn separate_fits_take_the_kernel_chosen() {
        let sparse = crate::fit::SparseParams::default();
        let request = Request {
            asked: Asked::Auto(vec![
                FitParams::Spgp(sparse.clone()),
                FitParams::Vsgp(sparse.clone()),
            ]),
            held_out: true,
            choose_objective: true,
            choose_kernel: true,
        };
        let matern = with_kernel_chosen(&request, Kernel::Matern32);
        assert!(!matern.choose_kernel);
        let Asked::Auto(candidates) = &matern.asked else {
            panic!("auto stays auto")
        };
        assert_eq!(candidates.len(), 1);
        assert_eq!(candidates[0].kernel(), Kernel::Matern32);
        let se = with_kernel_chosen(&request, Kernel::SquaredExponential);
        assert_eq!(se.asked.families(), vec![Method::Spgp, Method::Vsgp]);
        let not_auto = Request {
            choose_kernel: false,
            ..request.clone()
        };
        assert_eq!(with_kernel_chosen(&not_auto, Kernel::Matern32), not_auto);
    }

    /// Above `CONTEST_ROWS` rows (3,000 training rows) the outputs are
    /// weighed on a random `CONTEST_ROWS` of them: over seeds, the arm's
    /// outputs (x and y vary with the base angle in different places, z
    /// not at all) separate, some output's own fit winning by four times
    /// the tolerance; the doubled pendulum's (one quantity and twice it)
    /// share, no output's own fit winning by the tolerance. Either way
    /// every output's test NLPD is within 0.05 of its own fit's (the
    /// output fitted alone), the accuracy budget of the choice.
    #[test]
    fn at_any_size_the_arm_separates_and_outputs_that_share_keep_one_basis() {
        use crate::evaluate::contest::CONTEST_ROWS;
        use crate::synth::dynamics::System;
        let request = |seed| {
            let mut p = crate::fit::SparseParams {
                m: 16,
                restarts: 1,
                seed,
                ..crate::fit::SparseParams::default()
            };
            p.optimiser.max_iter = 100;
            Request {
                asked: Asked::Family(FitParams::Spgp(p)),
                held_out: true,
                choose_objective: false,
                choose_kernel: false,
            }
        };
        for seed in 0..3 {
            for (system, separate) in [(System::Arm, true), (System::Doubled, false)] {
                let all = system.data(CONTEST_ROWS + 2000, seed).expect("generates");
                let (data, test) = all.split(0.25, seed).expect("splits");
                assert_eq!(data.n_rows(), CONTEST_ROWS + 1000);
                let fitted = fit_outputs(&data, &request(seed), &mut |_| {}).expect("fits");
                let basis = fitted.basis.expect("weighed");
                let why = format!("{} seed {seed}: {}", system.name(), basis.reason);
                assert_eq!(basis.rows, CONTEST_ROWS / 4, "{why}");
                assert_eq!(basis.separate(), separate, "{why}");
                let sampled = format!(
                    "weighed on a random {CONTEST_ROWS} of the {} rows",
                    data.n_rows()
                );
                assert!(basis.reason.contains(&sampled), "{why}");
                assert_eq!(fitted.fits.len(), if separate { 3 } else { 1 }, "{why}");
                let gain = basis
                    .outputs
                    .iter()
                    .map(|o| o.shared_nlpd - o.separate_nlpd)
                    .fold(f64::NEG_INFINITY, f64::max);
                if separate {
                    assert!(gain > 4.0 * TOLERANCE, "{why}");
                } else {
                    assert!(gain < TOLERANCE, "{why}");
                }
                let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
                for (p, (output, test)) in data.outputs().iter().zip(test.outputs()).enumerate() {
                    let own =
                        crate::choose::fit(output, &request(seed), &mut |_| {}).expect("fits");
                    let own = mean(row_nlpds(&own.set.members[0], test).expect("predicts"));
                    let kept = match fitted.fits.get(p) {
                        Some(f) if separate => &f.set.members[0],
                        _ => &fitted.fits[0].set.members[p],
                    };
                    let kept = mean(row_nlpds(kept, test).expect("predicts"));
                    assert!(
                        kept - own < 0.05,
                        "{why}: output {p} kept {kept}, own {own}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_clear_loss_beyond_the_tolerance_separates() {
        let even = || held_out("a", rows(-1.0, 0.1, 100), rows(-1.0, 0.1, 100));
        let small_loss = held_out(
            "b",
            rows(-1.0 + TOLERANCE / 2.0, 0.1, 100),
            rows(-1.0, 0.1, 100),
        );
        let kept = decide(vec![even(), small_loss]);
        assert_eq!(kept.kept, SHARED, "{}", kept.reason);
        assert_eq!(kept.rows, 100);
        // Differences 0.3 and 0.7: mean 0.5, standard error 0.02.
        let big_loss = held_out("b", rows(-0.5, 0.1, 100), rows(-1.0, 0.3, 100));
        let split = decide(vec![even(), big_loss]);
        assert!(split.separate(), "{}", split.reason);
        assert!(split.reason.contains("b +0.5000"), "{}", split.reason);
        assert!(!split.outputs[0].separate_clearly_better);
        assert!(split.outputs[1].separate_clearly_better);
    }

    #[test]
    fn a_loss_within_its_standard_error_keeps_the_shared_basis() {
        // Differences alternate +1.1 and -0.9: mean 0.1, standard error 0.1.
        let shared: Vec<f64> = (0..100)
            .map(|i| if i % 2 == 0 { 1.1 } else { -0.9 })
            .collect();
        let own = vec![0.0; 100];
        let kept = decide(vec![held_out("a", shared, own.clone())]);
        assert!(kept.outputs[0].standard_error > 0.09, "{:?}", kept.outputs);
        assert_eq!(kept.kept, SHARED, "{}", kept.reason);
        // A failed own fit never separates; a failed shared fit does.
        let failed = vec![f64::INFINITY; 100];
        let own_failed = decide(vec![held_out("a", own.clone(), failed.clone())]);
        assert_eq!(own_failed.kept, SHARED);
        assert!(decide(vec![held_out("a", failed, own)]).separate());
    }
}
