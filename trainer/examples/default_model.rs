//! Which regression default serves users best: `sgp fit` (SPGP, its
//! objective chosen on held-out rows) against `sgp fit --model auto` (the
//! family that clearly beats SPGP on held-out rows: VSGP, SPGP+HS or
//! GPLasso), on the benchmark suite's data sets (70/30 split, M = 10 and
//! 30) and on small splits like issue 20's (diabetes 332 training rows at
//! M = 25, mcycle 100 at M = 10, a heteroscedastic 1-D set 200 at M = 10;
//! `--splits` of each, default 12). Prints each fit's test NLPD (raw
//! units), the family auto chose, the fit times, and a summary per group
//! with the exact GP's mean on the same splits (`sgp fit --model exact`:
//! all the training rows, a seeded 1,000 of more); `--exact-only` prints
//! the exact GP alone.
//!
//! ```sh
//! bash bench/fetch-public.sh   # diabetes, mcycle (skipped when absent)
//! cargo run --release -p sgp-trainer --example default_model -- --splits 12
//! cargo run --release -p sgp-trainer --example default_model -- --splits 12 --exact-only
//! ```

use std::time::Instant;

use sgp_trainer::choose::{self, Asked, Request};
use sgp_trainer::data::Dataset;
use sgp_trainer::fit::Method;
use sgp_trainer::options::Options;
use sgp_trainer::synth::{dataset, Shape};
use sgp_trainer::Result;

#[path = "bench_data/mod.rs"]
mod bench_data;

/// Test NLPD, the family exported and the seconds of one request.
fn run(train: &Dataset, test: &Dataset, asked: Asked) -> Result<(f64, String, f64)> {
    let request = Request {
        asked,
        held_out: true,
        choose_objective: true,
        choose_kernel: false,
    };
    let started = Instant::now();
    let fit = choose::fit(train, &request, &mut |_| {})?;
    let seconds = started.elapsed().as_secs_f64();
    let nlpd = bench_data::test_nlpd(&fit.set.members[0], test)?;
    Ok((nlpd, fit.report.method.name().to_string(), seconds))
}

/// The default and auto on one split (`bench_data::paired_row`, auto's
/// choice its family); the exact GP's NLPD goes to `exact` (once per
/// split).
fn compare(
    name: &str,
    train: &Dataset,
    test: &Dataset,
    m: usize,
    seed: u64,
    exact: &mut Vec<(String, f64)>,
) -> Result<[f64; 4]> {
    bench_data::paired_row(name, m, (train, test, seed), exact, || {
        let params = |method| Options::defaults(method, m, 0, seed).expect("valid");
        let families = [Method::Spgp, Method::Vsgp, Method::SpgpHs, Method::Gplasso];
        let spgp = run(train, test, Asked::Family(params(Method::Spgp)))?;
        let auto = Asked::Auto(families.into_iter().map(params).collect());
        Ok([spgp, run(train, test, auto)?])
    })
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let splits: u64 = args
        .iter()
        .position(|a| a == "--splits")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    println!("| set | M | spgp NLPD | auto NLPD | auto - spgp | auto chose | spgp s | auto s | exact GP NLPD |");
    println!("|---|---:|---:|---:|---:|---|---:|---:|---:|");
    let mut suite_exact = Vec::new();
    let suite = bench_data::over_suite(|label, train, test, m| {
        compare(label, train, test, m, 0, &mut suite_exact)
    })?;
    let mut small = Vec::new();
    let mut small_exact = Vec::new();
    let public = |file: &str| {
        let path = format!("{}/../bench/data/{file}.csv", env!("CARGO_MANIFEST_DIR"));
        Dataset::from_csv(path, None).ok()
    };
    let (diabetes, mcycle) = (public("diabetes"), public("mcycle"));
    for seed in 0..splits {
        if let Some(d) = &diabetes {
            let (train, test) = d.split(0.25, seed)?;
            small.push(compare(
                &format!("diabetes 332 /{seed}"),
                &train,
                &test,
                25,
                seed,
                &mut small_exact,
            )?);
        }
        if let Some(d) = &mcycle {
            let (train, test) = d.split(0.25, seed)?;
            small.push(compare(
                &format!("mcycle 100 /{seed}"),
                &train,
                &test,
                10,
                seed,
                &mut small_exact,
            )?);
        }
        let het = dataset(Shape::Heteroscedastic, 267, seed)?;
        let (train, test) = het.split(0.25, seed)?;
        small.push(compare(
            &format!("heteroscedastic 200 /{seed}"),
            &train,
            &test,
            10,
            seed,
            &mut small_exact,
        )?);
    }
    println!();
    if !bench_data::exact_only() {
        bench_data::paired_summary("suite", "spgp", "auto", &suite);
        bench_data::paired_summary("small splits", "spgp", "auto", &small);
    }
    bench_data::exact_summary("suite", &suite_exact);
    bench_data::exact_summary("small splits", &small_exact);
    Ok(())
}
