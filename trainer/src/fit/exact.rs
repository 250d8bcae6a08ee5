//! The exact GP on at most `max_points` rows: the reference every other
//! family is judged against, a source of starting hyperparameters, and a
//! deployable model for small data (basis = its training inputs, one
//! triangular factor). Several outputs share the length scales.
//!
//! On a binary target it is the exact GP classifier: Laplace's
//! approximation with a probit likelihood
//! ([`crate::model::inference::laplace`]), its bias fixed at `Phi^{-1}(r)`
//! for `r` the fraction of positive labels, so the zero-mean prior starts
//! from the base rate.

use nalgebra::{DMatrix, DVector};
use sgp_runtime::{Kernel, ModelKind};

use super::{
    data_scale_kernel, Checked, ExactParams, Fit, FitReport, Method, OptimiserReport, OutputReport,
    Rebuilt,
};
use crate::data::{Dataset, TargetKind};
use crate::model::inference::exact::exact_posterior;
use crate::model::inference::laplace::{laplace_posterior, LaplaceObjective};
use crate::model::inference::objective::ExactObjective;
use crate::model::inference::shared::SharedObjective;
use crate::model::kernel::KernelParams;
use crate::model::likelihood::norm_quantile;
use crate::model::{ModelSet, TrainedModel};
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{minimise, OptimiseOptions, OptimiseReport, Progress};
use crate::{Error, Result};

/// Where [`optimise_exact`] starts: each output's kernel, or the data's
/// scales for a covariance function.
#[derive(Clone, Copy)]
pub(crate) enum Start<'a> {
    Kernels(&'a [KernelParams]),
    Scales(Kernel),
}

/// The joint exact objective of `outputs` minimised from `start`: the
/// kernels and the run.
pub(crate) fn optimise_exact(
    outputs: &[Dataset],
    start: Start<'_>,
    jitter: JitterPolicy,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Vec<KernelParams>, OptimiseReport)> {
    let objectives = outputs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let kern = match start {
                Start::Kernels(k) => k.get(i).cloned().ok_or_else(|| {
                    Error::Numerical(format!("no starting kernel for output {i}"))
                })?,
                Start::Scales(kernel) => data_scale_kernel(d, kernel)?,
            };
            ExactObjective::new(&d.x, &d.y, kern, jitter)
        })
        .collect::<Result<_>>()?;
    let joint = SharedObjective::new(objectives)?;
    let rows = outputs.iter().map(Dataset::n_rows).sum();
    let run = minimise(
        |p| joint.objective(p),
        joint.initial(),
        &optimiser.for_rows(rows),
        progress,
    )?;
    let kernels = joint
        .outputs()
        .iter()
        .enumerate()
        .map(|(i, o)| o.unpack(&joint.output_params(&run.x, i)?))
        .collect::<Result<_>>()?;
    Ok((kernels, run))
}

