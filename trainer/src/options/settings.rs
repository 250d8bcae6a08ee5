//! Every setting of a fit, declared once: its flag, its line of help
//! (`sgp fit --help` and the Python docstrings), its default in words, the
//! values it takes, which families read it and, for one given to a family
//! that does not, what it is for. A setting given for a model that does
//! not use it is an error naming it, never ignored ([`check`]).
//!
//! [`Options::set`] sets each from its value as the command line gives it
//! (`sgp fit`'s flags and Python's keywords go through it), parsed and
//! refused with the messages here.
//!
//! A setting's families are the procedures that read it, counting the
//! SPGP fit that VSGP, SPGP+HS and the projected fits start from; its
//! default is read back from the parameters [`Options`] builds when
//! nothing is given (`built`), so the help cannot state another value
//! than the fit uses.

use crate::choose::AUTO;
use crate::evaluate::contest::CONTEST_ROWS;
use crate::fit::ivm::{IvmParams, IvmPosterior};
use crate::fit::spgp_hs::H_PRIOR;
use crate::fit::streamed::StreamedParams;
use crate::fit::task::Task;
use crate::fit::{ExactParams, FitParams, HyperInit, InitMethod, Method, PseudoInit, SparseParams};
use crate::model::inference::Approximation;
use crate::options::{parse, KernelChoice, ModelChoice, Named, Options, DEFAULT_M};
use crate::{Error, Result};

/// A setting: its declaration (module documentation).
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    /// The option, as the command line spells it (`--objective`); Python's
    /// keyword is its name (`--max-iter`: `max_iter`) unless Python says
    /// it otherwise.
    pub flag: &'static str,
    /// Its line of help; `{name}` stands for a figure of [`FIGURES`] and
    /// `{DEFAULT}` for the default (in capitals) where the text states it.
    help: &'static str,
    /// Its default in words (`None`: a switch, or a choice made from the
    /// data).
    default: Option<fn() -> String>,
    /// The values it takes.
    pub value: Value,
    /// Whether [`Options`] hold it given (`None`: a setting of the command
    /// line's own, such as `--path`).
    given: Option<fn(&Options) -> bool>,
    /// Sets it on [`Options`] from the value given ([`Options::set`]),
    /// where they hold it.
    set: Option<fn(&mut Options, Given<'_>) -> Result<()>>,
    /// The models that read it.
    models: Models,
    /// The one task it applies to, if only one.
    task: Option<Task>,
    /// What it is for, completing "`flag` is ...".
    what: &'static str,
    /// Why a model refuses it, where the capabilities table says.
    why_not: fn(Method) -> Option<String>,
}

/// The values a setting takes.
#[derive(Clone, Copy, Debug)]
pub enum Value {
    /// A whole number.
    Count,
    /// A number.
    Number,
    /// A switch: given or not.
    Switch,
    /// Text (a class label).
    Text,
    /// One of these names, each with its line of help.
    Names(fn() -> Vec<(&'static str, &'static str)>),
}

impl Value {
    /// The names it takes, each with its line of help, if it takes names.
    pub fn named(self) -> Option<Vec<(&'static str, &'static str)>> {
        match self {
            Value::Names(names) => Some(names()),
            _ => None,
        }
    }

    /// The names it takes (none but for [`Value::Names`]).
    pub fn names(self) -> Vec<&'static str> {
        let named = self.named().unwrap_or_default();
        named.into_iter().map(|(name, _)| name).collect()
    }
}

/// A value given for a setting, as the command line spells it (`--m 32`:
/// the text `32`; a switch's is empty), parsed by the setting's [`Value`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Given<'a> {
    setting: &'static Setting,
    text: &'a str,
}

impl Given<'_> {
    /// A number: whole for a [`Value::Count`].
    fn number<T: std::str::FromStr>(self) -> Result<T> {
        let (flag, text) = (self.setting.flag, self.text);
        let what = match self.setting.value {
            Value::Count => "a count: give a whole number, e.g. 32",
            _ => "a number, e.g. 0.01",
        };
        let e = || Error::BadInput(format!("{flag}='{text}' is not {what}"));
        text.parse().map_err(|_| e())
    }

    /// One of `T`'s names.
    fn named<T: Named>(self) -> Result<T> {
        parse(self.text, self.setting.flag)
    }
}

