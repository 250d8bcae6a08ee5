//! The training data of `sgp fit` and `sgp sweep`: the task the target
//! asks for (decided by the library, [`choose_task`]), and the warnings
//! about its columns (the library's, [`about_data`]).

use sgp_trainer::data::Dataset;
use sgp_trainer::export::warnings::about_data;
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

/// Reads the training data (CSV or Parquet; its `target` and `inputs`
/// columns, as the library chooses them) for `models` (named by the
/// option `flag`; empty: the default model of the task) and prepares its
/// target for the task ([`choose_task`]); prints the decision unless
/// `quiet`. The warnings about the columns come with the fit's report.
pub(crate) fn training_data(
    input: &Input,
    (target, inputs): (Option<&str>, Option<&[String]>),
    task: Option<Task>,
    positive: Option<&str>,
    (flag, models): (&str, &[Method]),
    quiet: bool,
) -> Result<(Dataset, Classes)> {
    let data = Dataset::from_input_columns(input, target, inputs)?;
    let chosen = choose_task(data, task, positive, flag, models)?;
    if !quiet {
        for note in &chosen.notes {
            eprintln!("sgp: {note}");
        }
    }
    Ok((chosen.data, chosen.classes))
}

/// Warns about the columns ([`about_data`]) on standard error, under
/// --quiet too.
pub(crate) fn warn_about_columns(data: &Dataset) {
    for warning in about_data(data) {
        eprintln!("sgp: warning: {warning}");
    }
}
