//! The SPGP paper's Figure 1 experiment: on 1-D data, pseudo-inputs started
//! bunched in the leftmost 5% of the data must spread over the data during
//! training, and the fit must approach the exact GP's.
//!
//! Measured on seeds 1 to 8 (the demo's recipe, `demo::figure1_params`):
//! with VFE, on at least 7 of the 8, every pseudo-input ends inside the
//! data range (give or take 2% of it), no gap between neighbours (or
//! between the data's ends and the outermost pseudo-input) exceeds 10% of
//! the range (seen: at most 7.5%); test RMSE within 3% and
//! NLPD within 0.03 nats of the exact GP's, and the median NLPD gap is
//! under 0.01. A property over seeds with a margin, not eight trajectories:
//! a last-bit change in the arithmetic (another CPU's GEMM kernel) moves
//! every trajectory, and one of eight may then strand a pseudo-input.

use sgp_trainer::evaluate::figures;
use sgp_trainer::fit::{fit, ExactParams, FitParams};
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::model::TrainedModel;
use sgp_trainer::tools::demo::{bunched_left, demo_data, demo_test_set, figure1_params};

#[test]
fn pseudo_inputs_spread_from_a_bunched_start_and_match_the_exact_gp() {
    // Each seed's faults; the method must hold on 7 of the 8 seeds (one
    // trajectory may strand a pseudo-input: seen on seed 7 on an AVX2 CPU,
    // -2.57 for data on [0, 5.95]) and the median NLPD gap must be small.
    let mut faults: Vec<String> = Vec::new();
    let mut gaps_nlpd = Vec::new();
    for seed in 1..=8 {
        let data = demo_data(200, seed).unwrap();
        let (test_x, test_y) = demo_test_set(400, seed + 1000);
        let m = 20;
        let raw = data.raw_x();
        let (lo, hi) = (raw.min(), raw.max());
        let range = hi - lo;
        let start = data.transform.unapply_x(&bunched_left(&data, m));
        assert!(start.max() - start.min() < 0.05 * range);

        let params = figure1_params(&data, m, seed, Approximation::Vfe);
        let spgp = fit(&data, &params, &mut |_| {})
            .unwrap()
            .set
            .members
            .remove(0);
        let z = data.transform.unapply_x(&spgp.form.basis.centres);
        let mut z: Vec<f64> = z.iter().copied().collect();
        z.sort_by(f64::total_cmp);
        eprintln!("seed {seed}: pseudo-inputs {z:.2?}");
        let mut fault = Vec::new();
        let inside = (lo - 0.02 * range)..=(hi + 0.02 * range);
        if !z.iter().all(|&p| inside.contains(&p)) {
            fault.push(format!("pseudo-inputs outside the data [{lo:.2}, {hi:.2}]"));
        }
        let gaps = std::iter::once(z[0] - lo)
            .chain(z.windows(2).map(|w| w[1] - w[0]))
            .chain(std::iter::once(hi - z[m - 1]));
        let widest = gaps.fold(0.0, f64::max);
        if widest >= 0.1 * range {
            fault.push(format!(
                "a gap of {:.0}% of the range",
                100.0 * widest / range
            ));
        }

        let exact = FitParams::Exact(ExactParams {
            seed,
            ..ExactParams::default()
        });
        let exact = fit(&data, &exact, &mut |_| {})
            .unwrap()
            .set
            .members
            .remove(0);
        let score = |model: &TrainedModel| {
            let p = model.predict_raw(&test_x).unwrap();
            figures(p.mean.as_slice(), p.var.as_slice(), test_y.as_slice())
        };
        let (s, e) = (score(&spgp), score(&exact));
        if s.rmse >= 1.03 * e.rmse {
            fault.push(format!("SPGP RMSE {} vs exact {}", s.rmse, e.rmse));
        }
        if s.nlpd >= e.nlpd + 0.03 {
            fault.push(format!("SPGP NLPD {} vs exact {}", s.nlpd, e.nlpd));
        }
        gaps_nlpd.push(s.nlpd - e.nlpd);
        if !fault.is_empty() {
            faults.push(format!("seed {seed}: {} ({z:.2?})", fault.join("; ")));
        }
    }
    assert!(
        faults.len() <= 1,
        "the method failed on more than 1 of 8 seeds:\n{}",
        faults.join("\n")
    );
    gaps_nlpd.sort_by(f64::total_cmp);
    let median = 0.5 * (gaps_nlpd[3] + gaps_nlpd[4]);
    assert!(
        median < 0.01,
        "median NLPD gap to the exact GP {median}: {gaps_nlpd:?}"
    );
}
