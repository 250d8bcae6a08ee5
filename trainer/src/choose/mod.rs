//! Above the families: what to fit when the user leaves a choice open,
//! decided on held-out rows and reported (a `Choice`, in the fit report,
//! the summary and `--json`). A family never calls another family's fit;
//! this layer fits candidates and compares them.
//!
//! - **The objective** of SPGP, PCA + SPGP and GPLasso, where the user
//!   named none: FITC, unless VFE clearly predicts a held-out quarter
//!   better; and VFE where FITC's fit on all rows let its noise collapse
//!   without clearly winning (it then predicts nearly noise-free targets at
//!   its pseudo-inputs: MATH.md, FITC's noise collapse).
//! - **A family against plain SPGP** (SPGP+HS, VSGP, SPGP+DR, GPLasso with
//!   its basis moved), over folds. A family the user named is the family
//!   fitted: where SPGP predicts the held-out rows better the report says
//!   so, with the figures. SPGP+HS and GPLasso are weighed against SPGP
//!   with either objective (docs/src/model-families.md, "Both objectives").
//! - **`--model auto`**: the family that predicts held-out rows best among
//!   those that apply, SPGP unless another clearly beats it; weighed as a
//!   race, one that SPGP clearly beats on the first fold stopping there.
//! - **Several outputs** ([`outputs`]): one basis for all of them, unless
//!   some output's own fit clearly predicts held-out rows better; then one
//!   model per output.
//!
//! - **`--kernel auto`** (`kernel`): the family chosen above with the
//!   squared exponential, unless a Matérn kernel clearly predicts held-out
//!   rows better.
//!
//! All of it on at most `CONTEST_ROWS` rows (`held_out::applies`): on
//! more, on a seeded random subset of that many, the chosen fit then
//! fitted on every row (`crate::evaluate::contest`).

pub(crate) mod held_out;
pub(crate) mod kernel;
pub mod outputs;

use crate::data::multi_target::Outputs;
use crate::data::Dataset;
use crate::evaluate::contest::{contest_rows, sampled_note, Contest, CONTEST_ROWS};
use crate::fit::gplasso::GplassoRefit;
use crate::fit::spgp::noise_collapsed;
use crate::fit::{fit as fit_family, Fit, FitParams, Method, OwnChoice, SparseParams};
pub(crate) use crate::fit::{Candidate, Choice, KernelVerdict, Verdict};
use crate::model::inference::Approximation;
use crate::numerics::optimise::Progress;
use crate::Result;

/// What to fit.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) enum Asked {
    /// The family these settings name, fitted as named.
    Family(FitParams),
    /// The family that predicts held-out rows best among these; the first
    /// (SPGP) is kept unless another clearly beats it.
    Auto(Vec<FitParams>),
}

impl Asked {
    /// The families it may fit.
    pub fn families(&self) -> Vec<Method> {
        match self {
            Asked::Family(params) => vec![params.method()],
            Asked::Auto(candidates) => candidates.iter().map(FitParams::method).collect(),
        }
    }

    /// The family's name, or `auto`.
    pub fn name(&self) -> &'static str {
        match self {
            Asked::Family(params) => params.method().name(),
            Asked::Auto(_) => AUTO,
        }
    }
}

/// A fit request: the family (or families) asked for and what this layer
/// may choose.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// What to fit.
    #[cfg(feature = "internals")]
    pub asked: Asked,
    #[cfg(not(feature = "internals"))]
    pub(crate) asked: Asked,
    /// Whether held-out comparisons are made at all (`--no-held-out-choice`
    /// turns them off).
    pub held_out: bool,
    /// Whether the objective may be chosen on held-out rows (the user named
    /// none).
    pub choose_objective: bool,
    /// Whether the kernel is chosen on held-out rows (`--kernel auto`;
    /// `kernel`).
    pub choose_kernel: bool,
}

impl Request {
    /// Optimiser iterations of the final fit, at most (for progress bars).
    pub fn iteration_budget(&self) -> u64 {
        match &self.asked {
            Asked::Family(params) => params.iteration_budget(),
            Asked::Auto(candidates) => candidates
                .iter()
                .map(FitParams::iteration_budget)
                .max()
                .unwrap_or(0),
        }
    }

