//! Which settings apply to which model, as data: a setting given for a
//! model that does not use it is an error naming it, never ignored.
//!
//! A setting not in `SETTINGS` applies to every model; a rule lists the
//! procedures that read the setting, counting the SPGP fit that VSGP,
//! SPGP+HS and the projected fits start from.

use crate::fit::Method;
use crate::options::task::Task;
use crate::{Error, Result};

/// A setting and the models that use it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Setting {
    /// The option, as the command line spells it (`--objective`).
    pub flag: &'static str,
    /// The models that read it.
    pub models: &'static [Method],
    /// The one task it applies to, if only one.
    pub task: Option<Task>,
    /// What it is for, completing "`flag` is ...".
    pub what: &'static str,
}

use Method::{Exact, Gplasso, Ivm, Spgp, SpgpDr, SpgpHs, SpgpPca, Svgp, Vsgp};

/// The pseudo-input fits and those that start from SPGP's.
const PSEUDO: &[Method] = &[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca];

/// Every rule (module documentation).
pub(crate) const SETTINGS: &[Setting] = &[
    Setting {
        flag: "--m",
        models: &[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso, Ivm, Svgp],
        task: None,
        what: "the number of basis functions; the exact GP has none (--max-points bounds its rows)",
    },
    Setting {
        flag: "--dim",
        models: &[SpgpDr, SpgpPca],
        task: None,
        what: "the projected dimension of spgp-dr and spgp-pca",
    },
    Setting {
        flag: "--rank",
        models: &[Gplasso],
        task: None,
        what: "the rank of gplasso's incomplete Cholesky factor",
    },
    Setting {
        flag: "--path",
        models: &[Gplasso],
        task: None,
        what: "gplasso's lasso path",
    },
    Setting {
        flag: "--fixed-hyperparameters",
        models: &[Gplasso],
        task: None,
        what: "a gplasso procedure",
    },
    Setting {
        flag: "--fixed-basis",
        models: &[Gplasso],
        task: None,
        what: "a gplasso procedure",
    },
    Setting {
        flag: "--objective",
        models: &[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso],
        task: None,
        what: "the FITC or VFE objective of the pseudo-input fits and gplasso",
    },
    Setting {
        flag: "--kernel",
        models: &[Exact, Spgp, SpgpHs, SpgpDr, SpgpPca, Gplasso, Ivm, Svgp],
        task: None,
        what: "a Matérn covariance function; vsgp takes the squared exponential only: its basis \
               functions are Gaussians of their own widths, whose covariances with a Matérn \
               kernel have no closed form",
    },
    Setting {
        flag: "--no-held-out-choice",
        models: &[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso],
        task: None,
        what: "about the held-out choice of the pseudo-input fits and gplasso",
    },
    Setting {
        flag: "--restarts",
        models: &[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Svgp],
        task: None,
        what: "the number of starts of the pseudo-input fits and svgp",
    },
    Setting {
        flag: "--init",
        models: &[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Svgp],
        task: None,
        what: "how the pseudo-inputs of the pseudo-input fits and svgp start",
    },
    Setting {
        flag: "--init-hyper",
        models: PSEUDO,
        task: None,
        what: "how the hyperparameters of the pseudo-input fits start",
    },
    Setting {
        flag: "--max-points",
        models: &[Exact, Ivm, Gplasso, Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca],
        task: None,
        what: "the rows of an exact GP (exact, and the start of gplasso and the pseudo-input \
               fits) or of the ivm classifier's kernel",
    },
    Setting {
        flag: "--ivm-posterior",
        models: &[Ivm],
        task: Some(Task::Classification),
        what: "the posterior of the ivm classifier",
    },
    Setting {
        flag: "--tol",
        models: &[Exact, Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso, Svgp],
        task: None,
        what: "the stall test of the optimised fits; ivm's runs stop on their own test",
    },
    Setting {
        flag: "--updatable",
        models: &[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso, Svgp],
        task: None,
        what: "a blob that learns on the device, which needs a basis with a posterior of its own \
               (the sparse regressions and the binary svgp classifier)",
    },
    Setting {
        flag: "--positive",
        models: &[
            Exact, Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso, Ivm, Svgp,
        ],
        task: Some(Task::Classification),
        what: "the positive class of a classification",
    },
];

