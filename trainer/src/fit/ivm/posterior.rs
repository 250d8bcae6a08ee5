//! The IVM's exported posterior over its active set: the paper's (the
//! active sites alone) or svgp's `q(u)` on every row.

use super::*;

/// The exported posterior over the active set: its runtime form, training
/// objective, jitter escalations, bias, optimiser run and the export
/// cure's rebuild.
pub(super) struct Exported {
    pub(super) form: RuntimeForm,
    pub(super) objective: f64,
    pub(super) escalations: u32,
    pub(super) bias: f64,
    pub(super) run: Option<OptimiseReport>,
    pub(super) rebuild: Rebuild,
}

/// The paper's posterior: the active rows' sites alone. The export cure
/// adds jitter to C; the sites are not re-selected, so the active set stays
/// the one reported.
pub(super) fn active_set_model(
    x_active: DMatrix<f64>,
    set: &ActiveSet,
    kern: &KernelParams,
    sites: Sites,
) -> Result<Exported> {
    let likelihood = sites.likelihood;
    let jitter = JitterPolicy::default();
    let post = active_posterior(kern, &x_active, &set.p, &set.m, likelihood, &jitter)?;
    let (kern, p, m) = (kern.clone(), set.p.clone(), set.m.clone());
    Ok(Exported {
        form: post.runtime_form()?,
        objective: post.nlml(),
        escalations: post.jitter_escalations(),
        bias: sites.bias,
        run: None,
        rebuild: Box::new(move |jitter: JitterPolicy, _max_iter: u64| {
            let post = active_posterior(&kern, &x_active, &p, &m, likelihood, &jitter)?;
            Ok(Rebuilt {
                forms: vec![post.runtime_form()?],
                biases: None,
                nlml: post.nlml(),
                kernels: vec![kern.clone()],
                noise_held: false,
            })
        }),
    })
}

/// The svgp bound's `q(u)` and bias on every row, the inducing inputs at
/// the active rows and the kernel held ([`IvmPosterior::AllRows`]),
/// started from `start`. The export cure adds jitter to `Kuu` and fits
/// `q(u)` again from the fitted one, so the basis and the kernel stay the
/// ones reported.
pub(super) fn all_rows_model(
    x_active: DMatrix<f64>,
    kern: &KernelParams,
    start: Variational,
    (data, options): (&Dataset, &OptimiseOptions),
    progress: &mut dyn FnMut(Progress),
) -> Result<Exported> {
    let config = SvgpConfig::default();
    let options = options.clone();
    let fitted = fit_on_basis(data, &x_active, kern, start, (config, &options), progress)?;
    let (kern, data, q) = (kern.clone(), data.clone(), fitted.q);
    Ok(Exported {
        form: fitted.form,
        objective: fitted.run.value,
        escalations: fitted.escalations,
        bias: q.bias,
        run: Some(fitted.run),
        rebuild: Box::new(move |jitter: JitterPolicy, _max_iter: u64| {
            let config = SvgpConfig { jitter, ..config };
            let refit = fit_on_basis(
                &data,
                &x_active,
                &kern,
                q.clone(),
                (config, &options),
                &mut |_| {},
            )?;
            Ok(Rebuilt {
                forms: vec![refit.form],
                biases: Some(vec![refit.q.bias]),
                nlml: refit.run.value,
                kernels: vec![kern.clone()],
                noise_held: false,
            })
        }),
    })
}

/// The all-rows posterior on a basis: its runtime form, the fitted
/// `q(u)` and bias, the optimiser run and the jitter escalations of the
/// form.
pub(super) struct OnBasis {
    pub(super) form: RuntimeForm,
    pub(super) q: Variational,
    pub(super) run: OptimiseReport,
    pub(super) escalations: u32,
}

/// Fits the svgp bound's `q(u)` and bias on every row of `data` from
/// `start`, with the inducing inputs at `x_active` and the kernel held,
/// and forms it for the runtime.
pub(super) fn fit_on_basis(
    data: &Dataset,
    x_active: &DMatrix<f64>,
    kern: &KernelParams,
    start: Variational,
    (config, options): (SvgpConfig, &OptimiseOptions),
    progress: &mut dyn FnMut(Progress),
) -> Result<OnBasis> {
    let (features, q, run) = fit_variational_on_basis(
        data,
        x_active.clone(),
        kern,
        start,
        (config, options),
        progress,
    )?;
    let (form, escalations) = svgp_runtime_form(&features, kern, &q, &config)?;
    Ok(OnBasis {
        form,
        q,
        run,
        escalations,
    })
}

