//! The trainer's errors as Python exceptions, with the trainer's messages.
//!
//! Bad input and unreadable blobs are `ValueError`s (what scikit-learn and
//! numpy users catch) and a file that cannot be written an `OSError`; a
//! blob whose f32 predictions drift from the f64 fit is an
//! `sgp.ExportError`, a failed factorisation an `sgp.NumericalError`, both
//! subclasses of `sgp.SgpError` (itself a `RuntimeError`).

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use sgp_trainer::Error;

use crate::fit::Spoken;

create_exception!(
    sgp,
    SgpError,
    PyRuntimeError,
    "Base of the errors sgp raises beyond bad input."
);
create_exception!(
    sgp,
    ExportError,
    SgpError,
    "The f32 blob does not reproduce the f64 model within the export check's tolerance."
);
create_exception!(
    sgp,
    NumericalError,
    SgpError,
    "A numerical procedure failed beyond recovery (e.g. a Cholesky factorisation)."
);

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SgpError", py.get_type::<SgpError>())?;
    m.add("ExportError", py.get_type::<ExportError>())?;
    m.add("NumericalError", py.get_type::<NumericalError>())?;
    Ok(())
}

/// The trainer's message in the words of the Python API: each setting the
/// library names as the command line spells it (`--m 0`, `--updatable`,
/// `--model svgp`) as the estimators' keyword says it (`m=0`,
/// `updatable=True`, `model='svgp'`; [`crate::fit::SPOKEN`]).
pub(crate) fn spoken(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("--") {
        out.push_str(&rest[..at]);
        let flag = &rest[at..];
        let len = 2 + flag[2..]
            .find(|c: char| !(c.is_ascii_lowercase() || c == '-'))
            .unwrap_or(flag.len() - 2);
        let (name, after) = flag.split_at(len);
        if name == "--" {
            out.push_str(name);
            rest = after;
            continue;
        }
        let spoken = crate::fit::SPOKEN.iter().find(|(flag, _)| *flag == name);
        let switch = crate::fit::switch_words(name);
        let (words, after) = match spoken.map(|(_, s)| s) {
            None if switch.is_some() => (switch.unwrap_or_default(), after),
            Some(Spoken::Switch(words)) => (words.to_string(), after),
            Some(Spoken::Words(words)) => (words.to_string(), value_after(after).1),
            Some(Spoken::Keyword(keyword)) => keyword_value(keyword, after),
            Some(Spoken::Values(keyword, values)) => match value_after(after) {
                (Some(value), rest) => match values.iter().find(|(v, _)| *v == value) {
                    Some((_, words)) => (words.to_string(), rest),
                    None => keyword_value(keyword, after),
                },
                (None, _) => (keyword.to_string(), after),
            },
            // Not a setting Python names otherwise: the keyword of its name.
            None => keyword_value(&name[2..].replace('-', "_"), after),
        };
        out.push_str(&words);
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `keyword` as Python says it, with the value that follows in `after`
/// if any (`m=0`, `model='svgp'`, `dim=G`), and the text after that.
fn keyword_value<'a>(keyword: &str, after: &'a str) -> (String, &'a str) {
    match value_after(after) {
        (Some(value), rest) if crate::fit::is_value_name(value) => {
            (format!("{keyword}='{value}'"), rest)
        }
        (Some(value), rest) => (format!("{keyword}={value}"), rest),
        (None, rest) => (keyword.to_string(), rest),
    }
}

/// The value a flag is given right after it in a message (`--m 0`, `--dim
/// G`, `--model svgp`; `--m must ...` has none), and the text after it.
fn value_after(text: &str) -> (Option<&str>, &str) {
    let Some(word) = text.strip_prefix(' ') else {
        return (None, text);
    };
    let len = word
        .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | ')' | '('))
        .unwrap_or(word.len());
    // A full stop ends a sentence, not a number.
    let token = word[..len].trim_end_matches('.');
    let is_value = !token.is_empty()
        && (token.parse::<f64>().is_ok()
            || token.chars().all(|c| c.is_ascii_uppercase())
            || crate::fit::is_value_name(token));
    if is_value {
        (Some(token), &word[token.len()..])
    } else {
        (None, text)
    }
}

/// The exception for bytes Python kept (a fitted estimator's state, a
/// streamed fit's basis or sums) that no longer decode: `what` they should
/// have been.
pub(crate) fn corrupt(what: &str) -> PyErr {
    PyValueError::new_err(format!(
        "these bytes are no {what} (corrupted, or from another sgp version); fit it again"
    ))
}

/// The exception for a trainer error.
pub(crate) fn to_py(error: Error) -> PyErr {
    let message = spoken(&error.to_string());
    match error {
        Error::BadInput(_) | Error::Unreadable { .. } | Error::Blob(_) | Error::DoesNotFit(_) => {
            PyValueError::new_err(message)
        }
        Error::Fidelity(_) => ExportError::new_err(message),
        Error::Numerical(_) => NumericalError::new_err(message),
        // A file that could not be written (`save`): what Python's own
        // `open` raises.
        Error::Io { .. } => PyOSError::new_err(message),
        Error::OverBudget(_) => SgpError::new_err(message),
    }
}

/// `Result` of the trainer into `PyResult`.
pub(crate) trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for sgp_trainer::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
