//! SPGP: FITC with pseudo-inputs, pseudo-inputs and hyperparameters learned
//! jointly by L-BFGS on the NLML.

use sgp_runtime::{Link, ModelKind};

use super::exact::{optimise_exact, training_subset};
use super::{data_scale_kernel, FitParams, FitReport, HyperInit, PseudoInit};
use crate::data::Dataset;
use crate::features::{InducingFeatures, PseudoInputs};
use crate::inference::fitc::{fitc_posterior, FitcConfig};
use crate::inference::objective::SparseObjective;
use crate::init;
use crate::kernel::KernelParams;
use crate::model::TrainedModel;
use crate::optimise::{minimise, OptimiseOptions, Progress};
use crate::Result;

/// Fits SPGP as `params` asks.
pub(crate) fn fit_spgp(
    data: &Dataset,
    params: &FitParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<(TrainedModel, FitReport)> {
    let z = match &params.pseudo_init {
        PseudoInit::RandomSubset => init::random_subset(&data.x, params.m, params.seed)?,
        PseudoInit::KMeans => init::kmeans(&data.x, params.m, params.seed, 100)?,
        PseudoInit::Given(z) => z.clone(),
    };
    let kern = initial_kernel(data, params)?;
    fit_sparse(
        data,
        PseudoInputs::new(z)?,
        kern,
        ModelKind::Spgp,
        &params.optimiser,
        progress,
    )
}

/// Starting hyperparameters for a sparse fit.
fn initial_kernel(data: &Dataset, params: &FitParams) -> Result<KernelParams> {
    match params.hyper_init {
        HyperInit::DataScales => data_scale_kernel(data),
        HyperInit::ExactSubset => {
            let subset = training_subset(data, params.max_points.min(500), params.seed)?;
            let warm_up = FitParams {
                optimiser: OptimiseOptions {
                    max_iter: params.optimiser.max_iter.min(100),
                    ..params.optimiser.clone()
                },
                ..params.clone()
            };
            Ok(optimise_exact(&subset, &warm_up, &mut |_| {})?.0)
        }
    }
}

/// Fits FITC over any kind of inducing feature: the one place the
/// optimiser, the posterior and the runtime form meet.
pub fn fit_sparse<F: InducingFeatures + Clone + Sync>(
    data: &Dataset,
    features: F,
    kern: KernelParams,
    kind: ModelKind,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(TrainedModel, FitReport)> {
    let config = FitcConfig::default();
    let objective = SparseObjective::new(&data.x, &data.y, features, kern, config)?;
    let run = minimise(
        |p| objective.objective(p),
        objective.initial(),
        optimiser,
        progress,
    )?;
    let (features, kern) = objective.unpack(&run.x)?;
    let posterior = fitc_posterior(&features, &kern, &data.x, &data.y, &config)?;
    let report = FitReport::new(
        data,
        data.n_rows(),
        &kern,
        &run,
        posterior.jitter_escalations,
    );
    let model = TrainedModel {
        kind,
        link: Link::Identity,
        form: posterior.runtime_form(&features, &kern),
        transform: data.transform.clone(),
        input_names: data.input_names.clone(),
        target_name: data.target_name.clone(),
        bias: 0.0,
    };
    Ok((model, report))
}