/// The active set's posterior over the basis values `u = f_I` (its sites
/// alone, the bias `bias`) as the bound's whitened `q(v)`, `u = Lu v`,
/// `Lu = chol(Kuu + jitter)`: the all-rows fit's start, of the right scale
/// whatever `s2` (from the prior `N(0, I)` a large `s2` fit badly).
///
/// With site precisions `Pi` and means `mu`: `Sigma_u = (K^-1 + Pi)^-1`,
/// so `S = Lu^-1 Sigma_u Lu^-T = B^-1` with `B = I + Lu^T Pi Lu` (every
/// eigenvalue at least 1, so its factorisation needs no jitter), and
/// `m = B^-1 Lu^T Pi mu`. `S`'s lower factor comes from `B` reversed:
/// `J B J = R R^T` gives `S = (J R^-T J)(J R^-T J)^T`, `J R^-T J` lower.
pub(super) fn whitened_active_posterior(
    x_active: &DMatrix<f64>,
    set: &ActiveSet,
    kern: &KernelParams,
    bias: f64,
) -> Result<Variational> {
    let kuu = PseudoInputs::new(x_active.clone())?.kuu(kern);
    let lu = cholesky_jittered(&kuu, kern.signal_var(), &SvgpConfig::default().jitter)?.l;
    let m = lu.nrows();
    let pi = DVector::from_column_slice(&set.p);
    let pi_lu = DMatrix::from_fn(m, m, |i, j| pi[i] * lu[(i, j)]);
    let b = DMatrix::identity(m, m) + mul(mat_ref(&lu).transpose(), mat_ref(&pi_lu));
    let reversed = DMatrix::from_fn(m, m, |i, j| b[(m - 1 - i, m - 1 - j)]);
    let r = reversed
        .cholesky()
        .ok_or_else(|| Error::Numerical("IVM: I + Lu^T Pi Lu is not positive definite".into()))?
        .unpack();
    let r_inv = lower_inverse(&r)?;
    let sqrt = DMatrix::from_fn(m, m, |i, j| r_inv[(m - 1 - j, m - 1 - i)]);
    let natural = lu.transpose() * pi.component_mul(&DVector::from_column_slice(&set.m));
    let mean = &sqrt * (sqrt.transpose() * natural);
    Ok(Variational { mean, sqrt, bias })
}

/// The distribution of the basis values at the rows of `to` that the
/// posterior `q` over the basis `from` implies under `kern`, as the
/// whitened `q(v)` over `to`: the final all-rows fit then starts near its
/// optimum (on the 2-D rings from a bound of 365 where the optimum is 187,
/// from the active set's posterior) and stops within a few iterations.
///
/// With `A = Lu^{-1} K(from, to)`, `q(v) = N(m, L L^T)` over `from`: the
/// values at `to` are `N(A^T m, K(to, to) - A^T A + (L^T A)^T (L^T A))`.
pub(super) fn carried_posterior(
    (from, q): (&DMatrix<f64>, &Variational),
    to: &DMatrix<f64>,
    kern: &KernelParams,
) -> Result<Variational> {
    let jitter = SvgpConfig::default().jitter;
    let old = PseudoInputs::new(from.clone())?;
    let lu = cholesky_jittered(&old.kuu(kern), kern.signal_var(), &jitter)?.l;
    let a = lu
        .solve_lower_triangular(&old.kuf(kern, to.rows(0, to.nrows())))
        .ok_or_else(|| Error::Numerical("IVM: singular basis factor".into()))?;
    let kzz = PseudoInputs::new(to.clone())?.kuu(kern);
    let lz = cholesky_jittered(&kzz, kern.signal_var(), &jitter)?.l;
    let singular = || Error::Numerical("IVM: singular basis factor".into());
    // B = A Lz^{-T}: the whitened covariance is I - B^T B + (L^T B)^T L^T B.
    let b = lz
        .solve_lower_triangular(&a.transpose())
        .ok_or_else(singular)?
        .transpose();
    let mean = b.tr_mul(&q.mean);
    let lb = q.sqrt.tr_mul(&b);
    let whitened = DMatrix::identity(to.nrows(), to.nrows()) - b.tr_mul(&b) + lb.tr_mul(&lb);
    let whitened = (&whitened + whitened.transpose()) * 0.5;
    let sqrt = cholesky_jittered(&whitened, 1.0, &jitter)?.l;
    Ok(Variational {
        mean,
        sqrt,
        bias: q.bias,
    })
}
