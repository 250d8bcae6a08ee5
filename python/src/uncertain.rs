//! Prediction at a Gaussian input for `Model.predict_uncertain`: the
//! runtime's `Uncertain` (f32, as a device; with derivatives, its f64 path
//! and their derivatives) at one of a few capacity classes, on a thread
//! with room for them.

use sgp_runtime::{Model, ModelSpec, Uncertain};
use sgp_trainer::{Error, Result};

/// The moments, flattened C-order in the order of the named tuple:
/// mean (P), covariance (P, P), input-output (D, P), and with derivatives
/// `dmean_dmu` (P, D), `dmean_dcov` (P, D, D), `dcov_dmu` (P, P, D),
/// `dcov_dcov` (P, P, D, D), `dinput_output_dmu` (D, P, D),
/// `dinput_output_dcov` (D, P, D, D).
pub(crate) fn moments(
    blob: &[u8],
    spec: &ModelSpec,
    mean: &[f32],
    cov: &[f32],
    derivatives: bool,
) -> Result<Vec<Vec<f64>>> {
    let (m, d, p) = (
        usize::from(spec.shape.n_basis),
        usize::from(spec.shape.input_dim.max(spec.shape.feature_dim)),
        spec.output_count(),
    );
    let class = |classes: &[usize], need: usize| classes.iter().copied().find(|&c| c >= need);
    let (Some(mc), Some(dc), Some(pc)) = (
        class(&[32, 128, 512], m),
        class(&[8, 32], d),
        class(&[1, 4, 16], p),
    ) else {
        return Err(too_large(m, d, p));
    };
    let run = move || -> Result<Vec<Vec<f64>>> {
        macro_rules! classes {
            ($(($m:literal, $d:literal, $p:literal)),*) => {
                match (mc, dc, pc) {
                    $(($m, $d, $p) => run::<$m, $d, $p>(blob, mean, cov, derivatives),)*
                    _ => Err(too_large(m, d, p)),
                }
            };
        }
        classes!(
            (32, 8, 1),
            (32, 32, 1),
            (128, 8, 1),
            (128, 32, 1),
            (512, 8, 1),
            (512, 32, 1),
            (32, 8, 4),
            (32, 32, 4),
            (128, 8, 4),
            (32, 8, 16),
            (128, 8, 16)
        )
    };
    // The model, its Uncertain (20 P M^2 bytes) and the derivatives live on
    // this thread's stack: 5.5 MB at the largest class, 64 MB allowed.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("sgp-uncertain".into())
            .stack_size(64 << 20)
            .spawn_scoped(scope, run)
            .map_err(|e| Error::Numerical(format!("cannot start the evaluator thread: {e}")))?
            .join()
            .map_err(|_| Error::Numerical("the runtime evaluator thread panicked".into()))?
    })
}

fn too_large(m: usize, d: usize, p: usize) -> Error {
    Error::BadInput(format!(
        "predict_uncertain evaluates models of at most 512 basis functions and 32 inputs \
         (4 outputs: 128 basis functions and 8 inputs; 16 outputs: 128 and 8); this one has \
         {m}, {d} and {p}"
    ))
}

/// One capacity class; never inlined, so that only the class run takes
/// room on the stack.
#[inline(never)]
fn run<const M: usize, const D: usize, const P: usize>(
    blob: &[u8],
    mean: &[f32],
    cov: &[f32],
    derivatives: bool,
) -> Result<Vec<Vec<f64>>> {
    let model = Model::<M, D, D, P>::from_bytes(blob)?;
    let (d, p) = (model.input_dim(), model.output_count());
    let flat = |value: &dyn Flat, dims: &[usize]| {
        let mut out = Vec::new();
        value.flat(dims, &mut out);
        out
    };
    let uncertain: Uncertain<M, D, P> = match model.uncertain() {
        Ok(uncertain) => uncertain,
        // No closed form (a Matérn kernel, a projection): the unscented
        // transform, the runtime's stated approximation; no derivatives.
        Err(sgp_runtime::Error::NoClosedForm) if !derivatives => {
            let y = model.predict_unscented(mean, cov)?;
            return Ok(vec![
                flat(&y.mean, &[p]),
                flat(&y.covariance, &[p, p]),
                flat(&y.input_output, &[d, p]),
            ]);
        }
        Err(e) => return Err(e.into()),
    };
    if !derivatives {
        let y = uncertain.predict(mean, cov)?;
        return Ok(vec![
            flat(&y.mean, &[p]),
            flat(&y.covariance, &[p, p]),
            flat(&y.input_output, &[d, p]),
        ]);
    }
    let (y, g) = uncertain.predict_with_derivatives(mean, cov)?;
    Ok(vec![
        flat(&y.mean, &[p]),
        flat(&y.covariance, &[p, p]),
        flat(&y.input_output, &[d, p]),
        flat(&g.dmean_dmu, &[p, d]),
        flat(&g.dmean_dcov, &[p, d, d]),
        flat(&g.dcov_dmu, &[p, p, d]),
        flat(&g.dcov_dcov, &[p, p, d, d]),
        flat(&g.dinput_output_dmu, &[d, p, d]),
        flat(&g.dinput_output_dcov, &[d, p, d, d]),
    ])
}

/// A nested array's leading `dims` entries, C-order, as f64.
trait Flat {
    fn flat(&self, dims: &[usize], out: &mut Vec<f64>);
}

impl Flat for f32 {
    fn flat(&self, _: &[usize], out: &mut Vec<f64>) {
        out.push(f64::from(*self));
    }
}

impl<T: Flat, const N: usize> Flat for [T; N] {
    fn flat(&self, dims: &[usize], out: &mut Vec<f64>) {
        let (&first, rest) = dims.split_first().unwrap_or((&N, &[]));
        for item in self.iter().take(first) {
            item.flat(rest, out);
        }
    }
}
