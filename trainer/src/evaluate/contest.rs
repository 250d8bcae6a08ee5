//! The one held-out contest every open choice is decided by (objective,
//! family, kernel, shared or separate outputs, SPGP+HS's prior strength):
//! candidates scored on the same held-out rows (NLPD, a classifier's log
//! loss), weighed in pairs; a challenger displaces the incumbent only if
//! it wins by more than `MARGIN_SE` standard errors of the paired
//! per-row difference (a smaller difference is one another split could
//! reverse), and by more than a tolerance where the choice has one.
//!
//! A contest is held on at most [`CONTEST_ROWS`] rows: on more, on a
//! seeded random subset of that many (`contest_rows`), the chosen fit
//! then fitted on every row; so a choice is made at every size, and what
//! it costs grows with the rows up to that of `CONTEST_ROWS` and no
//! further (docs/src/model-families.md, "Held-out choices at every size").

use std::borrow::Cow;

use serde::Serialize;

use super::metrics::paired_standard_error;
use crate::data::Dataset;
use crate::Result;

/// Rows a contest is held on, at most (`contest_rows`).
pub const CONTEST_ROWS: usize = 2000;

/// `outputs`, or on more than [`CONTEST_ROWS`] rows a random
/// `CONTEST_ROWS` of them (seed `seed`, the same rows of every output),
/// each in its data set's own standardisation.
///
/// # Errors
/// As [`Dataset::subset`].
pub(crate) fn contest_rows(outputs: &[Dataset], seed: u64) -> Result<Cow<'_, [Dataset]>> {
    if outputs.iter().all(|d| d.n_rows() <= CONTEST_ROWS) {
        return Ok(Cow::Borrowed(outputs));
    }
    let sample = outputs.iter().map(|d| d.at_most_rows(CONTEST_ROWS, seed));
    Ok(Cow::Owned(sample.collect::<Result<_>>()?))
}

/// What a report adds to a choice weighed on `rows` rows: on more than
/// [`CONTEST_ROWS`], that it was weighed on a random subset of them
/// (`contest_rows`); else nothing.
pub(crate) fn sampled_note(rows: usize) -> String {
    if rows > CONTEST_ROWS {
        format!("; weighed on a random {CONTEST_ROWS} of the {rows} rows, the choice then fitted on all")
    } else {
        String::new()
    }
}

/// Standard errors by which a challenger must win.
pub(crate) const MARGIN_SE: f64 = 1.0;

/// Every candidate's score on each of the same held-out rows.
#[derive(Clone, Debug)]
pub(crate) struct Contest {
    /// Held-out rows each candidate was scored on.
    pub(crate) rows: usize,
    names: Vec<String>,
    /// Per-row scores; `None` where the fit or its prediction failed.
    pub(crate) nlpds: Vec<Option<Vec<f64>>>,
}

impl Contest {
    /// The contest of candidates `names`, each with its per-row scores
    /// (`None`, or any non-finite score: it failed).
    pub(crate) fn new(names: Vec<String>, scores: Vec<Option<Vec<f64>>>) -> Self {
        let nlpds: Vec<Option<Vec<f64>>> = scores
            .into_iter()
            .map(|s| s.filter(|v| v.iter().all(|x| x.is_finite())))
            .collect();
        let rows = nlpds.iter().flatten().map(Vec::len).next().unwrap_or(0);
        Contest { rows, names, nlpds }
    }

    /// Mean held-out score of candidate `i` (infinite if it failed).
    pub(crate) fn mean(&self, i: usize) -> f64 {
        match self.nlpds.get(i) {
            Some(Some(v)) => v.iter().sum::<f64>() / v.len() as f64,
            _ => f64::INFINITY,
        }
    }

    /// The candidate of lowest mean score, if any did not fail.
    pub(crate) fn lowest(&self) -> Option<usize> {
        (0..self.nlpds.len())
            .filter(|&i| self.mean(i).is_finite())
            .min_by(|&a, &b| self.mean(a).total_cmp(&self.mean(b)))
    }

    /// Candidate `incumbent` against candidate `challenger`: the challenger
    /// wins if it beats the incumbent by more than [`MARGIN_SE`] standard
    /// errors, or if only the incumbent failed.
    pub(crate) fn verdict(&self, incumbent: usize, challenger: usize) -> Verdict {
        self.verdict_beyond(incumbent, challenger, 0.0)
    }

