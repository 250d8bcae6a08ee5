//! VSGP (Walder, Kim & Schölkopf 2008): SPGP first, every basis width tied
//! to the kernel's length scales, then the widths freed from that start
//! and everything optimised again (the paper's procedure), and once more
//! from every width at twice the length scale; the lower training
//! objective wins. At the start of the second stage the model is exactly
//! the fitted SPGP, so VSGP can only improve the training objective.
//!
//! With several outputs a second start is tried (`concatenated_start`):
//! each output's own SPGP at about `M / P` basis functions side by side,
//! each keeping its output's widths; the lower joint objective wins.

use std::cell::Cell;

use nalgebra::DMatrix;
use sgp_runtime::{Kernel, ModelKind};

use super::progress::{continuing, recording};
use super::restarts::iteration_budget as spgp_budget;
use super::sparse::{fit_final, SparseFit, StartChoice, VarianceSharing};
use super::spgp::fit_pseudo_inputs;
use super::{Checked, Fit, Method, PseudoInit, SparseParams};
use crate::data::Dataset;
use crate::model::features::{Multiscale, PseudoInputs};
use crate::model::kernel::KernelParams;
use crate::numerics::optimise::{OptimiseOptions, Progress};
use crate::{Error, Result};

/// Iterations a VSGP fit may use in all: the SPGP stage's, plus `max_iter`
/// for each of the widths' two starts ([`widths_starts`]).
pub(crate) fn iteration_budget(params: &SparseParams) -> u64 {
    spgp_budget(params) + 2 * params.optimiser.max_iter
}

/// Fits VSGP: SPGP (without a tied variance), then the widths freed (the
/// paper's procedure), and the second start for several outputs.
pub(crate) fn fit_vsgp(
    outputs: &[Dataset],
    params: &Checked<'_, SparseParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    if let (false, Some(why)) = (
        params.kernel == Kernel::SquaredExponential,
        Method::Vsgp.se_only_reason(),
    ) {
        return Err(Error::BadInput(format!(
            "--kernel {}: {why}",
            params.kernel.name()
        )));
    }
    // Iterations are counted over both stages: the second continues from
    // the last iteration the first reported.
    let done = Cell::new(0u64);
    let untied = SparseParams {
        sharing: VarianceSharing::Separate,
        ..(**params).clone()
    };
    let checked = untied.check(&outputs[0])?;
    let (spgp, starts) = fit_pseudo_inputs(
        outputs,
        &checked,
        StartChoice::Objective,
        &mut recording(&done, progress),
    )?;
    let widths_stage = widths_stage_options(&params.optimiser);
    let stage = (&widths_stage, params.sharing);
    let from_spgp = best_of(
        outputs,
        widths_starts(&spgp.features)?,
        &spgp,
        stage,
        &done,
        progress,
    )?;
    let second = concatenated_start(outputs, params).and_then(|start| {
        start
            .map(|(features, kernels)| {
                fit_final(
                    outputs,
                    features,
                    kernels,
                    spgp.config,
                    &widths_stage,
                    params.sharing,
                    &mut continuing(&done, progress),
                )
            })
            .transpose()
    });
    let mut warnings = Vec::new();
    let fit = match second {
        Ok(Some(other)) if other.run.value < from_spgp.run.value => other,
        Ok(_) => from_spgp,
        Err(e) => {
            // The first is a complete fit: a second start that failed only
            // costs the choice.
            warnings.push(format!(
                "VSGP's second start (each output's own SPGP at M / P basis functions, side by \
                 side) failed, so the model comes from the shared SPGP's start alone: {e}"
            ));
            from_spgp
        }
    };
    let mut fit = fit.into_fit(outputs, ModelKind::Vsgp, Method::Vsgp)?;
    fit.report.starts = starts;
    fit.report.warnings = warnings;
    Ok(fit)
}

