//! The exact GP classifier (`--model exact` on a binary target): Laplace's
//! approximation with a probit likelihood ([`crate::model::inference::laplace`]),
//! ARD hyperparameters fitted to its approximate marginal likelihood on a
//! random subset of at most `max_points` rows. It is the reference the
//! sparse classifiers are judged against, the source of the IVM's kernel,
//! and a deployable model for small data sets (basis = its training inputs,
//! one triangular factor, as the IVM).
//!
//! The probit's bias is fixed as the IVM's, `b = Phi^{-1}(r)` with `r` the
//! fraction of positive labels: the zero-mean prior then starts from the
//! base rate instead of even odds.

use nalgebra::{DMatrix, DVector};
use sgp_runtime::{Link, ModelKind};

use super::exact::training_subset;
use super::{
    data_scale_kernel, Checked, ExactParams, FitReport, Fitted, Hyperparameters, Method,
    OptimiserReport,
};
use crate::data::{Dataset, TargetKind};
use crate::model::inference::laplace::{laplace_posterior, LaplaceObjective};
use crate::model::kernel::KernelParams;
use crate::model::likelihood::norm_quantile;
use crate::model::TrainedModel;
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{minimise, OptimiseOptions, OptimiseReport, Progress};
use crate::{Error, Result};

/// The probit bias `Phi^{-1}(r)`, `r` the fraction of labels `y > 0`.
pub(crate) fn probit_bias(y: &DVector<f64>) -> f64 {
    let positive = y.iter().filter(|&&v| v > 0.0).count() as f64;
    norm_quantile(positive / y.len().max(1) as f64)
}

/// Fits the Laplace classifier's kernel to inputs `x` and labels `y` (±1)
/// from `start`.
pub(crate) fn optimise_laplace(
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    bias: f64,
    start: KernelParams,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(KernelParams, OptimiseReport)> {
    let objective = LaplaceObjective::new(x, y, bias, start);
    let run = minimise(
        |v| objective.objective(v),
        objective.initial(),
        &optimiser.for_rows(x.nrows()),
        progress,
    )?;
    Ok((objective.unpack(&run.x)?, run))
}

/// Fits the exact GP classifier.
pub(crate) fn fit_exact_classifier(
    data: &Dataset,
    params: &Checked<'_, ExactParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    let TargetKind::Binary { positive } = data.target else {
        return Err(Error::BadInput(
            "the exact GP classifier needs a binary target".into(),
        ));
    };
    let subset = training_subset(data, params.max_points, params.seed)?;
    let bias = probit_bias(&subset.y);
    let start = data_scale_kernel(&subset, params.kernel)?;
    let (kern, run) = optimise_laplace(
        &subset.x,
        &subset.y,
        bias,
        start,
        &params.optimiser,
        progress,
    )?;
    let jitter = JitterPolicy::default();
    let posterior = laplace_posterior(&kern, &subset.x, &subset.y, bias, None)?;
    let mut report = FitReport::new(
        Method::Exact,
        data,
        subset.n_rows(),
        &kern,
        posterior.nlml(),
        0,
    );
    report.optimiser = Some(OptimiserReport::new(&run, params.optimiser.max_iter));
    let model = TrainedModel {
        kind: ModelKind::Exact,
        link: Link::Probit,
        form: posterior.runtime_form(&jitter)?,
        transform: data.transform.clone(),
        input_names: data.input_names.clone(),
        target_name: data.target_name.clone(),
        bias,
        positive_class: positive,
    };
    // The export cure: the same mode, more jitter on K + W^{-1} (the kernel
    // is kept: the Laplace objective has no jitter to adapt to).
    let rebuild = move |jitter: JitterPolicy, _max_iter: u64| {
        Ok((
            posterior.runtime_form(&jitter)?,
            posterior.nlml(),
            Hyperparameters::new(&kern, &subset.transform),
        ))
    };
    Ok(Fitted::new(
        model,
        report,
        jitter.initial,
        Box::new(rebuild),
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use nalgebra::{DMatrix, DVector};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use rand_distr::StandardNormal;

    use crate::data::Dataset;
    use crate::evaluate::metrics::error_rate;
    use crate::export::{check, PROBABILITY_TOLERANCE};
    use crate::fit::{fit, ExactParams, FitParams};

    /// A 6-D annulus: the label is `0.8 < |(x1, x2)| < 1.6`, the other four
    /// inputs are irrelevant, 5% of the labels flipped.
    pub(crate) fn noisy_ring(rows: usize, seed: u64) -> Dataset {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let x = DMatrix::from_fn(rows, 6, |_, _| rng.sample::<f64, _>(StandardNormal));
        let y = DVector::from_fn(rows, |i, _| {
            let r = x[(i, 0)].hypot(x[(i, 1)]);
            let inside = r > 0.8 && r < 1.6;
            f64::from(u8::from(inside != (rng.random::<f64>() < 0.05)))
        });
        let names = (1..=6).map(|j| format!("x{j}")).collect();
        Dataset::from_raw(x, y, names, "class".into())
            .unwrap()
            .into_binary(None)
            .unwrap()
    }

    /// Test error of a fit on `train`, and the fit.
    pub(crate) fn test_error(
        train: &Dataset,
        test: &Dataset,
        params: &FitParams,
    ) -> (f64, crate::fit::Fitted) {
        let fitted = fit(train, params, &mut |_| {}).unwrap();
        let p = fitted.model.predict_raw(&test.raw_x()).unwrap();
        (error_rate(p.mean.as_slice(), test.y.as_slice()), fitted)
    }

    #[test]
    fn ard_switches_off_the_irrelevant_inputs_and_exports() {
        let train = noisy_ring(400, 1);
        let test = noisy_ring(1000, 2);
        let params = FitParams::Exact(ExactParams::default());
        let (err, fitted) = test_error(&train, &test, &params);
        // The Bayes error is 5%; a model blind to the ring is near 45%.
        assert!(err < 0.15, "test error {err}");
        let l = &fitted.report.hyper.lengthscales;
        let informative = l[0].max(l[1]);
        assert!(
            l[2..].iter().all(|&v| v > 5.0 * informative),
            "length scales {l:?}"
        );
        let exported = check(&fitted.model, &test.raw_x()).unwrap();
        assert!(
            exported.fidelity.passes(),
            "{}",
            exported.fidelity.describe()
        );
        assert!(exported.fidelity.worst_mean <= PROBABILITY_TOLERANCE);
        let spec = sgp_runtime::ModelSpec::from_bytes(&exported.blob).unwrap();
        assert_eq!(spec.shape.kind, sgp_runtime::ModelKind::Exact);
        assert_eq!(spec.shape.link, sgp_runtime::Link::Probit);
        // Same seed, same model.
        let again = fit(&train, &params, &mut |_| {}).unwrap();
        assert_eq!(again.model.form, fitted.model.form);
    }
}
