//! Scoring fits by their NLPD on held-out rows: the training objective is
//! a poor judge (FITC's NLML rewards shrinking the noise into its diagonal
//! correction, SPGP+HS's uncertainties can fit the noise of the training
//! points), so candidates are fitted on part of the rows (of at most
//! `CONTEST_ROWS`) and scored on the rest, and weighed in the one contest
//! of [`crate::evaluate::contest`].
//!
//! The objective (FITC or VFE) is chosen on one split (`score`); a family
//! is weighed against SPGP over `CHOICE_FOLDS` folds (`cross_validate`;
//! `--model auto`'s families as a `race`), every row held out once:
//! per-row NLPDs are heavy-tailed and a quarter of a few hundred rows is
//! too few to average them (docs/src/model-families.md, "The held-out
//! choice"). A candidate's own choices (SPGP+HS's prior strength) are
//! made on its part's training rows alone, as cheaply as is honest
//! (`OwnChoice::Contest`), never on the rows it is scored on.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use rayon::prelude::*;

use crate::data::{Dataset, TargetKind};
use crate::evaluate::contest::Contest;
pub(crate) use crate::evaluate::contest::{CONTEST_ROWS, MARGIN_SE};
use crate::evaluate::metrics::{row_log_losses, row_nlpds};
use crate::fit::{fit_choosing, FitParams, OwnChoice};
use crate::{Error, Result};

/// Fraction of the rows held out for the choice.
pub(crate) const HELD_OUT_FRACTION: f64 = 0.25;

/// Fewest held-out rows a choice is made on; with fewer the incumbent is
/// kept without one.
pub(crate) const MIN_HELD_OUT: usize = 20;

/// Folds of the cross-validated choice (`cross_validate`).
pub(crate) const CHOICE_FOLDS: usize = 4;

/// Whether a fit on `n` rows with `m` basis functions makes the choice
/// (on at most [`CONTEST_ROWS`] of them): at least `MIN_HELD_OUT` held
/// out, and at least `m` left to fit on.
pub fn applies(n: usize, m: usize) -> bool {
    let n = n.min(CONTEST_ROWS);
    let held_out = held_out_rows(n);
    held_out >= MIN_HELD_OUT && n - held_out >= m.max(2)
}

fn held_out_rows(n: usize) -> usize {
    (HELD_OUT_FRACTION * n as f64).round() as usize
}

/// Every candidate's NLPD on each held-out row (raw units, summed over
/// the outputs), weighed as [`Contest`] does.
pub(crate) struct Scores {
    contest: Contest,
    /// Cross-validated scores only: the folds they were made on and each
    /// candidate's settings, so a later choice on the same folds reuses a
    /// candidate's scores instead of refitting it ([`cross_validate`]).
    /// (`None`: a candidate that stopped in a race, [`race`]).
    folds: Option<(FoldsOf, Vec<Option<FitParams>>)>,
}

/// Which folds scores were made on: the fold seed, and the shape and a
/// hash of every value of the data folded (inputs, targets, transform), so
/// that scores of other data are never taken for these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FoldsOf {
    seed: u64,
    shape: (usize, usize, usize),
    hash: u64,
}

impl FoldsOf {
    fn new(outputs: &[Dataset], seed: u64) -> Self {
        let mut h = DefaultHasher::new();
        for d in outputs {
            let t = &d.transform;
            let values = d.x.iter().chain(d.y.iter()).chain(&t.x_mean);
            let values = values.chain(&t.x_scale).chain([&t.y_mean, &t.y_scale]);
            for v in values {
                v.to_bits().hash(&mut h);
            }
            format!("{:?}", d.target).hash(&mut h);
            d.constant_inputs.hash(&mut h);
        }
        let first = outputs.first();
        FoldsOf {
            seed,
            shape: (
                outputs.len(),
                first.map_or(0, Dataset::n_rows),
                first.map_or(0, |d| d.x.ncols()),
            ),
            hash: h.finish(),
        }
    }
}

