//! `--kernel auto`: the covariance function chosen on held-out rows. The
//! family chosen (named, or `--model auto`'s with the squared exponential,
//! its objective too) is fitted with each kernel of
//! [`Kernel::ALL`] over `CHOICE_FOLDS` folds, every row held
//! out once, as the family choice weighs families ([`held_out`]); the
//! squared exponential is kept unless a Matérn kernel beats it by more
//! than `MARGIN_SE` standard errors of the paired per-row
//! difference, so a smooth target keeps the SE fit `--kernel se` makes.
//! It costs 16 more fits, 12 where the family choice already scored the
//! squared exponential on the same folds (its scores are reused).
//!
//! A classifier (the exact classifier, svgp, the IVM) is scored by its
//! held-out log loss, its NLPD, under the same rule, at the same 16 more
//! fits as a regression (docs/src/kernels.md). VSGP (Gaussian basis functions) and fits
//! without held-out comparisons keep the squared exponential, and the
//! verdict says why.

use sgp_runtime::Kernel;

use super::held_out::{self, Scores};
use super::{Asked, Request};
use crate::data::{Dataset, TargetKind};
use crate::evaluate::contest::contest_rows;
use crate::fit::{FitParams, SparseParams};
use crate::fit::{KernelScore, KernelVerdict, Verdict};
use crate::Result;

/// `params` with the kernel that predicts held-out rows of `outputs` best
/// (module docs), and the verdict. A candidate `known` scored on the same
/// folds of `outputs` (the family choice's) is not refitted.
///
/// # Errors
/// If the rows cannot be split, or every kernel's fit fails.
pub(crate) fn choose(
    outputs: &[Dataset],
    params: &FitParams,
    request: &Request,
    known: Option<&Scores>,
) -> Result<(FitParams, KernelVerdict)> {
    let se = params.with_kernel(Kernel::SquaredExponential);
    let unweighed = |why: &str| Ok((se.clone(), KernelVerdict::unweighed(why)));
    if let Some(why) = params.method().se_only_reason() {
        return unweighed(&why);
    }
    if !request.held_out {
        return unweighed("held-out comparisons are off");
    }
    let n = outputs[0].n_rows();
    let held_out = n / held_out::CHOICE_FOLDS;
    if held_out < held_out::MIN_HELD_OUT || n - held_out < params.m().unwrap_or(2) {
        return unweighed(&format!("{n} rows are too few to hold a quarter out"));
    }
    let candidates: Vec<(String, FitParams)> = Kernel::ALL
        .iter()
        .map(|&k| (k.name().to_string(), params.with_kernel(k)))
        .collect();
    let scores = held_out::cross_validate(outputs, params.seed(), &candidates, known)?;
    let score = if outputs[0].target == TargetKind::Continuous {
        "NLPD"
    } else {
        "log loss"
    };
    let verdict = decide(&scores, score);
    let chosen = Kernel::ALL
        .iter()
        .copied()
        .find(|k| k.name() == verdict.chosen)
        .unwrap_or(Kernel::SquaredExponential);
    Ok((params.with_kernel(chosen), verdict))
}

