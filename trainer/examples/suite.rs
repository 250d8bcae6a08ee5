//! Benchmark suite: every configuration of [`configurations`] on generated
//! data sets with known truth and on the public CSVs in `bench/data/`
//! (fetched by `bench/fetch-public.sh`; skipped when absent).
//!
//! Each data set is split 70/30 (`Dataset::split`, seed 0); each
//! configuration is fitted on the training part, exported (the blob and its
//! runtime check) and scored on the raw test part: NLPD, RMSE, 95% coverage
//! and, for generated data, RMSE against the noise-free truth.
//!
//! ```sh
//! cargo run --release -p sgp-trainer --example suite                # markdown table
//! cargo run --release -p sgp-trainer --example suite -- --only chirp --json
//! ```
//!
//! Options: `--only NAME` (a data set; repeatable), `--config NAME` (a
//! configuration; repeatable), `--json` (one JSON object per row), `--list`.
//! Progress goes to stderr, results to stdout.

use std::time::Instant;

use serde::Serialize;
use sgp_trainer::choose::{self, Asked, Request};
use sgp_trainer::data::Dataset;
use sgp_trainer::evaluate::figures;
use sgp_trainer::export::export;
use sgp_trainer::fit::gplasso::{GplassoParams, GplassoRefit};
use sgp_trainer::fit::{ExactParams, Fit, FitParams, InitMethod, ProjectedParams, SparseParams};
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::synth;
use sgp_trainer::{Error, Result};

#[path = "bench_data/mod.rs"]
mod bench_data;
use bench_data::{dataset_names, load, Bench, SEED, TEST_FRACTION};

/// A way of fitting a model to a training set.
type Fitter = Box<dyn Fn(&Dataset) -> Result<Fit>>;

/// The configurations compared: a name and a fitter each, fitted as `sgp
/// fit` fits them (the objective chosen where the name leaves it open).
/// Sparse ones are `OBJECTIVE-mM` with the default settings and
/// `OBJECTIVE-mM-r1` with a single random start; `auto-mM` is `--model
/// auto`; `spgp-mM`, `vsgp-mM` and `spgp-hs-mM` compare the
/// feature kinds with the defaults; `spgp-dr-gG-mM` and `spgp-pca-gG-mM` a
/// learned and a PCA projection to G dims; `gplasso-mM` is GPLasso with its
/// defaults, `gplasso-fixed-mM` the paper's procedure and `gplasso-basis-mM`
/// re-optimised hyperparameters on the selected inputs.
fn configurations() -> Vec<(String, Fitter)> {
    let mut configs: Vec<(String, Fitter)> = vec![(
        "exact".into(),
        with(FitParams::Exact(ExactParams {
            max_points: 1000,
            ..ExactParams::default()
        })),
    )];
    for m in [10, 30] {
        for approximation in [Approximation::Fitc, Approximation::Vfe] {
            // A single random start (the SPGP paper's), then the defaults.
            let single = SparseParams {
                m,
                approximation,
                restarts: 1,
                pseudo_init: InitMethod::Random.into(),
                ..SparseParams::default()
            };
            let default = SparseParams {
                m,
                approximation,
                ..SparseParams::default()
            };
            let objective = format!("{approximation:?}").to_lowercase();
            configs.push((
                format!("{objective}-m{m}-r1"),
                named(FitParams::Spgp(single)),
            ));
            configs.push((format!("{objective}-m{m}"), named(FitParams::Spgp(default))));
        }
    }
    // The model families against SPGP at the same M, default settings:
    // VSGP (issue 8), SPGP+HS (issue 9) and GPLasso (issues 10, 20) at
    // every M; `spgp-mM` is `fitc-mM` under the name docs use.
    for m in [5, 10, 20, 30] {
        let params = SparseParams {
            m,
            ..SparseParams::default()
        };
        configs.push((format!("spgp-m{m}"), with(FitParams::Spgp(params.clone()))));
        configs.push((format!("vsgp-m{m}"), with(FitParams::Vsgp(params.clone()))));
        configs.push((
            format!("spgp-hs-m{m}"),
            with(FitParams::SpgpHs(params.clone())),
        ));
        let gplasso = FitParams::Gplasso(GplassoParams {
            m,
            ..GplassoParams::default()
        });
        let families = vec![
            FitParams::Spgp(params.clone()),
            FitParams::Vsgp(params.clone()),
            FitParams::SpgpHs(params),
            gplasso,
        ];
        configs.push((format!("auto-m{m}"), fitter(Asked::Auto(families), true)));
    }
    // SPGP+DR against PCA-to-G then SPGP (issue 9), default settings, at
    // the M of the family tables (10, 30) and of `vsgp.md`'s (20).
    for m in [10, 20, 30] {
        for dim in [2, 4] {
            let p = |dim| ProjectedParams {
                sparse: SparseParams {
                    m,
                    ..SparseParams::default()
                },
                dim,
            };
            configs.push((
                format!("spgp-dr-g{dim}-m{m}"),
                with(FitParams::SpgpDr(p(dim))),
            ));
            configs.push((
                format!("spgp-pca-g{dim}-m{m}"),
                with(FitParams::SpgpPca(p(dim))),
            ));
        }
    }
    // GPLasso (issue 10); examples/gplasso_vs_spgp.rs compares it with SPGP.
    // `gplasso-fixed-mM` is the paper's procedure (--fixed-hyperparameters),
    // `gplasso-basis-mM` re-optimises the hyperparameters only
    // (--fixed-basis), `gplasso-mM` the default.
    for m in [10, 25, 30, 50, 100] {
        let params = |refit| GplassoParams {
            m,
            refit,
            ..GplassoParams::default()
        };
        for (name, refit) in [
            ("gplasso-fixed", GplassoRefit::Nothing),
            ("gplasso-basis", GplassoRefit::Hyperparameters),
            ("gplasso", GplassoRefit::Everything),
        ] {
            configs.push((
                format!("{name}-m{m}"),
                with(FitParams::Gplasso(params(refit))),
            ));
        }
    }
    configs
}

