//! The figures of the guide's "Learning on the device": an SPGP model
//! (M = 32, D = 4) fitted in the lab on 400 rows of a plant, then 1,000
//! more rows of it and 500 of the plant after a shift streamed through the
//! device's update (f32, `sgp_runtime::Model::update`), judged by test
//! NLPD on 1,000 fresh rows of the shifted plant against the batch
//! posterior of the same basis and hyperparameters on the last 500 rows
//! (`synth::drift`); then the forgetting factors around the chosen one, and
//! the no-forgetting check against the batch posterior of every row.
//!
//! ```sh
//! cargo run --release -p sgp-trainer --example drift
//! ```

use nalgebra::{DMatrix, DVector};
use sgp_runtime::Model;
use sgp_trainer::data::Dataset;
use sgp_trainer::export::updatable::export_updatable;
use sgp_trainer::fit::{fit, FitParams, SparseParams};
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::model::updatable::conditioned;
use sgp_trainer::model::TrainedModel;
use sgp_trainer::synth::drift::{drift_figures, Shift};

const D: usize = 4;
const M: usize = 32;
const NOISE: f64 = 0.1;
const LAM: f32 = 0.9995;

fn lab(approximation: Approximation, shift: Shift) -> (TrainedModel, Vec<u8>) {
    let (x, y) = shift.rows(400, D, false, NOISE, 1);
    let names = (1..=D).map(|j| format!("x{j}")).collect();
    let data = Dataset::from_raw(x.clone(), y, names, "y".into()).unwrap();
    let params = FitParams::Spgp(SparseParams {
        m: M,
        approximation,
        ..SparseParams::default()
    });
    let mut fitted = fit(&data, &params, &mut |_| {}).unwrap();
    let model = fitted.set.members[0].clone();
    let blob = export_updatable(&mut fitted, &x, false).unwrap().blob;
    (model, blob)
}

fn stream(shift: Shift) -> (DMatrix<f64>, DVector<f64>) {
    let (x0, y0) = shift.rows(1000, D, false, NOISE, 2);
    let (x1, y1) = shift.rows(500, D, true, NOISE, 3);
    let x = DMatrix::from_rows(&x0.row_iter().chain(x1.row_iter()).collect::<Vec<_>>());
    let y = DVector::from_iterator(1500, y0.iter().chain(y1.iter()).copied());
    (x, y)
}

fn main() {
    println!(
        "drift: test NLPD on 1,000 rows of the shifted plant after 1,000 old and 500 new rows"
    );
    println!("| objective | shift | lab model | no forgetting | forgetting {LAM} | batch on the last 500 | forgetting - batch |");
    println!("|---|---|---|---|---|---|---|");
    for shift in [Shift::Gain, Shift::Offset] {
        for approximation in [Approximation::Fitc, Approximation::Vfe] {
            let (model, blob) = lab(approximation, shift);
            let (x, y) = stream(shift);
            let (tx, ty) = shift.rows(1000, D, true, NOISE, 4);
            let f = drift_figures(&model, &blob, approximation, (&x, &y), 500, (&tx, &ty), LAM)
                .unwrap();
            println!(
                "| {approximation:?} | {shift:?} | {:.3} | {:.3} | {:.3} | {:.3} | {:+.3} |",
                f.fixed,
                f.no_forgetting,
                f.forgetting,
                f.refit,
                f.forgetting - f.refit
            );
        }
    }

    println!("\nforgetting factors, FITC, gain shift (forgetting - batch on the last 500)");
    let (model, blob) = lab(Approximation::Fitc, Shift::Gain);
    let (x, y) = stream(Shift::Gain);
    let (tx, ty) = Shift::Gain.rows(1000, D, true, NOISE, 4);
    for lam in [0.99f32, 0.995, 0.998, 0.999, 0.9995, 0.9998] {
        let f = drift_figures(
            &model,
            &blob,
            Approximation::Fitc,
            (&x, &y),
            500,
            (&tx, &ty),
            lam,
        )
        .unwrap();
        println!("  {lam}: {:+.3}", f.forgetting - f.refit);
    }

    println!("\nno forgetting: 2,000 updates against the batch posterior of the 400 + 2,000 rows");
    for approximation in [Approximation::Fitc, Approximation::Vfe] {
        let (model, blob) = lab(approximation, Shift::Gain);
        let (lab_x, lab_y) = Shift::Gain.rows(400, D, false, NOISE, 1);
        let (new_x, new_y) = Shift::Gain.rows(2000, D, false, NOISE, 5);
        let mut device = Model::<M, D, D>::from_bytes(&blob).unwrap();
        for (row, &target) in new_x.row_iter().zip(new_y.iter()) {
            let input: Vec<f32> = row.iter().map(|&v| v as f32).collect();
            device.update(&input, target as f32).unwrap();
        }
        let all_x =
            DMatrix::from_rows(&lab_x.row_iter().chain(new_x.row_iter()).collect::<Vec<_>>());
        let all_y = DVector::from_iterator(2400, lab_y.iter().chain(new_y.iter()).copied());
        let batch = TrainedModel {
            form: conditioned(
                &model.form,
                &model.transform.apply_x(&all_x),
                &model.transform.apply_y(&all_y),
                approximation,
            )
            .unwrap(),
            ..model.clone()
        };
        let (tx, _) = Shift::Gain.rows(500, D, false, NOISE, 6);
        let reference = batch.predict_raw(&tx).unwrap();
        let (mut mean, mut var) = (0.0f64, 0.0f64);
        for (i, row) in tx.row_iter().enumerate() {
            let input: Vec<f32> = row.iter().map(|&v| v as f32).collect();
            let p = device.predict(&input).unwrap();
            let sd = reference.var[i].sqrt();
            mean = mean.max((f64::from(p.mean) - reference.mean[i]).abs() / sd);
            var = var.max((f64::from(p.variance) - reference.var[i]).abs() / reference.var[i]);
        }
        println!(
            "  {approximation:?}: worst mean deviation {mean:.2e} of the predictive sd (limit 1e-2), \
             worst relative variance deviation {var:.2e} (limit 2e-2), 500 test points"
        );
    }
}