/// Fits every candidate (name, settings) on a random
/// `1 - HELD_OUT_FRACTION` of the rows of `outputs` (seed `seed`, the same
/// rows for every output) and scores it on the rest (module docs).
///
/// # Errors
/// If the data cannot be split, or every candidate fails.
pub(crate) fn score(
    outputs: &[Dataset],
    seed: u64,
    candidates: &[(String, FitParams)],
) -> Result<Scores> {
    let parts: Vec<(Dataset, Dataset)> = outputs
        .iter()
        .map(|d| d.split(HELD_OUT_FRACTION, seed))
        .collect::<Result<_>>()?;
    score_parts(&[parts.into_iter().unzip()], candidates, None)
}

/// As [`score`], but over [`CHOICE_FOLDS`] folds, so that every row is
/// held out once (module docs, "Cross-validated"). A candidate `known`
/// scored on the same `outputs` (the same values, [`FoldsOf`]) with the
/// same settings and fold seed is not refitted: its per-row NLPDs are taken from there (each fit is
/// deterministic, so they are the ones a refit would give).
///
/// # Errors
/// If the data cannot be split into folds, or every candidate fails.
pub(crate) fn cross_validate(
    outputs: &[Dataset],
    seed: u64,
    candidates: &[(String, FitParams)],
    known: Option<&Scores>,
) -> Result<Scores> {
    let parts = fold_parts(outputs, seed)?;
    let folds = FoldsOf::new(outputs, seed);
    let known = known.filter(|k| k.folds.as_ref().is_some_and(|(f, _)| *f == folds));
    let mut scores = scores_of(candidates, part_rows(&parts, candidates, known))?;
    let settings = candidates.iter().map(|(_, p)| Some(p.clone())).collect();
    scores.folds = Some((folds, settings));
    Ok(scores)
}

/// As [`cross_validate`], as a race: every candidate is fitted on the
/// first fold, and only those `runs_on` keeps, given that fold's contest,
/// on the others (docs/src/model-families.md, "Defaults: a choice on
/// held-out rows").
/// The scores of those that ran on are the ones [`cross_validate`] gives
/// them (the same folds, the rows in the same order); those that stopped
/// have none there (as if failed, and never reused), and the first fold's
/// contest, returned beside, holds every candidate's.
///
/// # Errors
/// As [`cross_validate`].
pub(crate) fn race(
    outputs: &[Dataset],
    seed: u64,
    candidates: &[(String, FitParams)],
    runs_on: impl Fn(&Contest) -> Vec<bool>,
) -> Result<(Scores, Contest)> {
    let parts = fold_parts(outputs, seed)?;
    let (first, rest) = parts
        .split_first()
        .ok_or_else(|| Error::BadInput("no folds to race on".into()))?;
    let mut errors = Vec::new();
    let opening: Vec<Option<Vec<f64>>> = part_rows(std::slice::from_ref(first), candidates, None)
        .into_iter()
        .map(|r| r.map_err(|e| errors.push(e)).ok())
        .collect();
    let names = candidates.iter().map(|(n, _)| n.clone()).collect();
    let first_fold = Contest::new(names, opening.clone());
    let keep = runs_on(&first_fold);
    let runs: Vec<bool> = (0..candidates.len())
        .map(|i| keep.get(i).copied().unwrap_or(false) && opening[i].is_some())
        .collect();
    let on: Vec<(String, FitParams)> = (0..candidates.len())
        .filter(|&i| runs[i])
        .map(|i| candidates[i].clone())
        .collect();
    let mut later = part_rows(rest, &on, None).into_iter();
    let mut errors = errors.into_iter();
    let stopped = || Error::Numerical("stopped after the first fold".into());
    let rows: Vec<Result<Vec<f64>>> = opening
        .into_iter()
        .enumerate()
        .map(|(i, first)| match first {
            Some(first) if runs[i] => later
                .next()
                .unwrap_or_else(|| Err(stopped()))
                .map(|more| [first, more].concat()),
            Some(_) => Err(stopped()),
            None => Err(errors.next().unwrap_or_else(stopped)),
        })
        .collect();
    let mut scores = scores_of(candidates, rows)?;
    let settings = (0..candidates.len())
        .map(|i| runs[i].then(|| candidates[i].1.clone()))
        .collect();
    scores.folds = Some((FoldsOf::new(outputs, seed), settings));
    Ok((scores, first_fold))
}