/// Holds `value` in `slot`.
fn put<T>(slot: &mut Option<T>, value: Result<T>) -> Result<()> {
    *slot = Some(value?);
    Ok(())
}

/// Turns the switch `slot` on.
fn on(slot: &mut bool) -> Result<()> {
    *slot = true;
    Ok(())
}

impl Setting {
    /// The line of help, its figures filled in (without the default, unless
    /// the text states it: [`Setting::default`]).
    pub fn help(&self) -> String {
        let mut text = self.help.to_owned();
        for (name, value) in FIGURES {
            text = text.replace(&format!("{{{name}}}"), &value());
        }
        match self.default {
            Some(default) => text.replace("{DEFAULT}", &default().to_uppercase()),
            None => text,
        }
    }

    /// The default in words, where the help does not state it already.
    pub fn default(&self) -> Option<String> {
        self.default
            .filter(|_| !self.help.contains("{DEFAULT}"))
            .map(|default| default())
    }

    /// Whether [`Options`] hold the setting: it is a keyword of Python's
    /// estimators.
    pub fn held(&self) -> bool {
        self.given.is_some()
    }

    /// Whether it is a switch (given or not, with no value).
    pub fn is_switch(&self) -> bool {
        matches!(self.value, Value::Switch)
    }
}

/// The setting `flag` (`--max-iter`), if one.
pub fn setting(flag: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.flag == flag)
}

/// The default of `flag` (`--max-iter`), in words, or `None` for a setting
/// without one stated; a figure of [`FIGURES`] by its name.
///
/// ```
/// use sgp_trainer::options::settings::stated;
///
/// assert_eq!(stated("--restarts").as_deref(), Some("4"));
/// assert_eq!(stated("--path"), None);
/// ```
pub fn stated(flag: &str) -> Option<String> {
    match setting(flag) {
        Some(s) => s.default.map(|default| default()),
        None => FIGURES.iter().find(|f| f.0 == flag).map(|f| (f.1)()),
    }
}