    /// The family `params` names, fitted exactly as set: no choice open.
    pub fn exactly(params: FitParams) -> Self {
        Request {
            asked: Asked::Family(params),
            held_out: false,
            choose_objective: false,
            choose_kernel: false,
        }
    }
}

impl Choice {
    /// `auto`'s choice in a streamed fit: SPGP, the family that streams,
    /// not weighed.
    pub fn unweighed() -> Self {
        Choice::streamed(true, None)
    }

    /// A streamed regression's choices: SPGP (`auto` asked: the family that
    /// streams, not weighed) and `--kernel auto`'s `kernel` verdict, made
    /// on the sampled rows.
    pub fn streamed(auto: bool, kernel: Option<KernelVerdict>) -> Self {
        let spgp = Method::Spgp.name();
        let mut choice = empty_choice(if auto { AUTO } else { spgp }, spgp);
        choice.kernel = kernel;
        choice.reason = reason(&choice, 0, true);
        choice
    }

    /// `family` fitted with the squared exponential: `--kernel auto` was
    /// not weighed, because `why` (a streamed fit).
    pub fn kernel_unweighed(family: &str, why: &str) -> Self {
        let mut choice = empty_choice(family, family);
        let verdict = KernelVerdict::unweighed(why);
        choice.reason = format!("{family} was fitted as asked; {}", verdict.reason);
        choice.kernel = Some(verdict);
        choice
    }

    /// Whether the exported family did not clearly beat plain SPGP on
    /// held-out rows (`--model auto` would have exported SPGP).
    pub fn spgp_not_beaten(&self) -> bool {
        self.candidates
            .iter()
            .find(|c| c.name == self.exported)
            .and_then(|c| c.against.as_ref())
            .is_some_and(|v| !v.challenger_chosen)
    }
}

/// Fits what `request` asks to `data`, making the choices it leaves open,
/// and records them in the fit's `report.choice`.
///
/// # Errors
/// As `crate::fit::fit`, for the candidates and the final fit.
pub fn fit(
    data: &(impl Outputs + ?Sized),
    request: &Request,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let outputs = data.outputs();
    match &request.asked {
        Asked::Family(params) => crate::fit::check(outputs, params)?,
        Asked::Auto(candidates) => {
            for params in candidates {
                crate::fit::check(outputs, params)?;
            }
        }
    }
    let seed = match &request.asked {
        Asked::Family(params) => params.seed(),
        Asked::Auto(candidates) => candidates.first().map_or(0, FitParams::seed),
    };
    let started = std::time::Instant::now();
    let sample = contest_rows(outputs, seed)?;
    let (mut params, mut choice, folds) = match &request.asked {
        Asked::Family(params) => named(&sample, params, request)?,
        Asked::Auto(candidates) => auto(&sample, candidates, request)?,
    };
    if request.choose_kernel {
        // After the family: the kernel of the family that won with se
        // (choosing it first, on plain SPGP, lost to VSGP's se fits:
        // docs/src/kernels.md, "Choosing the kernel"), whose se fits on
        // the folds the family choice already made.
        let (chosen, verdict) = kernel::choose(&sample, &params, request, folds.as_ref())?;
        params = chosen;
        choice.kernel = Some(verdict);
    }
    let chose = choice.objective.is_some() || !choice.candidates.is_empty();
    if chose || choice.kernel.as_ref().is_some_and(|k| k.folds > 0) {
        choice.seconds = started.elapsed().as_secs_f64();
    }
    // With held-out choices off, no family chooses on its own rows either.
    let own = if request.held_out {
        OwnChoice::Final
    } else {
        OwnChoice::Off
    };
    let mut fit = crate::fit::fit_choosing(outputs, &params, own, progress)?;
    if let Some(verdict) = &mut choice.objective {
        fit = unless_noise_collapsed(outputs, &params, verdict, fit, progress)?;
    }
    let chose = choice.objective.is_some() || !choice.candidates.is_empty();
    if chose || choice.asked == AUTO || choice.kernel.is_some() {
        choice.reason = reason(&choice, outputs[0].n_rows(), request.held_out);
        fit.report.choice = Some(choice);
    }
    crate::fit::warnings::prepend_data_warnings(&mut fit.report.warnings, &outputs[0]);
    Ok(fit)
}

