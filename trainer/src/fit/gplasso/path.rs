//! GPLasso's lasso path scored on held-out rows (`sgp fit --path`), and
//! the paper's baseline: SPGP with GPLasso's fixed hyperparameters.

use super::*;

/// One breakpoint of the path as `sgp fit --path` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct PathRow {
    /// What changed at this breakpoint; the variable is a row of the whole
    /// data set (0-based), as in [`Self::rows`].
    pub(crate) action: LarsAction,
    /// The same, as `sgp fit --path` shows it: `+j` entered, `-j` left,
    /// `dup j` rejected (a duplicate), and at the first breakpoint the rows
    /// that entered at the start.
    #[serde(skip)]
    pub change: String,
    /// The rows with non-zero weight (0-based rows of the whole data set),
    /// in the order they entered.
    pub rows: Vec<usize>,
    /// Non-zero weights.
    pub nonzeros: usize,
    /// The penalty (`1/2 ||.||^2` convention).
    pub lambda: f64,
    /// Training objective without the penalty: `||C~ beta - d~||^2 -
    /// ||d~||^2`, i.e. `2 KL` up to a constant (0 at beta = 0).
    pub objective: f64,
    /// Mean NLPD on the held-out rows, raw units.
    pub validation_nlpd: f64,
    /// RMSE on the held-out rows, raw units.
    pub validation_rmse: f64,
}

/// Held-out fraction of `sgp fit --path`.
pub(crate) const PATH_HOLDOUT: f64 = 0.2;

/// The lasso path up to `params.m` non-zeros, fitted on a random
/// `1 - PATH_HOLDOUT` of `data` (hyperparameters included) and scored on
/// the rest, so that M can be chosen on held-out data; plus why it stopped.
/// Both parts keep `data`'s standardisation, so that row numbers and units
/// are those of `data`.
///
/// # Errors
/// As the fit; [`Error::BadInput`] if `data` is too small to split.
pub(crate) fn gplasso_path(
    data: &Dataset,
    params: &GplassoParams,
) -> Result<(Vec<PathRow>, LarsStop)> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let reduced_data;
    let data = if data.constant_inputs.is_empty() {
        data
    } else {
        reduced_data = data.without_inputs(&data.constant_inputs)?;
        &reduced_data
    };
    let n = data.n_rows();
    let n_valid = (PATH_HOLDOUT * n as f64).round() as usize;
    if n_valid == 0 || n_valid + 2 > n {
        return Err(Error::BadInput(format!(
            "--path holds out {:.0}% of the rows for validation: {n} rows are too few",
            100.0 * PATH_HOLDOUT
        )));
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(params.seed));
    let (valid_rows, train_rows) = order.split_at(n_valid);
    let mut valid_rows = valid_rows.to_vec();
    let mut train_rows = train_rows.to_vec();
    valid_rows.sort_unstable();
    train_rows.sort_unstable();
    let train = data.subset(&train_rows)?;
    let valid = data.subset(&valid_rows)?;
    let params = params.check(&train)?;
    let (kern, _) = hyperparameters(
        &train,
        params.max_points,
        params.seed,
        params.kernel,
        &params.optimiser,
        &mut |_| {},
    )?;
    let reduced = reduced_problem(
        &kern,
        &train.x,
        &train.y,
        params.rank_for(train.n_rows()),
        params.trace_tol,
    )?;
    let path = lars_for(&reduced, params.m)?;
    let d_sq = reduced.d.norm_squared();
    let t = &train.transform;
    let y_raw = valid.raw_y();
    let config = FitcConfig::default();
    let mut rows = Vec::new();
    for point in path.points.iter().skip(1) {
        if point.coef.is_empty() {
            continue;
        }
        let (features, post, beta) = selected_model(
            &kern,
            &train.x,
            &train.y,
            &point.coef,
            params.weights,
            &config,
        )?;
        let mut p = post.predict(&features, &kern, &valid.x)?;
        p.mean = features.kuf(&kern, valid.x.as_view()).tr_mul(&beta);
        let mean = t.unapply_y(&p.mean);
        let var = p.var_y().map(|v| t.unapply_var(v));
        let original = |j: usize| train_rows[j];
        let selected: Vec<usize> = point.coef.iter().map(|&(j, _)| original(j)).collect();
        let action = match point.action {
            LarsAction::Enter(j) => LarsAction::Enter(original(j)),
            LarsAction::Leave(j) => LarsAction::Leave(original(j)),
            LarsAction::Rejected(j) => LarsAction::Rejected(original(j)),
            other => other,
        };
        rows.push(PathRow {
            action,
            change: change(action, &selected, rows.is_empty()),
            rows: selected,
            nonzeros: point.nonzeros(),
            lambda: point.lambda,
            objective: 2.0 * point.half_rss - d_sq,
            validation_nlpd: crate::evaluate::metrics::mean_nlpd(
                mean.as_slice(),
                var.as_slice(),
                y_raw.as_slice(),
            ),
            validation_rmse: crate::evaluate::metrics::rmse(mean.as_slice(), y_raw.as_slice()),
        });
    }
    Ok((rows, path.stop))
}

/// `action` as `sgp fit --path` shows it; at the `first` breakpoint, the
/// rows `selected` at the start.
fn change(action: LarsAction, selected: &[usize], first: bool) -> String {
    match action {
        _ if first => selected
            .iter()
            .map(|j| format!("+{j}"))
            .collect::<Vec<_>>()
            .join(" "),
        LarsAction::Enter(j) => format!("+{j}"),
        LarsAction::Leave(j) => format!("-{j}"),
        LarsAction::Rejected(j) => format!("dup {j}"),
        _ => String::new(),
    }
}

/// The paper's baseline (`examples/gplasso_vs_spgp.rs`): SPGP (FITC) with
/// GPLasso's fixed hyperparameters `kern` ([`exact_hyperparameters`]),
/// only the pseudo-inputs optimised from one k-means start; `data` without
/// constant inputs; `report.seconds` is the time of the pseudo-inputs.
///
/// # Errors
/// As the fits it is made of.
pub fn fit_spgp_fixed_hyperparameters(
    data: &Dataset,
    params: &GplassoParams,
    kern: KernelParams,
) -> Result<Fit> {
    require_no_constant_inputs(data)?;
    let started = Instant::now();
    let params = params.check(data)?;
    let z = crate::fit::init::kmeans(&data.x, params.m, params.seed, 100)?;
    let config = FitcConfig::default();
    let objective = SparseObjective::new(
        &data.x,
        &data.y,
        PseudoInputs::new(z)?,
        kern.clone(),
        config,
    )?;
    let range = objective.layout().feature_range();
    let (p, run) = minimise_part(
        &objective,
        range,
        &no_penalty,
        &params.optimiser,
        data.n_rows(),
        &mut |_| {},
    )?;
    let (features, kernel) = objective.unpack(&p)?;
    let posterior = fitc_posterior(&features, &kernel, &data.x, &data.y, &config)?;
    let fit = SparseFit {
        features,
        kernels: vec![kernel],
        posteriors: vec![posterior],
        config,
        run,
        max_iter: params.optimiser.max_iter,
        sharing: None,
    };
    let outputs = std::slice::from_ref(data);
    let mut fitted = fit.into_fit(outputs, ModelKind::Spgp, Method::Spgp)?;
    fitted.report.seconds = started.elapsed().as_secs_f64();
    Ok(fitted)
}