/// The squared exponential (candidate 0) unless a Matérn kernel clearly
/// beats it; of those that do, the lowest held-out `score` (NLPD, or a
/// classifier's log loss).
fn decide(scores: &Scores, score: &str) -> KernelVerdict {
    let folds = held_out::CHOICE_FOLDS;
    let verdicts: Vec<Verdict> = (0..Kernel::ALL.len())
        .map(|k| scores.verdict(0, k))
        .collect();
    let winner = verdicts
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, v)| v.challenger_chosen)
        .min_by(|a, b| a.1.challenger_nlpd.total_cmp(&b.1.challenger_nlpd));
    let candidates: Vec<KernelScore> = Kernel::ALL
        .iter()
        .zip(&verdicts)
        .map(|(k, v)| KernelScore {
            kernel: k.name(),
            nlpd: v.challenger_nlpd,
            standard_error: v.standard_error,
        })
        .collect();
    let rows = verdicts[0].rows;
    let list: Vec<String> = candidates
        .iter()
        .map(|c| format!("{} {:.4}", c.kernel, c.nlpd))
        .collect();
    let over = format!(
        "held-out {score} {} over {rows} rows in {folds} folds",
        list.join(", ")
    );
    let (chosen, reason) = match winner {
        Some((k, v)) => (
            Kernel::ALL[k].name(),
            format!(
                "kernel {} chosen: it beat se by {:.4} (standard error {:.4}); {over}",
                Kernel::ALL[k].name(),
                v.incumbent_nlpd - v.challenger_nlpd,
                v.standard_error
            ),
        ),
        None => (
            Kernel::SquaredExponential.name(),
            format!(
                "kernel se kept: no Matérn kernel beat it by more than {} standard error; {over}",
                held_out::MARGIN_SE
            ),
        ),
    };
    KernelVerdict {
        chosen,
        rows,
        folds,
        candidates,
        reason,
    }
}

/// `--kernel auto` on a streamed file: the kernel chosen as an in-memory
/// fit chooses it ([`choose`], on a random `CONTEST_ROWS` of the rows), here
/// of `pools`, each output's sampled rows the stages fit on
/// ([`crate::fit::streamed::stage_pool`]), with `sparse`'s SPGP; and the
/// verdict, for the report. Held-out comparisons off (`held_out` false)
/// keep the squared exponential, as in memory.
///
/// # Errors
/// If the rows cannot be split, or every kernel's fit fails.
pub(crate) fn choose_streamed(
    pools: &[Dataset],
    sparse: &SparseParams,
    held_out: bool,
) -> Result<(Kernel, KernelVerdict)> {
    let rows = contest_rows(pools, sparse.seed)?;
    let spgp = FitParams::Spgp(sparse.clone());
    let request = Request {
        asked: Asked::Family(spgp.clone()),
        held_out,
        choose_objective: false,
        choose_kernel: true,
    };
    let (chosen, verdict) = choose(&rows, &spgp, &request, None)?;
    Ok((chosen.kernel(), verdict))
}

#[cfg(test)]
mod tests {
    use nalgebra::{DMatrix, DVector};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use rand_distr::StandardNormal;

    use super::*;
    use crate::choose::{fit, Asked};
    use crate::evaluate::figures;
    use crate::fit::{ExactParams, SparseParams};

    /// `f` at the sorted `x`: a draw from a Matérn 1/2 GP of length scale 1
    /// (`rough`, an Ornstein-Uhlenbeck path), else a sum of five sines of
    /// frequencies `low + spread |N(0, 1)|`.
    fn latent(
        rough: bool,
        x: &[f64],
        (low, spread): (f64, f64),
        normal: &mut impl FnMut() -> f64,
    ) -> Vec<f64> {
        if rough {
            let mut f = vec![normal()];
            for w in x.windows(2) {
                let a = libm::exp(-(w[1] - w[0]));
                let next = a * f[f.len() - 1] + libm::sqrt(1.0 - a * a) * normal();
                f.push(next);
            }
            return f;
        }
        let waves: Vec<[f64; 3]> = (0..5)
            .map(|_| {
                [
                    0.5 * normal(),
                    low + spread * normal().abs(),
                    6.0 * normal(),
                ]
            })
            .collect();
        x.iter()
            .map(|&t| {
                waves
                    .iter()
                    .map(|w| w[0] * libm::sin(w[1] * t + w[2]))
                    .sum()
            })
            .collect()
    }