/// `fit`, or the VFE fit where `fit` is a FITC fit whose noise collapsed
/// and FITC did not clearly win the objective's `verdict` (which then
/// says so): with its noise on the floor FITC predicts nearly noise-free
/// targets at its pseudo-inputs. Not for VSGP: its widths carry
/// input-dependent noise in FITC's diagonal correction, so a noise on the
/// floor is its fit of heteroscedastic data, not a collapse.
fn unless_noise_collapsed(
    outputs: &[Dataset],
    params: &FitParams,
    verdict: &mut Verdict,
    fit: Fit,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let fitc = params.approximation() == Some(Approximation::Fitc);
    let vsgp = matches!(params, FitParams::Vsgp(_));
    if !fitc || vsgp || !fit.kernels.iter().any(noise_collapsed) || verdict.chosen_clearly_better()
    {
        return Ok(fit);
    }
    verdict.noise_collapsed = true;
    fit_family(
        outputs,
        &params.with_approximation(Approximation::Vfe),
        progress,
    )
}

/// How [`Asked::Auto`] is named.
pub(crate) const AUTO: &str = "auto";

/// The settings chosen, the choice, and the scores of the candidates
/// weighed over folds (if any were), which `--kernel auto` reuses.
type Chosen = (FitParams, Choice, Option<held_out::Scores>);

/// A named family: its objective chosen where open; weighed against SPGP
/// where it is one of SPGP's kin, for the report.
fn named(outputs: &[Dataset], params: &FitParams, request: &Request) -> Result<Chosen> {
    let name = params.method().name();
    let mut choice = empty_choice(name, name);
    if !weighed(outputs, params, request) {
        return Ok((params.clone(), choice, None));
    }
    let (params, objective) = own_objective(outputs, params, request)?;
    choice.objective = objective;
    let mut folds = None;
    if let Some(spgp) = spgp_rival(&params) {
        let spgp = spgp_objective(outputs, spgp, request)?;
        let (candidates, scores) = weigh(outputs, &spgp, std::slice::from_ref(&params), false)?;
        choice.candidates = candidates;
        folds = Some(scores);
    }
    Ok((params, choice, folds))
}

/// [`Asked::Auto`]: every candidate weighed against the first, SPGP, over
/// folds; the one of lowest held-out NLPD among those that clearly beat
/// SPGP, else SPGP.
fn auto(outputs: &[Dataset], candidates: &[FitParams], request: &Request) -> Result<Chosen> {
    let (first, rest) = candidates
        .split_first()
        .ok_or_else(|| crate::Error::BadInput("--model auto: no family to choose from".into()))?;
    let mut choice = empty_choice(AUTO, first.method().name());
    let spgp = match first {
        FitParams::Spgp(p) if weighed(outputs, first, request) => p.clone(),
        // Classifiers, and too few rows to hold any out: the first family.
        _ => return Ok((first.clone(), choice, None)),
    };
    // VSGP as a candidate keeps its objective (FITC unless named): its
    // own choice costs two more VSGP fits, and `--model auto` falls back
    // on SPGP, whose objective is weighed, where VSGP over-fits.
    let own = |p: &FitParams| match p {
        FitParams::Vsgp(_) => Ok((p.clone(), None)),
        _ => own_objective(outputs, p, request),
    };
    let (spgp_params, objective) = own(first)?;
    let (challengers, objectives): (Vec<FitParams>, Vec<Option<Verdict>>) = rest
        .iter()
        .map(own)
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    let spgp = SparseParams {
        approximation: spgp_params.approximation().unwrap_or(spgp.approximation),
        ..spgp
    };
    let (weighed, scores) = weigh(outputs, &spgp, &challengers, true)?;
    choice.candidates = weighed;
    let against_spgp = choice.candidates.iter().filter(|c| c.against.is_some());
    let winner = challengers
        .into_iter()
        .zip(objectives)
        .zip(against_spgp)
        .filter(|(_, c)| c.against.as_ref().is_some_and(|v| v.challenger_chosen))
        .min_by(|a, b| a.1.nlpd.total_cmp(&b.1.nlpd))
        .map(|(chosen, _)| chosen);
    let (chosen, objective) = winner.unwrap_or((spgp_params, objective));
    choice.objective = objective;
    choice.exported = chosen.method().name().to_string();
    Ok((chosen, choice, Some(scores)))
}

