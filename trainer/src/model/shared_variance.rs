//! Outputs on one basis whose latent variances are one shape scaled by
//! their prior (a fit whose noise-to-signal ratio is tied,
//! [`crate::model::inference::tied_ratio`]): output `p`'s `W_p` is
//! `c W_1` with `c = prior_p / prior_1`, so its blob needs no factors of
//! its own (format version 6).

use super::inference::RuntimeForm;

/// Relative difference below which an output's factors count as the first
/// output's, scaled: rounding of the scaling itself, nothing a fit leaves.
const SAME: f64 = 1e-12;

/// The factors `form` has when its variance is `first`'s scaled by the
/// ratio of their priors: `W -> c W` is `L -> L / sqrt(c)` for the solves
/// form's factors (whose inverses `W` sums).
fn scaled_factor(first: &RuntimeForm, form: &RuntimeForm) -> f64 {
    (first.prior / form.prior).sqrt()
}

/// Gives every output after the first the first output's factors, scaled
/// by the ratio of their priors: the variance of a tied fit, whose outputs'
/// own factors differ from these by rounding only.
pub(crate) fn share_first_variance(forms: &mut [RuntimeForm]) {
    let Some((first, rest)) = forms.split_first_mut() else {
        return;
    };
    for form in rest {
        let scale = scaled_factor(first, form);
        form.l1 = &first.l1 * scale;
        form.l2 = first.l2.as_ref().map(|l| l * scale);
    }
}

/// Whether `form`'s variance is `first`'s scaled by the ratio of their
/// priors (what [`share_first_variance`] gives), so that its blob output
/// can go without factors.
pub(crate) fn shares_first_variance(first: &RuntimeForm, form: &RuntimeForm) -> bool {
    if !(first.prior > 0.0 && form.prior > 0.0) || first.basis != form.basis {
        return false;
    }
    let scale = scaled_factor(first, form);
    let close = |a: &nalgebra::DMatrix<f64>, b: &nalgebra::DMatrix<f64>| {
        a.shape() == b.shape() && (a - b * scale).norm() <= SAME * a.norm()
    };
    let second = match (&form.l2, &first.l2) {
        (Some(a), Some(b)) => close(a, b),
        (None, None) => true,
        _ => false,
    };
    second && close(&form.l1, &first.l1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{fit, FitParams, SparseParams};

    #[test]
    fn a_shared_variance_is_the_first_scaled_and_nothing_else_is() {
        let (x, y) = crate::synth::synthetic(60, 2, 3);
        let data =
            crate::data::Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).unwrap();
        let params = FitParams::Spgp(SparseParams {
            m: 5,
            restarts: 1,
            ..SparseParams::default()
        });
        let first = fit(&data, &params, &mut |_| {})
            .unwrap()
            .set
            .members
            .remove(0)
            .form;
        let mut other = first.clone();
        other.prior *= 3.0;
        other.l1[(1, 0)] += 0.5;
        assert!(!shares_first_variance(&first, &other));
        let mut forms = vec![first.clone(), other];
        share_first_variance(&mut forms);
        assert!(shares_first_variance(&first, &forms[1]));
        // Three times the prior, three times the latent variance.
        let z = data.x.rows(0, 7).into_owned();
        let (a, b) = (first.predict(&z).unwrap(), forms[1].predict(&z).unwrap());
        for i in 0..7 {
            let (va, vb) = (a.var[i], b.var[i]);
            assert!(
                (vb - 3.0 * va).abs() <= 1e-9 * va.abs().max(1e-12),
                "{va} {vb}"
            );
        }
        assert!(!shares_first_variance(
            &first,
            &RuntimeForm {
                prior: 0.0,
                ..first.clone()
            }
        ));
    }
}
