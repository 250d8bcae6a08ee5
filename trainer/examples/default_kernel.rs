//! Whether `--kernel auto` should be the default kernel: `sgp fit` (the
//! squared exponential) against `sgp fit --kernel auto` (se unless a
//! Matérn kernel clearly predicts held-out rows better), both with the
//! default model, on the benchmark suite's generated sets (70/30 split,
//! M = 10 and 30), on small heteroscedastic splits (200 rows, M = 10), and
//! on bench/matern's rough sets (`--rough DIR`: a Matérn 3/2 draw in 3
//! inputs and a signal with kinks; all 2000 training rows at M = 32, and
//! `--splits` splits of 400 training rows at M = 20). Prints each pair's
//! test NLPD (raw units), the kernel auto kept, the fit times, and a
//! summary per group with the exact GP's mean on the same splits (`sgp fit
//! --model exact`: all the training rows, a seeded 1,000 of more);
//! `--exact-only` prints the exact GP alone.
//!
//! ```sh
//! mkdir -p /tmp/rough && (cd /tmp/rough && python3 "$OLDPWD/bench/matern/make_sets.py")
//! cargo run --release -p sgp-trainer --example default_kernel -- --splits 12 --rough /tmp/rough
//! cargo run --release -p sgp-trainer --example default_kernel -- --splits 12 --rough /tmp/rough --exact-only
//! ```

use std::time::Instant;

use sgp_trainer::choose;
use sgp_trainer::data::Dataset;
use sgp_trainer::options::{KernelChoice, Options};
use sgp_trainer::synth::{dataset, Shape};
use sgp_trainer::Result;

#[path = "bench_data/mod.rs"]
mod bench_data;

/// Test NLPD, the kernel exported and the seconds of one fit as `options`
/// ask.
fn run(train: &Dataset, test: &Dataset, options: &Options) -> Result<(f64, String, f64)> {
    let request = options.request(train)?;
    let started = Instant::now();
    let fit = choose::fit(train, &request, &mut |_| {})?;
    let seconds = started.elapsed().as_secs_f64();
    let nlpd = bench_data::test_nlpd(&fit.set.members[0], test)?;
    Ok((nlpd, fit.report.kernel.to_string(), seconds))
}

/// se and auto on one split (`bench_data::paired_row`); the exact GP's
/// NLPD goes to `exact` (once per split).
fn compare(
    name: &str,
    train: &Dataset,
    test: &Dataset,
    m: usize,
    seed: u64,
    exact: &mut Vec<(String, f64)>,
) -> Result<[f64; 4]> {
    bench_data::paired_row(name, m, (train, test, seed), exact, || {
        let se = Options {
            m: Some(m),
            seed: Some(seed),
            ..Options::default()
        };
        let auto = Options {
            kernel: Some(KernelChoice::Auto),
            ..se.clone()
        };
        Ok([run(train, test, &se)?, run(train, test, &auto)?])
    })
}

fn arg(args: &[String], name: &str) -> Option<String> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).cloned()
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let splits: u64 = arg(&args, "--splits")
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    println!(
        "| set | M | se NLPD | auto NLPD | auto - se | auto kept | se s | auto s | exact GP NLPD |"
    );
    println!("|---|---:|---:|---:|---:|---|---:|---:|---:|");
    let (mut suite_exact, mut small_exact, mut rough_exact) = (Vec::new(), Vec::new(), Vec::new());
    let suite = bench_data::over_suite(|label, train, test, m| {
        compare(label, train, test, m, 0, &mut suite_exact)
    })?;
    let mut small = Vec::new();
    for seed in 0..splits {
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
    let mut rough = Vec::new();
    if let Some(dir) = arg(&args, "--rough") {
        for set in ["m32", "kinks"] {
            let read = |part: &str| Dataset::from_csv(format!("{dir}/{set}_{part}.csv"), None);
            let (train, test) = (read("train")?, read("test")?);
            rough.push(compare(
                &format!("{set} 2000"),
                &train,
                &test,
                32,
                0,
                &mut rough_exact,
            )?);
            for seed in 0..splits {
                let (small_train, _) = train.split(0.8, seed)?;
                rough.push(compare(
                    &format!("{set} 400 /{seed}"),
                    &small_train,
                    &test,
                    20,
                    seed,
                    &mut rough_exact,
                )?);
            }
        }
    }
    println!();
    if !bench_data::exact_only() {
        bench_data::paired_summary("suite", "se", "auto", &suite);
        bench_data::paired_summary("small splits", "se", "auto", &small);
        if !rough.is_empty() {
            bench_data::paired_summary("rough", "se", "auto", &rough);
        }
    }
    bench_data::exact_summary("suite", &suite_exact);
    bench_data::exact_summary("small splits", &small_exact);
    if !rough_exact.is_empty() {
        bench_data::exact_summary("rough", &rough_exact);
    }
    Ok(())
}
