//! The exact GP, fitted on at most `max_points` rows: the reference model,
//! a source of starting hyperparameters, and a deployable model for small
//! data sets (basis = its training inputs, one triangular factor).

use nalgebra::{DMatrix, DVector};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sgp_runtime::{Kernel, Link, ModelKind};

use super::{
    data_scale_kernel, Checked, ExactParams, FitReport, Fitted, Hyperparameters, Method,
    OptimiserReport,
};
use crate::data::Dataset;
use crate::model::inference::exact::exact_posterior;
use crate::model::inference::objective::ExactObjective;
use crate::model::kernel::KernelParams;
use crate::model::TrainedModel;
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{minimise, OptimiseOptions, Progress};
use crate::Result;

/// A random subset of at most `max_points` rows (all rows if fewer), in
/// the data set's own standardisation so its model exports unchanged.
pub(crate) fn training_subset(data: &Dataset, max_points: usize, seed: u64) -> Result<Dataset> {
    if data.n_rows() <= max_points {
        return Ok(data.clone());
    }
    let mut rows: Vec<usize> = (0..data.n_rows()).collect();
    rows.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    rows.truncate(max_points);
    rows.sort_unstable();
    data.subset(&rows)
}

/// Optimises the exact GP's hyperparameters on `data`.
pub(crate) fn optimise_exact(
    data: &Dataset,
    kernel: Kernel,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(KernelParams, crate::numerics::optimise::OptimiseReport)> {
    optimise_exact_from(
        &data.x,
        &data.y,
        data_scale_kernel(data, kernel)?,
        optimiser,
        progress,
    )
}

/// Optimises the exact GP's hyperparameters on inputs `x` and targets `y`
/// from `kern` (the IVM's regression variant fits its active set so).
pub(crate) fn optimise_exact_from(
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    kern: KernelParams,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(KernelParams, crate::numerics::optimise::OptimiseReport)> {
    let objective = ExactObjective::new(x, y, kern, JitterPolicy::default())?;
    let run = minimise(
        |p| objective.objective(p),
        objective.initial(),
        &optimiser.for_rows(x.nrows()),
        progress,
    )?;
    Ok((objective.unpack(&run.x)?, run))
}

/// Fits the exact GP.
pub(crate) fn fit_exact(
    data: &Dataset,
    params: &Checked<'_, ExactParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    let subset = training_subset(data, params.max_points, params.seed)?;
    let (kern, run) = optimise_exact(&subset, params.kernel, &params.optimiser, progress)?;
    let posterior = exact_posterior(&kern, &subset.x, &subset.y, &JitterPolicy::default())?;
    let mut report = FitReport::new(
        Method::Exact,
        data,
        subset.n_rows(),
        &kern,
        posterior.nlml(),
        posterior.jitter_escalations(),
    );
    report.optimiser = Some(OptimiserReport::new(&run, params.optimiser.max_iter));
    let model = TrainedModel {
        kind: ModelKind::Exact,
        link: Link::Identity,
        form: posterior.runtime_form()?,
        transform: data.transform.clone(),
        input_names: data.input_names.clone(),
        target_name: data.target_name.clone(),
        bias: 0.0,
        positive_class: 0.0,
    };
    let rebuild = move |jitter: JitterPolicy, max_iter: u64| {
        let kernel = if max_iter == 0 {
            kern.clone()
        } else {
            let objective = ExactObjective::new(&subset.x, &subset.y, kern.clone(), jitter)?;
            let options = OptimiseOptions {
                max_iter,
                ..OptimiseOptions::default()
            };
            let run = minimise(
                |p| objective.objective(p),
                objective.initial(),
                &options,
                &mut |_| {},
            )?;
            objective.unpack(&run.x)?
        };
        let post = exact_posterior(&kernel, &subset.x, &subset.y, &jitter)?;
        let hyper = Hyperparameters::new(&kernel, &subset.transform);
        Ok((post.runtime_form()?, post.nlml(), hyper))
    };
    let jitter = JitterPolicy::default().initial;
    Ok(Fitted::new(model, report, jitter, Box::new(rebuild)))
}
