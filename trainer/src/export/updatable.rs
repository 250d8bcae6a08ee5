//! The export of a model that learns on the device (`sgp fit
//! --updatable`): the whitened form of format version 7
//! ([`crate::model::updatable`]), held to the same runtime check as every
//! other blob.

use nalgebra::DMatrix;
use sgp_runtime::VarianceForm;

use crate::export::{compare_set, far_points, refusal, Exported, Fidelity};
use crate::model::inference::Approximation;
use crate::model::updatable::observation_of;
use crate::model::ModelSet;
use crate::{Error, Result};

/// Encodes `set` as an updatable blob (its members fitted with the sparse
/// objective `approximation`, or a binary classifier) and compares the
/// runtime's f32 predictions with the trainer's at `check_x` and far
/// points, as [`crate::export::check_set`] does.
///
/// # Errors
/// A set that cannot learn on the device
/// ([`crate::model::updatable::observation_of`], one-factor members),
/// [`Error::Fidelity`] if the check fails and `force` is false, or the
/// runtime's refusal of the blob.
pub fn export_updatable(
    set: &ModelSet,
    check_x: &DMatrix<f64>,
    approximation: Option<Approximation>,
    force: bool,
) -> Result<Exported> {
    let first = set
        .members
        .first()
        .ok_or_else(|| Error::BadInput("a model set needs at least one member".into()))?;
    let observation = observation_of(set.link()?, approximation)?;
    let blob = set.to_whitened_spec(observation)?.to_bytes()?;
    let far = far_points(first, 16, 0x5eed);
    let points = DMatrix::from_rows(&check_x.row_iter().chain(far.row_iter()).collect::<Vec<_>>());
    let mut precision = Vec::new();
    for member in &set.members {
        for warning in crate::export::precision::for_model(member, check_x) {
            if !precision.contains(&warning) {
                precision.push(warning);
            }
        }
    }
    let outputs = compare_set(set, &blob, &points)?;
    let exported = Exported {
        blob,
        variance: VarianceForm::Whitened,
        product_refused: Some(format!(
            "an updatable blob keeps the whitened form ({} rows)",
            observation.name()
        )),
        fidelity: Fidelity::worst(&outputs),
        outputs,
        precision,
    };
    if !exported.fidelity.passes() && !force {
        return Err(refusal(&exported, ""));
    }
    Ok(exported)
}
