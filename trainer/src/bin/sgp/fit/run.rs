//! `sgp fit`'s one path after the data are read: the fit with its
//! progress bar, the export (its check and cure), the blob, the golden
//! values and the report.

use std::path::Path;

use nalgebra::DMatrix;
use sgp_trainer::choose::{self, Request};
use sgp_trainer::data::Dataset;
use sgp_trainer::export::cure::Cure;
use sgp_trainer::export::{golden_points, golden_rust, Fidelity};
use sgp_trainer::fit::gplasso::PathRow;
use sgp_trainer::fit::{Fit, FitReport};
use sgp_trainer::numerics::optimise::Progress;
use sgp_trainer::Result;

use crate::{progress_bar, to_json, write_file};

use super::summary::print_fit_summary;
use super::FitArgs;

/// The fit `request` asks for, with a progress bar over the final fit's
/// iteration budget.
pub(crate) fn fit_with_progress(
    outputs: &[Dataset],
    request: &Request,
    quiet: bool,
    label: &str,
) -> Result<Fit> {
    let bar = progress_bar(quiet, request.iteration_budget(), label);
    let mut on_progress = |p: Progress| {
        bar.set_position(p.iteration);
        bar.set_message(format!("objective {:.4}", p.best_value));
    };
    let result = choose::fit(outputs, request, &mut on_progress);
    bar.finish_and_clear();
    result
}

/// What `sgp fit --json` prints.
#[derive(serde::Serialize)]
pub(crate) struct FitOutput<'a> {
    report: &'a FitReport,
    /// The blob's kind (the family's, but spgp-pca's is spgp-dr).
    kind: String,
    /// Why the kind is not the family's name, where it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    kind_note: Option<String>,
    /// A classifier's class labels, in class order.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    classes: &'a [String],
    blob: &'a Path,
    blob_bytes: usize,
    /// The worst f32 deviations over the outputs.
    fidelity: &'a Fidelity,
    /// Each output's, in output order.
    fidelities: &'a [Fidelity],
    /// The blob's variance form: "product", "solves" or "whitened".
    variance: &'static str,
    /// Why the blob has the solves, not the product.
    #[serde(skip_serializing_if = "Option::is_none")]
    product_refused: Option<&'a str>,
    cure: Option<&'a Cure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a [PathRow]>,
}

/// Exports `fit` (checked at the raw inputs `check_x`), writes the blob and
/// the golden values asked for, and reports.
pub(crate) fn finish_fit(
    args: &FitArgs,
    mut fit: Fit,
    check_x: &DMatrix<f64>,
    path: Option<Vec<PathRow>>,
    quiet: bool,
) -> Result<()> {
    let exported = args
        .settings
        .options()
        .export(&mut fit, check_x, args.force)?;
    if !quiet {
        note_choices(&fit);
    }
    write_file(&args.out, &exported.blob)?;
    if let Some(golden) = &args.golden {
        let points = golden_points(&fit.set.members[0], check_x, 12, 4);
        write_file(golden, golden_rust(&fit.set, &points)?.as_bytes())?;
    }
    if args.json {
        let output = FitOutput {
            report: &fit.report,
            kind: fit.set.members[0].kind.name().to_string(),
            kind_note: kind_note(&fit),
            classes: &fit.set.class_labels,
            blob: &args.out,
            blob_bytes: exported.blob.len(),
            fidelity: &exported.fidelity,
            fidelities: &exported.outputs,
            variance: exported.variance.name(),
            product_refused: exported.product_refused.as_deref(),
            cure: exported.cure.as_ref(),
            path: path.as_deref(),
        };
        println!("{}", to_json(&output)?);
    } else {
        print_fit_summary(&fit, &exported, &args.out);
    }
    Ok(())
}

/// Says on standard error what the choices above the family did where the
/// blob is not simply the family asked for: `auto`'s choice, a named family
/// that plain SPGP beat on held-out rows, a blob whose kind is not the
/// family's name.
fn note_choices(fit: &Fit) {
    let report = &fit.report;
    if let Some(c) = &report.choice {
        if c.asked == choose::AUTO || c.spgp_not_beaten() {
            eprintln!("sgp: note: {}", c.reason);
        }
    }
    if let Some(note) = kind_note(fit) {
        eprintln!("sgp: note: {note}");
    }
}

/// Why the blob's kind is not the name of the family fitted, if it is not.
fn kind_note(fit: &Fit) -> Option<String> {
    let kind = fit.set.members[0].kind.name();
    let method = fit.report.method.name();
    (kind != method)
        .then(|| format!("the {method} blob has kind {kind}: the device evaluates the same form"))
}