/// Refuses any flag of `given` that applies to none of `models` for
/// `task` (one model for `sgp fit`, the swept ones for `sgp sweep`;
/// `None`: the task is not known yet, and settings of one task are let
/// through until it is).
///
/// ```
/// use sgp_trainer::options::task::Task;
/// use sgp_trainer::fit::Method;
/// use sgp_trainer::options::applies;
///
/// assert!(applies::check(&[Method::Spgp], Some(Task::Regression), &["--objective"]).is_ok());
/// let err = applies::check(&[Method::Svgp], None, &["--objective"]);
/// assert!(err.unwrap_err().to_string().contains("--objective does not apply to svgp"));
/// ```
///
/// # Errors
/// [`Error::BadInput`] naming the first such flag, what it is for and the
/// models it applies to.
pub fn check(models: &[Method], task: Option<Task>, given: &[&str]) -> Result<()> {
    for &flag in given {
        let Some(setting) = SETTINGS.iter().find(|s| s.flag == flag) else {
            continue;
        };
        let for_task = match (setting.task, task) {
            (Some(only), Some(task)) => only == task,
            _ => true,
        };
        if for_task && models.iter().any(|m| setting.models.contains(m)) {
            continue;
        }
        let names: Vec<&str> = models.iter().map(|m| m.name()).collect();
        let models_named = if names.is_empty() {
            "the default model".to_owned()
        } else {
            names.join(", ")
        };
        // The task is named where it is the reason: the same words
        // whether the task was known when the setting was checked or not.
        let task_named = match (setting.task, task) {
            (None, _) | (_, None) => "",
            (Some(_), Some(Task::Regression)) => " (a regression)",
            (Some(_), Some(Task::Classification)) => " (a classification)",
        };
        let applies_to: Vec<&str> = setting.models.iter().map(|m| m.name()).collect();
        let only = match setting.task {
            Some(Task::Classification) => " classifying",
            Some(Task::Regression) => " regressing",
            None => "",
        };
        return Err(Error::BadInput(format!(
            "{flag} does not apply to {models_named}{task_named}: it is {}; it applies \
             to{only} {}",
            setting.what,
            applies_to.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_for_other_models_are_refused_and_named() {
        let err = |models: &[Method], task: Task, flag| {
            check(models, Some(task), &[flag]).unwrap_err().to_string()
        };
        let e = err(&[Svgp], Task::Classification, "--objective");
        assert!(e.starts_with("--objective does not apply to svgp"), "{e}");
        let e = err(&[Spgp], Task::Regression, "--ivm-posterior");
        assert!(e.contains("--ivm-posterior does not apply to spgp"), "{e}");
        assert!(err(&[Ivm], Task::Regression, "--ivm-posterior").contains("classifying ivm"));
        assert!(err(&[Exact], Task::Regression, "--m").contains("exact GP has none"));
        assert!(check(
            &[Ivm],
            Some(Task::Classification),
            &["--ivm-posterior", "--m"]
        )
        .is_ok());
        // The task unknown yet: a classifying setting waits for it.
        assert!(check(&[Ivm], None, &["--ivm-posterior"]).is_ok());
        // A sweep: a setting applies if it applies to any model swept.
        assert!(check(&[Spgp, SpgpDr], Some(Task::Regression), &["--dim"]).is_ok());
        assert!(check(&[Spgp], Some(Task::Regression), &["--seed", "--max-iter"]).is_ok());
        assert!(err(&[Spgp], Task::Regression, "--positive").contains("a classification"));
        let e = err(&[Vsgp], Task::Regression, "--kernel");
        assert!(e.contains("--kernel does not apply to vsgp") && e.contains("closed form"));
    }
}