fn empty_choice(asked: &str, exported: &str) -> Choice {
    Choice {
        asked: asked.into(),
        exported: exported.into(),
        objective: None,
        candidates: Vec::new(),
        kernel: None,
        reason: String::new(),
        seconds: 0.0,
    }
}

/// Whether the held-out choices apply to `params` on `outputs`.
fn weighed(outputs: &[Dataset], params: &FitParams, request: &Request) -> bool {
    let n = outputs[0].n_rows();
    request.held_out && params.m().is_some_and(|m| held_out::applies(n, m))
}

/// `params` with its objective chosen on a held-out quarter, where the
/// family has that choice and the user left it open.
fn own_objective(
    outputs: &[Dataset],
    params: &FitParams,
    request: &Request,
) -> Result<(FitParams, Option<Verdict>)> {
    let open = match params {
        FitParams::Spgp(_) | FitParams::SpgpPca(_) | FitParams::SpgpHs(_) | FitParams::Vsgp(_) => {
            true
        }
        FitParams::Gplasso(p) => p.refit == GplassoRefit::Everything,
        _ => false,
    };
    let Some(asked) = params
        .approximation()
        .filter(|_| open && request.choose_objective)
    else {
        return Ok((params.clone(), None));
    };
    let other = other_objective(asked);
    let name = params.method().name();
    let candidates = [
        (objective_name(name, asked), params.clone()),
        (
            objective_name(name, other),
            params.with_approximation(other),
        ),
    ];
    let verdict = held_out::score(outputs, params.seed(), &candidates)?.verdict(0, 1);
    let chosen = if verdict.challenger_chosen {
        other
    } else {
        asked
    };
    Ok((params.with_approximation(chosen), Some(verdict)))
}

/// The SPGP `--model spgp` would fit with `sparse`'s settings: its
/// objective chosen on held-out rows where the user left it open.
fn spgp_objective(
    outputs: &[Dataset],
    sparse: SparseParams,
    request: &Request,
) -> Result<SparseParams> {
    let (params, _) = own_objective(outputs, &FitParams::Spgp(sparse.clone()), request)?;
    Ok(match params {
        FitParams::Spgp(p) => p,
        _ => sparse,
    })
}

/// The SPGP settings a family is weighed against, if it is weighed: the
/// family's own for SPGP's kin, GPLasso's M, seed and optimiser.
fn spgp_rival(params: &FitParams) -> Option<SparseParams> {
    match params {
        FitParams::SpgpHs(p) | FitParams::Vsgp(p) => Some(p.clone()),
        FitParams::SpgpDr(p) => Some(p.sparse.clone()),
        FitParams::Gplasso(p) if p.refit == GplassoRefit::Everything => Some(SparseParams {
            m: p.m,
            seed: p.seed,
            approximation: p.approximation,
            optimiser: p.optimiser.clone(),
            kernel: p.kernel,
            ..SparseParams::default()
        }),
        _ => None,
    }
}

/// Whether a family must beat SPGP with either objective: SPGP+HS and
/// GPLasso, whose wins against the one SPGP objective of a single split
/// did not hold on test rows (docs/src/model-families.md, "Both
/// objectives").
fn against_both_objectives(params: &FitParams) -> bool {
    matches!(params, FitParams::SpgpHs(_) | FitParams::Gplasso(_))
}

