//! Values users name: `--model spgp-hs`, `objective='vfe'`. The command
//! line and Python parse them by [`parse`], with the same message for a
//! name that is not one of them; the line of help each shows is the
//! value's doc comment.

use crate::{Error, Result};

/// An enum whose values users name.
pub trait Named: Copy + PartialEq + 'static {
    /// Every value, in the order help lists them.
    const ALL: &'static [Self];
    /// The value's name.
    fn name(self) -> &'static str;
    /// The value's doc comment, for help.
    fn help(self) -> &'static str;
}

/// The covariance functions (`--kernel`), named as the blob format names
/// them.
impl Named for sgp_runtime::Kernel {
    const ALL: &'static [Self] = &sgp_runtime::Kernel::ALL;

    fn name(self) -> &'static str {
        sgp_runtime::Kernel::name(self)
    }

    fn help(self) -> &'static str {
        match self {
            sgp_runtime::Kernel::SquaredExponential => "Squared exponential: infinitely smooth",
            sgp_runtime::Kernel::Matern12 => "Matérn 1/2: continuous, not differentiable",
            sgp_runtime::Kernel::Matern32 => "Matérn 3/2: once differentiable",
            sgp_runtime::Kernel::Matern52 => "Matérn 5/2: twice differentiable",
        }
    }
}

/// The value of `T` named `value`, for the setting `what` (`--objective`).
///
/// # Errors
/// [`Error::BadInput`] listing the names there are.
pub fn parse<T: Named>(value: &str, what: &str) -> Result<T> {
    find(value).ok_or_else(|| not_one_of::<T>(value, what, None))
}

/// As [`parse`], with one more name, `extra` (`auto`), parsed as `None`
/// and listed first.
///
/// # Errors
/// [`Error::BadInput`] listing the names there are.
pub(crate) fn parse_or<T: Named>(value: &str, what: &str, extra: &str) -> Result<Option<T>> {
    if value == extra {
        return Ok(None);
    }
    find(value)
        .map(Some)
        .ok_or_else(|| not_one_of::<T>(value, what, Some(extra)))
}

fn find<T: Named>(value: &str) -> Option<T> {
    T::ALL.iter().copied().find(|v| v.name() == value)
}

/// The error for `value`, listing `extra` (if any) and `T`'s names.
fn not_one_of<T: Named>(value: &str, what: &str, extra: Option<&str>) -> Error {
    let names: Vec<&str> = extra
        .into_iter()
        .chain(T::ALL.iter().map(|v| v.name()))
        .collect();
    Error::BadInput(format!(
        "{what}='{value}' is not one of: {}",
        names.join(", ")
    ))
}

/// Declares an enum whose values users name: each variant `Variant =
/// "name"` with its doc comment, which is also its help.
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[doc = $doc:literal])* $variant:ident = $value:literal, )*
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$($name::$variant),*];

            /// The name users type.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $value,)*
                }
            }
        }

        impl $crate::options::Named for $name {
            const ALL: &'static [Self] = $name::ALL;

            fn name(self) -> &'static str {
                $name::name(self)
            }

            fn help(self) -> &'static str {
                match self {
                    $($name::$variant => concat!($($doc),*),)*
                }
            }
        }
    };
}
