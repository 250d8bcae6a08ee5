//! `sgp fit`'s one path after the library's job: the blobs, the golden
//! values and the report, printed from the job's report.

use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
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
            report: &report,
            blob: &args.out,
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
struct SeparateOutput<'a> {
    report: &'a Report<'a>,
    blob: &'a std::path::Path,
}

impl Serialize for SeparateOutput<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let each: Vec<FitOutput> = self
            .report
            .fits
            .iter()
            .map(|summary| FitOutput {
                summary,
                blob: self.blob,
                path: None,
                report: None,
            })
            .collect();
        let mut out = s.serialize_struct("SeparateOutput", 2)?;
        out.serialize_field("basis", &self.report.basis)?;
        out.serialize_field("separate", &each)?;
        out.end()
    }
}

/// What `sgp fit --json` prints: the fit's report, the blob's kind (the
/// family's, but spgp-pca's is spgp-dr) and why it is not the family's
/// name, a classifier's class labels, the blob and its length, the worst
/// f32 deviations over the outputs and each output's, the variance form
/// ("product", "solves" or "covariance"; "whitened" in format versions 7
/// and 8) and why the product was refused, the export's cure, GPLasso's
/// path, and with several outputs the choice of one basis for all.
struct FitOutput<'a> {
    summary: &'a Summary<'a>,
    blob: &'a std::path::Path,
    path: Option<&'a LassoPath>,
    /// The job's report, for its basis choice (several outputs).
    report: Option<&'a Report<'a>>,
}

impl Serialize for FitOutput<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let f = self.summary;
        let mut out = s.serialize_struct("FitOutput", 13)?;
        out.serialize_field("report", f.report)?;
        out.serialize_field("kind", f.kind)?;
        match &f.kind_note {
            Some(note) => out.serialize_field("kind_note", note)?,
            None => out.skip_field("kind_note")?,
        }
        match f.classes {
            [] => out.skip_field("classes")?,
            classes => out.serialize_field("classes", classes)?,
        }
        out.serialize_field("blob", self.blob)?;
        out.serialize_field("blob_bytes", &f.blob_bytes)?;
        out.serialize_field("fidelity", f.fidelity)?;
        out.serialize_field("fidelities", f.fidelities)?;
        out.serialize_field("variance", f.variance.name())?;
        match f.product_refused {
            Some(why) => out.serialize_field("product_refused", why)?,
            None => out.skip_field("product_refused")?,
        }
        out.serialize_field("cure", &f.cure)?;
        match self.path {
            Some(path) => out.serialize_field("path", &path.rows)?,
            None => out.skip_field("path")?,
        }
        match self.report.and_then(|r| r.basis) {
            Some(basis) => out.serialize_field("basis", basis)?,
            None => out.skip_field("basis")?,
        }
        out.end()
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
        let output = FitOutput {
            summary: s,
            blob: &args.out,
            path,
            report: Some(report),
        };
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
