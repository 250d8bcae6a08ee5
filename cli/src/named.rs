//! Command-line values of the library's named enums ([`Named`]): the
//! names, each value's doc comment as its help, and the library's message
//! for a name that is not one of them (Python's, in the flag's words).

use std::ffi::OsStr;
use std::marker::PhantomData;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Arg, Command};
use sgp_trainer::options::{parse, parse_or, Named};

/// Parses `T`'s names (and `extra`, if any, as `None`) by the library's
/// [`parse`], listing them with their help in `--help`.
#[derive(Clone)]
pub(crate) struct NamedParser<T> {
    extra: Option<(&'static str, &'static str)>,
    of: PhantomData<fn() -> T>,
}

impl<T: Named + Send + Sync> TypedValueParser for NamedParser<T> {
    type Value = Option<T>;

    fn parse_ref(
        &self,
        cmd: &Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let flag = arg
            .and_then(Arg::get_long)
            .map_or_else(|| "value".to_owned(), |long| format!("--{long}"));
        let text = value.to_string_lossy();
        let parsed = match self.extra {
            Some((extra, _)) => parse_or::<T>(&text, &flag, extra),
            None => parse::<T>(&text, &flag).map(Some),
        };
        parsed
            .map_err(|e| clap::Error::raw(ErrorKind::InvalidValue, format!("{e}\n")).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let extra = self
            .extra
            .map(|(name, help)| PossibleValue::new(name).help(help));
        let values = T::ALL
            .iter()
            .map(|v| PossibleValue::new(v.name()).help(help_line(v.help())));
        Some(Box::new(extra.into_iter().chain(values)))
    }
}

/// A parser of `T`'s names.
pub(crate) fn named<T: Named + Send + Sync + Clone>() -> impl TypedValueParser<Value = T> {
    NamedParser::<T> {
        extra: None,
        of: PhantomData,
    }
    .try_map(|v: Option<T>| v.ok_or("no value"))
}

/// `T`'s parser with one more value, `extra` (its name and help), parsed
/// as `None`.
pub(crate) fn named_or<T: Named + Send + Sync + Clone>(
    extra: (&'static str, &'static str),
) -> impl TypedValueParser<Value = Option<T>> {
    NamedParser::<T> {
        extra: Some(extra),
        of: PhantomData,
    }
}

/// A doc comment's lines as one line of help.
fn help_line(doc: &str) -> String {
    doc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The line of help of the library's setting `flag`, ending with its
/// default as `--help` shows one ([`sgp_trainer::options::settings`]: the
/// one declaration of each setting, its default the value the fit uses).
pub(crate) fn help(flag: &str) -> String {
    let Some(setting) = sgp_trainer::options::settings::setting(flag) else {
        unreachable!("{flag} is a setting of the library's table")
    };
    match setting.default() {
        Some(value) => format!("{} [default: {value}]", setting.help()),
        None => setting.help(),
    }
}

/// A count (`--m`): a whole number; a negative one (`--m -1`) is said to
/// be one, rather than taken for an unknown flag.
pub(crate) fn count(value: &str) -> Result<usize, String> {
    value
        .parse()
        .map_err(|_| format!("'{value}' is not a count: give a whole number, e.g. 32"))
}
