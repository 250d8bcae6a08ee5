//! `sgp fit` of a target of `K > 2` classes.

use std::path::Path;

use sgp_trainer::data::Dataset;
use sgp_trainer::export::{export_set, golden_points, golden_rust_set, Fidelity};
use sgp_trainer::fit::svgp::{fit_svgp_classes, ClassesFit};
use sgp_trainer::fit::{FitParams, FitReport, Method};
use sgp_trainer::numerics::optimise::Progress;
use sgp_trainer::{Error, Result};

use crate::{progress_bar, to_json, write_file};

use super::FitArgs;

/// `sgp fit` of a target of `K > 2` classes: one probit latent per class on
/// one basis ([`fit_svgp_classes`]), exported with the softmax link (the
/// rule the classification chapter measured against one-vs-rest).
pub(crate) fn fit_classes_command(args: &FitArgs, data: &Dataset, quiet: bool) -> Result<()> {
    let FitParams::Svgp(params) = args.params(Method::Svgp)? else {
        return Err(Error::BadInput(
            "a multi-class classifier is --model svgp".into(),
        ));
    };
    let budget = FitParams::Svgp(params.clone()).iteration_budget();
    let bar = progress_bar(quiet || args.json, budget, "fit");
    let mut on_progress = |p: Progress| {
        bar.set_position(p.iteration);
        bar.set_message(format!("bound {:.4}", p.best_value));
    };
    let fitted = fit_svgp_classes(data, &params, &mut on_progress);
    bar.finish_and_clear();
    let ClassesFit { mut set, report } = fitted?;
    for member in &mut set.members {
        member.link = sgp_runtime::Link::Softmax;
    }
    let raw_x = data.raw_x();
    if args.updatable {
        return Err(sgp_trainer::Error::BadInput(format!(
            "--updatable: a classifier of {} classes cannot learn on the device (its labels have \
             no rank-one update); a binary svgp classifier and the sparse regressions can",
            set.members.len()
        )));
    }
    let exported = export_set(&set, &raw_x, args.force)?;
    write_file(&args.out, &exported.blob)?;
    if let Some(path) = &args.golden {
        let first = set
            .members
            .first()
            .ok_or_else(|| Error::Numerical("the multi-class fit returned no classes".into()))?;
        let points = golden_points(first, &raw_x, 12, 4);
        write_file(path, golden_rust_set(&set, &points)?.as_bytes())?;
    }
    if args.json {
        let output = ClassesFitOutput {
            report: &report,
            classes: &set.class_labels,
            blob: &args.out,
            blob_bytes: exported.blob.len(),
            fidelity: &exported.fidelity,
            variance: exported.variance.name(),
        };
        println!("{}", to_json(&output)?);
        return Ok(());
    }
    let first = set.members.first().map_or(0, |m| m.n_basis());
    println!(
        "model           svgp, {} classes on one basis (M = {first}, {} training rows), \
         softmax link",
        set.members.len(),
        report.rows
    );
    println!("classes         {}", set.class_labels.join(", "));
    println!(
        "objective       {:.4} (the bound summed over the classes, {:.2} s)",
        report.nlml, report.seconds
    );
    println!("fidelity        {}", exported.fidelity.describe());
    println!(
        "blob            {} ({} bytes, {} variance form)",
        args.out.display(),
        exported.blob.len(),
        exported.variance.name()
    );
    Ok(())
}

/// What `sgp fit --json` prints for a classifier of `K > 2` classes.
#[derive(serde::Serialize)]
pub(crate) struct ClassesFitOutput<'a> {
    report: &'a FitReport,
    /// The class labels, in class (output) order.
    classes: &'a [String],
    blob: &'a Path,
    blob_bytes: usize,
    fidelity: &'a Fidelity,
    /// The blob's variance form: "product" or "solves".
    variance: &'static str,
}
