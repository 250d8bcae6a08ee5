//! Several outputs on one basis against one model per output, on
//! generated dynamical systems whose truth is known
//! ([`sgp_trainer::tools::dynamics`]): a cart-pole's one-step velocity changes (6
//! inputs, 2 outputs), a pendulum's one-step state change (3 inputs, 2
//! outputs) and a 3-link arm's end-effector position (4 inputs, 3
//! outputs). For each output: test NLPD and RMSE of its own single-output
//! fit and of the shared fit at the same M (f64 trainer predictions, raw
//! units), and the blob bytes of the separate models together against the
//! one shared blob (each exported as `sgp fit` exports it, cure included). A measurement, not a test:
//! `cargo run --release -p sgp-trainer --example multi_output [-- M [MODEL [SEEDS]]]`
//! with MODEL one of spgp (default), vsgp, spgp-dr, exact, and SEEDS the
//! data seeds, comma-separated (default 17): one row per seed, system and
//! output, then each system's and output's mean and worst difference over
//! the seeds.

use sgp_trainer::evaluate::metrics::{mean_nlpd, rmse};
use sgp_trainer::export::cure::{export_fitted, export_outputs};
use sgp_trainer::export::output_blob::set_blob;
use sgp_trainer::fit::multi_output::fit_multi;
use sgp_trainer::fit::{fit, ExactParams, FitParams, ProjectedParams, SparseParams};
use sgp_trainer::model::TrainedModel;
use sgp_trainer::tools::dynamics::System;

const TRAIN: usize = 1500;
const TEST: usize = 1000;

fn params(model: &str, m: usize) -> FitParams {
    let sparse = SparseParams {
        m,
        ..SparseParams::default()
    };
    match model {
        "vsgp" => FitParams::Vsgp(sparse),
        "spgp-dr" => FitParams::SpgpDr(ProjectedParams { sparse, dim: 3 }),
        "exact" => FitParams::Exact(ExactParams {
            max_points: m,
            ..ExactParams::default()
        }),
        _ => FitParams::Spgp(sparse),
    }
}

fn scores(
    model: &TrainedModel,
    x: &nalgebra::DMatrix<f64>,
    y: &[f64],
) -> sgp_trainer::Result<(f64, f64)> {
    let p = model.predict_raw(x)?;
    Ok((
        mean_nlpd(p.mean.as_slice(), p.var.as_slice(), y),
        rmse(p.mean.as_slice(), y),
    ))
}

fn main() -> sgp_trainer::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let m: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(32);
    let model = args.get(2).map_or("spgp", String::as_str);
    let seeds: Vec<u64> = args.get(3).map_or(vec![17], |list| {
        list.split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    });
    let params = params(model, m);
    println!("model {model}, M = {m}, {TRAIN} training and {TEST} test rows per system\n");
    println!(
        "| seed | system | output | single NLPD | shared NLPD | diff | single RMSE | shared RMSE |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut sizes = Vec::new();
    let mut diffs: Vec<(String, Vec<f64>)> = Vec::new();
    for (system, seed) in System::ALL
        .into_iter()
        .flat_map(|system| seeds.iter().map(move |&seed| (system, seed)))
    {
        let data = system.data(TRAIN + TEST, seed)?;
        let (train, test) = data.split(TEST as f64 / (TRAIN + TEST) as f64, 5)?;
        let mut shared = fit_multi(&train, &params, &mut |_| {})?;
        let (exported, _) = export_outputs(&mut shared, &train.first().raw_x(), true)?;
        let shared_bytes = set_blob(&shared.set, &exported)?.len();
        let x = test.first().raw_x();
        let mut single_bytes = 0;
        for ((out, test_out), member) in train
            .outputs()
            .iter()
            .zip(test.outputs())
            .zip(&shared.set.members)
        {
            let mut single = fit(out, &params, &mut |_| {})?;
            single_bytes += export_fitted(&mut single, &out.raw_x(), true)?.0.blob.len();
            let y = test_out.raw_y();
            let (ns, rs) = scores(&single.model, &x, y.as_slice())?;
            let (nm, rm) = scores(member, &x, y.as_slice())?;
            println!(
                "| {seed} | {} | {} | {ns:.3} | {nm:.3} | {:+.3} | {rs:.4} | {rm:.4} |",
                system.name(),
                out.target_name,
                nm - ns
            );
            let key = format!("{} | {}", system.name(), out.target_name);
            match diffs.iter_mut().find(|(k, _)| *k == key) {
                Some((_, d)) => d.push(nm - ns),
                None => diffs.push((key, vec![nm - ns])),
            }
        }
        sizes.push((system, seed, single_bytes, shared_bytes));
    }
    println!("\nshared - single test NLPD over seeds {seeds:?}\n");
    println!("| system | output | mean | worst |");
    println!("|---|---|---|---|");
    for (key, d) in &diffs {
        let mean = d.iter().sum::<f64>() / d.len() as f64;
        let worst = d.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        println!("| {key} | {mean:+.3} | {worst:+.3} |");
    }
    println!("\n| seed | system | separate blobs (bytes) | shared blob (bytes) | ratio |");
    println!("|---|---|---|---|---|");
    for (system, seed, single, shared) in sizes {
        println!(
            "| {seed} | {} | {single} | {shared} | {:.2} |",
            system.name(),
            shared as f64 / single as f64
        );
    }
    Ok(())
}
