//! The training data of `sgp fit` and `sgp sweep`: the task the target
//! asks for (decided by the library, [`choose_task`]), and the warnings
//! about its columns.

use sgp_trainer::data::{extremes, Dataset};
use sgp_trainer::export::device::names_too_long;
use sgp_trainer::files::Input;
use sgp_trainer::fit::Method;
use sgp_trainer::options::task::{choose_task, Classes, Task};
use sgp_trainer::Result;

use super::TaskArg;

impl From<TaskArg> for Task {
    fn from(task: TaskArg) -> Task {
        match task {
            TaskArg::Regression => Task::Regression,
            TaskArg::Classification => Task::Classification,
        }
    }
}

/// Reads the training data (CSV or Parquet) for `models` (named by the
/// option `flag`; empty: the default model of the task) and prepares its
/// target for the task ([`choose_task`]); prints the decision unless
/// `quiet`, and the warnings about the columns.
pub(crate) fn training_data(
    input: &Input,
    target: Option<&str>,
    task: Option<Task>,
    positive: Option<&str>,
    (flag, models): (&str, &[Method]),
    quiet: bool,
) -> Result<(Dataset, Classes)> {
    let data = Dataset::from_input(input, target)?;
    let chosen = choose_task(data, task, positive, flag, models)?;
    if !quiet {
        for note in &chosen.notes {
            eprintln!("sgp: {note}");
        }
    }
    // Warnings stay under --quiet: it drops notes and progress only.
    warn_about_columns(&chosen.data);
    Ok((chosen.data, chosen.classes))
}

/// Warns about constant inputs, a value that alone sets its column's
/// scale, columns f32 cannot resolve and names too long for a device.
pub(crate) fn warn_about_columns(data: &Dataset) {
    for &j in &data.constant_inputs {
        eprintln!(
            "sgp: warning: input '{}' is constant in the training data (value {}): the \
                 model ignores it",
            data.input_names[j], data.transform.x_mean[j]
        );
    }
    for warning in extremes::warnings(data) {
        eprintln!("sgp: warning: {warning}");
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
