//! Command-line values of the library's named enums ([`Named`]): the
//! names, each value's doc comment as its help, and the library's message
//! for a name that is not one of them (Python's, in the flag's words).

use std::ffi::OsStr;
use std::marker::PhantomData;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Arg, Command};
use sgp_trainer::options::{parse, Named};

/// Parses `T`'s names by the library's [`parse`], listing them with their
/// help in `--help`.
#[derive(Clone)]
pub(crate) struct NamedParser<T>(PhantomData<fn() -> T>);

impl<T: Named + Send + Sync + Clone> TypedValueParser for NamedParser<T> {
    type Value = T;

    fn parse_ref(&self, cmd: &Command, arg: Option<&Arg>, value: &OsStr) -> Result<T, clap::Error> {
        let flag = arg
            .and_then(Arg::get_long)
            .map_or_else(|| "value".to_owned(), |long| format!("--{long}"));
        parse::<T>(&value.to_string_lossy(), &flag)
            .map_err(|e| clap::Error::raw(ErrorKind::InvalidValue, format!("{e}\n")).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let values = T::ALL
            .iter()
            .map(|v| PossibleValue::new(v.name()).help(help_line(v.help())));
        Some(Box::new(values))
    }
}

/// A parser of `T`'s names.
pub(crate) fn named<T: Named + Send + Sync + Clone>() -> NamedParser<T> {
    NamedParser(PhantomData)
}

/// A doc comment's lines as one line of help.
pub(crate) fn help_line(doc: &str) -> String {
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