    /// As [`Contest::verdict`], the challenger also winning by more than
    /// `tolerance` per row.
    pub(crate) fn verdict_beyond(
        &self,
        incumbent: usize,
        challenger: usize,
        tolerance: f64,
    ) -> Verdict {
        let (incumbent_nlpd, challenger_nlpd) = (self.mean(incumbent), self.mean(challenger));
        let standard_error = match (self.nlpds.get(incumbent), self.nlpds.get(challenger)) {
            (Some(Some(a)), Some(Some(b))) => paired_standard_error(a, b),
            _ => 0.0,
        };
        let gain = incumbent_nlpd - challenger_nlpd;
        let challenger_chosen = challenger_nlpd.is_finite()
            && (!incumbent_nlpd.is_finite()
                || (challenger_nlpd - incumbent_nlpd + MARGIN_SE * standard_error < 0.0
                    && gain > tolerance));
        let name = |i: usize| self.names.get(i).cloned().unwrap_or_default();
        Verdict {
            incumbent: name(incumbent),
            challenger: name(challenger),
            rows: self.rows,
            incumbent_nlpd,
            challenger_nlpd,
            standard_error,
            challenger_chosen,
            noise_collapsed: false,
        }
    }
}

/// One candidate weighed against another on held-out rows.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// The one kept unless the other clearly wins.
    pub incumbent: String,
    /// The one it was weighed against.
    pub challenger: String,
    /// Rows the two were scored on.
    pub rows: usize,
    /// Mean held-out NLPD of the incumbent (raw units; infinite if its fit
    /// failed).
    pub incumbent_nlpd: f64,
    /// Mean held-out NLPD of the challenger.
    pub challenger_nlpd: f64,
    /// Standard error of the mean per-row difference.
    pub standard_error: f64,
    /// The challenger won by more than `MARGIN_SE` standard errors.
    pub challenger_chosen: bool,
    /// The chosen FITC fit on all rows let its noise collapse and did not
    /// clearly win here, so the VFE fit was taken instead
    /// (`crate::choose`).
    pub noise_collapsed: bool,
}

impl Verdict {
    /// The name of the chosen fit.
    pub fn chosen(&self) -> &str {
        if self.challenger_chosen != self.noise_collapsed {
            &self.challenger
        } else {
            &self.incumbent
        }
    }

    /// Whether the chosen candidate beat the other by more than
    /// [`MARGIN_SE`] standard errors (a challenger always has, unless the
    /// incumbent failed).
    pub(crate) fn chosen_clearly_better(&self) -> bool {
        let (chosen, other) = if self.challenger_chosen {
            (self.challenger_nlpd, self.incumbent_nlpd)
        } else {
            (self.incumbent_nlpd, self.challenger_nlpd)
        };
        chosen.is_finite()
            && (!other.is_finite() || chosen + MARGIN_SE * self.standard_error < other)
    }

    /// The figures of a reason: `held-out NLPD {challenger} against
    /// {incumbent}, standard error {se}, over {rows} rows`.
    pub(crate) fn figures(&self) -> String {
        format!(
            "held-out NLPD {:.4} against {:.4}, standard error {:.4}, over {} rows",
            self.challenger_nlpd, self.incumbent_nlpd, self.standard_error, self.rows
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paired_standard_error_is_that_of_the_differences() {
        let a = [1.0, 2.0, 3.0, 4.0];
        // Constant difference: no spread at all.
        assert_eq!(paired_standard_error(&a, &[2.0, 3.0, 4.0, 5.0]), 0.0);
        let se = paired_standard_error(&a, &[1.0, 2.0, 3.0, 6.0]);
        // Differences 0, 0, 0, 2: mean 0.5, sample variance 1, se 1/2.
        assert!((se - 0.5).abs() < 1e-12, "{se}");
    }

    fn alternating(mean: f64, spread: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| mean + spread * if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect()
    }

    /// A challenger must win by the margin and the tolerance; a failed
    /// challenger never wins, a failed incumbent always loses.
    #[test]
    fn a_challenger_wins_by_the_margin_and_the_tolerance_only() {
        let contest = Contest::new(
            vec!["a".into(), "b".into(), "c".into(), "d".into()],
            vec![
                Some(alternating(1.0, 0.1, 100)),
                // Differences 0.3 and 0.7: mean 0.5, standard error 0.02.
                Some(alternating(0.5, 0.3, 100)),
                // The same mean, spread out: no win.
                Some(
                    (0..100)
                        .map(|i| if i % 2 == 0 { 0.0 } else { 2.0 })
                        .collect(),
                ),
                Some(vec![f64::NAN; 100]),
            ],
        );
        assert_eq!(contest.rows, 100);
        assert_eq!(contest.lowest(), Some(1));
        let clear = contest.verdict(0, 1);
        assert!(clear.challenger_chosen && clear.chosen_clearly_better());
        assert!((clear.standard_error - 0.0201).abs() < 1e-4, "{clear:?}");
        assert!(!contest.verdict_beyond(0, 1, 0.6).challenger_chosen);
        assert!(!contest.verdict(0, 2).challenger_chosen, "within its error");
        assert!(!contest.verdict(0, 3).challenger_chosen, "failed");
        assert!(contest.verdict(3, 0).challenger_chosen);
        assert!(!contest.verdict(0, 0).chosen_clearly_better());
        assert_eq!(clear.chosen(), "b");
    }
}
