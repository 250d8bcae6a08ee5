//! Which first start SPGP should take (issue 51, item 1): the default FITC
//! fit (four restarts) with its first start's pseudo-inputs from greedy
//! conditional variance, k-means or a random subset, on the suite's sets
//! (generated, and the public CSVs of `bench/fetch-public.sh` when
//! present) over `--splits` 70/30 splits (seed = split), at M = 25 and 50,
//! with the exact GP on the same splits (all the training rows, at most
//! 1,000) as the data's limit. Prints every fit's test NLPD (raw units),
//! then per set and M the mean over the splits with its standard error.
//!
//! ```sh
//! cargo run --release -p sgp-trainer --example first_start -- --splits 6
//! cargo run --release -p sgp-trainer --example first_start -- --splits 6 --only diabetes --m 25
//! ```

use sgp_trainer::data::Dataset;
use sgp_trainer::evaluate::figures;
use sgp_trainer::fit::{fit, ExactParams, FitParams, InitMethod, SparseParams};
use sgp_trainer::Result;

#[path = "bench_data/mod.rs"]
mod bench_data;

/// Test NLPD of `params` fitted on `train`.
fn nlpd(train: &Dataset, test: &Dataset, params: &FitParams) -> Result<f64> {
    let fitted = fit(train, params, &mut |_| {})?;
    let p = fitted.set.members[0].predict_raw(&test.raw_x())?;
    Ok(figures(p.mean.as_slice(), p.var.as_slice(), test.raw_y().as_slice()).nlpd)
}

/// Mean and standard error of `v`.
fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
}

fn values(args: &[String], name: &str) -> Vec<String> {
    args.windows(2)
        .filter(|w| w[0] == name)
        .map(|w| w[1].clone())
        .collect()
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let splits: u64 = values(&args, "--splits")
        .first()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let only = values(&args, "--only");
    let ms: Vec<usize> = match values(&args, "--m") {
        v if v.is_empty() => vec![25, 50],
        v => v.iter().filter_map(|m| m.parse().ok()).collect(),
    };
    let starts = [InitMethod::Greedy, InitMethod::Kmeans, InitMethod::Random];
    let mut summary = Vec::new();
    for name in bench_data::dataset_names() {
        if !only.is_empty() && !only.contains(&name) {
            continue;
        }
        let data = bench_data::load(&name)?.data;
        // [exact, greedy, kmeans, random] per M, one entry per split.
        let mut got = vec![vec![Vec::new(); 1 + starts.len()]; ms.len()];
        let mut shape = (0, data.n_inputs());
        for seed in 0..splits {
            let (train, test) = data.split(bench_data::TEST_FRACTION, seed)?;
            shape.0 = train.n_rows();
            let exact = FitParams::Exact(ExactParams {
                max_points: 1000,
                seed,
                ..ExactParams::default()
            });
            let exact = nlpd(&train, &test, &exact)?;
            for (i, &m) in ms.iter().enumerate() {
                got[i][0].push(exact);
                let mut line = format!("{name} split {seed} M {m}: exact {exact:.4}");
                for (j, &start) in starts.iter().enumerate() {
                    let params = FitParams::Spgp(SparseParams {
                        m,
                        seed,
                        pseudo_init: start.into(),
                        ..SparseParams::default()
                    });
                    let v = nlpd(&train, &test, &params)?;
                    got[i][1 + j].push(v);
                    line += &format!(", {} {v:.4}", start.name());
                }
                eprintln!("{line}");
            }
        }
        for (i, &m) in ms.iter().enumerate() {
            summary.push((name.clone(), shape, m, got[i].clone()));
        }
    }
    println!(
        "| set (train rows x D) | M | exact GP | greedy | k-means | random | greedy - k-means, paired |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, (n, d), m, got) in &summary {
        let cell = |v: &[f64]| {
            let (mean, se) = mean_se(v);
            format!("{mean:.3} ± {se:.3}")
        };
        let diff: Vec<f64> = got[1].iter().zip(&got[2]).map(|(g, k)| g - k).collect();
        println!(
            "| {name} ({n} x {d}) | {m} | {} | {} | {} | {} | {} |",
            cell(&got[0]),
            cell(&got[1]),
            cell(&got[2]),
            cell(&got[3]),
            {
                let (mean, se) = mean_se(&diff);
                format!("{mean:+.3} ± {se:.3}")
            }
        );
    }
    Ok(())
}
