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
    pub models: Models,
    /// The one task it applies to, if only one.
    pub task: Option<Task>,
    /// What it is for, completing "`flag` is ...".
    pub what: &'static str,
    /// Why a model refuses it, where the capabilities table says.
    pub why_not: fn(Method) -> Option<String>,
}

/// No reason beyond the setting's purpose.
fn no_reason(_: Method) -> Option<String> {
    None
}

/// The models a setting applies to: listed, or those the capabilities
/// table ([`crate::fit::capabilities`]) gives the ability.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Models {
    These(&'static [Method]),
    Able(fn(Method) -> bool),
}

impl Models {
    fn contains(self, m: Method) -> bool {
        match self {
            Models::These(list) => list.contains(&m),
            Models::Able(able) => able(m),
        }
    }

    fn list(self) -> Vec<Method> {
        Method::ALL
            .iter()
            .copied()
            .filter(|&m| self.contains(m))
            .collect()
    }
}

use Method::{Exact, Gplasso, Ivm, Spgp, SpgpDr, SpgpHs, SpgpPca, Svgp, Vsgp};

/// The pseudo-input fits and those that start from SPGP's.
const PSEUDO: &[Method] = &[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca];

/// Every rule (module documentation).
pub(crate) const SETTINGS: &[Setting] = &[
    Setting {
        flag: "--m",
        models: Models::These(&[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso, Ivm, Svgp]),
        task: None,
        what: "the number of basis functions; the exact GP has none (--max-points bounds its rows)",
        why_not: no_reason,
    },
    Setting {
        flag: "--dim",
        models: Models::These(&[SpgpDr, SpgpPca]),
        task: None,
        what: "the projected dimension of spgp-dr and spgp-pca",
        why_not: no_reason,
    },
    Setting {
        flag: "--rank",
        models: Models::These(&[Gplasso]),
        task: None,
        what: "the rank of gplasso's incomplete Cholesky factor",
        why_not: no_reason,
    },
    Setting {
        flag: "--path",
        models: Models::These(&[Gplasso]),
        task: None,
        what: "gplasso's lasso path",
        why_not: no_reason,
    },
    Setting {
        flag: "--fixed-hyperparameters",
        models: Models::These(&[Gplasso]),
        task: None,
        what: "a gplasso procedure",
        why_not: no_reason,
    },
    Setting {
        flag: "--fixed-basis",
        models: Models::These(&[Gplasso]),
        task: None,
        what: "a gplasso procedure",
        why_not: no_reason,
    },
    Setting {
        flag: "--objective",
        models: Models::These(&[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso]),
        task: None,
        what: "the FITC or VFE objective of the pseudo-input fits and gplasso",
        why_not: no_reason,
    },
    Setting {
        flag: "--kernel",
        models: Models::Able(|m| m.capabilities().se_only.is_none()),
        task: None,
        what: "a Matérn covariance function",
        why_not: |m| {
            let why = m.capabilities().se_only?;
            Some(format!(
                "{} takes the squared exponential only: {why}",
                m.name()
            ))
        },
    },
    Setting {
        flag: "--no-held-out-choice",
        models: Models::These(&[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso]),
        task: None,
        what: "about the held-out choice of the pseudo-input fits and gplasso",
        why_not: no_reason,
    },
    Setting {
        flag: "--restarts",
        models: Models::These(&[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Svgp]),
        task: None,
        what: "the number of starts of the pseudo-input fits and svgp",
        why_not: no_reason,
    },
    Setting {
        flag: "--init",
        models: Models::These(&[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Svgp]),
        task: None,
        what: "how the pseudo-inputs of the pseudo-input fits and svgp start",
        why_not: no_reason,
    },
    Setting {
        flag: "--init-hyper",
        models: Models::These(PSEUDO),
        task: None,
        what: "how the hyperparameters of the pseudo-input fits start",
        why_not: no_reason,
    },
    Setting {
        flag: "--max-points",
        models: Models::These(&[Exact, Ivm, Gplasso, Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca]),
        task: None,
        what: "the rows of an exact GP (exact, and the start of gplasso and the pseudo-input \
               fits) or of the ivm classifier's kernel",
        why_not: no_reason,
    },
    Setting {
        flag: "--ivm-posterior",
        models: Models::These(&[Ivm]),
        task: Some(Task::Classification),
        what: "the posterior of the ivm classifier",
        why_not: no_reason,
    },
    Setting {
        flag: "--tol",
        models: Models::These(&[Exact, Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso, Svgp]),
        task: None,
        what: "the stall test of the optimised fits; ivm's runs stop on their own test",
        why_not: no_reason,
    },
    Setting {
        flag: "--updatable",
        models: Models::Able(|m| m.capabilities().updatable),
        task: None,
        what: "a blob that learns on the device, which needs a basis with a posterior of its own \
               (the sparse regressions and the binary svgp classifier)",
        why_not: no_reason,
    },
    Setting {
        flag: "--positive",
        models: Models::These(&[
            Exact, Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso, Ivm, Svgp,
        ]),
        task: Some(Task::Classification),
        what: "the positive class of a classification",
        why_not: no_reason,
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
        if for_task && models.iter().any(|&m| setting.models.contains(m)) {
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
        let applies_to: Vec<&str> = setting.models.list().iter().map(|m| m.name()).collect();
        let only = match setting.task {
            Some(Task::Classification) => " classifying",
            Some(Task::Regression) => " regressing",
            None => "",
        };
        let reasons: String = models
            .iter()
            .filter_map(|&m| (setting.why_not)(m))
            .map(|why| format!("; {why}"))
            .collect();
        return Err(Error::BadInput(format!(
            "{flag} does not apply to {models_named}{task_named}: it is {}{reasons}; it \
             applies to{only} {}",
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