    /// 600 rows of a 1-D target on [0, 5] with noise sd 0.1: `latent`,
    /// its sines slow.
    fn draw(rough: bool, seed: u64) -> Dataset {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut x: Vec<f64> = (0..600).map(|_| rng.random_range(0.0..5.0)).collect();
        x.sort_by(f64::total_cmp);
        let mut normal = move || rng.sample::<f64, _>(StandardNormal);
        let f = latent(rough, &x, (0.5, 1.5), &mut normal);
        let y = DVector::from_iterator(600, f.iter().map(|f| f + 0.1 * normal()));
        Dataset::from_raw(
            DMatrix::from_column_slice(600, 1, &x),
            y,
            vec!["x".into()],
            "y".into(),
        )
        .expect("valid")
    }

    /// Test NLPDs of the exact GP with se and with `--kernel auto`, fitted
    /// on a third of `data` and tested on the rest, and the kernel auto
    /// kept. (The exact GP: a sparse fit of 200 rows smooths a rough path
    /// at any kernel, which blurs the difference the test is about.)
    fn se_and_auto(data: &Dataset, seed: u64) -> (f64, f64, &'static str) {
        let (test, train) = data.split(1.0 / 3.0, seed).expect("splits");
        let params = FitParams::Exact(ExactParams {
            seed,
            ..ExactParams::default()
        });
        let request = |choose_kernel| Request {
            asked: Asked::Family(params.clone()),
            held_out: true,
            choose_objective: false,
            choose_kernel,
        };
        let nlpd = |choose_kernel| {
            let fitted = fit(&train, &request(choose_kernel), &mut |_| {}).expect("fits");
            let p = fitted.set.members[0]
                .predict_raw(&test.raw_x())
                .expect("predicts");
            let e = figures(p.mean.as_slice(), p.var.as_slice(), test.raw_y().as_slice());
            (e.nlpd, fitted)
        };
        let (se, _) = nlpd(false);
        let (auto, fitted) = nlpd(true);
        let choice = fitted.report.choice.expect("a choice");
        let verdict = choice.kernel.expect("a kernel verdict");
        assert_eq!(verdict.chosen, fitted.report.kernel);
        assert_eq!((verdict.folds, verdict.rows), (held_out::CHOICE_FOLDS, 200));
        assert_eq!(verdict.candidates.len(), Kernel::ALL.len());
        assert!(choice.reason.contains(&verdict.reason), "{}", choice.reason);
        (se, auto, verdict.chosen)
    }

    /// On draws from a Matérn 1/2 GP auto keeps a Matérn kernel and
    /// predicts test rows clearly better than se; on smooth targets it
    /// loses little to se, if anything: over seeds, with margins.
    #[test]
    fn auto_takes_a_matern_kernel_for_rough_targets_and_loses_little_on_smooth_ones() {
        let seeds = 0..4;
        let rough: Vec<(f64, f64, &str)> = seeds
            .clone()
            .map(|s| se_and_auto(&draw(true, s), s))
            .collect();
        for (se, auto, kept) in &rough {
            assert_ne!(*kept, "se", "{rough:?}");
            assert!(auto < se, "{rough:?}");
        }
        let gain = rough.iter().map(|(se, auto, _)| se - auto).sum::<f64>() / 4.0;
        assert!(gain > 0.05, "mean gain {gain}: {rough:?}");

        let smooth: Vec<(f64, f64, &str)> =
            seeds.map(|s| se_and_auto(&draw(false, s), s)).collect();
        for (se, auto, _) in &smooth {
            assert!(auto - se < 0.05, "{smooth:?}");
        }
        let loss = smooth.iter().map(|(se, auto, _)| auto - se).sum::<f64>() / 4.0;
        assert!(loss < 0.02, "mean loss {loss}: {smooth:?}");
    }

    /// Labels of the classifier's kernel-choice test.
    const LABELS: usize = 400;

