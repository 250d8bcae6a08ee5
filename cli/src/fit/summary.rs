//! What `sgp fit` prints: the fit summary and GPLasso's lasso path.

use std::path::Path;

use sgp_runtime::{Link, VarianceForm};
use sgp_trainer::export::cure::Cure;
use sgp_trainer::export::Fidelity;
use sgp_trainer::fit::gplasso::GplassoRefit;
use sgp_trainer::job::{LassoPath, Summary};

use crate::number;

pub(crate) fn print_path(path: &LassoPath) {
    let (rows, stop, m) = (&path.rows, path.stop, path.asked);
    println!(
        "lasso path on {:.0}% of the rows, scored on the other {:.0}% (raw units):",
        100.0 * (1.0 - path.holdout),
        100.0 * path.holdout
    );
    println!(
        "{:>9} {:>10} {:>12} {:>14} {:>10} {:>10}",
        "non-zeros", "change", "lambda", "objective", "val NLPD", "val RMSE"
    );
    for r in rows {
        println!(
            "{:>9} {:>10} {:>12} {:>14} {:>10.4} {:>10}",
            r.nonzeros,
            r.change,
            number(r.lambda),
            number(r.objective),
            r.validation_nlpd,
            number(r.validation_rmse)
        );
    }
    let reached = rows.last().map_or(0, |r| r.nonzeros);
    if reached < m {
        println!("the path stopped at {reached} non-zeros ({stop:?}), short of --m {m}");
    }
    println!(
        "(change: data row, 0-based, header not counted, that entered (+) or left (-) the basis; \
         `--json` lists every breakpoint's rows)"
    );
    println!();
}

/// The fit's warnings, on standard error (under --quiet and --json too).
pub(crate) fn print_warnings(s: &Summary) {
    for warning in &s.report.warnings {
        eprintln!("sgp: warning: {warning}");
    }
}

pub(crate) fn print_fit_summary(s: &Summary, out: &Path) {
    print_model(s);
    print_run(s);
    print_gplasso(s);
    print_choice_and_kernel(s);
    print_family_details(s);
    print_classes(s);
    print_outputs(s);
    print_cure(s);
    print_runtime_check(s);
    print_variance_form(s);
    println!("blob            {} ({} bytes)", out.display(), s.blob_bytes);
}

/// The model line: family, sizes, objective, outputs or classes, and for a
/// streamed fit the subset it was fitted on.
fn print_model(s: &Summary) {
    let report = s.report;
    let objective = report
        .approximation
        .map(|a| format!(", {}", format!("{a:?}").to_uppercase()))
        .unwrap_or_default();
    let method = report.method.name();
    let kind = if method == s.kind {
        method.to_string()
    } else {
        format!("{method} (blob kind {})", s.kind)
    };
    let count = s.links.len();
    let several = match s.links[0] {
        _ if count == 1 => String::new(),
        Link::Identity => format!(", {count} outputs on one basis"),
        link => format!(", {count} classes on one basis, {} link", link.name()),
    };
    println!(
        "model           {kind} (M = {}, {} training rows{objective}{several})",
        s.n_basis, report.rows
    );
    let quoted = |names: &mut dyn Iterator<Item = &str>| {
        let mut shown: Vec<String> = Vec::new();
        for n in names {
            let q = format!("'{n}'");
            if !shown.contains(&q) {
                shown.push(q);
            }
        }
        let all = shown.len();
        if all > 6 {
            shown.truncate(5);
            shown.push(format!("... ({all} in all)"));
        }
        shown.join(", ")
    };
    println!(
        "columns         target {} from input{} {}",
        quoted(&mut s.targets.iter().copied()),
        if s.inputs.len() == 1 { "" } else { "s" },
        quoted(&mut s.inputs.iter().map(String::as_str))
    );
    if let Some(streamed) = report.streamed.as_ref().filter(|s| s.passes.is_some()) {
        println!(
            "subset          kernel and inducing inputs fitted on {} of {} rows; q(u) on every \
             row in {} passes ({:.1} s)",
            streamed.fitted_rows,
            streamed.rows,
            streamed.passes.unwrap_or(0),
            streamed.pass_seconds
        );
    } else if let Some(streamed) = &report.streamed {
        let stages: Vec<String> = streamed
            .stages
            .iter()
            .map(|s| format!("{} rows {:.4}", s.rows, s.validation_nlpd))
            .collect();
        println!(
            "subset          fitted on {} of {} rows (validation NLPD by stage: {}); every row \
             conditioned on in a {:.1} s pass",
            streamed.fitted_rows,
            streamed.rows,
            stages.join(", "),
            streamed.pass_seconds
        );
    }
}

