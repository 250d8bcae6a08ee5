//! The way back from a blob of several outputs (format v5, FORMAT.md
//! "Several outputs"): one single-output description per output, which
//! host tools evaluate through the runtime.

use sgp_runtime::{ModelSpec, VarianceForm};

/// Output `p` of a blob's description as a single-output description: the
/// shared basis with that output's own numbers (`p = 0` is the blob's own
/// output), or `None` past the last output.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn output_spec(spec: &ModelSpec, p: usize) -> Option<ModelSpec> {
    let mut single = ModelSpec {
        outputs: Vec::new(),
        class_labels: Vec::new(),
        ..spec.clone()
    };
    if let Some(learning) = &mut single.learning {
        learning.means = vec![learning.means.get(p)?.clone()];
    }
    if p == 0 {
        return Some(single);
    }
    let o = spec.outputs.get(p - 1)?;
    single.target_name.clone_from(&o.name);
    single.beta.clone_from(&o.beta);
    if o.shares_variance() {
        // The first output's factors, scaled so that `W` is `ratio` times
        // the first's: `L` times sqrt(ratio) in the product form, divided
        // by it in the solves (whose inverses `W` sums).
        let root = (o.prior / spec.prior).sqrt();
        let (scale, second) = match spec.variance {
            VarianceForm::Product => (root, root),
            VarianceForm::Solves => (1.0 / root, 1.0 / root),
            // L1 as the solves' one; the whitened covariance is the same.
            VarianceForm::Whitened | VarianceForm::Covariance => (1.0 / root, 1.0),
        };
        single.l1 = spec.l1.iter().map(|v| v * scale).collect();
        single.l2 = spec.l2.iter().map(|v| v * second).collect();
    } else {
        single.l1.clone_from(&o.l1);
        single.l2.clone_from(&o.l2);
    }
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