/// SPGP with `spgp`'s objective, SPGP with the other where a challenger
/// needs it, and every challenger, scored over folds; each challenger's
/// verdict against the toughest (lowest held-out NLPD) SPGP it must beat;
/// and the scores. With `race`, a challenger the toughest SPGP clearly
/// beats on the first fold (by the contest's own rule, the roles swapped)
/// stops there, its verdict that fold's ([`held_out::race`]): it could
/// only win by reversing the first fold's verdict over the other three.
fn weigh(
    outputs: &[Dataset],
    spgp: &SparseParams,
    challengers: &[FitParams],
    race: bool,
) -> Result<(Vec<Candidate>, held_out::Scores)> {
    let other = SparseParams {
        approximation: other_objective(spgp.approximation),
        ..spgp.clone()
    };
    let both = challengers.iter().any(against_both_objectives);
    let mut named = vec![(
        objective_name("spgp", spgp.approximation),
        FitParams::Spgp(spgp.clone()),
    )];
    if both {
        named.push((
            objective_name("spgp", other.approximation),
            FitParams::Spgp(other),
        ));
    }
    let rivals = named.len();
    named.extend(
        challengers
            .iter()
            .map(|p| (p.method().name().to_string(), p.clone())),
    );
    let reach = |c: usize| {
        if against_both_objectives(&named[c].1) {
            rivals
        } else {
            1
        }
    };
    // The SPGP challenger `c` must beat on `contest`: the toughest within
    // its reach.
    let toughest = |contest: &Contest, c: usize| {
        (0..reach(c))
            .min_by(|&a, &b| contest.mean(a).total_cmp(&contest.mean(b)))
            .unwrap_or(0)
    };
    let stops = |first: &Contest, c: usize| {
        c >= rivals && first.verdict(c, toughest(first, c)).challenger_chosen
    };
    let (scores, first_fold) = if race {
        let runs_on = |first: &Contest| (0..named.len()).map(|c| !stops(first, c)).collect();
        let (scores, first) = held_out::race(outputs, spgp.seed, &named, runs_on)?;
        (scores, Some(first))
    } else {
        let scores = held_out::cross_validate(outputs, spgp.seed, &named, None)?;
        (scores, None)
    };
    let mut candidates: Vec<Candidate> = (0..rivals)
        .map(|r| Candidate {
            name: named[r].0.clone(),
            nlpd: scores.mean(r),
            against: None,
        })
        .collect();
    for (c, (name, _)) in named.iter().enumerate().skip(rivals) {
        let candidate = match first_fold.as_ref().filter(|first| stops(first, c)) {
            Some(first) => Candidate {
                name: name.clone(),
                nlpd: first.mean(c),
                against: Some(first.verdict(toughest(first, c), c)),
            },
            None => Candidate {
                name: name.clone(),
                nlpd: scores.mean(c),
                against: (0..reach(c))
                    .map(|r| scores.verdict(r, c))
                    .min_by(|a, b| a.incumbent_nlpd.total_cmp(&b.incumbent_nlpd)),
            },
        };
        candidates.push(candidate);
    }
    Ok((candidates, scores))
}

fn other_objective(approximation: Approximation) -> Approximation {
    match approximation {
        Approximation::Fitc => Approximation::Vfe,
        Approximation::Vfe => Approximation::Fitc,
    }
}

/// How a choice names `family` fitted with `approximation`.
fn objective_name(family: &str, approximation: Approximation) -> String {
    format!("{family} ({approximation:?})").to_lowercase()
}

/// The sentence of [`Choice::reason`].
fn reason(choice: &Choice, rows: usize, held_out: bool) -> String {
    let all_folds = rows.min(CONTEST_ROWS);
    let stopped = |v: &Verdict| v.rows < all_folds;
    let folds = |v: &Verdict| {
        let k = held_out::CHOICE_FOLDS;
        if stopped(v) {
            format!("{} in the first of {k} folds", v.figures())
        } else {
            format!("{} in {k} folds", v.figures())
        }
    };
    let exported = &choice.exported;
    let own = choice.candidates.iter().find(|c| &c.name == exported);
    let mut sentence = match (choice.asked == AUTO, own.and_then(|c| c.against.as_ref())) {
        (false, Some(v)) if v.challenger_chosen => format!(
            "{exported} predicted held-out rows better than {} ({})",
            v.incumbent,
            folds(v)
        ),
        (false, Some(v)) if v.challenger_nlpd < v.incumbent_nlpd => format!(
            "{exported} was fitted as asked; it did not clearly beat {} on held-out rows \
             ({}, a difference within {} standard error): --model auto would export spgp",
            v.incumbent,
            folds(v),
            held_out::MARGIN_SE
        ),
        (false, Some(v)) => format!(
            "{exported} was fitted as asked, but {} predicted held-out rows better ({}): \
             --model auto would export spgp",
            v.incumbent,
            folds(v)
        ),
        (true, Some(v)) => format!(
            "auto chose {exported}: it beat {} on held-out rows ({})",
            v.incumbent,
            folds(v)
        ),
        (true, None) if !choice.candidates.is_empty() => {
            let best = choice
                .candidates
                .iter()
                .filter(|c| c.against.is_some())
                .min_by(|a, b| a.nlpd.total_cmp(&b.nlpd));
            match best {
                Some(b) => format!(
                    "auto chose {exported}: no other family clearly beat it on held-out rows \
                     (best, {}: {})",
                    b.name,
                    b.against.as_ref().map(folds).unwrap_or_default()
                ),
                None => format!("auto chose {exported}"),
            }
        }
        (true, None) if !held_out => {
            format!("auto chose {exported}: held-out comparisons are off")
        }
        (true, None) if rows == 0 => {
            format!("auto chose {exported}: a streamed fit is weighed against no other family")
        }
        (true, None) => format!("auto chose {exported}: the one family that applies here"),
        (false, None) => format!("{exported} was fitted as asked"),
    };
    sentence += &raced_note(choice, stopped);
    if let Some(v) = &choice.objective {
        sentence += &format!(
            "; objective chosen on a held-out quarter: {} ({} {:.4}, {} {:.4}, standard error \
             {:.4})",
            v.chosen(),
            v.incumbent,
            v.incumbent_nlpd,
            v.challenger,
            v.challenger_nlpd,
            v.standard_error
        );
        if v.noise_collapsed {
            sentence += ", VFE because FITC's fit on all rows put its noise on the floor";
        }
    }
    if let Some(k) = &choice.kernel {
        sentence += &format!("; {}", k.reason);
    }
    let weighed = choice.objective.is_some() || !choice.candidates.is_empty();
    if weighed || choice.kernel.as_ref().is_some_and(|k| k.rows > 0) {
        sentence += &sampled_note(rows);
    }
    sentence
}