/// The starts, the optimiser's run and whether it used its whole budget.
fn print_run(s: &Summary) {
    let report = s.report;
    for (k, start) in report.starts.iter().enumerate() {
        println!(
            "start {:<9} {} -> objective {:.4}",
            k + 1,
            start.init,
            start.nlml
        );
    }
    if let (Some(run), Some(streamed)) = (&report.optimiser, &report.streamed) {
        // Two row counts: the kept stage's start is on its subset, the
        // final NLML on every row; per row they compare.
        println!(
            "NLML per row    {:.4} at the start of the kept stage ({} rows) -> {:.4} on every \
             row ({} rows; NLML {:.4}); {} iterations ({} evaluations, {:.2} s; {})",
            run.initial_nlml / streamed.fitted_rows as f64,
            streamed.fitted_rows,
            report.nlml / streamed.rows as f64,
            streamed.rows,
            report.nlml,
            run.iterations,
            run.evaluations,
            report.seconds,
            run.stop_reason
        );
    } else if let Some(run) = &report.optimiser {
        println!(
            "objective       {:.4} -> {:.4} in {} iterations ({} evaluations, {:.2} s; {})",
            run.initial_nlml,
            report.nlml,
            run.iterations,
            run.evaluations,
            report.seconds,
            run.stop_reason
        );
    }
    if let Some(run) = &report.optimiser {
        if run.budget_exhausted {
            println!(
                "                the optimiser used its whole budget of {} iterations and was \
                 still improving: try --max-iter {}",
                run.max_iter,
                2 * run.max_iter
            );
        }
    }
}

/// GPLasso's selection: the path, the hyperparameters' start and refit,
/// the selected rows.
fn print_gplasso(s: &Summary) {
    let Some(g) = &s.report.gplasso else {
        return;
    };
    println!(
        "selection       LARS path to {} of {} asked non-zeros ({:?}) in {} steps ({} \
         removals), lambda {}; ICF rank {} of {} (residual trace {:.1e}); weights {:?}; \
         hyperparameters {:.2} s, selection {:.2} s",
        g.reached,
        g.asked,
        g.stop,
        g.lars_steps,
        g.removals,
        number(g.lambda),
        g.icf_rank,
        g.rank,
        g.icf_residual,
        g.weights,
        g.hyper_seconds,
        g.select_seconds
    );
    if g.reached < g.asked {
        println!(
            "                the path could not reach {} non-zeros (duplicated rows, or the \
             kernel's rank at the trace tolerance): the model has {}",
            g.asked, g.reached
        );
    }
    let start = format!(
        "the exact GP's on {} rows ({} iterations, {:.2} s)",
        g.hyper_rows, g.hyper_iterations, g.hyper_seconds
    );
    match g.refit {
        GplassoRefit::Nothing => {
            println!("hyperparameters {start}, kept (--fixed-hyperparameters)")
        }
        GplassoRefit::Hyperparameters => println!(
            "hyperparameters re-optimised from {start} with the selected inputs as basis \
             (--fixed-basis)"
        ),
        GplassoRefit::Everything => println!(
            "hyperparameters re-optimised from {start}, then the basis points moved from the \
             selected inputs with them"
        ),
    }
    let rows: Vec<String> = g.selected_rows.iter().map(usize::to_string).collect();
    println!(
        "selected rows   {} (0-based data rows, header not counted; the blob holds their \
         inputs, not these numbers)",
        rows.join(" ")
    );
    println!(
        "variance        FITC with the basis points as pseudo-inputs (an approximation); \
         its training NLML {:.4}",
        s.report.nlml
    );
}

