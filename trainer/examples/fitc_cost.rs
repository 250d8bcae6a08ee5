//! Cost of one FITC NLML + gradient evaluation at N = 10000, D = 8 for
//! M in {25, 50, 100}, set against its arithmetic bound, and of whole
//! fits (SPGP, M = 50) with the default settings (4 screened starts, 200
//! iterations) and with one start.
//! `cargo run --release -p sgp-trainer --example fitc_cost [-- --no-fit]`
//!
//! # The arithmetic bound
//!
//! Per data point, one evaluation does (SE pseudo-inputs, M inducing
//! points, D inputs):
//!
//! - five M x M x N matrix products, 2 M^2 flops each per point:
//!   `V = L^{-1} Kuf`, `A = I + V Gamma^{-1} V^T`, `A^{-1} V`, `H V^T`,
//!   `dF/dKuf = L^{-T} H`;
//! - two M x D x N products, 2 M D each: the distances in `Kuf` and
//!   `(dF/dKuf o Kuf) X` for the pseudo-input and length-scale gradients;
//! - about 16 M of vector work (M exponentials, the weights, `H`'s
//!   rank-one updates, `adj o K`, sums).
//!
//! so `flops = N (10 M^2 + 4 M D + 16 M)` (M^3 terms are negligible for
//! M << N). The bound is that count at the rate a large dense GEMM reaches
//! on the same machine with every rayon thread busy (measured first, with
//! the same nalgebra/matrixmultiply kernel the trainer uses).

use std::time::Instant;

use nalgebra::DMatrix;
use rayon::prelude::*;
use sgp_trainer::data::Dataset;
use sgp_trainer::fit::init::random_subset;
use sgp_trainer::fit::{fit, FitParams, SparseParams};
use sgp_trainer::model::features::PseudoInputs;
use sgp_trainer::model::inference::fitc::{fitc_nlml_grad, FitcConfig};
use sgp_trainer::model::kernel::KernelParams;
use sgp_trainer::numerics::linalg::{mat_ref, mul};
use sgp_trainer::synth::synthetic;

/// The `sgp` binary's allocator, so these figures are what a fit gets.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Best GFLOP/s of `reps` products (r x k) * (k x c) per thread, on every
/// rayon thread at once, with nalgebra (`faer: false`) or `faer`.
fn gemm_rate(r: usize, k: usize, c: usize, reps: usize, faer: bool) -> f64 {
    let threads = rayon::current_num_threads();
    let a = DMatrix::<f64>::from_fn(r, k, |i, j| ((i * 7 + j * 3) % 11) as f64 * 0.1);
    let b = DMatrix::<f64>::from_fn(k, c, |i, j| ((i * 5 + j) % 13) as f64 * 0.1);
    let product = || {
        if faer {
            mul(mat_ref(&a), mat_ref(&b))
        } else {
            &a * &b
        }
    };
    let run = || {
        (0..threads)
            .into_par_iter()
            .map(|_| {
                let mut s = 0.0;
                for _ in 0..reps {
                    s += product()[(0, 0)];
                }
                s
            })
            .sum::<f64>()
    };
    run();
    // Best of five: the machine's rate, not whatever else shares it.
    let secs = (0..5)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(run());
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    2.0 * (r * k * c * reps * threads) as f64 / secs / 1e9
}

fn main() -> sgp_trainer::Result<()> {
    let (n, d) = (10_000, 8);
    let threads = rayon::current_num_threads();
    let mut big: f64 = 0.0;
    for (name, faer) in [("nalgebra/matrixmultiply", false), ("faer", true)] {
        let rate = gemm_rate(256, 256, 256, 20, faer);
        let chunk = gemm_rate(50, 50, 1024, 200, faer);
        println!(
            "dense GEMM ({name}), {threads} threads: {rate:.1} GFLOP/s at 256^3, \
             {chunk:.1} GFLOP/s at 50 x 50 x 1024"
        );
        big = big.max(rate);
    }
    println!("machine's GEMM rate (the faster at 256^3): {big:.1} GFLOP/s");
    let (x, y) = synthetic(n, d, 0);
    let names = (1..=d).map(|j| format!("x{j}")).collect();
    let data = Dataset::from_raw(x, y, names, "y".into())?;
    let kern = KernelParams::new(&[1.5; 8], 1.0, 0.1)?;
    println!("one NLML + gradient, N = {n}, D = {d}, {threads} rayon threads");
    for m in [25, 50, 100] {
        let feat = PseudoInputs::new(random_subset(&data.x, m, 1)?)?;
        let config = FitcConfig::default();
        fitc_nlml_grad(&feat, &kern, &data.x, &data.y, &config)?;
        // Best of five batches, as for the GEMM rate: both figures are the
        // machine's, not whatever else shares it.
        let reps = 10;
        let mut secs = f64::INFINITY;
        for _ in 0..5 {
            let start = Instant::now();
            for _ in 0..reps {
                fitc_nlml_grad(&feat, &kern, &data.x, &data.y, &config)?;
            }
            secs = secs.min(start.elapsed().as_secs_f64() / reps as f64);
        }
        let flops = n as f64 * (10.0 * (m * m) as f64 + 4.0 * (m * d) as f64 + 16.0 * m as f64);
        let bound = flops / (big * 1e9);
        // What the products alone reach at the evaluation's own shape (an
        // M x M factor times an M x 512 chunk): the ceiling for this M.
        let shape_rate = gemm_rate(m, m, 512, 400, true);
        println!(
            "  M = {m:>3}: {:>7.2} ms, {:>6.1} MFLOP, {:>5.1} GFLOP/s, {:.2}x the GEMM bound ({:.2} ms); \
             faer alone at {m} x {m} x 512: {shape_rate:.1} GFLOP/s",
            secs * 1e3,
            flops / 1e6,
            flops / secs / 1e9,
            secs / bound,
            bound * 1e3
        );
    }
    if std::env::args().any(|a| a == "--no-fit") {
        return Ok(());
    }
    for restarts in [4, 1] {
        let params = FitParams::Spgp(SparseParams {
            m: 50,
            restarts,
            ..SparseParams::default()
        });
        let start = Instant::now();
        let report = fit(&data, &params, &mut |_| {})?.report;
        let run = report
            .optimiser
            .unwrap_or_else(|| unreachable!("SPGP is a gradient fit"));
        println!(
            "full fit, SPGP M = 50, {restarts} start(s), default settings: {:.2} s, final run {} \
             iterations, {} evaluations ({}), NLML {:.2}",
            start.elapsed().as_secs_f64(),
            run.iterations,
            run.evaluations,
            run.stop_reason,
            report.nlml
        );
    }
    Ok(())
}