/// The race's clause of [`reason`]: which families `auto` stopped after
/// the first fold (empty if none).
fn raced_note(choice: &Choice, stopped: impl Fn(&Verdict) -> bool) -> String {
    let raced: Vec<&str> = choice
        .candidates
        .iter()
        .filter(|c| choice.asked == AUTO && c.against.as_ref().is_some_and(&stopped))
        .map(|c| c.name.as_str())
        .collect();
    if raced.is_empty() {
        return String::new();
    }
    format!(
        "; {} stopped after the first of {} folds, where spgp beat {} by more than {} \
         standard error",
        raced.join(", "),
        held_out::CHOICE_FOLDS,
        if raced.len() == 1 { "it" } else { "each" },
        held_out::MARGIN_SE
    )
}

#[cfg(test)]
mod tests {
    use nalgebra::{DMatrix, DVector};

    use super::*;
    use crate::fit::gplasso::GplassoParams;
    use crate::fit::{fit as fit_family, ProjectedParams};
    use crate::model::features::BasisWidths;
    use crate::numerics::optimise::OptimiseOptions;
    use crate::synth::synthetic;
    use crate::synth::{dataset, Shape};

    /// The FITC fit of `params` on `data`, then the collapse rule under
    /// `verdict`.
    fn fitc_then_rule(data: &Dataset, params: &SparseParams, verdict: &mut Verdict) -> Fit {
        let one = std::slice::from_ref(data);
        let params = FitParams::Spgp(params.clone());
        let fit = fit_family(one, &params, &mut |_| {}).expect("fit");
        unless_noise_collapsed(one, &params, verdict, fit, &mut |_| {}).expect("fit")
    }

    /// Noise-free targets: FITC puts its noise on the floor, VFE does not.
    fn noise_free() -> Dataset {
        let x = DMatrix::from_fn(150, 1, |i, _| 10.0 * ((i * 37 % 150) as f64) / 150.0);
        let y = nalgebra::DVector::from_fn(150, |i, _| {
            let t = x[(i, 0)];
            libm::sin(t) + 0.3 * libm::sin(3.0 * t)
        });
        Dataset::from_raw(x, y, vec!["x".into()], "y".into()).expect("valid")
    }

    /// A held-out choice that kept FITC, the incumbent, with these scores.
    fn fitc_kept(fitc_nlpd: f64, vfe_nlpd: f64) -> Verdict {
        Verdict {
            incumbent: "spgp (fitc)".into(),
            challenger: "spgp (vfe)".into(),
            rows: 40,
            incumbent_nlpd: fitc_nlpd,
            challenger_nlpd: vfe_nlpd,
            standard_error: 0.1,
            challenger_chosen: false,
            noise_collapsed: false,
        }
    }

