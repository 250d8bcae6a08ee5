//! `sgp demo`: the SPGP paper's Figure 1 on built-in data.

use std::path::Path;
use std::time::Instant;

use sgp_trainer::choose::Request;
use sgp_trainer::evaluate::{evaluate_blob, figures, Evaluation};
use sgp_trainer::export::export;
use sgp_trainer::files::check_outputs;
use sgp_trainer::fit::{ExactParams, FitParams, Method};
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::tools::demo::{
    bunched_left, demo_data, demo_test_set, figure1_params, figure1_words, printed_positions,
    Figure1Outcome, DEMO_NOISE_STD,
};
use sgp_trainer::Result;

use super::fit::fit_with_progress;
use super::write_file;

/// One row of the demo's comparison table.
pub(crate) struct DemoRow {
    name: String,
    seconds: f64,
    nlml: f64,
    trainer: Evaluation,
    device: Evaluation,
    blob_bytes: usize,
}

pub(crate) fn demo_command(out: &Path, m: usize, seed: u64, quiet: bool) -> Result<()> {
    check_outputs(&[("--out", out)], &[])?;
    let data = demo_data(200, seed)?;
    if m == 0 || m > data.n_rows() {
        return Err(sgp_trainer::Error::BadInput(format!(
            "--m {m}: the demo's {} rows take 1 to {0} pseudo-inputs",
            data.n_rows()
        )));
    }
    let (test_x, test_y) = demo_test_set(400, seed.wrapping_add(1000));
    println!(
        "demo: 200 noisy samples of sin(2x) + 0.4 cos(5x) + 0.3x on [0, 6] (noise std {DEMO_NOISE_STD}), \
         400 test points"
    );

    let exact_params = FitParams::Exact(ExactParams {
        seed,
        ..ExactParams::default()
    });
    let start_z = bunched_left(&data, m);
    let fits = [
        ("exact GP", exact_params),
        (
            "SPGP FITC",
            figure1_params(&data, m, seed, Approximation::Fitc),
        ),
        (
            "SPGP VFE",
            figure1_params(&data, m, seed, Approximation::Vfe),
        ),
    ];
    let mut rows = Vec::new();
    let mut spgp_blob = Vec::new();
    let mut positions_after = Vec::new();
    for (name, params) in &fits {
        let started = Instant::now();
        let request = Request::exactly(params.clone());
        let mut fitted = fit_with_progress(std::slice::from_ref(&data), &request, quiet, name)?;
        let seconds = started.elapsed().as_secs_f64();
        let exported = export(&mut fitted, &test_x, false)?;
        let (model, report) = (&fitted.set.members[0], &fitted.report);
        let reference = model.predict_raw(&test_x)?;
        let trainer = figures(
            reference.mean.as_slice(),
            reference.var.as_slice(),
            test_y.as_slice(),
        );
        let device = evaluate_blob(&exported.blob, &test_x, &test_y)?;
        let name = format!("{name} (M = {})", model.n_basis());
        if params.method() == Method::Spgp {
            // The last (VFE) is the one written out.
            spgp_blob = exported.blob.clone();
            let z = data.transform.unapply_x(&model.form.basis.centres);
            let z: Vec<f64> = z.iter().copied().collect();
            positions_after.push((name.clone(), z, report.nlml, trainer.rmse, trainer.nlpd));
        }
        rows.push(DemoRow {
            name,
            seconds,
            nlml: report.nlml,
            trainer,
            device,
            blob_bytes: exported.blob.len(),
        });
    }
    write_file(out, &spgp_blob)?;

    println!();
    println!(
        "{:<22} {:>8} {:>10} {:>10} {:>10} {:>12} {:>12} {:>8}",
        "model", "fit s", "NLML", "RMSE f64", "NLPD f64", "RMSE device", "NLPD device", "blob B"
    );
    for r in &rows {
        println!(
            "{:<22} {:>8.2} {:>10.3} {:>10.4} {:>10.4} {:>12.4} {:>12.4} {:>8}",
            r.name,
            r.seconds,
            r.nlml,
            r.trainer.rmse,
            r.trainer.nlpd,
            r.device.rmse,
            r.device.nlpd,
            r.blob_bytes
        );
    }
    let positions = |z: &[f64]| printed_positions(z).join(" ");
    let raw = data.raw_x();
    let (lo, hi) = (raw.min(), raw.max());
    println!();
    println!(
        "pseudo-inputs, data on [{lo:.2}, {hi:.2}]\n  {:<22} {}",
        "start (bunched):",
        positions(data.transform.unapply_x(&start_z).as_slice())
    );
    for (name, z, ..) in &positions_after {
        println!("  {:<22} {}", format!("{name}:"), positions(z));
    }
    let outcomes: Vec<Figure1Outcome> = positions_after
        .iter()
        .map(|(name, z, nlml, rmse, nlpd)| Figure1Outcome {
            name: name.split(" (").next().unwrap_or(name),
            z,
            nlml: *nlml,
            rmse: *rmse,
            nlpd: *nlpd,
        })
        .collect();
    let exact = &rows[0].trainer;
    println!();
    println!(
        "{}",
        figure1_words(lo, hi, (exact.rmse, exact.nlpd), &outcomes)
    );
    println!(
        "SPGP VFE blob written to {} — try `sgp inspect {}`",
        out.display(),
        out.display()
    );
    Ok(())
}
