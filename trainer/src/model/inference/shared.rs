//! The objective of several outputs on one basis: the sum of each output's
//! own objective (FITC, VFE or the exact NLML), all of them seeing the same
//! features and length scales, each with its own signal and noise variance.
//!
//! Layout: one copy of the shared block of [`super::objective`]'s layout,
//! then each output's pair: `[shared | log s2_1, noise_1 | ... | log s2_P,
//! noise_P]`; the gradient sums the outputs' in the shared block. The
//! outputs run in parallel and are summed in output order, so the value is
//! the same from run to run.

use rayon::prelude::*;

use super::objective::{ExactObjective, ParamLayout, SparseObjective};
use crate::model::features::InducingFeatures;
use crate::{Error, Result};

/// Parameters each output owns: `log s2` and `log_noise_excess`.
pub(crate) const OWN_PARAMS: usize = 2;

/// One output's objective over the single-output layout.
pub(crate) trait OutputObjective: Sync {
    /// The starting vector.
    fn initial(&self) -> Vec<f64>;
    /// The layout of the vector.
    fn layout(&self) -> ParamLayout;
    /// The objective and its gradient at `p`.
    fn objective(&self, p: &[f64]) -> Result<(f64, Vec<f64>)>;
}

impl<F: InducingFeatures + Clone + Sync> OutputObjective for SparseObjective<'_, F> {
    fn initial(&self) -> Vec<f64> {
        SparseObjective::initial(self)
    }
    fn layout(&self) -> ParamLayout {
        SparseObjective::layout(self)
    }
    fn objective(&self, p: &[f64]) -> Result<(f64, Vec<f64>)> {
        SparseObjective::objective(self, p)
    }
}

impl OutputObjective for ExactObjective<'_> {
    fn initial(&self) -> Vec<f64> {
        ExactObjective::initial(self)
    }
    fn layout(&self) -> ParamLayout {
        ExactObjective::layout(self)
    }
    fn objective(&self, p: &[f64]) -> Result<(f64, Vec<f64>)> {
        ExactObjective::objective(self, p)
    }
}

/// The sum of `P` outputs' objectives over the joint layout of the module
/// documentation.
#[derive(Clone, Debug)]
pub(crate) struct SharedObjective<O> {
    outputs: Vec<O>,
    shared: usize,
}

impl<O: OutputObjective> SharedObjective<O> {
    /// The joint objective of `outputs`, which must all have one layout
    /// with a Gaussian noise (the shared block starts from the first
    /// output's values).
    ///
    /// # Errors
    /// [`Error::BadInput`] for no outputs or layouts that differ.
    pub fn new(outputs: Vec<O>) -> Result<Self> {
        let layout = outputs
            .first()
            .ok_or_else(|| Error::BadInput("a multi-output fit needs at least one output".into()))?
            .layout();
        if !layout.noise || outputs.iter().any(|o| o.layout() != layout) {
            return Err(Error::BadInput(
                "the outputs of a multi-output fit must share one parameter layout".into(),
            ));
        }
        Ok(Self {
            shared: layout.len() - OWN_PARAMS,
            outputs,
        })
    }

    /// Number of outputs `P`.
    pub fn n_outputs(&self) -> usize {
        self.outputs.len()
    }

    /// Length of the joint vector.
    pub fn len(&self) -> usize {
        self.shared + OWN_PARAMS * self.outputs.len()
    }

    /// The per-output objectives.
    pub fn outputs(&self) -> &[O] {
        &self.outputs
    }

    /// The starting joint vector: the first output's shared block, then
    /// every output's own pair.
    pub fn initial(&self) -> Vec<f64> {
        let mut p: Vec<f64> = Vec::with_capacity(self.len());
        for (i, o) in self.outputs.iter().enumerate() {
            let own = o.initial();
            if i == 0 {
                p.extend_from_slice(&own[..self.shared]);
            }
            p.extend_from_slice(&own[self.shared..]);
        }
        p
    }

    /// Output `i`'s single-output vector at the joint vector `p`.
    ///
    /// # Errors
    /// [`Error::Numerical`] when `p` has the wrong length or `i` is out of
    /// range.
    pub(crate) fn output_params(&self, p: &[f64], i: usize) -> Result<Vec<f64>> {
        let own = self.shared + OWN_PARAMS * i;
        match (p.get(..self.shared), p.get(own..own + OWN_PARAMS)) {
            (Some(shared), Some(pair)) if p.len() == self.len() => Ok([shared, pair].concat()),
            _ => Err(Error::Numerical(format!(
                "joint parameter vector has {} entries, expected {} (output {i} of {})",
                p.len(),
                self.len(),
                self.outputs.len()
            ))),
        }
    }

