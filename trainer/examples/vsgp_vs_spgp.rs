//! SPGP vs VSGP on a 1-D function that is smooth on one half and wiggly on
//! the other (`y = sin(40 x^4) + noise`, x uniform in [0, 1], 400 rows, 30%
//! held out): test NLPD and RMSE (raw units, f64 trainer predictions) and
//! blob size, for M in {5, 10, 20}. Prints a markdown table; a measurement,
//! not a test. `cargo run --release -p sgp-trainer --example vsgp_vs_spgp`

use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use sgp_trainer::data::Dataset;
use sgp_trainer::evaluate::metrics::{mean_nlpd, rmse};
use sgp_trainer::fit::{fit, FitParams, SparseParams};
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::numerics::optimise::OptimiseOptions;

const NOISE_SD: f64 = 0.1;

fn data(n: usize, seed: u64) -> (DMatrix<f64>, DVector<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(0.0, NOISE_SD).expect("valid");
    let x = DMatrix::<f64>::from_fn(n, 1, |_, _| rng.random_range(0.0..1.0));
    let y = DVector::from_fn(n, |i, _| {
        libm::sin(40.0 * x[(i, 0)].powi(4)) + noise.sample(&mut rng)
    });
    (x, y)
}

fn main() -> sgp_trainer::Result<()> {
    let (x, y) = data(400, 11);
    let n_train = 280;
    let train = Dataset::from_raw(
        x.rows(0, n_train).into_owned(),
        y.rows(0, n_train).into_owned(),
        vec!["x".into()],
        "y".into(),
    )?;
    let (test_x, test_y) = (x.rows(n_train, 120).into_owned(), y.rows(n_train, 120));
    let test_y: Vec<f64> = test_y.iter().copied().collect();
    println!(
        "y = sin(40 x^4) + N(0, {NOISE_SD}^2), {n_train} train / {} test rows; \
         noise-only NLPD would be {:.3}",
        test_y.len(),
        0.5 * libm::log(2.0 * std::f64::consts::PI * NOISE_SD * NOISE_SD) + 0.5
    );
    for approximation in [Approximation::Fitc, Approximation::Vfe] {
        println!();
        println!("objective {approximation:?}, restarts 3, max_iter 200 (per stage)");
        println!();
        println!("| M | model | test NLPD | test RMSE | train NLML | blob B | fit s |");
        println!("|---|---|---|---|---|---|---|");
        for m in [5, 10, 20] {
            let sparse = SparseParams {
                m,
                approximation,
                restarts: 3,
                optimiser: OptimiseOptions {
                    max_iter: 200,
                    ..OptimiseOptions::default()
                },
                ..SparseParams::default()
            };
            for (name, params) in [
                ("SPGP", FitParams::Spgp(sparse.clone())),
                ("VSGP", FitParams::Vsgp(sparse)),
            ] {
                let fitted = fit(&train, &params, &mut |_| {})?;
                let p = fitted.set.members[0].predict_raw(&test_x)?;
                let blob = fitted.set.members[0].to_spec()?.to_bytes()?;
                println!(
                    "| {m} | {name} | {:.3} | {:.4} | {:.2} | {} | {:.2} |",
                    mean_nlpd(p.mean.as_slice(), p.var.as_slice(), &test_y),
                    rmse(p.mean.as_slice(), &test_y),
                    fitted.report.nlml,
                    blob.len(),
                    fitted.report.seconds
                );
            }
        }
    }
    Ok(())
}
