//! `sgp fit` of one target (a regression or a binary classification): the
//! fit with its progress bar, the export and the blob.

use std::path::Path;

use nalgebra::DMatrix;
use sgp_trainer::data::Dataset;
use sgp_trainer::export::cure::{export_fitted, Cure};
use sgp_trainer::export::updatable::export_updatable;
use sgp_trainer::export::{export_set, golden_points, golden_rust, Fidelity};
use sgp_trainer::fit::gplasso::PathRow;
use sgp_trainer::fit::{fit, FitParams, FitReport, Fitted};
use sgp_trainer::model::ModelSet;
use sgp_trainer::numerics::optimise::Progress;
use sgp_trainer::Result;

use crate::{progress_bar, to_json, write_file};

use super::summary::print_fit_summary;
use super::FitArgs;

pub(crate) fn fit_with_progress(
    data: &Dataset,
    params: &FitParams,
    quiet: bool,
    label: &str,
) -> Result<Fitted> {
    let bar = progress_bar(quiet, params.iteration_budget(), label);
    let mut on_progress = |p: Progress| {
        bar.set_position(p.iteration);
        bar.set_message(format!("NLML {:.4}", p.best_value));
    };
    let result = fit(data, params, &mut on_progress);
    bar.finish_and_clear();
    result
}

/// What `sgp fit --json` prints.
#[derive(serde::Serialize)]
pub(crate) struct FitOutput<'a> {
    report: &'a FitReport,
    blob: &'a Path,
    blob_bytes: usize,
    fidelity: &'a Fidelity,
    /// The blob's variance form: "product" or "solves".
    variance: &'static str,
    /// Why the blob has the solves, not the product.
    #[serde(skip_serializing_if = "Option::is_none")]
    product_refused: Option<&'a str>,
    cure: Option<&'a Cure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a [PathRow]>,
}

/// Exports `fitted` (checked at the raw inputs `check_x`), writes the blob
/// and the golden values asked for, and reports.
pub(crate) fn finish_fit(
    args: &FitArgs,
    (mut fitted, raw_x): (Fitted, DMatrix<f64>),
    path: Option<Vec<PathRow>>,
    labels: Vec<String>,
) -> Result<()> {
    let (mut exported, cure) = export_fitted(&mut fitted, &raw_x, args.force)?;
    if args.updatable {
        // The (cured) model in the form that learns on the device.
        let set = ModelSet::single(fitted.model.clone(), labels);
        let approximation = fitted.report.approximation;
        exported = export_updatable(&set, &raw_x, approximation, args.force)?;
    } else if !labels.is_empty() {
        // The (cured) model again, now with the labels in its blob.
        let set = ModelSet::single(fitted.model.clone(), labels);
        exported = export_set(&set, &raw_x, args.force)?;
    }
    write_file(&args.out, &exported.blob)?;
    if let Some(path) = &args.golden {
        let points = golden_points(&fitted.model, &raw_x, 12, 4);
        write_file(path, golden_rust(&fitted.model, &points)?.as_bytes())?;
    }
    if args.json {
        let output = FitOutput {
            report: &fitted.report,
            blob: &args.out,
            blob_bytes: exported.blob.len(),
            fidelity: &exported.fidelity,
            variance: exported.variance.name(),
            product_refused: exported.product_refused.as_deref(),
            cure: cure.as_ref(),
            path: path.as_deref(),
        };
        println!("{}", to_json(&output)?);
    } else {
        print_fit_summary(&fitted, &exported, cure.as_ref(), &args.out);
    }
    Ok(())
}
