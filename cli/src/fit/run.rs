//! `sgp fit`'s one path after the library's job: the blobs, the golden
//! values and the report, printed from the job's report.

use std::path::Path;

use serde::Serialize;
use sgp_trainer::choose::outputs::BasisChoice;
use sgp_trainer::export::cure::Cure;
use sgp_trainer::export::Fidelity;
use sgp_trainer::fit::gplasso::PathRow;
use sgp_trainer::fit::FitReport;
use sgp_trainer::job::{Done, LassoPath, Report, Summary};
use sgp_trainer::Result;

use crate::{to_json, write_file};

use super::summary::{print_fit_summary, print_warnings};
use super::{separate_path, FitArgs};

/// Writes what `done` exported to `--out`: one blob (several outputs on
/// one basis), or the container of each output's own, saying which; the
/// golden values asked for (each output's own with `separate_path`); and
/// the report.
pub(crate) fn finish(
    args: &FitArgs,
    done: Done,
    path: Option<LassoPath>,
    quiet: bool,
) -> Result<()> {
    let artefact = done.artefact()?;
    let report = done.report();
    let Some(basis) = report.basis.filter(|b| b.separate()) else {
        return finish_one(args, &done, &report, path.as_ref(), quiet);
    };
    if !quiet {
        eprintln!("sgp: note: {}", basis.reason);
    }
    // One file either way: the container of each output's own blob.
    write_file(&args.out, &artefact)?;
    if let Some(golden) = &args.golden {
        for (k, s) in report.fits.iter().enumerate() {
            write_file(
                &separate_path(golden, s.targets[0]),
                done.golden(k)?.as_bytes(),
            )?;
        }
    }
    if args.json || quiet {
        report.fits.iter().for_each(print_warnings);
    }
    if quiet && !args.json {
        return Ok(());
    }
    if args.json {
        let output = SeparateOutput {
            basis: report.basis,
            separate: report
                .fits
                .iter()
                .map(|summary| FitOutput::new(summary, &args.out, None, None))
                .collect(),
        };
        println!("{}", to_json(&output)?);
    } else {
        println!("basis           {}", basis.reason);
        for s in &report.fits {
            println!();
            print_fit_summary(s, &args.out);
        }
    }
    Ok(())
}

/// What `sgp fit --json` prints when every output got its own model: the
/// basis choice, then each output's fit and blob, in output order.
#[derive(Serialize)]
struct SeparateOutput<'a> {
    basis: Option<&'a BasisChoice>,
    separate: Vec<FitOutput<'a>>,
}

/// What `sgp fit --json` prints: the fit's report, the blob's kind (the
/// family's, but spgp-pca's is spgp-dr) and why it is not the family's
/// name, a classifier's class labels, the blob and its length, the worst
/// f32 deviations over the outputs and each output's, the variance form
/// ("product", "solves" or "covariance"; "whitened" in format versions 7
/// and 8) and why the product was refused, the export's cure, GPLasso's
/// path, and with several outputs the choice of one basis for all. The
/// optional fields are left out when absent (`cure` reads `null`).
#[derive(Serialize)]
struct FitOutput<'a> {
    report: &'a FitReport,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind_note: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    classes: &'a [String],
    blob: &'a Path,
    blob_bytes: usize,
    fidelity: &'a Fidelity,
    fidelities: &'a [Fidelity],
    variance: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    product_refused: Option<&'a str>,
    cure: Option<&'a Cure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a [PathRow]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    basis: Option<&'a BasisChoice>,
}

impl<'a> FitOutput<'a> {
    /// The view of `f`, written to `blob`, with GPLasso's `path` and the
    /// job's `report` (for its basis choice) where there are.
    fn new(
        f: &'a Summary<'a>,
        blob: &'a Path,
        path: Option<&'a LassoPath>,
        report: Option<&'a Report<'a>>,
    ) -> Self {
        FitOutput {
            report: f.report,
            kind: f.kind,
            kind_note: f.kind_note.as_deref(),
            classes: f.classes,
            blob,
            blob_bytes: f.blob_bytes,
            fidelity: f.fidelity,
            fidelities: f.fidelities,
            variance: f.variance.name(),
            product_refused: f.product_refused,
            cure: f.cure,
            path: path.map(|p| p.rows.as_slice()),
            basis: report.and_then(|r| r.basis),
        }
    }
}

/// Writes one exported model, with the choice of a shared basis where
/// outputs are several, and reports.
fn finish_one(
    args: &FitArgs,
    done: &Done,
    report: &Report,
    path: Option<&LassoPath>,
    quiet: bool,
) -> Result<()> {
    let s = &report.fits[0];
    if !quiet {
        // What the choices above the family did, where the blob is not
        // simply the family asked for.
        for note in s.notes.iter().chain(&s.kind_note) {
            eprintln!("sgp: note: {note}");
        }
        if let Some(b) = report.basis {
            eprintln!("sgp: note: {}", b.reason);
        }
    }
    write_file(&args.out, &done.outputs[0].exported.blob)?;
    if let Some(golden) = &args.golden {
        write_file(golden, done.golden(0)?.as_bytes())?;
    }
    if args.json {
        // The summary says them otherwise; the JSON's report lists them too.
        print_warnings(s);
        let output = FitOutput::new(s, &args.out, path, Some(report));
        println!("{}", to_json(&output)?);
    } else if quiet {
        print_warnings(s);
    } else {
        print_fit_summary(s, &args.out);
        if let Some(b) = report.basis {
            println!("basis           {}", b.reason);
        }
    }
    Ok(())
}
