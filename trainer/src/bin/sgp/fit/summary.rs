//! What `sgp fit` prints: the fit summary and GPLasso's lasso path.

use std::path::Path;

use sgp_runtime::VarianceForm;
use sgp_trainer::export::cure::Cure;
use sgp_trainer::export::{Exported, MEAN_TOLERANCE_FLOOR, MEAN_TOLERANCE_SD, VARIANCE_TOLERANCE};
use sgp_trainer::fit::gplasso::{GplassoRefit, PathRow, PATH_HOLDOUT};
use sgp_trainer::fit::{Fitted, Method};

use crate::number;

pub(crate) fn print_path(rows: &[PathRow], stop: sgp_trainer::numerics::lars::LarsStop, m: usize) {
    println!(
        "lasso path on {:.0}% of the rows, scored on the other {:.0}% (raw units):",
        100.0 * (1.0 - PATH_HOLDOUT),
        100.0 * PATH_HOLDOUT
    );
    println!(
        "{:>9} {:>10} {:>12} {:>14} {:>10} {:>10}",
        "non-zeros", "change", "lambda", "objective", "val NLPD", "val RMSE"
    );
    for (k, r) in rows.iter().enumerate() {
        let change = match r.action {
            // The first breakpoint: the first row entered at the start.
            _ if k == 0 => r
                .rows
                .iter()
                .map(|j| format!("+{j}"))
                .collect::<Vec<_>>()
                .join(" "),
            sgp_trainer::numerics::lars::LarsAction::Enter(j) => format!("+{j}"),
            sgp_trainer::numerics::lars::LarsAction::Leave(j) => format!("-{j}"),
            sgp_trainer::numerics::lars::LarsAction::Rejected(j) => format!("dup {j}"),
            _ => String::new(),
        };
        println!(
            "{:>9} {:>10} {:>12} {:>14} {:>10.4} {:>10}",
            r.nonzeros,
            change,
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

pub(crate) fn print_fit_summary(
    fitted: &Fitted,
    exported: &Exported,
    cure: Option<&Cure>,
    out: &Path,
) {
    let (model, report) = (&fitted.model, &fitted.report);
    let objective = report
        .approximation
        .map(|a| format!(", {}", format!("{a:?}").to_uppercase()))
        .unwrap_or_default();
    let method = report.method.name();
    let kind = if method == model.kind.name() {
        method
    } else {
        format!("{method} (blob kind {})", model.kind.name())
    };
    println!(
        "model           {kind} (M = {}, {} training rows{objective})",
        model.n_basis(),
        report.rows
    );
    if let Some(streamed) = &report.streamed {
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
    for (k, start) in report.starts.iter().enumerate() {
        println!(
            "start {:<9} {} -> NLML {:.4}",
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
            "NLML            {:.4} -> {:.4} in {} iterations ({} evaluations, {:.2} s; {})",
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
    if let Some(g) = &report.gplasso {
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
            report.nlml
        );
    }
    if let Some(c) = &report.held_out {
        println!(
            "held-out choice {} (mean NLPD on {} held-out rows, raw units: {} {:.4}, {} {:.4}, \
             standard error of the difference {:.4}; the other must win by more than {} of \
             them)",
            c.chosen(),
            c.rows,
            c.incumbent,
            c.incumbent_nlpd,
            c.challenger,
            c.challenger_nlpd,
            c.standard_error,
            sgp_trainer::fit::held_out::MARGIN_SE
        );
        if c.noise_collapsed {
            println!(
                "                FITC's fit on all rows put its noise on the floor (near \
                 noise-free predictions at its pseudo-inputs) without clearly winning: the \
                 model is the VFE fit"
            );
        }
        if let Some(rival) = &c.lost_to {
            println!(
                "                {} must beat both objectives: {} scored {:.4} (standard \
                 error of the difference {:.4})",
                c.challenger, rival.name, rival.nlpd, rival.standard_error
            );
        }
        if report.method.falls_back_to_spgp() && !c.challenger_chosen {
            // A firmware sized from `--dim` must hear that the blob's
            // feature dimension is every input's, not the projection's.
            let inputs = report.hyper.lengthscales.len();
            let (what, unused) = match report.method {
                Method::SpgpHs => ("the uncertainties", "all h = 0".to_string()),
                Method::Vsgp => (
                    "the per-basis widths",
                    "every width at the length scales".to_string(),
                ),
                Method::Gplasso => (
                    "the lasso's basis",
                    "pseudo-inputs from SPGP's own starts".to_string(),
                ),
                _ => (
                    "the projection",
                    format!("no projection: the blob's feature dimension is all {inputs} inputs, not --dim"),
                ),
            };
            println!(
                "                {what} did not pay on held-out rows: the model is plain SPGP \
                 ({unused}); --no-held-out-choice fits {} anyway",
                report.method.name()
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
        println!("kernel          {}", report.hyper.kernel);
        println!("length scales");
        let width = report.inputs.iter().map(String::len).max().unwrap_or(0);
        for (name, l) in report.inputs.iter().zip(&report.hyper.lengthscales) {
            println!("  {name:<width$}  {}", number(*l));
        }
    }
    if !report.ignored_inputs.is_empty() {
        println!(
            "ignored inputs  {} (constant in the training data; no length scale)",
            report.ignored_inputs.join(", ")
        );
    }
    if let Some(h) = &report.uncertainties {
        println!(
            "uncertainties   h_m min {}  median {}  max {} (raw target variance; not in the blob)",
            number(h.min),
            number(h.median),
            number(h.max)
        );
    }
    if let Some(ivm) = &report.ivm {
        let best = ivm
            .candidates
            .iter()
            .map(|c| c.validation_log_predictive)
            .fold(f64::NEG_INFINITY, f64::max);
        println!(
            "active set      {} training rows by differential entropy ({:?} likelihood); kernel \
             chosen among {} candidates by held-out mean log predictive {best:.4}; selection \
             {:.2} s, kernel optimisation {:.2} s",
            ivm.active_rows.len(),
            ivm.likelihood,
            ivm.candidates.len(),
            ivm.select_seconds,
            ivm.optimise_seconds
        );
        if model.link == sgp_runtime::Link::Probit {
            println!(
                "classes         positive class {} (P(y = +1) in the blob), bias b = {:.4}; \
                 posterior {:?}",
                model.positive_class, model.bias, ivm.posterior
            );
        }
    }
    println!("signal variance {}", number(report.hyper.signal_variance));
    if model.link == sgp_runtime::Link::Identity {
        println!(
            "noise variance  {}{}",
            number(report.hyper.noise_variance),
            if report.hyper.noise_on_floor {
                "  (on the noise floor: FITC absorbed the noise)"
            } else {
                ""
            }
        );
    }
    if report.jitter_escalations > 0 {
        println!(
            "jitter          raised {} times to factorise",
            report.jitter_escalations
        );
    }
    if let Some(c) = cure {
        println!(
            "export cure     jitter raised from {:.0e} to {:.0e} s2 so that f32 reproduces the \
             model ({} iterations of re-optimisation); training NLML {:.4} -> {:.4} ({:+.2}%)",
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
                sgp_trainer::export::cure::MAX_CURE_EPS,
                100.0 * sgp_trainer::export::cure::MAX_CURE_COST
            );
        }
    }
    let f = &exported.fidelity;
    if model.link == sgp_runtime::Link::Probit {
        println!(
            "runtime check   worst class-probability deviation {:.1e} (limit {:.0e}), worst \
             latent variance deviation {:.1e} (limit {VARIANCE_TOLERANCE:.0e}) over {} points",
            f.worst_mean,
            sgp_trainer::export::PROBABILITY_TOLERANCE,
            f.worst_variance,
            f.points
        );
    } else {
        println!(
            "runtime check   worst mean deviation {:.1e} x predictive sd ({:.2} of the limit: \
         {MEAN_TOLERANCE_SD:.0e} x sd, at least {MEAN_TOLERANCE_FLOOR:.0e} x y_scale), worst \
         variance deviation {:.1e} (limit {VARIANCE_TOLERANCE:.0e}) over {} points",
            f.worst_mean_sd, f.worst_mean_ratio, f.worst_variance, f.points
        );
    }
    match (&exported.product_refused, exported.variance) {
        (_, VarianceForm::Whitened) => println!(
            "variance form   whitened: learns on the device (Model::update; one solve and one \
             product per prediction)"
        ),
        (None, _) => {
            println!("variance form   product: |C k|^2, one triangular product on the device")
        }
        (Some(why), _) => println!(
            "variance form   solves (forward substitutions): the cheaper product form was \
             refused: {why}"
        ),
    }
    println!(
        "blob            {} ({} bytes)",
        out.display(),
        exported.blob.len()
    );
}
