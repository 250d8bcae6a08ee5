use sgp_trainer::demo::{bunched_left, demo_data, demo_test_set};
use sgp_trainer::evaluate::figures;
use sgp_trainer::fit::{fit, FitParams, HyperInit, PseudoInit, SparseParams};
use sgp_trainer::inference::Approximation;
use sgp_trainer::optimise::OptimiseOptions;
fn main() {
    for seed in [1u64, 2, 3] {
        let data = demo_data(200, seed).unwrap();
        let (tx, ty) = demo_test_set(400, seed + 1000);
        for (approx, hyper, iters) in [
            (Approximation::Fitc, HyperInit::DataScales, 200),
            (Approximation::Fitc, HyperInit::DataScales, 2000),
            (Approximation::Fitc, HyperInit::ExactSubset, 200),
            (Approximation::Vfe, HyperInit::DataScales, 200),
        ] {
            let p = FitParams::Spgp(SparseParams {
                m: 20,
                seed,
                approximation: approx,
                hyper_init: hyper,
                optimiser: OptimiseOptions {
                    max_iter: iters,
                    ..OptimiseOptions::default()
                },
                pseudo_init: PseudoInit::Given(bunched_left(&data, 20)),
                ..SparseParams::default()
            });
            let f = fit(&data, &p, &mut |_| {}).unwrap();
            let z = data.transform.unapply_x(&f.model.form.basis.centres);
            let mut v: Vec<f64> = z.iter().copied().collect();
            v.sort_by(f64::total_cmp);
            let pr = f.model.predict_raw(&tx).unwrap();
            let e = figures(pr.mean.as_slice(), pr.var.as_slice(), ty.as_slice());
            let gap = v.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
            println!("seed {seed} {approx:?} {hyper:?} it {iters}: nlml {:.2} rmse {:.4} nlpd {:.4} min {:.2} max {:.2} maxgap {:.2} iters {}", f.report.nlml, e.rmse, e.nlpd, v[0], v[19], gap, f.report.optimiser.as_ref().unwrap().iterations);
            println!(
                "   {}",
                v.iter()
                    .map(|p| format!("{p:.2}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
}
