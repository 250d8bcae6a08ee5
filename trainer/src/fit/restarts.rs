//! The restart driver every restarted fit uses (SPGP and its kin over
//! their features, SVGP, GPLasso's kernels): `K` starts, each screened by a
//! short run, the best continued.
//!
//! Starts alternate the two seeded initialisations (k-means, random
//! subset) with seeds `seed + k`, so the result is deterministic; a first
//! start may instead be the seedless greedy one (`--init greedy`). On large data the
//! screening runs see a seeded subset of the rows (`screen_rows`): the K
//! screening runs together cost about one run on all the rows, and the
//! objective, a sum over rows, ranks the starts on a subset as on all.
//! Screening may take rounds of successive halving (SVGP: every start a
//! first round, the better half a second).

use nalgebra::DMatrix;

use super::{init, InitMethod, PseudoInit, SparseParams, StartReport};
use crate::data::Dataset;
use crate::numerics::optimise::OptimiseOptions;
use crate::{Error, Result};

/// Fewest iterations a screening run gets.
pub(crate) const MIN_SCREEN_ITER: u64 = 10;

/// Most iterations a screening run gets, whatever the final budget: the
/// ranking of the starts is settled by then.
pub(crate) const MAX_SCREEN_ITER: u64 = 50;

/// Lloyd iterations of a k-means start.
pub(crate) const KMEANS_ITER: usize = 100;

/// Fewest rows a screening run sees (all of them on smaller data).
pub(crate) const SCREEN_MIN_ROWS: usize = 2000;

/// Rows each screening run sees when `restarts` starts share `n` rows.
pub(crate) fn screen_rows(n: usize, restarts: usize) -> usize {
    n.min(SCREEN_MIN_ROWS.max(n / restarts.max(1)))
}

/// Iterations of one screening run for a final budget of `max_iter`: a
/// quarter, within [`MIN_SCREEN_ITER`] and [`MAX_SCREEN_ITER`].
pub(crate) fn screen_iter(max_iter: u64) -> u64 {
    (max_iter / 4).clamp(MIN_SCREEN_ITER.min(max_iter), MAX_SCREEN_ITER.min(max_iter))
}

/// Iterations a restarted sparse fit may use in all.
pub(crate) fn iteration_budget(params: &SparseParams) -> u64 {
    let max_iter = params.optimiser.max_iter;
    if params.restarts <= 1 {
        max_iter
    } else {
        max_iter + params.restarts as u64 * screen_iter(max_iter)
    }
}

/// The screening runs' optimiser settings and the rows they see: the same
/// seeded rows of every output.
pub(crate) fn screening(
    outputs: &[Dataset],
    params: &SparseParams,
) -> Result<(OptimiseOptions, Vec<Dataset>)> {
    let screen = OptimiseOptions {
        max_iter: screen_iter(params.optimiser.max_iter),
        ..params.optimiser.clone()
    };
    let n = outputs.first().map_or(0, Dataset::n_rows);
    let rows = screen_rows(n, params.restarts);
    let subset = outputs
        .iter()
        .map(|d| d.at_most_rows(rows, params.seed))
        .collect::<Result<_>>()?;
    Ok((screen, subset))
}

/// Start `k`'s pseudo-inputs among the rows of `x` and how they were
/// drawn: start 0 as asked, later ones alternating the other
/// initialisation and the asked one (k-means after a greedy start 0:
/// greedy has no seed, a second one would repeat the first).
pub(crate) fn start_positions(
    x: &DMatrix<f64>,
    params: &SparseParams,
    k: usize,
) -> Result<(String, DMatrix<f64>)> {
    let first = match &params.pseudo_init {
        PseudoInit::Given(z) if k == 0 => return Ok(("given".into(), z.clone())),
        PseudoInit::Given(_) => InitMethod::Random,
        PseudoInit::Sample(method) => *method,
    };
    // A greedy start has no seed: later starts alternate random subsets
    // and k-means as after a k-means first start.
    let (other, again) = match first {
        InitMethod::Random => (InitMethod::Kmeans, InitMethod::Random),
        InitMethod::Kmeans | InitMethod::Greedy => (InitMethod::Random, InitMethod::Kmeans),
    };
    let method = match k {
        0 => first,
        k if k % 2 == 1 => other,
        _ => again,
    };
    let seed = params.seed.wrapping_add(k as u64);
    let (name, z) = match method {
        InitMethod::Random => ("random", init::random_subset(x, params.m, seed)?),
        InitMethod::Kmeans => ("kmeans", init::kmeans(x, params.m, seed, KMEANS_ITER)?),
        InitMethod::Greedy => {
            let kern = init::data_scale_inputs_kernel(x, params.kernel)?;
            return Ok(("greedy".into(), init::greedy_variance(x, params.m, &kern)?));
        }
    };
    Ok((format!("{name} (seed {seed})"), z))
}

/// What a screening run starts from: a start as drawn (`S`), or the run
/// of an earlier round (`T`).
pub(crate) enum Stage<S, T> {
    /// A start as drawn (the first round).
    First(S),
    /// A start's run after an earlier round.
    Again(T),
}