    /// A FITC fit with its noise on the floor that did not clearly win on
    /// held-out rows gives way to VFE; one that clearly won stays.
    #[test]
    fn a_collapsed_fitc_noise_gives_way_to_vfe_unless_fitc_clearly_won() {
        let data = noise_free();
        let params = SparseParams {
            m: 8,
            restarts: 1,
            ..SparseParams::default()
        };
        let mut close = fitc_kept(-1.0, -0.95);
        let fit = fitc_then_rule(&data, &params, &mut close);
        assert!(close.noise_collapsed);
        assert_eq!(close.chosen(), "spgp (vfe)");
        assert_eq!(fit.report.approximation, Some(Approximation::Vfe));
        assert!(!fit.kernels[0].noise_on_floor(), "{:?}", fit.kernels[0]);

        let mut clear = fitc_kept(-1.0, -0.5);
        let fit = fitc_then_rule(&data, &params, &mut clear);
        assert!(!clear.noise_collapsed);
        assert_eq!(clear.chosen(), "spgp (fitc)");
        assert_eq!(fit.report.approximation, Some(Approximation::Fitc));
        assert!(fit.kernels[0].noise_on_floor(), "{:?}", fit.kernels[0]);
    }

    /// Noisy targets: FITC's noise stays off the floor and FITC is kept.
    #[test]
    fn fitc_with_noise_off_the_floor_is_kept() {
        let (x, y) = synthetic(300, 1, 3);
        let data = Dataset::from_raw(x, y, vec!["a".into()], "y".into()).expect("valid");
        let params = SparseParams {
            m: 8,
            restarts: 1,
            ..SparseParams::default()
        };
        let mut choice = fitc_kept(1.0, 1.0);
        let fit = fitc_then_rule(&data, &params, &mut choice);
        assert!(!fit.kernels[0].noise_on_floor(), "{:?}", fit.kernels[0]);
        assert!(!choice.noise_collapsed);
        assert_eq!(fit.report.approximation, Some(Approximation::Fitc));
    }