    /// The summed objective and its joint gradient at `p`.
    pub fn objective(&self, p: &[f64]) -> Result<(f64, Vec<f64>)> {
        let parts: Vec<(f64, Vec<f64>)> = self
            .outputs
            .par_iter()
            .enumerate()
            .map(|(i, o)| o.objective(&self.output_params(p, i)?))
            .collect::<Result<_>>()?;
        let mut value = 0.0;
        let mut grad = vec![0.0; self.len()];
        for (i, (f, g)) in parts.iter().enumerate() {
            value += f;
            for (total, gi) in grad.iter_mut().zip(&g[..self.shared]) {
                *total += gi;
            }
            let own = self.shared + OWN_PARAMS * i;
            grad[own..own + OWN_PARAMS].copy_from_slice(&g[self.shared..]);
        }
        Ok((value, grad))
    }
}

#[cfg(test)]
mod tests {
    use nalgebra::DVector;

    use super::*;
    use crate::model::features::PseudoInputs;
    use crate::model::inference::fitc::FitcConfig;
    use crate::model::inference::test_util::{assert_grad_close, fd_grad, problem};
    use crate::model::inference::Approximation;
    use crate::model::kernel::KernelParams;
    use crate::numerics::linalg::JitterPolicy;

    /// Two targets on the same inputs: the second a scaled, shifted other
    /// function, so the outputs pull the shared block different ways.
    fn targets(n: usize) -> (nalgebra::DMatrix<f64>, DVector<f64>, DVector<f64>) {
        let (x, y) = problem(7, n, 2);
        let y2 = DVector::from_fn(n, |i, _| 3.0 * libm::cos(x[(i, 1)] * 0.8) - 0.5 * y[i]);
        (x, y, y2)
    }

    fn moved(p: &[f64]) -> Vec<f64> {
        p.iter()
            .enumerate()
            .map(|(i, v)| v + 0.05 * ((i % 5) as f64 - 2.0))
            .collect()
    }

    #[test]
    fn sparse_joint_gradient_matches_finite_differences() {
        let (x, y1, y2) = targets(40);
        let z = x.rows(0, 5).into_owned();
        for approximation in [Approximation::Fitc, Approximation::Vfe] {
            let config = FitcConfig {
                approximation,
                ..FitcConfig::default()
            };
            let kern = |s2: f64, n: f64| KernelParams::new(&[0.9, 1.3], s2, n).unwrap();
            let outputs = vec![
                SparseObjective::new(
                    &x,
                    &y1,
                    PseudoInputs::new(z.clone()).unwrap(),
                    kern(1.0, 0.1),
                    config,
                )
                .unwrap(),
                SparseObjective::new(
                    &x,
                    &y2,
                    PseudoInputs::new(z.clone()).unwrap(),
                    kern(2.5, 0.3),
                    config,
                )
                .unwrap(),
            ];
            let joint = SharedObjective::new(outputs).unwrap();
            let p = moved(&joint.initial());
            let (_, ana) = joint.objective(&p).unwrap();
            let num = fd_grad(|q| joint.objective(q).unwrap().0, &p, 1e-5);
            assert_grad_close(&num, &ana, 1e-5);
        }
    }

    #[test]
    fn exact_joint_gradient_matches_finite_differences() {
        let (x, y1, y2) = targets(30);
        let kern = |s2: f64, n: f64| KernelParams::new(&[0.9, 1.3], s2, n).unwrap();
        let outputs = vec![
            ExactObjective::new(&x, &y1, kern(1.0, 0.1), JitterPolicy::default()).unwrap(),
            ExactObjective::new(&x, &y2, kern(2.5, 0.3), JitterPolicy::default()).unwrap(),
            ExactObjective::new(&x, &y1, kern(0.5, 0.05), JitterPolicy::default()).unwrap(),
        ];
        let joint = SharedObjective::new(outputs).unwrap();
        let p = moved(&joint.initial());
        let (_, ana) = joint.objective(&p).unwrap();
        let num = fd_grad(|q| joint.objective(q).unwrap().0, &p, 1e-5);
        assert_grad_close(&num, &ana, 1e-5);
    }

    /// The joint value is the sum of the single-output values, and each
    /// output's own pair reaches only its own term.
    #[test]
    fn value_is_the_sum_and_own_parameters_stay_own() {
        let (x, y1, y2) = targets(25);
        let kern = |s2: f64| KernelParams::new(&[1.1, 0.7], s2, 0.2).unwrap();
        let a = ExactObjective::new(&x, &y1, kern(1.0), JitterPolicy::default()).unwrap();
        let b = ExactObjective::new(&x, &y2, kern(2.0), JitterPolicy::default()).unwrap();
        let (fa, _) = a.objective(&a.initial()).unwrap();
        let (fb, _) = b.objective(&b.initial()).unwrap();
        let joint = SharedObjective::new(vec![a, b]).unwrap();
        let p = joint.initial();
        assert_eq!(p.len(), 2 + 2 * OWN_PARAMS);
        let (f, _) = joint.objective(&p).unwrap();
        assert!((f - (fa + fb)).abs() < 1e-9 * f.abs());
        let mut q = p.clone();
        q[2] += 0.3; // output 0's log s2
        let changed = joint.output_params(&q, 1).unwrap();
        assert_eq!(changed, joint.output_params(&p, 1).unwrap());
        assert!(joint.output_params(&p[1..], 0).is_err());
    }
}
