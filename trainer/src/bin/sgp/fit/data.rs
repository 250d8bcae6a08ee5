//! The training data of `sgp fit` and `sgp sweep`: the task the target
//! asks for, and the warnings about its columns.

use std::path::Path;

use sgp_trainer::data::labels;
use sgp_trainer::data::stream::{read_dataset, Format as StreamFormat, TableFile};
use sgp_trainer::data::{is_class, Dataset};
use sgp_trainer::export::device::names_too_long;
use sgp_trainer::fit::Method;
use sgp_trainer::{Error, Result};

use super::TaskArg;

/// What the target of the training data became.
pub(crate) enum Classes {
    /// A regression: no labels.
    None,
    /// A binary classification: the labels `[negative, positive]`.
    Binary(Vec<String>),
    /// A classification of `K > 2` classes: the target keeps its class
    /// values (the fit codes them).
    Several,
}

/// Reads the training data for `models` (named by the option `flag`; empty:
/// the default model of the task): the target as a classification when
/// `task` says so, or, with no `task`, when it holds exactly two distinct
/// values, text labels, or `positive` is given (and no model asked for is a
/// regression-only one): binary with two classes or `positive`, else of
/// `K` classes; the warnings about constant and unresolvable columns
/// unless `quiet`.
pub(crate) fn training_data(
    path: &Path,
    target: Option<&str>,
    task: Option<TaskArg>,
    positive: Option<&str>,
    (flag, models): (&str, &[Method]),
    quiet: bool,
) -> Result<(Dataset, Classes)> {
    let table = TableFile::open(path, target)?;
    let data = match table.format {
        StreamFormat::Csv => Dataset::from_csv(path, target)?,
        StreamFormat::Parquet => read_dataset(&table)?,
    };
    let regression_only = models.iter().find(|m| !m.classifies());
    let classes = data.target_classes();
    let text = !data.class_labels.is_empty();
    let task = task.unwrap_or_else(|| {
        let two = classes.len() == 2;
        match regression_only {
            Some(model) if (two || text) && !quiet => {
                eprintln!(
                    "sgp: target '{}' holds {} but {flag} {} is a regression model: fitting \
                     it as a number (--model svgp, ivm or exact classifies)",
                    data.target_name,
                    if text { "text labels" } else { "two values" },
                    model.name()
                );
                TaskArg::Regression
            }
            Some(_) => TaskArg::Regression,
            None if two || text || positive.is_some() => TaskArg::Classification,
            None => TaskArg::Regression,
        }
    });
    let data = match task {
        TaskArg::Classification => {
            if let Some(model) = regression_only {
                return Err(Error::BadInput(format!(
                    "classification needs {flag} svgp, {flag} ivm or {flag} exact, not {flag} {}",
                    model.name()
                )));
            }
            // Non-integer values are a continuous column: refused below.
            let integral = classes.iter().all(|&v| is_class(v, v.round()));
            if positive.is_none() && classes.len() > 2 && integral {
                return several_classes(data, flag, models, quiet);
            }
            let chosen = positive.is_some();
            let positive = match positive {
                Some(label) => labels::class_value(&data, label)?,
                None => labels::default_positive(&data)?,
            };
            let names = labels::binary_labels(&data, positive);
            let data = data.into_binary(Some(positive))?;
            if !quiet {
                let why = match (chosen, text) {
                    (true, _) => "--positive",
                    (false, true) => "the rarer label",
                    (false, false) => "the larger value",
                };
                eprintln!(
                    "sgp: target '{}': binary classification, positive class '{}' against '{}' \
                     ({why}; --positive LABEL chooses another, --task regression fits numbers)",
                    data.target_name,
                    names.get(1).map_or("", String::as_str),
                    names.first().map_or("", String::as_str),
                );
            }
            (data, Classes::Binary(names))
        }
        TaskArg::Regression if positive.is_some() => {
            return Err(Error::BadInput(
                "--positive names the positive class of a classification".into(),
            ))
        }
        TaskArg::Regression if text => {
            return Err(Error::BadInput(format!(
                "{}: target column '{}' holds text labels ({}): a regression needs numbers",
                data.source,
                data.target_name,
                data.class_labels
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
        TaskArg::Regression => (data, Classes::None),
    };
    if !quiet {
        warn_about_columns(&data.0);
    }
    Ok(data)
}

/// The training data of a classification of `K > 2` classes: the svgp fit
/// of one latent per class ([`fit_svgp_classes`]) is the only one there is.
pub(crate) fn several_classes(
    data: Dataset,
    flag: &str,
    models: &[Method],
    quiet: bool,
) -> Result<(Dataset, Classes)> {
    if let Some(model) = models.iter().find(|&&m| m != Method::Svgp) {
        return Err(Error::BadInput(format!(
            "{}: target column '{}' holds {} classes: a multi-class classifier is {flag} svgp, \
             not {flag} {} (--positive LABEL fits that class against the rest)",
            data.source,
            data.target_name,
            data.target_classes().len(),
            model.name()
        )));
    }
    if !quiet {
        let names: Vec<String> = data
            .target_classes()
            .iter()
            .map(|&c| labels::class_name(&data, c))
            .collect();
        eprintln!(
            "sgp: target '{}': classification of {} classes ({}), one latent each on one basis \
             (--positive LABEL fits one class against the rest)",
            data.target_name,
            names.len(),
            names.join(", ")
        );
        warn_about_columns(&data);
    }
    Ok((data, Classes::Several))
}

/// Warns about constant inputs, columns f32 cannot resolve and names too
/// long for a device.
pub(crate) fn warn_about_columns(data: &Dataset) {
    for &j in &data.constant_inputs {
        eprintln!(
            "sgp: warning: input '{}' is constant in the training data (value {}): the \
                 model ignores it",
            data.input_names[j], data.transform.x_mean[j]
        );
    }
    for warning in sgp_trainer::export::precision::for_dataset(data) {
        eprintln!("sgp: warning: {warning}");
    }
    let long = names_too_long(&data.input_names, &data.target_name);
    if !long.is_empty() {
        eprintln!(
            "sgp: warning: column names longer than the {} bytes a device Model holds: \
                 {}; a device will refuse the blob (rename the columns)",
            sgp_runtime::NAME_CAPACITY,
            long.join(", ")
        );
    }
}