/// Optimises the exact GP's hyperparameters on inputs `x` and targets `y`
/// from `kern` (the IVM's regression variant fits its active set so).
pub(crate) fn optimise_exact_from(
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    kern: KernelParams,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(KernelParams, OptimiseReport)> {
    let objective = ExactObjective::new(x, y, kern, JitterPolicy::default())?;
    let run = minimise(
        |p| objective.objective(p),
        objective.initial(),
        &optimiser.for_rows(x.nrows()),
        progress,
    )?;
    Ok((objective.unpack(&run.x)?, run))
}

/// Fits the exact GP to every output, on the same seeded rows of each.
pub(crate) fn fit_exact(
    outputs: &[Dataset],
    params: &Checked<'_, ExactParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let subsets = outputs
        .iter()
        .map(|d| d.at_most_rows(params.max_points, params.seed))
        .collect::<Result<Vec<_>>>()?;
    let jitter = JitterPolicy::default();
    let (kernels, run) = optimise_exact(
        &subsets,
        Start::Scales(params.kernel),
        jitter,
        &params.optimiser,
        progress,
    )?;
    let mut report = FitReport::new(Method::Exact, subsets[0].n_rows(), 0.0);
    let mut members = Vec::with_capacity(outputs.len());
    for ((full, used), kern) in outputs.iter().zip(&subsets).zip(&kernels) {
        let post = exact_posterior(kern, &used.x, &used.y, &jitter)?;
        report.nlml += post.nlml();
        report.jitter_escalations += post.jitter_escalations();
        report
            .outputs
            .push(OutputReport::named(&full.target_name, Some(post.nlml())));
        members.push(TrainedModel::regression(
            ModelKind::Exact,
            post.runtime_form()?,
            full,
        ));
    }
    report.optimiser = Some(OptimiserReport::new(&run, params.optimiser.max_iter));
    let fitted = kernels.clone();
    // On `K + sigma2 I` the cure's jitter acts as noise, which the
    // re-optimisation would trade the fitted noise for (onto its floor)
    // and the exported variance would lack: it runs with each noise held
    // at least at its fitted value (its floor there), then the floor back.
    let rebuild = move |jitter: JitterPolicy, max_iter: u64| {
        let kernels = if max_iter == 0 {
            kernels.clone()
        } else {
            let options = OptimiseOptions {
                max_iter,
                ..OptimiseOptions::default()
            };
            let held: Vec<KernelParams> = kernels
                .iter()
                .map(|k| k.on_noise_floor(k.noise_var()))
                .collect();
            optimise_exact(
                &subsets,
                Start::Kernels(&held),
                jitter,
                &options,
                &mut |_| {},
            )?
            .0
            .iter()
            .zip(&kernels)
            .map(|(k, fitted)| k.on_noise_floor(fitted.noise_floor))
            .collect()
        };
        let mut forms = Vec::with_capacity(subsets.len());
        let mut nlml = 0.0;
        for (d, kern) in subsets.iter().zip(&kernels) {
            let post = exact_posterior(kern, &d.x, &d.y, &jitter)?;
            nlml += post.nlml();
            forms.push(post.runtime_form()?);
        }
        Ok(Rebuilt {
            forms: super::sparse::folded(forms, false)?,
            biases: None,
            nlml,
            kernels,
            noise_held: true,
        })
    };
    let set = ModelSet {
        members: fold_members(members)?,
        class_labels: Vec::new(),
    };
    Ok(Fit::new(
        set,
        report,
        fitted,
        (jitter.initial, Box::new(rebuild)),
    ))
}

/// `members` on the first one's basis ([`super::sparse::fold_onto`]).
fn fold_members(mut members: Vec<TrainedModel>) -> Result<Vec<TrainedModel>> {
    let forms = members.iter().map(|m| m.form.clone()).collect();
    for (member, form) in members.iter_mut().zip(super::sparse::folded(forms, false)?) {
        member.form = form;
    }
    Ok(members)
}

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

/// Fits the exact GP classifier to a binary target.
pub(crate) fn fit_exact_classifier(
    data: &Dataset,
    params: &Checked<'_, ExactParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let TargetKind::Binary { positive } = data.target else {
        return Err(Error::BadInput(
            "the exact GP classifier needs a binary target".into(),
        ));
    };
    let subset = data.at_most_rows(params.max_points, params.seed)?;
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
    let mut report = FitReport::new(Method::Exact, subset.n_rows(), posterior.nlml());
    report.optimiser = Some(OptimiserReport::new(&run, params.optimiser.max_iter));
    report.outputs = vec![OutputReport::named(
        &data.target_name,
        Some(posterior.nlml()),
    )];
    let form = posterior.runtime_form(&jitter)?;
    let model = TrainedModel::classifier(ModelKind::Exact, form, data, (bias, positive));
    let kernels = vec![kern];
    let fitted = kernels.clone();
    // The export cure: the same mode, more jitter on K + W^{-1} (the kernel
    // is kept: the Laplace objective has no jitter to adapt to).
    let rebuild = move |jitter: JitterPolicy, _max_iter: u64| {
        Ok(Rebuilt {
            forms: vec![posterior.runtime_form(&jitter)?],
            biases: None,
            nlml: posterior.nlml(),
            kernels: kernels.clone(),
            noise_held: false,
        })
    };
    let set = ModelSet::single(model, Vec::new());
    Ok(Fit::new(
        set,
        report,
        fitted,
        (jitter.initial, Box::new(rebuild)),
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
            let r = libm::hypot(x[(i, 0)], x[(i, 1)]);
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
    ) -> (f64, crate::fit::Fit) {
        let fitted = fit(train, params, &mut |_| {}).unwrap();
        let p = fitted.set.members[0].predict_raw(&test.raw_x()).unwrap();
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
        let l = &fitted.report.lengthscales;
        let informative = l[0].max(l[1]);
        assert!(
            l[2..].iter().all(|&v| v > 5.0 * informative),
            "length scales {l:?}"
        );
        let exported = check(&fitted.set, &test.raw_x()).unwrap();
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
        assert_eq!(again.set.members[0].form, fitted.set.members[0].form);
    }
}
