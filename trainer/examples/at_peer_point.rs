//! Diagnosis: our FITC/VFE objective at another library's start and optimum.
//!
//! `cargo run --release -p sgp-trainer --example at_peer_point -- TRAIN.csv TEST.csv PARAMS.json [fitc|vfe] [SEED]`
//!
//! PARAMS.json is `bench/peers/peer_fit.py --params`'s output (raw units).
//! Prints our fit's training objective (standardised target) and test NLPD
//! (raw units) with `--no-held-out-choice` and SEED; the same at the peer's
//! start and at its optimum; and where our optimiser goes from each of
//! those, with its default stopping and with 1000 iterations and no stall
//! test. Tells apart an optimum that predicts better but scores worse in
//! our objective (ours overfits) from one that scores better (our starts
//! miss it): docs/src/benchmarks.md, "Sixteen splits".

use nalgebra::DMatrix;
use sgp_trainer::data::Dataset;
use sgp_trainer::evaluate::metrics::mean_nlpd;
use sgp_trainer::fit::sparse::fit_sparse;
use sgp_trainer::fit::{fit, FitParams, SparseParams};
use sgp_trainer::model::features::PseudoInputs;
use sgp_trainer::model::inference::fitc::fitc_posterior;
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::model::kernel::KernelParams;
use sgp_trainer::model::posterior_sums::FitcConfig;
use sgp_trainer::numerics::optimise::OptimiseOptions;

fn point(
    train: &Dataset,
    p: &serde_json::Value,
) -> sgp_trainer::Result<(PseudoInputs, KernelParams)> {
    let t = &train.transform;
    let z: Vec<Vec<f64>> = serde_json::from_value(p["z"].clone()).expect("z");
    let d = train.n_inputs();
    let zs = DMatrix::from_fn(z.len(), d, |i, j| (z[i][j] - t.x_mean[j]) / t.x_scale[j]);
    let ls: Vec<f64> = serde_json::from_value(p["lengthscales"].clone()).expect("ls");
    let ls: Vec<f64> = if ls.len() == 1 && d > 1 {
        vec![ls[0]; d]
    } else {
        ls
    };
    let ls: Vec<f64> = ls.iter().zip(&t.x_scale).map(|(l, s)| l / s).collect();
    let y2 = t.y_scale * t.y_scale;
    let kern = KernelParams::new(
        &ls,
        p["signal_var"].as_f64().expect("s2") / y2,
        p["noise_var"].as_f64().expect("n2") / y2,
    )?;
    Ok((PseudoInputs::new(zs)?, kern))
}

fn test_nlpd(
    train: &Dataset,
    test: &Dataset,
    z: &PseudoInputs,
    kern: &KernelParams,
    cfg: &FitcConfig,
) -> sgp_trainer::Result<(f64, f64)> {
    let post = fitc_posterior(z, kern, &train.x, &train.y, cfg)?;
    let t = &train.transform;
    let p = post.predict(z, kern, &t.apply_x(&test.raw_x()))?;
    let mean: Vec<f64> = p.mean.iter().map(|m| m * t.y_scale + t.y_mean).collect();
    let var: Vec<f64> = p
        .var
        .iter()
        .map(|v| t.unapply_var(v + p.noise_var))
        .collect();
    let y: Vec<f64> = test.raw_y().iter().copied().collect();
    Ok((post.nlml, mean_nlpd(&mean, &var, &y)))
}

fn main() -> sgp_trainer::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: at_peer_point TRAIN.csv TEST.csv PARAMS.json [fitc|vfe] [SEED]");
        std::process::exit(2);
    }
    let train = Dataset::from_csv(&args[1], None)?;
    let test = Dataset::from_csv(&args[2], None)?;
    let params: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&args[3]).expect("params")).expect("json");
    let approximation = match args.get(4).map(String::as_str) {
        Some("vfe") => Approximation::Vfe,
        _ => Approximation::Fitc,
    };
    let cfg = FitcConfig {
        approximation,
        ..FitcConfig::default()
    };
    let seed = args.get(5).map_or(0, |s| s.parse().expect("seed"));
    let sparse = SparseParams {
        m: params["fitted"]["z"].as_array().expect("z").len(),
        approximation,
        seed,
        ..SparseParams::default()
    };
    let long = OptimiseOptions {
        max_iter: 1000,
        stall: None,
        ..sparse.optimiser.clone()
    };
    let ours = fit(&train, &FitParams::Spgp(sparse.clone()), &mut |_| {})?;
    let p = ours.set.members[0].predict_raw(&test.raw_x())?;
    let y: Vec<f64> = test.raw_y().iter().copied().collect();
    println!(
        "ours: nlml {:.3} test {:.3} noise {:.2e}",
        ours.report.nlml,
        mean_nlpd(p.mean.as_slice(), p.var.as_slice(), &y),
        ours.report.outputs[0].noise_variance / (train.transform.y_scale * train.transform.y_scale),
    );
    for which in ["start", "fitted"] {
        let (z, kern) = point(&train, &params[which])?;
        let (nlml, nlpd) = test_nlpd(&train, &test, &z, &kern, &cfg)?;
        println!(
            "peer {which}: nlml {nlml:.3} test {nlpd:.3} noise {:.2e}",
            kern.noise_var()
        );
        for (label, options) in [("default", &sparse.optimiser), ("1000 no stall", &long)] {
            let one = std::slice::from_ref(&train);
            let run = fit_sparse(
                one,
                z.clone(),
                vec![kern.clone()],
                cfg,
                options,
                &mut |_| {},
            )?;
            let (nlml2, nlpd2) = test_nlpd(&train, &test, &run.features, &run.kernels[0], &cfg)?;
            println!(
                "   ours from there ({label}): nlml {nlml2:.3} test {nlpd2:.3} noise {:.2e} iters {} {:?}",
                run.kernels[0].noise_var(),
                run.run.iterations,
                run.run.status
            );
        }
    }
    Ok(())
}