/// Screens every start (how it was drawn, its state) by `screen`, which
/// runs it and scores it (lower is better), over `rounds` rounds of
/// successive halving (1: one round; 2: the better half of the starts get
/// a second). The best run after the last round (the first of equals) and
/// every start's report (its latest score).
///
/// # Errors
/// The first start or screening run that fails; no start at all.
pub(crate) fn best_start<S, T>(
    starts: impl Iterator<Item = Result<(String, S)>>,
    rounds: usize,
    screen: &mut dyn FnMut(Stage<S, T>) -> Result<(T, f64)>,
) -> Result<(T, Vec<StartReport>)> {
    let mut reports = Vec::new();
    let mut pool: Vec<(usize, T, f64)> = Vec::new();
    for (k, start) in starts.enumerate() {
        let (label, state) = start?;
        let (run, score) = screen(Stage::First(state))?;
        reports.push(StartReport {
            init: label,
            nlml: score,
        });
        pool.push((k, run, score));
    }
    for _ in 1..rounds {
        pool.sort_by(|a, b| a.2.total_cmp(&b.2));
        pool.truncate(pool.len().div_ceil(2));
        let mut next = Vec::with_capacity(pool.len());
        for (k, run, _) in pool {
            let (run, score) = screen(Stage::Again(run))?;
            reports[k].nlml = score;
            next.push((k, run, score));
        }
        pool = next;
    }
    let mut best: Option<(T, f64)> = None;
    for (_, run, score) in pool {
        if best.as_ref().is_none_or(|(_, b)| score < *b) {
            best = Some((run, score));
        }
    }
    let (best, _) = best.ok_or_else(|| Error::Numerical("no start was fitted".into()))?;
    Ok((best, reports))
}

/// The state of a first-round screening (one round: never `Again`).
pub(crate) fn first<S, T>(stage: Stage<S, T>) -> Result<S> {
    match stage {
        Stage::First(s) => Ok(s),
        Stage::Again(_) => Err(Error::Numerical("a one-round screening ran twice".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::inference::test_util::problem;

    /// A greedy first start is followed by the default's later starts: it
    /// has no seed, so it is never repeated.
    #[test]
    fn a_greedy_start_keeps_the_default_restarts_behind_it() {
        let (x, _) = problem(1, 40, 2);
        let at = |init: InitMethod, k: usize| {
            let params = SparseParams {
                m: 5,
                pseudo_init: init.into(),
                ..SparseParams::default()
            };
            start_positions(&x, &params, k).expect("start")
        };
        assert_eq!(at(InitMethod::Greedy, 0).0, "greedy");
        for k in 1..6 {
            assert_eq!(
                at(InitMethod::Greedy, k),
                at(InitMethod::Kmeans, k),
                "start {k}"
            );
        }
        assert_ne!(at(InitMethod::Greedy, 0).1, at(InitMethod::Kmeans, 0).1);
    }

    /// Issue 51 item 1's open point, measured (a report, not a default):
    /// SPGP's first start as the greedy conditional-variance rows under
    /// the kernel of an exact GP on a seeded 300 training rows, against
    /// today's first start (k-means) and the greedy rows under the
    /// data-scale kernel, the default restarts behind each (behind a given
    /// start they are drawn k-means first), on the suite's generated sets
    /// (70/30, split seeds 0 to 5) at M = 25 and 50: `cargo test --release
    /// -p sgp-trainer --lib measure_exact_greedy_start -- --ignored
    /// --nocapture`.
    #[test]
    #[ignore]
    fn measure_exact_greedy_start() {
        use crate::fit::gplasso::{exact_hyperparameters, GplassoParams};
        use crate::synth::{dataset, SUITE};
        let mean_se = |v: &[f64]| {
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
            format!("{mean:+.3} ± {:.3}", (var / n).sqrt())
        };
        println!("| set | M | today (k-means) | greedy, data scale | greedy, exact GP's kernel | exact-kernel greedy - today | exact-kernel - data-scale greedy |");
        for (shape, rows) in SUITE {
            let data = dataset(shape, rows, 0).expect("data");
            for m in [25, 50] {
                let mut got = [Vec::new(), Vec::new(), Vec::new()];
                for seed in 0..6u64 {
                    let (train, test) = data.split(0.3, seed).expect("split");
                    let exact = GplassoParams {
                        max_points: 300,
                        seed,
                        ..GplassoParams::default()
                    };
                    let kern = exact_hyperparameters(&train, &exact).expect("exact GP");
                    let scale =
                        init::data_scale_inputs_kernel(&train.x, kern.kernel).expect("kernel");
                    let starts = [
                        SparseParams::default().pseudo_init,
                        PseudoInit::Given(init::greedy_variance(&train.x, m, &scale).expect("z")),
                        PseudoInit::Given(init::greedy_variance(&train.x, m, &kern).expect("z")),
                    ];
                    for (k, start) in starts.into_iter().enumerate() {
                        let params = crate::fit::FitParams::Spgp(SparseParams {
                            m,
                            seed,
                            pseudo_init: start,
                            ..SparseParams::default()
                        });
                        let fitted = crate::fit::fit(&train, &params, &mut |_| {}).expect("fit");
                        let p = fitted.set.members[0]
                            .predict_raw(&test.raw_x())
                            .expect("predicts");
                        let y = test.raw_y();
                        got[k].push(
                            crate::evaluate::figures(
                                p.mean.as_slice(),
                                p.var.as_slice(),
                                y.as_slice(),
                            )
                            .nlpd,
                        );
                    }
                    eprintln!(
                        "{} M {m} split {seed}: {:?}",
                        shape.name(),
                        got.iter().map(|g| g[g.len() - 1]).collect::<Vec<_>>()
                    );
                }
                let diff = |a: &[f64], b: &[f64]| -> Vec<f64> {
                    a.iter().zip(b).map(|(x, y)| x - y).collect()
                };
                println!(
                    "| {} | {m} | {} | {} | {} | {} | {} |",
                    shape.name(),
                    mean_se(&got[0]),
                    mean_se(&got[1]),
                    mean_se(&got[2]),
                    mean_se(&diff(&got[2], &got[0])),
                    mean_se(&diff(&got[2], &got[1]))
                );
            }
        }
    }
}
