//! The built-in demonstration (`sgp demo`): a 1-D problem in the style of
//! Figure 1 of the SPGP paper, fitted by the exact GP and by SPGP whose
//! pseudo-inputs start bunched at the left end of the data.

use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::data::Dataset;
use crate::fit::{FitParams, PseudoInit, SparseParams};
use crate::model::inference::Approximation;
use crate::numerics::optimise::OptimiseOptions;
use crate::Result;

/// The noise-free function behind the demo data.
pub(crate) fn demo_function(x: f64) -> f64 {
    libm::sin(2.0 * x) + 0.4 * libm::cos(5.0 * x) + 0.3 * x
}

/// Standard deviation of the demo's observation noise.
pub const DEMO_NOISE_STD: f64 = 0.25;

/// Inputs spread unevenly over [0, 6] (denser on the left, as in the
/// paper's figure) with noisy targets.
pub fn demo_data(n: usize, seed: u64) -> Result<Dataset> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let x: Vec<f64> = (0..n)
        .map(|_| 6.0 * libm::pow(rng.random::<f64>(), 1.3))
        .collect();
    let y: Vec<f64> = x
        .iter()
        .map(|&x| demo_function(x) + DEMO_NOISE_STD * rng.sample::<f64, _>(StandardNormal))
        .collect();
    Dataset::from_raw(
        DMatrix::from_column_slice(n, 1, &x),
        DVector::from_vec(y),
        vec!["x".into()],
        "y".into(),
    )
}

/// `m` pseudo-inputs bunched in the leftmost 5% of the data's range, in the
/// data set's standardised units: the adversarial start of the paper.
pub fn bunched_left(data: &Dataset, m: usize) -> DMatrix<f64> {
    let col = data.x.column(0);
    let (lo, hi) = (col.min(), col.max());
    DMatrix::from_fn(m, 1, |i, _| {
        lo + 0.05 * (hi - lo) * (i as f64 + 0.5) / m as f64
    })
}

/// Largest change of a parameter per line search in the Figure-1 fits:
/// from the bunched start, a longer first L-BFGS step throws the outermost
/// pseudo-input out of the data for good.
pub(crate) const FIGURE1_MAX_STEP: f64 = 0.5;

/// The Figure-1 fit: `m` pseudo-inputs started [`bunched_left`], one start,
/// the objective `approximation` (fitted as set: `Request::exactly`, no
/// held-out choice of objective). What each ends at depends on the data
/// and the machine's arithmetic; the demo prints it and [`figure1_words`]
/// says what the printed numbers show.
pub fn figure1_params(
    data: &Dataset,
    m: usize,
    seed: u64,
    approximation: Approximation,
) -> FitParams {
    FitParams::Spgp(SparseParams {
        m,
        seed,
        approximation,
        restarts: 1,
        pseudo_init: PseudoInit::Given(bunched_left(data, m)),
        optimiser: OptimiseOptions {
            max_step: FIGURE1_MAX_STEP,
            // The figure is about where the pseudo-inputs end up: the default
            // stall test stops while the outermost still drift in from outside
            // the data, the predictions already matching the exact GP's.
            stall: None,
            ..SparseParams::default().optimiser
        },
        ..SparseParams::default()
    })
}

/// `n` test inputs on a regular grid over [0, 6] (raw units) with fresh
/// noisy targets: the held-out set of the demo.
pub fn demo_test_set(n: usize, seed: u64) -> (DMatrix<f64>, DVector<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let x = DMatrix::from_fn(n, 1, |i, _| 6.0 * (i as f64 + 0.5) / n as f64);
    let y = DVector::from_fn(n, |i, _| {
        demo_function(x[(i, 0)]) + DEMO_NOISE_STD * rng.sample::<f64, _>(StandardNormal)
    });
    (x, y)
}

/// One Figure-1 fit as the demo prints it: raw pseudo-inputs, NLML and the
/// test figures.
pub struct Figure1Outcome<'a> {
    /// The row's name, e.g. "SPGP FITC".
    pub name: &'a str,
    /// Pseudo-inputs in raw units.
    pub z: &'a [f64],
    /// The training objective at the end.
    pub nlml: f64,
    /// Test RMSE.
    pub rmse: f64,
    /// Test NLPD.
    pub nlpd: f64,
}

/// A test fit "matches" the exact GP when its RMSE is within this factor of
/// the exact GP's and its NLPD within [`MATCH_NLPD`] nats (the Figure-1
/// test's margins).
pub const MATCH_RMSE: f64 = 1.03;
/// See [`MATCH_RMSE`].
pub const MATCH_NLPD: f64 = 0.03;

/// How far beyond the data's range, as a fraction of it, a pseudo-input
/// counts as outside the data in [`figure1_words`].
pub const OUTSIDE_SLACK: f64 = 0.02;

/// Positions as the demo prints them (two decimals), sorted.
pub fn printed_positions(z: &[f64]) -> Vec<String> {
    let mut v = z.to_vec();
    v.sort_by(f64::total_cmp);
    v.iter().map(|p| format!("{p:.2}")).collect()
}