/// The [`CHOICE_FOLDS`] folds of `outputs` (seed `seed`, the same rows of
/// every output): each fold's training and held-out parts of every output.
fn fold_parts(outputs: &[Dataset], seed: u64) -> Result<Vec<(Vec<Dataset>, Vec<Dataset>)>> {
    let per_output: Vec<Vec<(Dataset, Dataset)>> = outputs
        .iter()
        .map(|d| d.folds(CHOICE_FOLDS, seed))
        .collect::<Result<_>>()?;
    Ok((0..CHOICE_FOLDS)
        .map(|k| per_output.iter().map(|folds| folds[k].clone()).unzip())
        .collect())
}

/// Every candidate fitted on each part's training rows and scored on its
/// held-out rows (a row's NLPD summed over the outputs: the NLPD of the
/// output vector), weighed as [`Contest`] does.
fn score_parts(
    parts: &[(Vec<Dataset>, Vec<Dataset>)],
    candidates: &[(String, FitParams)],
    known: Option<&Scores>,
) -> Result<Scores> {
    scores_of(candidates, part_rows(parts, candidates, known))
}

/// Each candidate's per-row NLPDs over `parts` (as [`score_parts`]), those
/// of all the parts in one list; a candidate of `known` (scored on the
/// same parts) is not refitted.
///
/// The candidates' fits (and their parts') are independent and run in
/// parallel: on a few hundred rows one fit barely uses a second core. Each
/// fit is deterministic and the results are taken in candidate and part
/// order, so they do not depend on the threads.
fn part_rows(
    parts: &[(Vec<Dataset>, Vec<Dataset>)],
    candidates: &[(String, FitParams)],
    known: Option<&Scores>,
) -> Vec<Result<Vec<f64>>> {
    let one = |params: &FitParams| -> Result<Vec<f64>> {
        if let Some(rows) = known.and_then(|k| k.rows_of(params)) {
            return rows.ok_or_else(|| {
                Error::Numerical("its fit on the same folds failed in an earlier choice".into())
            });
        }
        let per_part: Vec<Result<Vec<f64>>> = parts
            .par_iter()
            .map(|(train, valid)| {
                // A contest fit: its own choices on its training rows
                // alone, as cheaply as is honest (`OwnChoice::Contest`).
                let set =
                    fit_choosing(train.as_slice(), params, OwnChoice::Contest, &mut |_| {})?.set;
                if let Some(classes) = valid.first().filter(|v| v.target != TargetKind::Continuous)
                {
                    // A classifier: its NLPD, the log loss of the true class.
                    return row_log_losses(&set, classes);
                }
                let models = set.members;
                let mut sums = vec![0.0; valid.first().map_or(0, Dataset::n_rows)];
                for (model, output) in models.iter().zip(valid) {
                    for (sum, nlpd) in sums.iter_mut().zip(row_nlpds(model, output)?) {
                        *sum += nlpd;
                    }
                }
                Ok(sums)
            })
            .collect();
        let per_part = per_part.into_iter().collect::<Result<Vec<_>>>()?;
        Ok(per_part.concat())
    };
    candidates
        .par_iter()
        .map(|(_, params)| one(params))
        .collect()
}

/// The contest of `candidates` given each one's per-row NLPDs (or why it
/// failed); which error is reported follows the candidates' order.
fn scores_of(candidates: &[(String, FitParams)], results: Vec<Result<Vec<f64>>>) -> Result<Scores> {
    let mut last_error = None;
    let nlpds: Vec<Option<Vec<f64>>> = results
        .into_iter()
        .map(|r| r.map_err(|e| last_error = Some(e)).ok())
        .collect();
    let contest = Contest::new(candidates.iter().map(|(n, _)| n.clone()).collect(), nlpds);
    if contest.lowest().is_none() {
        let names: Vec<&str> = candidates.iter().map(|(n, _)| n.as_str()).collect();
        return Err(Error::Numerical(format!(
            "held-out choice between {}: every fit failed{}",
            names.join(", "),
            last_error.map(|e| format!(": {e}")).unwrap_or_default()
        )));
    }
    Ok(Scores {
        contest,
        folds: None,
    })
}

