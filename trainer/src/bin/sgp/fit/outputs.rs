//! `sgp fit --target a,b,c`: several outputs on one basis.

use std::path::Path;

use sgp_trainer::data::multi_target::MultiTargetData;
use sgp_trainer::export::cure::{export_outputs, Cure};
use sgp_trainer::export::output_blob::set_blob;
use sgp_trainer::export::updatable::export_updatable;
use sgp_trainer::export::Fidelity;
use sgp_trainer::files::Input;
use sgp_trainer::fit::multi_output::{fit_multi, MultiFitReport};
use sgp_trainer::fit::task::Task;
use sgp_trainer::fit::{applies, Method};
use sgp_trainer::numerics::optimise::Progress;
use sgp_trainer::{Error, Result};

use crate::{number, progress_bar, to_json, write_file};

use super::{FitArgs, TaskArg};

/// What `sgp fit --target a,b --json` prints.
#[derive(serde::Serialize)]
pub(crate) struct MultiFitOutput<'a> {
    report: &'a MultiFitReport,
    blob: &'a Path,
    blob_bytes: usize,
    /// Each output's f32 fidelity, in output order.
    fidelity: Vec<&'a Fidelity>,
    /// The blob's variance form: "product" or "solves".
    variance: &'static str,
    cure: Option<&'a Cure>,
}

/// `sgp fit --target a,b,c`: one model for several targets on one basis.
pub(crate) fn fit_outputs_command(
    args: &FitArgs,
    input: &Input,
    targets: &[String],
    given: &[&str],
    quiet: bool,
) -> Result<()> {
    if args.task()? == Some(TaskArg::Classification) || args.positive.is_some() {
        return Err(Error::BadInput(
            "several targets (--target a,b) are a multi-output regression; a classifier has one \
             target column (its classes are that column's values)"
                .into(),
        ));
    }
    if args.golden.is_some() {
        return Err(Error::BadInput(
            "--golden writes the golden values of a model of one target; several targets \
             (--target a,b) have none yet"
                .into(),
        ));
    }
    let model = args.model.unwrap_or(Method::Spgp);
    applies::check(&[model], Some(Task::Regression), given)?;
    let data = MultiTargetData::from_input(input, targets)?;
    let params = args.params(model)?;
    let bar = progress_bar(quiet || args.json, params.iteration_budget(), "fit");
    let fitted = fit_multi(&data, &params, &mut |p: Progress| {
        bar.set_position(p.iteration);
        bar.set_message(format!("objective {:.4}", p.best_value));
    });
    bar.finish_and_clear();
    let mut fitted = fitted?;
    let raw_x = data.first().raw_x();
    let (mut exported, cure) = export_outputs(&mut fitted, &raw_x, args.force)?;
    let blob = if args.updatable {
        let approximation = fitted.report.outputs.first().and_then(|r| r.approximation);
        let one = export_updatable(&fitted.set, &raw_x, approximation, args.force)?;
        let blob = one.blob.clone();
        exported = vec![one; fitted.set.members.len()];
        blob
    } else {
        set_blob(&fitted.set, &exported)?
    };
    write_file(&args.out, &blob)?;
    let variance = exported.first().map_or("solves", |e| e.variance.name());
    if args.json {
        let output = MultiFitOutput {
            report: &fitted.report,
            blob: &args.out,
            blob_bytes: blob.len(),
            fidelity: exported.iter().map(|e| &e.fidelity).collect(),
            variance,
            cure: cure.as_ref(),
        };
        println!("{}", to_json(&output)?);
        return Ok(());
    }
    let report = &fitted.report;
    let first = fitted.set.members.first();
    println!(
        "model           {} (M = {}, {} outputs on one basis, {} training rows)",
        params.method().name(),
        first.map_or(0, |m| m.n_basis()),
        fitted.set.members.len(),
        data.n_rows()
    );
    for (k, start) in report.starts.iter().enumerate() {
        println!(
            "start {:<9} {} -> objective {:.4}",
            k + 1,
            start.init,
            start.nlml
        );
    }
    if let Some(run) = &report.optimiser {
        println!(
            "objective       {:.4} -> {:.4} (sum over outputs) in {} iterations ({:.2} s; {})",
            run.initial_nlml, report.nlml, run.iterations, report.seconds, run.stop_reason
        );
    }
    if let Some(out) = report.outputs.first() {
        if !out.hyper.lengthscales.is_empty() {
            let scales: Vec<String> = out
                .inputs
                .iter()
                .zip(&out.hyper.lengthscales)
                .map(|(name, l)| format!("{name} {}", number(*l)))
                .collect();
            println!("length scales   {} (shared)", scales.join(", "));
        }
    }
    if let Some(sharing) = &report.variance {
        println!("variance        {}", sharing.describe());
    }
    for warning in &report.warnings {
        eprintln!("sgp: warning: {warning}");
    }
    println!("output          objective  signal var  noise var  f32 worst mean / sd");
    for ((out, member), e) in report
        .outputs
        .iter()
        .zip(&fitted.set.members)
        .zip(&exported)
    {
        println!(
            "{:<15} {:>9.4}  {:>10}  {:>9}{}  {:.3}",
            member.target_name,
            out.nlml,
            number(out.hyper.signal_variance),
            number(out.hyper.noise_variance),
            if out.hyper.noise_on_floor {
                " (floor)"
            } else {
                ""
            },
            e.fidelity.worst_mean_sd
        );
    }
    if let Some(c) = &cure {
        println!(
            "export cure     jitter raised from {:e} to {:e} s2 for every output so that f32 \
             reproduces the models ({} iterations of joint re-optimisation); training objective \
             {:.4} -> {:.4}",
            c.from_eps, c.to_eps, c.reoptimised, c.nlml_before, c.nlml_after
        );
    }
    println!(
        "blob            {} ({} bytes, {} variance form, every output's f32 predictions checked)",
        args.out.display(),
        blob.len(),
        variance
    );
    Ok(())
}
