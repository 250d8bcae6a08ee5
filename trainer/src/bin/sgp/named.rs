//! Command-line values of the library's named enums ([`Named`]): the
//! names, and each value's doc comment as its help.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use sgp_trainer::options::Named;

/// A parser of `T`'s names that lists them, with their help, in `--help`.
pub(crate) fn named<T: Named + Send + Sync + Clone>() -> impl TypedValueParser<Value = T> {
    let values = T::ALL
        .iter()
        .map(|v| PossibleValue::new(v.name()).help(help_line(v.help())));
    PossibleValuesParser::new(values).map(|name: String| {
        T::ALL
            .iter()
            .copied()
            .find(|v| v.name() == name)
            .unwrap_or(T::ALL[0])
    })
}

/// `T`'s parser with one more value, `extra` (its name and help), parsed
/// as `None`.
pub(crate) fn named_or<T: Named + Send + Sync + Clone>(
    (extra, help): (&'static str, &'static str),
) -> impl TypedValueParser<Value = Option<T>> {
    let values = std::iter::once(PossibleValue::new(extra).help(help)).chain(
        T::ALL
            .iter()
            .map(|v| PossibleValue::new(v.name()).help(help_line(v.help()))),
    );
    PossibleValuesParser::new(values)
        .map(|name: String| T::ALL.iter().copied().find(|v| v.name() == name))
}

/// A doc comment's lines as one line of help.
fn help_line(doc: &str) -> String {
    doc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` ending with the library's default of `flag`, as `--help` shows a
/// default ([`sgp_trainer::options::defaults`]: the value the fit uses).
pub(crate) fn with_default(text: &str, flag: &str) -> String {
    match sgp_trainer::options::defaults::stated(flag) {
        Some(value) => format!("{text} [default: {value}]"),
        None => text.to_owned(),
    }
}
