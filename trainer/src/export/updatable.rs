//! The export of a model that learns on the device (`sgp fit
//! --updatable`): the covariance form of format version 9
//! ([`crate::model::updatable`]), held to the same runtime check as every
//! other blob.

use nalgebra::DMatrix;
use sgp_runtime::VarianceForm;

use crate::export::{compare, export, far_points, refusal, Exported, Fidelity};
use crate::fit::Fit;
use crate::model::updatable::observation_of;
use crate::{Error, Result};

/// Exports `fit` as a blob that learns on the device: cured as [`export`]
/// cures it, then the (cured) set in the whitened form, its runtime
/// predictions compared with the trainer's at `check_x` and far points.
///
/// # Errors
/// A fit that cannot learn on the device
/// (`crate::model::updatable::observation_of`, one-factor members),
/// [`Error::Fidelity`] if the check fails and `force` is false, or the
/// runtime's refusal of the blob; as [`export`].
pub fn export_updatable(fit: &mut Fit, check_x: &DMatrix<f64>, force: bool) -> Result<Exported> {
    // Refused before any work: a multi-class link or an exact GP.
    let observation = observation_of(fit.set.link()?, fit.report.approximation)?;
    let cured = export(fit, check_x, force)?;
    let set = &fit.set;
    let first = set
        .members
        .first()
        .ok_or_else(|| Error::BadInput("a model set needs at least one member".into()))?;
    let blob = set.to_whitened_spec(observation)?.to_bytes()?;
    let far = far_points(first, 16, 0x5eed);
    let points = DMatrix::from_rows(&check_x.row_iter().chain(far.row_iter()).collect::<Vec<_>>());
    let outputs = compare(set, &blob, &points)?;
    let exported = Exported {
        blob,
        variance: VarianceForm::Covariance,
        product_refused: Some(format!(
            "an updatable blob keeps the covariance form ({} rows)",
            observation.name()
        )),
        fidelity: Fidelity::worst(&outputs),
        outputs,
        precision: cured.precision,
        cure: cured.cure,
    };
    if !exported.fidelity.passes() && !force {
        return Err(refusal(&exported, ""));
    }
    Ok(exported)
}
