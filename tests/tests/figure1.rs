//! The SPGP paper's Figure 1 experiment: on 1-D data, pseudo-inputs started
//! bunched at the left end spread over the data during training, and the
//! fit approaches the exact GP's.
//!
//! Measures: the trained pseudo-inputs cover at least 60% of the input
//! range (they start in its leftmost 5%), and SPGP's test RMSE and mean
//! NLPD are within 10% and 0.1 nats of the exact GP's.

use sgp_trainer::demo::{bunched_left, demo_data, demo_test_set};
use sgp_trainer::evaluate::figures;
use sgp_trainer::fit::{fit, ExactParams, FitParams, PseudoInit, SparseParams};

#[test]
fn pseudo_inputs_spread_from_a_bunched_start_and_match_the_exact_gp() {
    let data = demo_data(200, 1).unwrap();
    let (test_x, test_y) = demo_test_set(400, 1001);
    let m = 20;
    let start = bunched_left(&data, m);
    let col = data.x.column(0);
    let range = col.max() - col.min();
    assert!(start.max() - start.min() < 0.05 * range);

    let spgp = FitParams::Spgp(SparseParams {
        m,
        seed: 1,
        pseudo_init: PseudoInit::Given(start),
        ..SparseParams::default()
    });
    let spgp_model = fit(&data, &spgp, &mut |_| {}).unwrap().model;
    let centres = &spgp_model.form.basis.centres;
    let spread = centres.max() - centres.min();
    assert!(
        spread > 0.6 * range,
        "pseudo-inputs cover {:.0}% of the range",
        100.0 * spread / range
    );

    let exact = FitParams::Exact(ExactParams {
        seed: 1,
        ..ExactParams::default()
    });
    let exact_model = fit(&data, &exact, &mut |_| {}).unwrap().model;
    let score = |model: &sgp_trainer::model::TrainedModel| {
        let p = model.predict_raw(&test_x).unwrap();
        figures(p.mean.as_slice(), p.var.as_slice(), test_y.as_slice())
    };
    let (s, e) = (score(&spgp_model), score(&exact_model));
    assert!(
        s.rmse < 1.1 * e.rmse,
        "SPGP RMSE {} vs exact {}",
        s.rmse,
        e.rmse
    );
    assert!(
        s.nlpd < e.nlpd + 0.1,
        "SPGP NLPD {} vs exact {}",
        s.nlpd,
        e.nlpd
    );
}
