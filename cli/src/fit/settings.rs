//! `sgp fit`'s settings: one flag per setting of the library's table
//! ([`SETTINGS`]), its help, values and parsing the table's, read into the
//! library's [`Options`] by [`Options::set`]: no setting is restated here.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Arg, ArgAction, ArgMatches, Command};
use sgp_trainer::options::settings::{Setting, SETTINGS};
use sgp_trainer::options::Options;

use crate::named::{help, help_line};

/// The settings of a fit, as the library's [`Options`] hold them (the
/// defaults are the library's).
pub(crate) struct Settings(Options);

impl Settings {
    /// The settings as the library's options.
    pub(crate) fn options(&self) -> Options {
        self.0.clone()
    }
}

/// The settings the command line reads into [`Options`] (the others,
/// `--positive` and `--path`, are its own arguments).
fn held() -> impl Iterator<Item = &'static Setting> {
    SETTINGS.iter().filter(|s| s.held())
}

/// The argument's id: its long name (`max-iter`).
fn id(setting: &Setting) -> &'static str {
    setting.flag.trim_start_matches("--")
}

impl clap::Args for Settings {
    fn augment_args(cmd: Command) -> Command {
        held().fold(cmd, |cmd, setting| {
            let arg = Arg::new(id(setting))
                .long(id(setting))
                .help(help(setting.flag));
            cmd.arg(if setting.is_switch() {
                arg.action(ArgAction::SetTrue)
            } else {
                // Built once per run: clap keeps `&'static str` names.
                let name = id(setting).to_uppercase().replace('-', "_");
                arg.value_name(&*name.leak())
                    .allow_negative_numbers(true)
                    .value_parser(Parser(setting))
            })
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for Settings {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let given = held().filter_map(|setting| {
            let value = if setting.is_switch() {
                matches.get_flag(id(setting)).then_some(None)?
            } else {
                Some(matches.get_one::<String>(id(setting))?.as_str())
            };
            Some((setting.flag, value))
        });
        Options::from_given(given).map(Settings).map_err(invalid)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// The library's message for a value a setting does not take.
fn invalid(e: sgp_trainer::Error) -> clap::Error {
    clap::Error::raw(ErrorKind::InvalidValue, format!("{e}\n"))
}

/// A setting's value, checked by the library's [`Options::set`] as clap
/// reads it, its names listed with their help in `--help`.
#[derive(Clone)]
struct Parser(&'static Setting);

impl TypedValueParser for Parser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &Command,
        _: Option<&Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        let text = value.to_string_lossy();
        let mut options = Options::default();
        match options.set(self.0.flag, Some(&text)) {
            Ok(()) => Ok(text.into_owned()),
            Err(e) => Err(invalid(e).with_cmd(cmd)),
        }
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let names = self.0.value.named()?;
        let values = names
            .into_iter()
            .map(|(name, help)| PossibleValue::new(name).help(help_line(help)));
        Some(Box::new(values))
    }
}