    /// [`LABELS`] binary labels over [0, 10], +1 with probability
    /// `Phi(4 f)`, `f` the `latent` (its sines slower): the boundary
    /// between the classes is as rough as `f`.
    fn labels(rough: bool, seed: u64) -> Dataset {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut x: Vec<f64> = (0..LABELS).map(|_| rng.random_range(0.0..10.0)).collect();
        x.sort_by(f64::total_cmp);
        let f = latent(rough, &x, (0.3, 0.7), &mut || {
            rng.sample::<f64, _>(StandardNormal)
        });
        let y = DVector::from_iterator(
            LABELS,
            f.iter().map(|&f| {
                let p = crate::model::likelihood::norm_cdf(4.0 * f);
                f64::from(u8::from(rng.random_range(0.0..1.0) < p))
            }),
        );
        Dataset::from_raw(
            DMatrix::from_column_slice(LABELS, 1, &x),
            y,
            vec!["x".into()],
            "y".into(),
        )
        .expect("valid")
        .into_binary(None)
        .expect("two classes")
    }

    /// The kernel `--model svgp --m 30 --kernel auto` keeps on `data`.
    fn svgp_auto(data: &Dataset, seed: u64) -> &'static str {
        let params = crate::options::Options::defaults(crate::fit::Method::Svgp, 30, 0, seed)
            .expect("valid");
        let request = Request {
            asked: Asked::Family(params),
            held_out: true,
            choose_objective: false,
            choose_kernel: true,
        };
        let fitted = fit(data, &request, &mut |_| {}).expect("fits");
        let verdict = fitted
            .report
            .choice
            .and_then(|c| c.kernel)
            .expect("weighed");
        assert_eq!(
            (verdict.folds, verdict.rows),
            (held_out::CHOICE_FOLDS, LABELS)
        );
        assert!(
            verdict.reason.contains("held-out log loss"),
            "{}",
            verdict.reason
        );
        assert_eq!(verdict.chosen, fitted.report.kernel);
        verdict.chosen
    }

    /// A classifier's kernel is chosen by held-out log loss: over seeds,
    /// labels drawn through a rough latent (a Matérn 1/2 path) get a
    /// Matérn kernel in at least four of six seeds (six here), labels
    /// through a smooth one keep se in at least three of six (five here:
    /// against three Matérn challengers the one-standard-error margin lets
    /// one through on some smooth targets).
    #[test]
    fn a_classifier_takes_a_matern_kernel_for_a_rough_boundary_and_se_for_a_smooth_one() {
        let kept = |rough: bool| -> Vec<&'static str> {
            (0..6).map(|s| svgp_auto(&labels(rough, s), s)).collect()
        };
        let rough = kept(true);
        let matern = rough.iter().filter(|k| **k != "se").count();
        assert!(matern >= 4, "{rough:?}");
        let smooth = kept(false);
        let se = smooth.iter().filter(|k| **k == "se").count();
        assert!(se >= 3, "{smooth:?}");
    }

    /// VSGP, classifiers and fits without held-out comparisons keep se and
    /// say why.
    #[test]
    fn where_the_kernel_is_not_weighed_se_is_kept_with_the_reason() {
        let data = draw(true, 0);
        let sparse = SparseParams {
            m: 10,
            restarts: 1,
            ..SparseParams::default()
        };
        let request = |params: FitParams, held_out| Request {
            asked: Asked::Family(params),
            held_out,
            choose_objective: false,
            choose_kernel: true,
        };
        let one = std::slice::from_ref(&data);
        let cases = [
            (request(FitParams::Vsgp(sparse.clone()), true), "vsgp takes"),
            (
                request(FitParams::Spgp(sparse.clone()), false),
                "held-out comparisons are off",
            ),
        ];
        for (request, why) in cases {
            let Asked::Family(params) = &request.asked else {
                unreachable!()
            };
            let (kept, verdict) = choose(one, params, &request, None).expect("chooses");
            assert_eq!(kept.kernel(), Kernel::SquaredExponential);
            assert_eq!((verdict.chosen, verdict.rows), ("se", 0));
            assert!(verdict.reason.contains(why), "{}", verdict.reason);
        }
    }
}