/// The optimiser settings of the stage that frees the widths: the caller's
/// without the `rel_tol` test, so the stall test and `max_iter` end it.
/// That stage starts at the fitted SPGP, a stationary point of SPGP's
/// parameters but not of the widths', and L-BFGS's first step there is
/// plain steepest descent, with no curvature to scale it: where the
/// objective is steep along a few widths its line search can only take a
/// tiny step, whose relative decrease (below 1e-9) the `rel_tol` test read
/// as convergence after one iteration, leaving the widths at SPGP's
/// (docs/src/benchmarks.md, "VSGP against GPflow's multiscale FITC").
fn widths_stage_options(optimiser: &OptimiseOptions) -> OptimiseOptions {
    OptimiseOptions {
        rel_tol: 0.0,
        ..optimiser.clone()
    }
}

/// The widths stage from each of `starts` in turn on `outputs` (each run
/// counted after the earlier ones in `done`), SPGP's kernels the start of
/// every run: the run of lowest training objective, the first on ties.
fn best_of(
    outputs: &[Dataset],
    starts: Vec<Multiscale>,
    spgp: &SparseFit<PseudoInputs>,
    (options, sharing): (&OptimiseOptions, VarianceSharing),
    done: &Cell<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<SparseFit<Multiscale>> {
    let mut best: Option<SparseFit<Multiscale>> = None;
    for start in starts {
        // Each run's iterations are shown after all earlier runs' (a run
        // reports its own count from 1; `shown` keeps its last).
        let shown = Cell::new(0);
        let fit = fit_final(
            outputs,
            start,
            spgp.kernels.clone(),
            spgp.config,
            options,
            sharing,
            &mut recording(&shown, &mut continuing(done, progress)),
        )?;
        done.set(done.get() + shown.get());
        if best.as_ref().is_none_or(|b| fit.run.value < b.run.value) {
            best = Some(fit);
        }
    }
    best.ok_or_else(|| Error::Numerical("VSGP's widths stage had no start".into()))
}

/// The widths stage's starts, in the order ties are broken: SPGP's widths
/// (the paper's procedure: at the start the model is exactly the fitted
/// SPGP, so VSGP can only improve the training objective), then every
/// basis width at twice the length scale (on heteroscedastic data the
/// optimum reached from SPGP's, the narrowest, is often a poorer basin
/// than one reached from wider basis functions): `Delta = l^2 (1/2 + 7/2)
/// = (2 l)^2` (`rho = ln 3.5`), the width GPflow's `Multiscale` starts at
/// when its offsets start at the length scales (`Delta = (l + r)^2`,
/// `r = l`).
fn widths_starts(spgp: &PseudoInputs) -> Result<Vec<Multiscale>> {
    let z = spgp.z();
    let wide = DMatrix::from_element(z.nrows(), z.ncols(), libm::log(3.5));
    Ok(vec![
        Multiscale::from_pseudo_inputs(spgp),
        Multiscale::new(z.clone(), wide)?,
    ])
}

/// Widest start width of [`concatenated_start`], as `rho`: `l^2 (1/2 +
/// e^2)`, about 2.8 times the shared length scale (wider starts left the
/// optimiser far from the optimum of the start from SPGP).
const CONCATENATED_WIDEST_RHO: f64 = 2.0;

/// VSGP's start from each output's own SPGP fit at about `M / P` basis
/// functions: their pseudo-inputs side by side, each keeping its own
/// output's length scales as its widths (at most
/// [`CONCATENATED_WIDEST_RHO`]), under the shortest length scale of each
/// input. `None` for one output, fewer than two basis functions per
/// output, or pseudo-inputs given by the caller (who chose the start).
fn concatenated_start(
    outputs: &[Dataset],
    params: &SparseParams,
) -> Result<Option<(Multiscale, Vec<KernelParams>)>> {
    let n_out = outputs.len();
    let given = matches!(params.pseudo_init, PseudoInit::Given(_));
    if n_out < 2 || params.m < 2 * n_out || given {
        return Ok(None);
    }
    let mut centres: Vec<Vec<f64>> = Vec::new();
    let mut lengths: Vec<Vec<f64>> = Vec::new();
    let mut kernels = Vec::new();
    for (k, out) in outputs.iter().enumerate() {
        let m = params.m / n_out + usize::from(k < params.m % n_out);
        let own = SparseParams {
            m,
            ..params.clone()
        };
        let one = std::slice::from_ref(out);
        let (fit, _) =
            fit_pseudo_inputs(one, &own.check(out)?, StartChoice::Objective, &mut |_| {})?;
        let l: Vec<f64> = fit.kernels[0].log_lengthscales.clone();
        for row in fit.features.z().row_iter() {
            centres.push(row.iter().copied().collect());
            lengths.push(l.clone());
        }
        kernels.extend(fit.kernels);
    }
    let d = lengths.first().map_or(0, Vec::len);
    let shortest: Vec<f64> = (0..d)
        .map(|j| lengths.iter().map(|l| l[j]).fold(f64::INFINITY, f64::min))
        .collect();
    let rho = DMatrix::from_fn(centres.len(), d, |i, j| {
        let ratio = libm::exp(2.0 * (lengths[i][j] - shortest[j]));
        libm::log(ratio - 0.5).min(CONCATENATED_WIDEST_RHO)
    });
    let centres = DMatrix::from_fn(centres.len(), d, |i, j| centres[i][j]);
    for kern in &mut kernels {
        kern.log_lengthscales = shortest.clone();
    }
    Ok(Some((Multiscale::new(centres, rho)?, kernels)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::spgp_hs::tests::test_nlpd;
    use crate::fit::{fit, FitParams};
    use crate::model::features::BasisWidths;
    use crate::model::inference::Approximation;
    use crate::synth::synthetic;
    use crate::Error;

    fn data(n: usize) -> Dataset {
        let (x, y) = synthetic(n, 2, 3);
        Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).expect("valid")
    }

    fn params(m: usize, approximation: Approximation, restarts: usize) -> SparseParams {
        SparseParams {
            m,
            approximation,
            restarts,
            optimiser: OptimiseOptions {
                max_iter: 25,
                ..OptimiseOptions::default()
            },
            ..SparseParams::default()
        }
    }

    #[test]
    fn starts_from_spgp_and_does_not_worsen_it() {
        let train = data(120);
        for (approximation, restarts) in [(Approximation::Fitc, 1), (Approximation::Vfe, 2)] {
            let p = params(6, approximation, restarts);
            let spgp = fit(&train, &FitParams::Spgp(p.clone()), &mut |_| {}).expect("fits");
            let mut last = 0;
            let vsgp = fit(&train, &FitParams::Vsgp(p.clone()), &mut |pr| {
                assert!(pr.iteration >= last, "iterations count up over both stages");
                last = pr.iteration;
            })
            .expect("fits");
            assert!(last <= FitParams::Vsgp(p.clone()).iteration_budget());
            assert_eq!(
                FitParams::Vsgp(p.clone()).iteration_budget(),
                p.iteration_budget() + 2 * 25
            );
            let run = vsgp.report.optimiser.as_ref().expect("gradient fit");
            // The widths' first start is exactly the fitted SPGP (and the
            // widened start wins only below it), so VSGP ends no higher.
            assert!(run.initial_nlml.is_finite() && vsgp.report.nlml <= run.initial_nlml);
            assert!(vsgp.report.nlml <= spgp.report.nlml);
            assert_eq!(vsgp.report.method, Method::Vsgp);
            assert_eq!(vsgp.report.approximation, Some(approximation));
            assert_eq!(vsgp.report.starts.len(), spgp.report.starts.len());
            assert_eq!(vsgp.set.members[0].kind, ModelKind::Vsgp);
            match &vsgp.set.members[0].form.basis.widths {
                BasisWidths::PerBasis(w) => assert_eq!(w.shape(), (6, 2)),
                other => panic!("expected per-basis widths, got {other:?}"),
            }
            // The blob carries them, and the model can be rebuilt with more
            // jitter (the export cure) through the multiscale features.
            assert!(
                vsgp.set.members[0]
                    .to_spec()
                    .expect("fits a blob")
                    .shape
                    .per_basis
            );
            assert!(vsgp.with_jitter(1e-4, 0).is_ok());
            assert!(vsgp.with_jitter(1e-4, 3).is_ok());
        }
    }

    /// On noise that grows along the input, free widths fit FITC's
    /// input-dependent variance far better than SPGP's: on every seed
    /// VSGP's training objective ends well below SPGP's (by more than 5
    /// nats on 200 rows; the widths' stage stopping after its first
    /// steepest-descent step, or staying in the narrow widths' basin,
    /// left it at SPGP's on some seeds).
    #[test]
    fn widths_improve_fitc_on_heteroscedastic_noise_on_every_seed() {
        for seed in 0..4 {
            let train = crate::synth::dataset(crate::synth::Shape::Heteroscedastic, 200, seed)
                .expect("valid");
            let p = SparseParams {
                seed,
                ..params(10, Approximation::Fitc, 4)
            };
            let p = SparseParams {
                optimiser: OptimiseOptions::default(),
                ..p
            };
            let spgp = fit(&train, &FitParams::Spgp(p.clone()), &mut |_| {}).expect("fits");
            let vsgp = fit(&train, &FitParams::Vsgp(p), &mut |_| {}).expect("fits");
            assert!(
                vsgp.report.nlml < spgp.report.nlml - 5.0,
                "seed {seed}: VSGP {} against SPGP {}",
                vsgp.report.nlml,
                spgp.report.nlml
            );
        }
    }

    /// The diabetes data of the LARS paper (442 rows, ten inputs), raw.
    fn diabetes() -> Dataset {
        let text = include_str!("../../tests/data/diabetes.csv");
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let names: Vec<String> = lines
            .next()
            .expect("header")
            .split(',')
            .map(str::to_string)
            .collect();
        let rows: Vec<Vec<f64>> = lines
            .map(|l| {
                l.split(',')
                    .map(|v| v.trim().parse().expect("number"))
                    .collect()
            })
            .collect();
        let x = DMatrix::from_fn(rows.len(), 10, |i, j| rows[i][j]);
        let y = nalgebra::DVector::from_fn(rows.len(), |i, _| rows[i][10]);
        Dataset::from_raw(x, y, names[..10].to_vec(), names[10].clone()).expect("valid")
    }

    /// `params` fitted as `sgp fit --model NAME` fits it: the objective
    /// open, chosen on held-out rows.
    fn named(train: &Dataset, params: FitParams) -> Fit {
        let request = crate::choose::Request {
            asked: crate::choose::Asked::Family(params),
            held_out: true,
            choose_objective: true,
            choose_kernel: false,
        };
        crate::choose::fit(train, &request, &mut |_| {}).expect("fits")
    }

    /// FITC over-fits diabetes (332 rows of ten inputs, M = 25) and VSGP's
    /// widths let it further; SPGP asked by name weighs VFE on held-out rows
    /// and takes it there. With FITC always, VSGP was 0.06 to 0.37 behind
    /// SPGP's test NLPD on each of four seeded 332/110 splits (mean 0.16).
    /// Asked by name, VSGP weighs its objective the same way: where VFE
    /// wins the held-out rows it matches SPGP (within 0.02 on at least two
    /// of the four splits), and it is never further behind on average.
    #[test]
    fn a_named_vsgp_weighs_its_objective_and_keeps_up_with_spgp() {
        let data = diabetes();
        let mut gaps = Vec::new();
        for seed in 0..4 {
            let (train, test) = data.split(110.0 / 442.0, seed).expect("splits");
            let p = SparseParams {
                m: 25,
                seed,
                ..SparseParams::default()
            };
            let spgp = named(&train, FitParams::Spgp(p.clone()));
            let vsgp = named(&train, FitParams::Vsgp(p));
            assert_eq!(vsgp.set.members[0].kind, ModelKind::Vsgp);
            gaps.push(test_nlpd(&vsgp, &test) - test_nlpd(&spgp, &test));
        }
        let close = gaps.iter().filter(|g| g.abs() <= 0.02).count();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!(
            close >= 2 && mean <= 0.15,
            "VSGP's test NLPD minus SPGP's: {gaps:?}"
        );
    }

    #[test]
    fn more_basis_functions_than_rows_is_a_clear_error() {
        let train = data(5);
        let err = fit(
            &train,
            &FitParams::Vsgp(params(6, Approximation::Fitc, 1)),
            &mut |_| {},
        )
        .expect_err("M > N");
        assert!(matches!(err, Error::BadInput(_)), "{err}");
        assert!(err.to_string().contains("--m"), "{err}");
    }
}