/// `sgp fit --model FAMILY` with these settings: the objective chosen
/// where open.
fn with(params: FitParams) -> Fitter {
    fitter(Asked::Family(params), true)
}

/// The family with the objective it names (`--objective`).
fn named(params: FitParams) -> Fitter {
    fitter(Asked::Family(params), false)
}

fn fitter(asked: Asked, choose_objective: bool) -> Fitter {
    let request = Request {
        asked,
        held_out: true,
        choose_objective,
        choose_kernel: false,
    };
    Box::new(move |data| choose::fit(data, &request, &mut |_| {}))
}

/// One line of the results.
#[derive(Serialize)]
struct Row {
    dataset: String,
    rows: usize,
    inputs: usize,
    config: String,
    /// Training objective of the exported model.
    nlml: Option<f64>,
    nlpd: Option<f64>,
    rmse: Option<f64>,
    /// RMSE of the predictive mean against the noise-free truth.
    rmse_truth: Option<f64>,
    coverage_95: Option<f64>,
    fit_seconds: Option<f64>,
    blob_bytes: Option<usize>,
    /// The blob's variance form: "product", or "solves" where the product
    /// failed the runtime check (the export's fallback).
    variance: Option<&'static str>,
    /// What went wrong (a failed fit, export or runtime check), if anything.
    error: Option<String>,
    /// The held-out choice a small-data fit made, if any.
    held_out: Option<String>,
}