/// The choice made on held-out rows, then the projection or the kernel and
/// its length scales, and the inputs ignored.
fn print_choice_and_kernel(s: &Summary) {
    let (report, count) = (s.report, s.links.len());
    if let Some(c) = &report.choice {
        println!("choice          {}", c.reason);
        if !c.candidates.is_empty() {
            let scores: Vec<String> = c
                .candidates
                .iter()
                .map(|k| format!("{} {:.4}", k.name, k.nlpd))
                .collect();
            println!(
                "                mean held-out NLPD (raw units) over the folds: {}",
                scores.join(", ")
            );
        }
        if c.seconds > 0.0 {
            println!(
                "                the held-out choices took {:.2} s before the final fit \
                 (--no-held-out-choice skips them)",
                c.seconds
            );
        }
    }
    if let Some(p) = &report.projection {
        let s: Vec<String> = p.singular_values.iter().map(|v| number(*v)).collect();
        println!(
            "projection      {} x {} (standardised inputs); singular values {}",
            p.rows,
            p.cols,
            s.join(", ")
        );
    } else {
        println!("kernel          {}", report.kernel);
        println!("length scales{}", if count > 1 { " (shared)" } else { "" });
        let width = report.inputs.iter().map(String::len).max().unwrap_or(0);
        for (name, l) in report.inputs.iter().zip(&report.lengthscales) {
            println!("  {name:<width$}  {}", number(*l));
        }
    }
    if !report.ignored_inputs.is_empty() {
        println!(
            "ignored inputs  {} (constant in the training data; no length scale)",
            report.ignored_inputs.join(", ")
        );
    }
}

/// SPGP+HS's uncertainties and prior, the IVM's active set.
fn print_family_details(s: &Summary) {
    let report = s.report;
    if let Some(h) = &report.uncertainties {
        println!(
            "uncertainties   h_m min {}  median {}  max {} (raw target variance; not in the blob)",
            number(h.min),
            number(h.median),
            number(h.max)
        );
    }
    if let Some(prior) = &report.h_prior {
        println!("prior on h      {}", prior.reason);
    }
    if let Some(ivm) = &report.ivm {
        let best = ivm
            .candidates
            .iter()
            .filter_map(|c| c.validation_log_predictive)
            .fold(f64::NEG_INFINITY, f64::max);
        let kernel = if best.is_finite() {
            format!(
                "kernel chosen among {} candidates by held-out mean log predictive {best:.4}",
                ivm.candidates.len()
            )
        } else {
            format!(
                "kernel learned by the svgp bound on the active set in {} rounds",
                ivm.candidates.len()
            )
        };
        println!(
            "active set      {} training rows by differential entropy ({:?} likelihood); \
             {kernel}; selection {:.2} s, kernel optimisation {:.2} s",
            ivm.active_rows.len(),
            ivm.likelihood,
            ivm.select_seconds,
            ivm.optimise_seconds
        );
    }
}

/// A classifier's classes (and a binary one's bias).
fn print_classes(s: &Summary) {
    match s.links[0] {
        Link::Probit => println!(
            "classes         positive class {} (P(y = +1) in the blob), bias b = {:.4}{}",
            s.positive,
            s.bias,
            s.report
                .ivm
                .as_ref()
                .map(|ivm| format!("; posterior {:?}", ivm.posterior))
                .unwrap_or_default()
        ),
        Link::OneVsRest | Link::Softmax => {
            println!("classes         {}", s.classes.join(", "))
        }
        Link::Identity => {}
    }
}

