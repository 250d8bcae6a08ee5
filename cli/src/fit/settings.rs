//! `sgp fit`'s settings: one flag per setting of the library's table
//! ([`SETTINGS`]), its help, values and parsing the table's, read into the
//! library's [`Options`] by [`Options::set`] (the command line's own,
//! `--positive` and `--path`, kept as given): no setting is restated here.

use std::ffi::OsStr;
use std::marker::PhantomData;
use std::str::FromStr;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Arg, ArgAction, ArgMatches, Command};
use sgp_trainer::options::settings::{setting, Setting, SETTINGS};
use sgp_trainer::options::Options;

use crate::named::{help, help_line};

/// The settings of a fit, as the library's [`Options`] hold them (the
/// defaults are the library's), and the command line's own settings of
/// the table that were given.
pub(crate) struct Settings {
    options: Options,
    /// The settings [`Options`] do not hold, by flag, with the value given
    /// (`None`: a switch).
    own: Vec<(&'static str, Option<String>)>,
}

impl Settings {
    /// The settings as the library's options.
    pub(crate) fn options(&self) -> Options {
        self.options.clone()
    }

    /// The value given for the command line's own setting `flag`
    /// (`--positive`), if given.
    pub(crate) fn text(&self, flag: &str) -> Option<&str> {
        let given = self.own.iter().find(|(f, _)| *f == flag);
        given.and_then(|(_, value)| value.as_deref())
    }

    /// Whether the command line's own switch `flag` (`--path`) was given.
    pub(crate) fn switch(&self, flag: &str) -> bool {
        self.own.iter().any(|(f, _)| *f == flag)
    }
}

/// The argument's id: its long name (`max-iter`).
fn id(setting: &Setting) -> &'static str {
    setting.flag.trim_start_matches("--")
}

/// `setting` as a clap argument: its help and default the table's, its
/// value checked by the library as clap reads it.
pub(crate) fn argument(setting: &'static Setting) -> Arg {
    let arg = Arg::new(id(setting))
        .long(id(setting))
        .help(help(setting.flag));
    if setting.is_switch() {
        return arg.action(ArgAction::SetTrue);
    }
    // Built once per run: clap keeps `&'static str` names.
    let name = id(setting).to_uppercase().replace('-', "_");
    arg.value_name(&*name.leak())
        .allow_negative_numbers(true)
        .value_parser(Parser(setting))
}

impl clap::Args for Settings {
    fn augment_args(cmd: Command) -> Command {
        SETTINGS
            .iter()
            .fold(cmd, |cmd, setting| cmd.arg(argument(setting)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for Settings {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let given: Vec<(&'static Setting, Option<&str>)> = SETTINGS
            .iter()
            .filter_map(|setting| {
                let value = if setting.is_switch() {
                    matches.get_flag(id(setting)).then_some(None)?
                } else {
                    Some(matches.get_one::<String>(id(setting))?.as_str())
                };
                Some((setting, value))
            })
            .collect();
        let (held, own): (Vec<_>, Vec<_>) = given.into_iter().partition(|(s, _)| s.held());
        let options = Options::from_given(held.into_iter().map(|(s, v)| (s.flag, v)));
        Ok(Settings {
            options: options.map_err(invalid)?,
            own: own
                .into_iter()
                .map(|(s, v)| (s.flag, v.map(str::to_owned)))
                .collect(),
        })
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
/// reads it (the command line's own, text, as given), its names listed
/// with their help in `--help`.
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
        if !self.0.held() {
            return Ok(text.into_owned());
        }
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

/// A value of the table's setting `flag`, checked as `sgp fit` checks it,
/// then read as `T` (`sgp sweep`'s lists: one value per grid point).
pub(crate) fn table<T>(flag: &str) -> TableValue<T> {
    let Some(setting) = setting(flag) else {
        unreachable!("{flag} is a setting of the library's table")
    };
    TableValue(Parser(setting), PhantomData)
}

/// [`table`]'s parser.
#[derive(Clone)]
pub(crate) struct TableValue<T>(Parser, PhantomData<fn() -> T>);

impl<T: FromStr + Clone + Send + Sync + 'static> TypedValueParser for TableValue<T> {
    type Value = T;

    fn parse_ref(&self, cmd: &Command, arg: Option<&Arg>, value: &OsStr) -> Result<T, clap::Error> {
        let text = self.0.parse_ref(cmd, arg, value)?;
        text.parse().map_err(|_| {
            let flag = self.0 .0.flag;
            clap::Error::raw(
                ErrorKind::InvalidValue,
                format!("{flag}='{text}' is not a value sgp sweep takes\n"),
            )
            .with_cmd(cmd)
        })
    }
}
