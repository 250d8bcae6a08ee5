//! The task `--task` and `--link` ask for.

use sgp_trainer::{Error, Result};

use super::{FitArgs, LinkArg, TaskArg};
use sgp_trainer::fit::task::Task;

impl From<TaskArg> for Task {
    fn from(task: TaskArg) -> Task {
        match task {
            TaskArg::Regression => Task::Regression,
            TaskArg::Classification => Task::Classification,
        }
    }
}

use sgp_trainer::data::multi_target::parse_target_list;

impl FitArgs {
    /// The task `--task` and `--link` ask for (`None`: decided by the
    /// target).
    pub(super) fn task(&self) -> Result<Option<TaskArg>> {
        match (self.task, self.link) {
            (Some(TaskArg::Regression), Some(LinkArg::Probit))
            | (Some(TaskArg::Classification), Some(LinkArg::Identity)) => Err(Error::BadInput(
                "--task and --link disagree (--link probit is --task classification)".into(),
            )),
            (Some(task), _) => Ok(Some(task)),
            (None, Some(LinkArg::Probit)) => Ok(Some(TaskArg::Classification)),
            (None, Some(LinkArg::Identity)) => Ok(Some(TaskArg::Regression)),
            (None, None) => Ok(None),
        }
    }

    /// The input columns `--inputs` names, if it does (a list as
    /// `--target`'s).
    pub(super) fn inputs(&self) -> Option<Vec<String>> {
        self.inputs.as_deref().map(parse_target_list)
    }
}