/// The variance sharing, the data warnings, and each output's variances.
fn print_outputs(s: &Summary) {
    let report = s.report;
    if let Some(sharing) = &report.variance {
        println!("variance        {}", sharing.describe());
    }
    print_warnings(s);
    if s.links.len() == 1 {
        let out = &report.outputs[0];
        println!("signal variance {}", number(out.signal_variance));
        if s.links[0] == Link::Identity {
            println!(
                "noise variance  {}{}",
                number(out.noise_variance),
                if out.noise_on_floor {
                    "  (on the noise floor: FITC absorbed the noise)"
                } else {
                    ""
                }
            );
        }
    } else {
        println!("output          objective  signal var  noise var  f32 worst mean / sd");
        for ((out, link), f) in report.outputs.iter().zip(&s.links).zip(s.fidelities) {
            println!(
                "{:<15} {:>9}  {:>10}  {:>9}{}  {:.3}",
                out.name,
                out.nlml.map_or("-".into(), |v| format!("{v:.4}")),
                number(out.signal_variance),
                if *link == Link::Identity {
                    number(out.noise_variance)
                } else {
                    "-".into()
                },
                if out.noise_on_floor { " (floor)" } else { "" },
                f.worst_mean_sd
            );
        }
    }
}

/// The jitter raised to factorise, and the export's cure if it needed one.
fn print_cure(s: &Summary) {
    if s.report.jitter_escalations > 0 {
        println!(
            "jitter          raised {} times to factorise",
            s.report.jitter_escalations
        );
    }
    if let Some(c) = s.cure {
        let held = if c.noise_held && c.reoptimised > 0 {
            ", the noise held at or above its fitted value"
        } else {
            ""
        };
        println!(
            "export cure     jitter raised from {:.0e} to {:.0e} s2 so that f32 reproduces the \
             model ({} iterations of re-optimisation{held}); training NLML {:.4} -> {:.4} ({:+.2}%)",
            c.from_eps,
            c.to_eps,
            c.reoptimised,
            c.nlml_before,
            c.nlml_after,
            100.0 * c.cost()
        );
        if !c.within_budget {
            println!(
                "                warning: no jitter up to {:.0e} s2 cured the export within {:.0}%                  of the training NLML; this is the cheapest cure (try fewer basis functions,                  --m)",
                Cure::MAX_EPS,
                100.0 * Cure::MAX_COST
            );
        }
    }
}

/// How closely the f32 runtime reproduces the f64 model.
fn print_runtime_check(s: &Summary) {
    let f = s.fidelity;
    if s.links[0] != Link::Identity {
        println!(
            "runtime check   worst class-probability deviation {:.1e} (limit {:.0e}), worst \
             latent variance deviation {:.1e} (limit {:.0e}) over {} points",
            f.worst_mean,
            Fidelity::PROBABILITY,
            f.worst_variance,
            Fidelity::VARIANCE,
            f.points
        );
    } else {
        println!(
            "runtime check   worst mean deviation {:.1e} x predictive sd ({:.2} of the limit: \
         {:.0e} x sd, at least {:.0e} x y_scale), worst variance deviation {:.1e} (limit \
         {:.0e}) over {} points",
            f.worst_mean_sd,
            f.worst_mean_ratio,
            Fidelity::MEAN_SD,
            Fidelity::MEAN_FLOOR,
            f.worst_variance,
            Fidelity::VARIANCE,
            f.points
        );
    }
}

/// The variance form the blob carries.
fn print_variance_form(s: &Summary) {
    match (s.product_refused, s.variance) {
        (_, form @ (VarianceForm::Whitened | VarianceForm::Covariance)) => println!(
            "variance form   {}: learns on the device (Model::update; one solve and one \
             product per prediction)",
            form.name()
        ),
        (None, _) => {
            println!("variance form   product: |C k|^2, one triangular product on the device")
        }
        (Some(why), _) => println!(
            "variance form   solves (forward substitutions): the cheaper product form was \
             refused: {why}"
        ),
    }
}