struct Args {
    only: Vec<String>,
    configs: Vec<String>,
    json: bool,
    list: bool,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut args = Args {
        only: Vec::new(),
        configs: Vec::new(),
        json: false,
        list: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--only" => args
                .only
                .push(it.next().ok_or("--only needs a data set name")?),
            "--config" => args
                .configs
                .push(it.next().ok_or("--config needs a configuration name")?),
            "--json" => args.json = true,
            "--list" => args.list = true,
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "suite: {e}\nusage: suite [--only DATASET]... [--config NAME]... [--json] [--list]"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("suite: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<()> {
    let configs: Vec<_> = configurations()
        .into_iter()
        .filter(|(name, _)| args.configs.is_empty() || args.configs.contains(name))
        .collect();
    let names = dataset_names();
    if args.list {
        println!("data sets: {}", names.join(" "));
        let all: Vec<_> = configurations().into_iter().map(|(n, _)| n).collect();
        println!("configurations: {}", all.join(" "));
        return Ok(());
    }
    for wanted in &args.only {
        if !names.contains(wanted) {
            return Err(Error::BadInput(format!(
                "no data set '{wanted}'; there are: {}",
                names.join(" ")
            )));
        }
    }
    if configs.is_empty() {
        return Err(Error::BadInput("no configuration matches --config".into()));
    }
    let selected: Vec<&String> = names
        .iter()
        .filter(|n| args.only.is_empty() || args.only.contains(n))
        .collect();

    let mut rows = Vec::new();
    if !args.json {
        println!("| data set | N x D | configuration | train NLML | NLPD | RMSE | RMSE vs truth | 95% cov | fit s | blob B | variance | note |");
        println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|");
    }
    for name in selected {
        let bench = load(name)?;
        let (train, test) = bench.data.split(TEST_FRACTION, SEED)?;
        for (config, fitter) in &configs {
            eprintln!(
                "suite: {} ({} train / {} test rows), {config} ...",
                bench.name,
                train.n_rows(),
                test.n_rows()
            );
            let row = run_one(&bench, &train, &test, config, fitter);
            if args.json {
                println!("{}", serde_json::to_string(&row).unwrap_or_default());
            } else {
                println!("{}", markdown(&row));
            }
            rows.push(row);
        }
    }
    let failed = rows.iter().filter(|r| r.error.is_some()).count();
    eprintln!("suite: {} rows, {failed} with a failure noted", rows.len());
    let exported = rows.iter().filter(|r| r.variance.is_some()).count();
    let solves = rows.iter().filter(|r| r.variance == Some("solves")).count();
    eprintln!("suite: {exported} exported, {solves} of them fell back to the solves");
    Ok(())
}

fn run_one(bench: &Bench, train: &Dataset, test: &Dataset, config: &str, fitter: &Fitter) -> Row {
    let mut row = Row {
        dataset: bench.name.clone(),
        rows: bench.data.n_rows(),
        inputs: bench.data.n_inputs(),
        config: config.to_owned(),
        nlml: None,
        nlpd: None,
        rmse: None,
        rmse_truth: None,
        coverage_95: None,
        fit_seconds: None,
        blob_bytes: None,
        variance: None,
        error: None,
        held_out: None,
    };
    let start = Instant::now();
    let mut fitted = match fitter(train) {
        Ok(m) => m,
        Err(e) => {
            row.error = Some(format!("fit: {e}"));
            return row;
        }
    };
    row.fit_seconds = Some(start.elapsed().as_secs_f64());
    row.nlml = Some(fitted.report.nlml);
    row.held_out = fitted.report.choice.as_ref().map(|c| c.reason.clone());
    // As `sgp fit` does: cure a failed runtime check, refuse what nothing cures.
    match export(&mut fitted, &train.raw_x(), false) {
        Ok(exported) => {
            row.blob_bytes = Some(exported.blob.len());
            row.variance = Some(exported.variance.name());
            if let Some(c) = exported.cure {
                row.nlml = Some(c.nlml_after);
                row.error = Some(format!("cured: jitter {:.0e}", c.to_eps));
            }
        }
        Err(e) => row.error = Some(format!("export: {e}")),
    }
    let model = &fitted.set.members[0];
    let test_x = test.raw_x();
    match model.predict_raw(&test_x) {
        Ok(p) => {
            let (mean, var) = (p.mean.as_slice(), p.var.as_slice());
            let e = figures(mean, var, test.raw_y().as_slice());
            row.nlpd = Some(e.nlpd);
            row.rmse = Some(e.rmse);
            row.coverage_95 = Some(e.coverage_95);
            if let Some(shape) = bench.shape {
                let f = synth::truth(shape, &test_x);
                row.rmse_truth = Some(sgp_trainer::evaluate::metrics::rmse(mean, f.as_slice()));
            }
        }
        Err(e) => row.error = Some(format!("predict: {e}")),
    }
    row
}

fn markdown(r: &Row) -> String {
    let num = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    format!(
        "| {} | {} x {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        r.dataset,
        r.rows,
        r.inputs,
        r.config,
        num(r.nlml, 2),
        num(r.nlpd, 3),
        num(r.rmse, 4),
        num(r.rmse_truth, 4),
        num(r.coverage_95, 3),
        num(r.fit_seconds, 2),
        r.blob_bytes.map_or("-".into(), |b| b.to_string()),
        r.variance.unwrap_or("-"),
        [r.error.as_deref(), r.held_out.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; "),
    )
}