/// A figure help states: its name and its value in words.
pub(crate) type Figure = (&'static str, fn() -> String);

/// The figures help states: `{name}` in a line of help.
pub const FIGURES: &[Figure] = &[
    ("held_out_rows", || CONTEST_ROWS.to_string()),
    ("spgp_hs_prior", || H_PRIOR.to_string()),
    ("streamed_above", || {
        StreamedParams::default().in_memory_rows.to_string()
    }),
    ("se_only", || {
        let only = Method::ALL
            .iter()
            .filter(|m| m.capabilities().se_only.is_some());
        only.map(|m| m.name()).collect::<Vec<_>>().join(", ")
    }),
];

/// No reason beyond the setting's purpose.
fn no_reason(_: Method) -> Option<String> {
    None
}

/// The models a setting applies to: listed, or those the capabilities
/// table ([`crate::fit::capabilities`]) gives the ability.
#[derive(Clone, Copy, Debug)]
enum Models {
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

/// The names of `T`'s values, each with its line of help.
fn names<T: Named>() -> Vec<(&'static str, &'static str)> {
    T::ALL.iter().map(|v| (v.name(), v.help())).collect()
}

/// `--model auto`'s line of help.
const AUTO_HELP: &str = "The family that predicts held-out rows best, and why";

/// A setting every model reads, of `value`, held as `given` says.
const EVERY: Setting = Setting {
    flag: "",
    help: "",
    default: None,
    value: Value::Count,
    given: None,
    set: None,
    models: Models::These(Method::ALL),
    task: None,
    what: "",
    why_not: no_reason,
};

/// Every setting, in the order of `sgp fit --help`.
pub const SETTINGS: &[Setting] = &[
    Setting {
        flag: "--model",
        help: "Model family (default: auto for a regression, svgp for a classification), or \
               `auto`: the family that predicts held-out rows best, with the choice and its \
               figures reported",
        value: Value::Names(|| [vec![(AUTO, AUTO_HELP)], names::<Method>()].concat()),
        given: Some(|o| o.model.is_some()),
        set: Some(|o, v| put(&mut o.model, ModelChoice::parse(v.text))),
        ..EVERY
    },
    Setting {
        flag: "--m",
        help: "Number of basis functions: pseudo-inputs, selected training inputs (gplasso), the \
               active set (ivm)",
        default: Some(|| format!("{DEFAULT_M}, at most the rows")),
        given: Some(|o| o.m.is_some()),
        set: Some(|o, v| put(&mut o.m, v.number())),
        models: Models::These(&[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso, Ivm, Svgp]),
        what: "the number of basis functions; the exact GP has none (--max-points bounds its rows)",
        ..EVERY
    },
    Setting {
        flag: "--dim",
        help: "Projected dimension G (spgp-dr, spgp-pca; required there, 1..=D)",
        given: Some(|o| o.dim.is_some()),
        set: Some(|o, v| put(&mut o.dim, v.number())),
        models: Models::These(&[SpgpDr, SpgpPca]),
        what: "the projected dimension of spgp-dr and spgp-pca",
        ..EVERY
    },
    Setting {
        flag: "--rank",
        help: "Rank of gplasso's incomplete Cholesky factor (default max(4 M, 100), at most N); \
               at most this many basis points can be selected",
        given: Some(|o| o.rank.is_some()),
        set: Some(|o, v| put(&mut o.rank, v.number())),
        models: Models::These(&[Gplasso]),
        what: "the rank of gplasso's incomplete Cholesky factor",
        ..EVERY
    },
    Setting {
        flag: "--fixed-hyperparameters",
        help: "gplasso: the paper's procedure: keep the hyperparameters of the exact GP on \
               --max-points rows instead of re-optimising them (and the basis points) for the \
               selected basis",
        value: Value::Switch,
        given: Some(|o| o.fixed_hyperparameters),
        set: Some(|o, _| on(&mut o.fixed_hyperparameters)),
        models: Models::These(&[Gplasso]),
        what: "a gplasso procedure",
        ..EVERY
    },
    Setting {
        flag: "--fixed-basis",
        help: "gplasso: re-optimise the hyperparameters but keep the selected training inputs as \
               the basis (by default the basis points move too)",
        value: Value::Switch,
        given: Some(|o| o.fixed_basis),
        set: Some(|o, _| on(&mut o.fixed_basis)),
        models: Models::These(&[Gplasso]),
        what: "a gplasso procedure",
        ..EVERY
    },
    Setting {
        flag: "--objective",
        help: "Objective of a sparse fit: FITC (SPGP's likelihood) or VFE (Titsias' variational \
               bound, GPflow's SGPR). Without it: {DEFAULT}, but spgp, spgp-pca, gplasso and a \
               named vsgp switch to VFE if VFE clearly predicts held-out rows better, weighed \
               on at most {held_out_rows} of the rows (the report says so)",
        default: Some(|| sparse().approximation.name().into()),
        value: Value::Names(names::<Approximation>),
        given: Some(|o| o.objective.is_some()),
        set: Some(|o, v| put(&mut o.objective, v.named())),
        models: Models::These(&[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso]),
        what: "the FITC or VFE objective of the pseudo-input fits and gplasso",
        ..EVERY
    },
    Setting {
        flag: "--kernel",
        help: "Covariance function; {se_only} and a streamed fit take se only, and auto keeps se \
               there and for a classifier (docs/src/kernels.md)",
        default: Some(|| Named::name(sparse().kernel).into()),
        value: Value::Names(names::<KernelChoice>),
        // The squared exponential is every family's: only a Matérn kernel
        // is a setting some families refuse.
        given: Some(Options::matern),
        set: Some(|o, v| put(&mut o.kernel, v.named())),
        models: Models::Able(|m| m.capabilities().se_only.is_none()),
        what: "a Matérn covariance function",
        why_not: Method::se_only_reason,
        ..EVERY
    },
    Setting {
        flag: "--no-held-out-choice",
        help: "No held-out comparisons: the objective is FITC unless --objective names it, \
               spgp-hs, vsgp, spgp-dr and gplasso are not weighed against plain SPGP, --model \
               auto fits spgp, spgp-hs's prior strength on h is the fixed {spgp_hs_prior} (not \
               chosen over folds), and several targets keep one basis",
        value: Value::Switch,
        given: Some(|o| o.no_held_out_choice),
        set: Some(|o, _| on(&mut o.no_held_out_choice)),
        models: Models::These(&[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso]),
        what: "about the held-out choice of the pseudo-input fits and gplasso",
        ..EVERY
    },
    Setting {
        flag: "--restarts",
        help: "Starts of a sparse fit; each gets a short screening run and the best is optimised \
               to the end",
        default: Some(|| sparse().restarts.to_string()),
        given: Some(|o| o.restarts.is_some()),
        set: Some(|o, v| put(&mut o.restarts, v.number())),
        models: Models::These(&[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Svgp]),
        what: "the number of starts of the pseudo-input fits and svgp",
        ..EVERY
    },
    Setting {
        flag: "--seed",
        help: "Seed for every random choice: the same data, settings and seed give the same \
               blob, byte for byte",
        default: Some(|| sparse().seed.to_string()),
        given: Some(|o| o.seed.is_some()),
        set: Some(|o, v| put(&mut o.seed, v.number())),
        ..EVERY
    },
    Setting {
        flag: "--max-iter",
        help: "Largest number of optimiser iterations of the final run (vsgp: of each of its \
               three runs, spgp-hs: of each of its two stages); most fits stop earlier, see --tol",
        default: Some(|| {
            let ivm = IvmParams::default().optimiser.max_iter;
            format!("{}; ivm's rounds: {ivm}", sparse().optimiser.max_iter)
        }),
        given: Some(|o| o.max_iter.is_some()),
        set: Some(|o, v| put(&mut o.max_iter, v.number())),
        ..EVERY
    },
    Setting {
        flag: "--tol",
        help: "Stop a fit (not ivm's) once its training objective fell by less than TOL nats per \
               row over the last 50 iterations (0: run to --max-iter)",
        default: Some(|| {
            let stall = sparse().optimiser.stall;
            stall.map_or("0".into(), |s| s.per_row.to_string())
        }),
        value: Value::Number,
        given: Some(|o| o.tol.is_some()),
        set: Some(|o, v| put(&mut o.tol, v.number())),
        models: Models::These(&[Exact, Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Gplasso, Svgp]),
        what: "the stall test of the optimised fits; ivm's runs stop on their own test",
        ..EVERY
    },
    Setting {
        flag: "--init",
        help: "Pseudo-input initialisation of the first start",
        default: Some(|| match sparse().pseudo_init {
            PseudoInit::Sample(method) => method.name().into(),
            PseudoInit::Given(_) => "given".into(),
        }),
        value: Value::Names(names::<InitMethod>),
        given: Some(|o| o.init.is_some()),
        set: Some(|o, v| put(&mut o.init, v.named())),
        models: Models::These(&[Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca, Svgp]),
        what: "how the pseudo-inputs of the pseudo-input fits and svgp start",
        ..EVERY
    },
    Setting {
        flag: "--init-hyper",
        help: "Hyperparameter initialisation",
        default: Some(|| sparse().hyper_init.name().into()),
        value: Value::Names(names::<HyperInit>),
        given: Some(|o| o.init_hyper.is_some()),
        set: Some(|o, v| put(&mut o.init_hyper, v.named())),
        models: Models::These(PSEUDO),
        what: "how the hyperparameters of the pseudo-input fits start",
        ..EVERY
    },
    Setting {
        flag: "--max-points",
        help: "Rows an exact GP is fitted on at most (a random subset if more); also the rows an \
               IVM classifier learns its kernel on (0: every row)",
        default: Some(|| exact().max_points.to_string()),
        given: Some(|o| o.max_points.is_some()),
        set: Some(|o, v| put(&mut o.max_points, v.number())),
        models: Models::These(&[Exact, Ivm, Gplasso, Spgp, Vsgp, SpgpHs, SpgpDr, SpgpPca]),
        what: "the rows of an exact GP (exact, and the start of gplasso and the pseudo-input \
               fits) or of the ivm classifier's kernel",
        ..EVERY
    },
    Setting {
        flag: "--ivm-posterior",
        help: "ivm classifier: the posterior over the active set: the svgp bound's q(u) on every \
               training row, or the paper's, from the active rows' sites alone",
        default: Some(|| IvmPosterior::default().name().into()),
        value: Value::Names(names::<IvmPosterior>),
        given: Some(|o| o.ivm_posterior.is_some()),
        set: Some(|o, v| put(&mut o.ivm_posterior, v.named())),
        models: Models::These(&[Ivm]),
        task: Some(Task::Classification),
        what: "the posterior of the ivm classifier",
        ..EVERY
    },
    Setting {
        flag: "--updatable",
        help: "Write a blob that learns on the device (format version 9): the covariance form of \
               the posterior and the learning block that `Model::update` conditions on new \
               observations (sparse regressions and the binary svgp classifier; \
               docs/src/learning.md)",
        value: Value::Switch,
        given: Some(|o| o.updatable),
        set: Some(|o, _| on(&mut o.updatable)),
        models: Models::Able(|m| m.capabilities().updatable),
        what: "a blob that learns on the device, which needs a basis with a posterior of its own \
               (the sparse regressions and the binary svgp classifier)",
        ..EVERY
    },
    Setting {
        flag: "--reproducible",
        help: "The same blob, bit for bit, from the same data and settings on any x86-64 or \
               aarch64 CPU and at any thread count: products and solves in one fixed order, no \
               fused multiply-adds (the guide's benchmarks, \"Across machines\", for what it \
               costs)",
        value: Value::Switch,
        given: Some(|o| o.reproducible),
        set: Some(|o, _| on(&mut o.reproducible)),
        ..EVERY
    },
    Setting {
        flag: "--positive",
        help: "For a classification: the positive class (a label of the target column, text or \
               number); every other label is negative (one against the rest). Without it a \
               two-label target takes the larger number, or the rarer text label",
        value: Value::Text,
        task: Some(Task::Classification),
        what: "the positive class of a classification",
        ..EVERY
    },
    Setting {
        flag: "--path",
        help: "gplasso: first print the lasso path up to --m (non-zeros, lambda, training \
               objective, NLPD and RMSE on a held-out 20%) to choose M",
        value: Value::Switch,
        models: Models::These(&[Gplasso]),
        what: "gplasso's lasso path",
        ..EVERY
    },
];

impl Options {
    /// The settings given, as the command line spells them (`--max-iter`).
    pub fn given(&self) -> Vec<&'static str> {
        let given = SETTINGS.iter().filter(|s| s.given.is_some_and(|g| g(self)));
        given.map(|s| s.flag).collect()
    }

    /// Sets the setting `flag` (`--max-iter`) to `value` as the command
    /// line gives it (`None` turns a switch on), parsed by the setting's
    /// [`Value`].
    ///
    /// ```
    /// use sgp_trainer::options::Options;
    ///
    /// let mut options = Options::default();
    /// options.set("--max-iter", Some("40")).unwrap();
    /// options.set("--updatable", None).unwrap();
    /// assert_eq!(options.given(), ["--max-iter", "--updatable"]);
    /// let e = options.set("--objective", Some("elbo")).unwrap_err();
    /// assert!(e.to_string().contains("--objective='elbo' is not one of: fitc, vfe"));
    /// ```
    ///
    /// # Errors
    /// [`Error::BadInput`] for a value the setting does not take, a switch
    /// given a value or a setting given none, or a flag that is no
    /// setting [`Options`] hold.
    pub fn set(&mut self, flag: &str, value: Option<&str>) -> Result<()> {
        let found = setting(flag).and_then(|s| Some((s, s.set?)));
        let Some((setting, set)) = found else {
            return Err(Error::BadInput(format!("{flag} is not a setting of a fit")));
        };
        match (setting.is_switch(), value) {
            (true, None) => set(self, Given { setting, text: "" }),
            (false, Some(text)) => set(self, Given { setting, text }),
            (true, Some(text)) => Err(Error::BadInput(format!(
                "{flag} is a switch: it takes no value ('{text}')"
            ))),
            (false, None) => Err(Error::BadInput(format!("{flag} needs a value"))),
        }
    }

    /// The options of these settings given (`--max-iter`, `Some("40")`), as
    /// [`Options::set`] sets each.
    ///
    /// # Errors
    /// As [`Options::set`].
    pub fn from_given<'a>(
        given: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<Options> {
        let mut options = Options::default();
        for (flag, value) in given {
            options.set(flag, value)?;
        }
        Ok(options)
    }
}

/// `method`'s parameters when no setting is given (G = 1 for a projected
/// family), on data of unbounded rows.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn built(method: Method) -> FitParams {
    let options = Options {
        dim: method.is_projected().then_some(1),
        ..Options::default()
    };
    match options.params(method, usize::MAX) {
        Ok(params) => params,
        // Nothing given contradicts nothing: a defect, which the tests catch.
        Err(e) => unreachable!("the default options of {}: {e}", method.name()),
    }
}

