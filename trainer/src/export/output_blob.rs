//! One blob for the outputs of a multi-output fit (format v5, FORMAT.md
//! "Several outputs"), and the way back: one single-output description
//! per output, which host tools evaluate through the runtime.

use sgp_runtime::{ModelSpec, OutputSpec, VarianceForm};

use crate::export::Exported;
use crate::model::{ModelSet, TrainedModel};
use crate::{Error, Result};

/// The set's blob: the first member's description with the others' own
/// numbers as its further outputs, in the variance form every member
/// passed its check in (`exported`, one per member, from
/// [`crate::export::cure::export_outputs`]).
///
/// # Errors
/// An empty set, or a member that cannot be described or encoded.
pub fn set_blob(set: &ModelSet, exported: &[Exported]) -> Result<Vec<u8>> {
    let product = exported.iter().all(|e| e.variance == VarianceForm::Product);
    let spec_of = |m: &TrainedModel| {
        if product {
            m.to_product_spec()
        } else {
            m.to_spec()
        }
    };
    let mut members = set.members.iter().map(spec_of);
    let mut spec = members
        .next()
        .ok_or_else(|| Error::BadInput("no output to export".into()))??;
    for (p, member) in members.enumerate() {
        let m = member?;
        let shared = m.centres == spec.centres
            && m.widths == spec.widths
            && m.amplitudes == spec.amplitudes
            && m.projection == spec.projection
            && m.x_mean == spec.x_mean
            && m.x_scale == spec.x_scale
            && m.shape == spec.shape;
        if !shared {
            return Err(Error::BadInput(format!(
                "output {} does not share the first output's basis",
                p + 2
            )));
        }
        spec.outputs.push(OutputSpec {
            name: m.target_name,
            beta: m.beta,
            l1: m.l1,
            l2: m.l2,
            prior: m.prior,
            noise: m.noise,
            bias: m.bias,
            y_mean: m.y_mean,
            y_scale: m.y_scale,
        });
    }
    Ok(spec.to_bytes()?)
}

/// Output `p` of a blob's description as a single-output description: the
/// shared basis with that output's own numbers (`p = 0` is the blob's own
/// output), or `None` past the last output.
pub fn output_spec(spec: &ModelSpec, p: usize) -> Option<ModelSpec> {
    let mut single = ModelSpec {
        outputs: Vec::new(),
        class_labels: Vec::new(),
        ..spec.clone()
    };
    if p == 0 {
        return Some(single);
    }
    let o = spec.outputs.get(p - 1)?;
    single.target_name.clone_from(&o.name);
    single.beta.clone_from(&o.beta);
    single.l1.clone_from(&o.l1);
    single.l2.clone_from(&o.l2);
    single.prior = o.prior;
    single.noise = o.noise;
    single.bias = o.bias;
    single.y_mean = o.y_mean;
    single.y_scale = o.y_scale;
    Some(single)
}

/// Every output of a blob's description as a single-output description,
/// in output order.
pub fn output_specs(spec: &ModelSpec) -> Vec<ModelSpec> {
    (0..=spec.outputs.len())
        .filter_map(|p| output_spec(spec, p))
        .collect()
}
