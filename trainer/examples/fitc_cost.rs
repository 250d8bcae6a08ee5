//! Cost of one FITC NLML + gradient evaluation at N = 10000, D = 8 for
//! M in {25, 50, 100}, and of a whole `fit` (SPGP, M = 50, 100 iterations).
//! `cargo run --release -p sgp-trainer --example fitc_cost`

use std::time::Instant;

use sgp_trainer::data::Dataset;
use sgp_trainer::demo::synthetic;
use sgp_trainer::features::PseudoInputs;
use sgp_trainer::fit::{fit, FitParams, SparseParams};
use sgp_trainer::inference::fitc::{fitc_nlml_grad, FitcConfig};
use sgp_trainer::init::random_subset;
use sgp_trainer::kernel::KernelParams;
use sgp_trainer::optimise::OptimiseOptions;

fn main() -> sgp_trainer::Result<()> {
    let (n, d) = (10_000, 8);
    let (x, y) = synthetic(n, d, 0);
    let names = (1..=d).map(|j| format!("x{j}")).collect();
    let data = Dataset::from_raw(x, y, names, "y".into())?;
    let kern = KernelParams::new(&[1.5; 8], 1.0, 0.1)?;
    println!(
        "one NLML + gradient, N = {n}, D = {d}, {} rayon threads",
        rayon::current_num_threads()
    );
    for m in [25, 50, 100] {
        let feat = PseudoInputs::new(random_subset(&data.x, m, 1)?)?;
        let config = FitcConfig::default();
        fitc_nlml_grad(&feat, &kern, &data.x, &data.y, &config)?;
        let reps = 10;
        let start = Instant::now();
        for _ in 0..reps {
            fitc_nlml_grad(&feat, &kern, &data.x, &data.y, &config)?;
        }
        let ms = start.elapsed().as_secs_f64() * 1e3 / reps as f64;
        println!("  M = {m:>3}: {ms:>7.1} ms");
    }
    let params = FitParams::Spgp(SparseParams {
        m: 50,
        optimiser: OptimiseOptions {
            max_iter: 100,
            ..OptimiseOptions::default()
        },
        ..SparseParams::default()
    });
    let start = Instant::now();
    let report = fit(&data, &params, &mut |_| {})?.report;
    let run = report
        .optimiser
        .unwrap_or_else(|| unreachable!("SPGP is a gradient fit"));
    println!(
        "full fit, SPGP M = 50: {:.2} s, {} iterations, {} evaluations ({})",
        start.elapsed().as_secs_f64(),
        run.iterations,
        run.evaluations,
        run.stop_reason
    );
    Ok(())
}
