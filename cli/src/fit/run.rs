//! `sgp fit`'s one path after the library's job: the blobs, the golden
//! values and the report.

use std::path::Path;

use nalgebra::DMatrix;
use sgp_trainer::choose;
use sgp_trainer::choose::outputs::BasisChoice;
use sgp_trainer::export::cure::Cure;
use sgp_trainer::export::{golden_points, golden_rust, Exported, Fidelity};
use sgp_trainer::files::separate_path;
use sgp_trainer::fit::gplasso::PathRow;
use sgp_trainer::fit::{Fit, FitReport};
use sgp_trainer::job::{Done, Output};
use sgp_trainer::Result;

use crate::{to_json, write_file};

use super::summary::{print_fit_summary, print_warnings};
use super::FitArgs;

/// Writes what `done` exported to `--out`: one blob (several outputs on
/// one basis), or the container of each output's own, saying which; the
/// golden values asked for (each output's own with `separate_path`); and
/// the report.
pub(crate) fn finish(
    args: &FitArgs,
    done: Done,
    path: Option<Vec<PathRow>>,
    quiet: bool,
) -> Result<()> {
    let artefact = done.artefact()?;
    let Done {
        mut outputs,
        basis,
        check_x,
    } = done;
    let basis = match basis {
        Some(b) if b.separate() => b,
        shared => {
            let output = outputs.swap_remove(0);
            return finish_one(args, output, &check_x, path, quiet, shared.as_ref());
        }
    };
    if !quiet {
        eprintln!("sgp: note: {}", basis.reason);
    }
    // One file either way: the container of each output's own blob.
    write_file(&args.out, &artefact)?;
    let mut written = Vec::with_capacity(outputs.len());
    for Output { fit, exported } in outputs {
        let name = fit.set.members[0].target_name.clone();
        let blob = args.out.clone();
        if let Some(golden) = &args.golden {
            let points = golden_points(&fit.set.members[0], &check_x, 12, 4);
            let path = separate_path(golden, &name);
            write_file(&path, golden_rust(&fit.set, &points)?.as_bytes())?;
        }
        written.push((fit, exported, blob));
    }
    let outputs = written;
    if args.json || quiet {
        for (fit, _, _) in &outputs {
            print_warnings(fit);
        }
    }
    if quiet && !args.json {
        return Ok(());
    }
    if args.json {
        let each: Vec<FitOutput> = outputs
            .iter()
            .map(|(fit, exported, blob)| fit_output(fit, exported, blob, None, None))
            .collect();
        let output = SeparateOutput {
            basis: &basis,
            separate: each,
        };
        println!("{}", to_json(&output)?);
    } else {
        println!("basis           {}", basis.reason);
        for (fit, exported, blob) in &outputs {
            println!();
            print_fit_summary(fit, exported, blob);
        }
    }
    Ok(())
}

/// What `sgp fit --json` prints when every output got its own model.
#[derive(serde::Serialize)]
struct SeparateOutput<'a> {
    basis: &'a BasisChoice,
    /// Each output's fit and blob, in output order.
    separate: Vec<FitOutput<'a>>,
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
    /// The blob's variance form: "product", "solves" or "covariance" (an
    /// updatable blob; "whitened" in format versions 7 and 8).
    variance: &'static str,
    /// Why the blob has the solves, not the product.
    #[serde(skip_serializing_if = "Option::is_none")]
    product_refused: Option<&'a str>,
    cure: Option<&'a Cure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a [PathRow]>,
    /// Several outputs: one basis for all, or one model per output, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    basis: Option<&'a BasisChoice>,
}

fn fit_output<'a>(
    fit: &'a Fit,
    exported: &'a Exported,
    blob: &'a Path,
    path: Option<&'a [PathRow]>,
    basis: Option<&'a BasisChoice>,
) -> FitOutput<'a> {
    FitOutput {
        report: &fit.report,
        kind: fit.set.members[0].kind.name().to_string(),
        kind_note: kind_note(fit),
        classes: &fit.set.class_labels,
        blob,
        blob_bytes: exported.blob.len(),
        fidelity: &exported.fidelity,
        fidelities: &exported.outputs,
        variance: exported.variance.name(),
        product_refused: exported.product_refused.as_deref(),
        cure: exported.cure.as_ref(),
        path,
        basis,
    }
}

/// Writes one exported model (`check_x`: the raw inputs its export was
/// checked at), with the choice of a shared basis where outputs are
/// several, and reports.
fn finish_one(
    args: &FitArgs,
    output: Output,
    check_x: &DMatrix<f64>,
    path: Option<Vec<PathRow>>,
    quiet: bool,
    basis: Option<&BasisChoice>,
) -> Result<()> {
    let Output { fit, exported } = output;
    if !quiet {
        note_choices(&fit);
        if let Some(b) = basis {
            eprintln!("sgp: note: {}", b.reason);
        }
    }
    write_file(&args.out, &exported.blob)?;
    if let Some(golden) = &args.golden {
        let points = golden_points(&fit.set.members[0], check_x, 12, 4);
        write_file(golden, golden_rust(&fit.set, &points)?.as_bytes())?;
    }
    if args.json {
        // The summary says them otherwise; the JSON's report lists them too.
        print_warnings(&fit);
        let output = fit_output(&fit, &exported, &args.out, path.as_deref(), basis);
        println!("{}", to_json(&output)?);
    } else if quiet {
        print_warnings(&fit);
    } else {
        print_fit_summary(&fit, &exported, &args.out);
        if let Some(b) = basis {
            println!("basis           {}", b.reason);
        }
    }
    Ok(())
}

/// Says on standard error what the choices above the family did where the
/// blob is not simply the family asked for: `auto`'s choice (of a family
/// or a kernel), a named family that plain SPGP beat on held-out rows, a
/// blob whose kind is not the family's name.
fn note_choices(fit: &Fit) {
    let report = &fit.report;
    if let Some(c) = &report.choice {
        if c.asked == choose::AUTO || c.spgp_not_beaten() || c.kernel.is_some() {
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