fn sparse() -> SparseParams {
    match built(Method::Spgp) {
        FitParams::Spgp(p) => p,
        _ => unreachable!("spgp's parameters"),
    }
}

fn exact() -> ExactParams {
    match built(Method::Exact) {
        FitParams::Exact(p) => p,
        _ => unreachable!("the exact GP's parameters"),
    }
}

/// Refuses any flag of `given` that applies to none of `models` for
/// `task` (one model for `sgp fit`, the swept ones for `sgp sweep`;
/// `None`: the task is not known yet, and settings of one task are let
/// through until it is).
///
/// ```
/// use sgp_trainer::fit::task::Task;
/// use sgp_trainer::fit::Method;
/// use sgp_trainer::options::settings;
///
/// assert!(settings::check(&[Method::Spgp], Some(Task::Regression), &["--objective"]).is_ok());
/// let err = settings::check(&[Method::Svgp], None, &["--objective"]);
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

    /// Each family's `default()` is what `sgp fit` fits with nothing
    /// given: one default per setting.
    #[test]
    fn every_default_is_the_command_lines() {
        use crate::fit::gplasso::GplassoParams;
        use crate::fit::svgp::SvgpParams;
        assert_eq!(built(Exact), FitParams::Exact(ExactParams::default()));
        assert_eq!(built(Spgp), FitParams::Spgp(SparseParams::default()));
        assert_eq!(built(Gplasso), FitParams::Gplasso(GplassoParams::default()));
        assert_eq!(built(Ivm), FitParams::Ivm(IvmParams::default()));
        assert_eq!(built(Svgp), FitParams::Svgp(SvgpParams::default()));
    }

    /// One stated default holds for every family that reads the setting:
    /// the help states one value.
    #[test]
    fn every_family_reads_the_stated_default() {
        let sparse = sparse();
        let shared = (sparse.m, sparse.seed, sparse.kernel);
        for method in Method::ALL.iter().copied() {
            let name = method.name();
            let (m, seed, kernel) = match built(method) {
                FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => {
                    assert_eq!(p, sparse, "{name}");
                    continue;
                }
                FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => {
                    assert_eq!(p.sparse, sparse, "{name}");
                    continue;
                }
                FitParams::Exact(p) => {
                    assert_eq!(
                        (p.max_points, &p.optimiser),
                        (sparse.max_points, &sparse.optimiser)
                    );
                    (sparse.m, p.seed, p.kernel)
                }
                FitParams::Gplasso(p) => {
                    assert_eq!(
                        (p.max_points, &p.optimiser),
                        (sparse.max_points, &sparse.optimiser)
                    );
                    assert_eq!(p.approximation, sparse.approximation);
                    (p.m, p.seed, p.kernel)
                }
                FitParams::Ivm(p) => {
                    assert_eq!(p.kernel_points, sparse.max_points);
                    (p.m, p.seed, p.kernel)
                }
                FitParams::Svgp(p) => {
                    assert_eq!(
                        (p.restarts, &p.pseudo_init),
                        (sparse.restarts, &sparse.pseudo_init)
                    );
                    assert_eq!(p.optimiser, sparse.optimiser);
                    (p.m, p.seed, p.kernel)
                }
            };
            assert_eq!((m, seed, kernel), shared, "{name}");
        }
        assert_eq!(sparse.m, DEFAULT_M);
    }

    /// A value each setting takes, as the command line gives it.
    fn sample(setting: &Setting) -> Option<&'static str> {
        match setting.value {
            Value::Count => Some("3"),
            Value::Number => Some("0.5"),
            Value::Text => Some("x"),
            Value::Switch => None,
            // The last: a Matérn kernel, which `--kernel` reports given.
            Value::Names(_) => setting.value.names().last().copied(),
        }
    }

    /// Each setting [`Options`] hold is set from its value and reported
    /// given; its stated default, set, fits what nothing given fits.
    #[test]
    fn every_setting_round_trips() {
        let held: Vec<&Setting> = SETTINGS.iter().filter(|s| s.held()).collect();
        assert_eq!(
            held.len(),
            SETTINGS.iter().filter(|s| s.set.is_some()).count()
        );
        for setting in held {
            let flag = setting.flag;
            let options = Options::from_given([(flag, sample(setting))]).unwrap();
            assert_eq!(options.given(), [flag], "{flag}");
            // The default in words, up to its first qualification ("20, at
            // most the rows": 20).
            let Some(default) = setting.default.map(|d| d()) else {
                continue;
            };
            let default = default.split([',', ';']).next().unwrap();
            let method = setting.models.list()[0];
            let options = Options {
                dim: method.is_projected().then_some(1),
                ..Options::from_given([(flag, Some(default))]).unwrap()
            };
            let params = options.params(method, usize::MAX).unwrap();
            assert_eq!(params, built(method), "{flag} {default}");
        }
    }

    #[test]
    fn values_a_setting_does_not_take_are_refused_and_named() {
        let err = |flag, value| {
            let e = Options::from_given([(flag, value)]).unwrap_err();
            e.to_string()
        };
        assert!(err("--m", Some("-1")).starts_with("--m='-1' is not a count"));
        assert!(err("--tol", Some("x")).starts_with("--tol='x' is not a number"));
        assert!(err("--seed", Some("0.5")).starts_with("--seed='0.5' is not a count"));
        assert!(err("--kernel", Some("rbf")).contains("is not one of: auto, se, matern12"));
        assert!(err("--model", Some("spgq")).contains("is not one of: auto, exact, spgp"));
        assert!(err("--updatable", Some("1")).contains("is a switch"));
        assert!(err("--seed", None).contains("needs a value"));
        assert!(err("--path", None).contains("not a setting of a fit"));
    }

    #[test]
    fn the_words_are_the_values() {
        assert_eq!(stated("--m").unwrap(), "20, at most the rows");
        assert_eq!(stated("--tol").unwrap(), "0.002");
        assert_eq!(stated("--init").unwrap(), "kmeans");
        assert_eq!(stated("--max-iter").unwrap(), "500; ivm's rounds: 100");
        assert!(SETTINGS
            .iter()
            .all(|s| !s.help().is_empty() && !s.help().contains('{')));
        assert!(FIGURES.iter().all(|(_, text)| !text().is_empty()));
    }
}