    /// A target that needs both of its inputs: no single direction of them
    /// explains it.
    fn product_of_waves(n: usize) -> Dataset {
        let x = DMatrix::from_fn(n, 2, |i, j| {
            let u = ((i * (7 + 4 * j) + 3 * j) % n) as f64 / n as f64;
            6.0 * u - 3.0
        });
        let y = DVector::from_fn(n, |i, _| {
            let wiggle = 0.1 * ((i * 13 % 17) as f64 / 8.0 - 1.0);
            libm::sin(1.5 * x[(i, 0)]) * libm::cos(1.5 * x[(i, 1)]) + wiggle
        });
        Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).expect("valid")
    }

    fn sparse() -> SparseParams {
        SparseParams {
            m: 12,
            restarts: 2,
            optimiser: OptimiseOptions {
                max_iter: 60,
                ..OptimiseOptions::default()
            },
            ..SparseParams::default()
        }
    }

    fn asked(params: FitParams) -> Request {
        Request {
            asked: Asked::Family(params),
            held_out: true,
            choose_objective: true,
            choose_kernel: false,
        }
    }

    /// SPGP+DR with G = 1 cannot follow a target of two directions: the
    /// folds show it, and the fit says so, but a named family is the family
    /// fitted; `auto` exports SPGP, exactly the fit `--model spgp` makes.
    #[test]
    fn a_named_family_that_loses_on_held_out_rows_is_fitted_and_says_so() {
        let train = product_of_waves(240);
        let dr = FitParams::SpgpDr(ProjectedParams {
            sparse: sparse(),
            dim: 1,
        });
        let named = fit(&train, &asked(dr.clone()), &mut |_| {}).expect("fits");
        let choice = named.report.choice.clone().expect("a choice on 240 rows");
        assert!(choice.spgp_not_beaten(), "{choice:?}");
        assert!(
            choice.reason.contains("--model auto would export spgp"),
            "{}",
            choice.reason
        );
        assert_eq!(
            (choice.asked.as_str(), choice.exported.as_str()),
            ("spgp-dr", "spgp-dr")
        );
        let verdict = choice.candidates[1].against.as_ref().expect("weighed");
        assert_eq!(verdict.rows, 240, "every row is held out once");
        assert!(
            verdict.incumbent_nlpd < verdict.challenger_nlpd,
            "{verdict:?}"
        );
        assert_eq!(named.set.members[0].kind, sgp_runtime::ModelKind::SpgpDr);
        assert!(named.report.projection.is_some());
        let alone = fit_family(&train, &dr, &mut |_| {}).expect("fits");
        assert_eq!(alone.set.members[0].form, named.set.members[0].form);

        let spgp = FitParams::Spgp(sparse());
        let auto = Request {
            asked: Asked::Auto(vec![spgp.clone(), dr]),
            ..asked(FitParams::Spgp(sparse()))
        };
        let chosen = fit(&train, &auto, &mut |_| {}).expect("fits");
        let choice = chosen.report.choice.expect("a choice");
        assert_eq!(
            (choice.asked.as_str(), choice.exported.as_str()),
            ("auto", "spgp")
        );
        assert!(
            choice.reason.starts_with("auto chose spgp"),
            "{}",
            choice.reason
        );
        // Clearly worse on the first fold, SPGP+DR stops there.
        let verdict = choice.candidates[1].against.as_ref().expect("weighed");
        assert_eq!(verdict.rows, 60, "{verdict:?}");
        assert!(
            choice
                .reason
                .contains("spgp-dr stopped after the first of 4 folds"),
            "{}",
            choice.reason
        );
        let plain = fit(&train, &asked(spgp), &mut |_| {}).expect("fits");
        assert_eq!(plain.set.members[0].form, chosen.set.members[0].form);

        let off = Request {
            held_out: false,
            ..asked(FitParams::Spgp(sparse()))
        };
        assert!(fit(&train, &off, &mut |_| {})
            .expect("fits")
            .report
            .choice
            .is_none());
    }

    /// SPGP+HS is weighed against the better of the two SPGP objectives on
    /// the folds, and is fitted whatever they say.
    #[test]
    fn spgp_hs_is_weighed_against_the_better_spgp_objective() {
        let train = dataset(Shape::Heteroscedastic, 200, 1).expect("generates");
        let hs = fit(&train, &asked(FitParams::SpgpHs(sparse())), &mut |_| {}).expect("fits");
        assert_eq!(hs.set.members[0].kind, sgp_runtime::ModelKind::SpgpHs);
        assert!(hs.report.uncertainties.is_some());
        let choice = hs.report.choice.expect("a choice on 200 rows");
        let rivals: Vec<&Candidate> = choice
            .candidates
            .iter()
            .filter(|c| c.against.is_none())
            .collect();
        assert_eq!(rivals.len(), 2, "{choice:?}");
        let toughest = rivals
            .iter()
            .min_by(|a, b| a.nlpd.total_cmp(&b.nlpd))
            .expect("two");
        let verdict = choice.candidates[2].against.as_ref().expect("weighed");
        assert_eq!(verdict.incumbent, toughest.name, "{choice:?}");
    }

    /// GPLasso (its basis moved) and VSGP are weighed against SPGP on
    /// small data and fitted as asked either way; without the held-out
    /// choice they are fitted without a word.
    #[test]
    fn gplasso_and_vsgp_are_weighed_and_fitted_as_asked() {
        let train = product_of_waves(240);
        let gplasso = FitParams::Gplasso(GplassoParams {
            m: 10,
            optimiser: sparse().optimiser,
            ..GplassoParams::default()
        });
        let fitted = fit(&train, &asked(gplasso.clone()), &mut |_| {}).expect("fits");
        assert_eq!(fitted.set.members[0].kind, sgp_runtime::ModelKind::GpLasso);
        assert!(fitted.report.gplasso.is_some());
        let choice = fitted.report.choice.expect("a choice");
        assert!(choice.objective.is_some(), "GPLasso's objective is open");
        assert!(
            choice.candidates.iter().any(|c| c.name == "gplasso"),
            "{choice:?}"
        );

        let vsgp = fit(&train, &asked(FitParams::Vsgp(sparse())), &mut |_| {}).expect("fits");
        let per_basis = matches!(
            vsgp.set.members[0].form.basis.widths,
            BasisWidths::PerBasis(_)
        );
        assert!(per_basis);
        assert!(vsgp.report.choice.is_some());
    }
}