impl Scores {
    /// The per-row NLPDs of the cross-validated candidate with settings
    /// `params` (`Some(None)`: its fit failed), if there is one.
    fn rows_of(&self, params: &FitParams) -> Option<Option<Vec<f64>>> {
        let (_, settings) = self.folds.as_ref()?;
        let i = settings.iter().position(|p| p.as_ref() == Some(params))?;
        self.contest.nlpds.get(i).cloned()
    }
}

impl std::ops::Deref for Scores {
    type Target = Contest;
    fn deref(&self) -> &Contest {
        &self.contest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{FitParams, SparseParams};
    use crate::model::inference::Approximation;

    #[test]
    fn applies_to_small_data_with_enough_rows_to_hold_out() {
        assert!(applies(400, 30));
        assert!(applies(100 * CONTEST_ROWS, 30), "on a subset of the rows");
        assert!(!applies(100 * CONTEST_ROWS, CONTEST_ROWS));
        assert!(!applies(60, 10), "15 held-out rows are too few");
        assert!(
            !applies(100, 90),
            "75 rows left cannot hold 90 pseudo-inputs"
        );
    }

    fn small_spgp(m: usize) -> FitParams {
        let mut p = SparseParams {
            m,
            restarts: 1,
            ..SparseParams::default()
        };
        p.optimiser.max_iter = 30;
        FitParams::Spgp(p)
    }

    /// A candidate scored on the same folds is taken from there, not
    /// refitted: its scores are those known (a refit gives the same ones);
    /// on other folds (another seed) it is refitted.
    #[test]
    fn cross_validated_scores_are_reused_on_the_same_folds_only() {
        let data = crate::synth::dataset(crate::synth::Shape::Periodic, 120, 1).expect("valid");
        let one = std::slice::from_ref(&data);
        let (a, b) = (small_spgp(4), small_spgp(6));
        let first = cross_validate(one, 3, &[("a".into(), a.clone())], None).expect("scores");
        let both = [("a".to_string(), a.clone()), ("b".to_string(), b.clone())];
        let refitted = cross_validate(one, 3, &both, None).expect("scores");
        let reused = cross_validate(one, 3, &both, Some(&first)).expect("scores");
        assert_eq!(reused.nlpds, refitted.nlpds, "deterministic fits");
        // Planted scores show which were taken rather than refitted.
        let planted = Scores {
            contest: Contest::new(vec!["a".into()], vec![Some(vec![42.0; 120])]),
            ..first
        };
        let taken = cross_validate(one, 3, &both, Some(&planted)).expect("scores");
        assert_eq!(taken.mean(0), 42.0);
        assert_eq!(taken.nlpds[1], refitted.nlpds[1]);
        let other_folds = cross_validate(one, 4, &both, Some(&planted)).expect("scores");
        assert_ne!(other_folds.mean(0), 42.0);
        // Other settings are refitted too.
        let other_settings = [("c".to_string(), small_spgp(5))];
        let c = cross_validate(one, 3, &other_settings, Some(&planted)).expect("scores");
        assert_ne!(c.mean(0), 42.0);
    }

    /// A contest fit makes its own choices (SPGP+HS's prior strength) on
    /// its fold's training rows as `OwnChoice::Contest` says: on every
    /// seed the contest's per-row NLPDs of SPGP+HS are those of that fit,
    /// and on some fold of some seed they are not those of a final fit
    /// (`OwnChoice::Final`; so the two rules are told apart here).
    #[test]
    fn contest_fits_make_their_own_choices_as_a_contest_fit() {
        let mut told_apart = false;
        for seed in 0..3u64 {
            let data = crate::synth::dataset(crate::synth::Shape::Heteroscedastic, 160, seed)
                .expect("valid");
            let mut p = SparseParams {
                m: 6,
                restarts: 1,
                seed,
                ..SparseParams::default()
            };
            p.optimiser.max_iter = 30;
            let hs = FitParams::SpgpHs(p);
            let one = std::slice::from_ref(&data);
            let scores =
                cross_validate(one, seed, &[("hs".into(), hs.clone())], None).expect("scores");
            let by = |own, train: &Dataset, valid: &Dataset| {
                let fit = fit_choosing(train, &hs, own, &mut |_| {}).expect("fits");
                row_nlpds(&fit.set.members[0], valid).expect("scores")
            };
            let folds = data.folds(CHOICE_FOLDS, seed).expect("folds");
            let contest: Vec<f64> = folds
                .iter()
                .flat_map(|(t, v)| by(OwnChoice::Contest, t, v))
                .collect();
            assert_eq!(scores.nlpds[0].as_ref(), Some(&contest), "seed {seed}");
            let last: Vec<f64> = folds
                .iter()
                .flat_map(|(t, v)| by(OwnChoice::Final, t, v))
                .collect();
            told_apart |= last != contest;
        }
        assert!(
            told_apart,
            "the contest fits chose as final fits everywhere"
        );
    }

    /// Scores made on other data (as many rows, the same fold seed and
    /// settings) are never taken: the candidate is refitted.
    #[test]
    fn scores_of_other_data_are_not_reused() {
        let periodic =
            |seed| crate::synth::dataset(crate::synth::Shape::Periodic, 120, seed).expect("valid");
        let (data, other) = (periodic(1), periodic(2));
        let a = [("a".to_string(), small_spgp(4))];
        let first = cross_validate(std::slice::from_ref(&data), 3, &a, None).expect("scores");
        let planted = Scores {
            contest: Contest::new(vec!["a".into()], vec![Some(vec![42.0; 120])]),
            ..first
        };
        let same = cross_validate(std::slice::from_ref(&data), 3, &a, Some(&planted));
        assert_eq!(same.expect("scores").mean(0), 42.0, "the same data reuse");
        let elsewhere = cross_validate(std::slice::from_ref(&other), 3, &a, Some(&planted));
        assert_ne!(elsewhere.expect("scores").mean(0), 42.0);
    }

    /// A clearly worse challenger (one pseudo-input, two iterations) never
    /// displaces the incumbent; as the incumbent, it is displaced; the
    /// figures are those of the held-out quarter.
    #[test]
    fn the_challenger_must_clearly_win() {
        let data = crate::synth::dataset(crate::synth::Shape::Periodic, 240, 1).expect("valid");
        let params = |m, max_iter| {
            let mut p = SparseParams {
                m,
                approximation: Approximation::Fitc,
                restarts: 1,
                ..SparseParams::default()
            };
            p.optimiser.max_iter = max_iter;
            FitParams::Spgp(p)
        };
        let candidates = [
            ("good".to_string(), params(12, 200)),
            ("poor".to_string(), params(1, 2)),
        ];
        let scores = score(std::slice::from_ref(&data), 0, &candidates).expect("scores");
        let kept = scores.verdict(0, 1);
        assert_eq!(kept.rows, 60);
        assert!(kept.incumbent_nlpd + 0.5 < kept.challenger_nlpd, "{kept:?}");
        assert!(kept.standard_error > 0.0);
        assert!(!kept.challenger_chosen);
        assert_eq!(kept.chosen(), "good");
        let displaced = scores.verdict(1, 0);
        assert!(displaced.challenger_chosen, "{displaced:?}");
        assert_eq!(displaced.chosen(), "good");
        // A candidate against itself is never displaced.
        assert!(!scores.verdict(0, 0).challenger_chosen);
        // "good" won by more than the margin either way; a tie did not.
        assert!(kept.chosen_clearly_better());
        assert!(displaced.chosen_clearly_better());
        assert!(!scores.verdict(0, 0).chosen_clearly_better());
    }
}
