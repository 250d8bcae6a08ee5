//! GPLasso against SPGP at equal numbers of basis points (issue 10), on the
//! benchmark suite's data sets (generated, and the public CSVs in
//! `bench/data/` when present), each split 70/30 with seed 0 as the suite
//! does.
//!
//! Per data set the hyperparameters come once from the exact GP on at most
//! 1000 training rows (GPLasso's own choice; its time is printed apart);
//! then, for each M:
//!
//! - `gplasso`: the lasso path with those hyperparameters, refitted weights
//!   (the default);
//! - `gplasso-lasso`: the same selection with the lasso's own weights;
//! - `spgp-fixed`: SPGP (FITC) with the SAME fixed hyperparameters,
//!   optimising only the pseudo-inputs from a k-means start (the paper's
//!   comparison);
//! - `spgp`: SPGP with the default settings (hyperparameters and
//!   pseudo-inputs learned jointly, 4 screened starts), as `sgp fit` does.
//!
//! "fit s" is the time after the hyperparameters for the first three (the
//! selection, or the pseudo-input optimisation) and the whole fit for
//! `spgp`. Test NLPD and RMSE in raw units, f64 trainer predictions. A
//! measurement, not a test:
//!
//! ```sh
//! cargo run --release -p sgp-trainer --example gplasso_vs_spgp
//! cargo run --release -p sgp-trainer --example gplasso_vs_spgp -- --only chirp --m 10 --ranks
//! ```
//!
//! Options: `--only NAME` (repeatable), `--m M` (repeatable; default 10 25
//! 50 100), `--no-joint` (skip `spgp`), `--ranks` (also GPLasso at ICF
//! rank 2M, 4M, 8M and N, to choose the default rank).

use std::time::Instant;

use sgp_trainer::data::Dataset;
use sgp_trainer::evaluate::metrics::{mean_nlpd, rmse};
use sgp_trainer::fit::gplasso::{
    exact_hyperparameters, fit_gplasso_given, fit_spgp_fixed_hyperparameters, GplassoParams,
    GplassoRefit, GplassoWeights,
};
use sgp_trainer::fit::{fit, Fit, FitParams, SparseParams};
use sgp_trainer::Result;

#[path = "bench_data/mod.rs"]
mod bench_data;
use bench_data::{dataset_names, load, SEED, TEST_FRACTION};

/// The suite's data sets but the 32-D few-directions one, which no
/// comparison here needs.
fn datasets() -> Result<Vec<(String, Dataset)>> {
    dataset_names()
        .into_iter()
        .filter(|name| name != "few-directions")
        .map(|name| Ok((name.clone(), load(&name)?.data)))
        .collect()
}

fn score(fitted: &Fit, test: &Dataset) -> Result<(f64, f64)> {
    let p = fitted.set.members[0].predict_raw(&test.raw_x())?;
    let y = test.raw_y();
    Ok((
        mean_nlpd(p.mean.as_slice(), p.var.as_slice(), y.as_slice()),
        rmse(p.mean.as_slice(), y.as_slice()),
    ))
}

fn main() -> Result<()> {
    let mut only = Vec::new();
    let mut ms = Vec::new();
    let mut joint = true;
    let mut ranks = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--only" => only.extend(args.next()),
            "--m" => ms.extend(args.next().and_then(|v| v.parse::<usize>().ok())),
            "--no-joint" => joint = false,
            "--ranks" => ranks = true,
            other => {
                eprintln!("gplasso_vs_spgp: unknown argument '{other}'");
                std::process::exit(2);
            }
        }
    }
    if ms.is_empty() {
        ms = vec![10, 25, 50, 100];
    }
    println!("| data set | N train x D | M | model | test NLPD | test RMSE | fit s | note |");
    println!("|---|---|---:|---|---:|---:|---:|---|");
    for (name, data) in datasets()? {
        if !only.is_empty() && !only.contains(&name) {
            continue;
        }
        let (train, test) = data.split(TEST_FRACTION, SEED)?;
        if !train.constant_inputs.is_empty() {
            eprintln!("{name}: constant inputs, skipped");
            continue;
        }
        let size = format!("{} x {}", train.n_rows(), train.n_inputs());
        let started = Instant::now();
        let kern = exact_hyperparameters(&train, &GplassoParams::default())?;
        println!(
            "| {name} | {size} | - | exact GP hyperparameters | - | - | {:.2} | shared by gplasso and spgp-fixed |",
            started.elapsed().as_secs_f64()
        );
        for &m in &ms {
            if m > train.n_rows() {
                continue;
            }
            eprintln!("gplasso_vs_spgp: {name}, M = {m}");
            let base = GplassoParams {
                m,
                refit: GplassoRefit::Nothing,
                ..GplassoParams::default()
            };
            let mut runs: Vec<(String, Result<Fit>)> = vec![
                (
                    "gplasso".into(),
                    fit_gplasso_given(&train, &base, kern.clone()),
                ),
                (
                    "gplasso-lasso".into(),
                    fit_gplasso_given(
                        &train,
                        &GplassoParams {
                            weights: GplassoWeights::Lasso,
                            ..base.clone()
                        },
                        kern.clone(),
                    ),
                ),
            ];
            if ranks {
                for rank in [2 * m, 4 * m, 8 * m, train.n_rows()] {
                    let rank = rank.min(train.n_rows());
                    runs.push((
                        format!("gplasso-r{rank}"),
                        fit_gplasso_given(
                            &train,
                            &GplassoParams {
                                rank: Some(rank),
                                ..base.clone()
                            },
                            kern.clone(),
                        ),
                    ));
                }
            }
            runs.push((
                "spgp-fixed".into(),
                fit_spgp_fixed_hyperparameters(&train, &base, kern.clone()),
            ));
            if joint {
                let params = FitParams::Spgp(SparseParams {
                    m,
                    ..SparseParams::default()
                });
                runs.push(("spgp".into(), fit(&train, &params, &mut |_| {})));
            }
            for (model, run) in runs {
                match run.and_then(|f| score(&f, &test).map(|s| (f, s))) {
                    Ok((fitted, (nlpd, err))) => {
                        let note = fitted
                            .report
                            .gplasso
                            .as_ref()
                            .map(|g| {
                                format!(
                                    "rank {} (ICF {}), {} steps, {} removals{}",
                                    g.rank,
                                    g.icf_rank,
                                    g.lars_steps,
                                    g.removals,
                                    if g.reached < g.asked {
                                        format!(", reached {} of {}", g.reached, g.asked)
                                    } else {
                                        String::new()
                                    }
                                )
                            })
                            .unwrap_or_default();
                        println!(
                            "| {name} | {size} | {m} | {model} | {nlpd:.3} | {err:.4} | {:.2} | {note} |",
                            fitted.report.seconds
                        );
                    }
                    Err(e) => println!("| {name} | {size} | {m} | {model} | - | - | - | {e} |"),
                }
            }
        }
    }
    Ok(())
}