/// The demo's closing sentences, computed from the numbers it printed: the
/// data range `[lo, hi]`, the exact GP's test `(rmse, nlpd)` and the sparse
/// fits. Pseudo-inputs "share a spot" when they print alike and lie
/// "outside the data" when they print beyond `[lo, hi]` by more than
/// [`OUTSIDE_SLACK`] of its width (the Figure-1 test's margin); two fits
/// are "the same" when their positions and NLML print alike.
pub fn figure1_words(lo: f64, hi: f64, exact: (f64, f64), fits: &[Figure1Outcome]) -> String {
    let mut lines = Vec::new();
    let same = fits.len() == 2
        && printed_positions(fits[0].z) == printed_positions(fits[1].z)
        && format!("{:.3}", fits[0].nlml) == format!("{:.3}", fits[1].nlml);
    if same {
        lines.push(format!(
            "{} and {} end at the same pseudo-inputs and NLML ({:.3}) from the bunched start.",
            fits[0].name, fits[1].name, fits[0].nlml
        ));
    }
    let (lo_p, hi_p) = (format!("{lo:.2}"), format!("{hi:.2}"));
    let slack = OUTSIDE_SLACK * (hi - lo);
    let (lo_r, hi_r) = (lo - slack, hi + slack);
    for (i, fit) in fits.iter().enumerate() {
        if same && i == 1 {
            break;
        }
        let name = if same {
            "Both".to_string()
        } else {
            fit.name.to_string()
        };
        let printed = printed_positions(fit.z);
        let stacked = printed
            .iter()
            .filter(|p| printed.iter().filter(|q| q == p).count() > 1)
            .count();
        let outside = printed
            .iter()
            .filter_map(|p| p.parse::<f64>().ok())
            .filter(|p| *p < lo_r || *p > hi_r)
            .count();
        let m = printed.len();
        let mut faults = Vec::new();
        if stacked > 0 {
            faults.push(format!(
                "{stacked} of {m} pseudo-inputs share a spot with another"
            ));
        }
        if outside > 0 {
            faults.push(format!(
                "{outside} of {m} lie outside the data [{lo_p}, {hi_p}]"
            ));
        }
        let placed = if faults.is_empty() {
            format!(
                "spreads its {m} pseudo-inputs over the data [{lo_p}, {hi_p}], none on one spot"
            )
        } else {
            faults.join(" and ")
        };
        let (rmse, nlpd) = (fit.rmse, fit.nlpd);
        let verdict = if rmse <= MATCH_RMSE * exact.0 && nlpd <= exact.1 + MATCH_NLPD {
            "matches the exact GP"
        } else {
            "falls short of the exact GP"
        };
        lines.push(format!(
            "{name}: {placed}; {verdict} (test NLPD {nlpd:.4} vs {:.4}, RMSE {rmse:.4} vs {:.4}).",
            exact.1, exact.0
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome<'a>(name: &'a str, z: &'a [f64], nlml: f64, nlpd: f64) -> Figure1Outcome<'a> {
        Figure1Outcome {
            name,
            z,
            nlml,
            rmse: 0.26,
            nlpd,
        }
    }

    #[test]
    fn equal_fits_are_called_equal_and_no_fault_is_claimed() {
        let z = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5];
        let fits = [
            outcome("SPGP FITC", &z, 98.06, 0.05),
            outcome("SPGP VFE", &z, 98.0601, 0.05),
        ];
        let words = figure1_words(0.0, 5.95, (0.26, 0.04), &fits);
        assert!(
            words.contains("end at the same pseudo-inputs and NLML (98.060)"),
            "{words}"
        );
        assert!(words.starts_with("SPGP FITC and SPGP VFE"), "{words}");
        assert!(
            words.contains("Both: spreads its 6 pseudo-inputs"),
            "{words}"
        );
        assert!(words.contains("matches the exact GP"), "{words}");
        assert!(
            !words.contains("share a spot") && !words.contains("outside"),
            "{words}"
        );
    }

    #[test]
    fn stacked_and_stranded_points_are_counted_from_the_printed_positions() {
        let fitc = [-1.3, 0.501, 0.503, 0.504, 3.0, 5.9];
        let vfe = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5];
        let fits = [
            outcome("SPGP FITC", &fitc, 99.0, 0.2),
            outcome("SPGP VFE", &vfe, 98.0, 0.05),
        ];
        let words = figure1_words(0.0, 5.95, (0.26, 0.04), &fits);
        let lines: Vec<&str> = words.lines().collect();
        assert_eq!(lines.len(), 2, "{words}");
        assert!(
            lines[0].contains("3 of 6 pseudo-inputs share a spot"),
            "{words}"
        );
        assert!(
            lines[0].contains("1 of 6 lie outside the data [0.00, 5.95]"),
            "{words}"
        );
        assert!(lines[0].contains("falls short of the exact GP"), "{words}");
        assert!(lines[1].contains("SPGP VFE: spreads its 6"), "{words}");
        assert!(lines[1].contains("matches the exact GP"), "{words}");
        // A point printed at the data's end is inside.
        let edge = [0.001, 5.951];
        let words = figure1_words(0.0, 5.95, (0.26, 0.04), &[outcome("x", &edge, 1.0, 0.0)]);
        assert!(!words.contains("outside"), "{words}");
    }
}
