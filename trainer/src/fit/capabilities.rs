//! What each family can do, declared once: the tasks it fits, whether it
//! takes a Matérn kernel, whether a file streams for it, whether its blob
//! learns on the device. Validation (`options::settings`), the streamed
//! fit's decision, `sgp sweep`'s grid and the guide's table (a test
//! compares them) read this table and nothing else.

use super::Method;

/// One family's abilities ([`Method::capabilities`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Fits a numeric target.
    pub regresses: bool,
    /// Fits class labels (a probit or softmax classifier).
    pub classifies: bool,
    /// Why the family takes the squared exponential only, if it does.
    pub se_only: Option<&'static str>,
    /// Why a file is fitted in memory for this family, if it never
    /// streams; a regression family that streams does so for one or several
    /// targets with every kernel, a classifier for numeric or text class
    /// labels ([`STREAMS_ONLY`]).
    pub not_streamed: Option<&'static str>,
    /// Exports a blob that learns on the device (`--updatable`).
    pub updatable: bool,
}

/// Why a classification is read into memory by a family other than svgp.
pub(crate) const CLASSIFICATION_NOT_STREAMED: &str =
    "its passes over every row fit svgp's q(u) on a subset's basis and kernel";
/// What a family that streams streams: the rest of a request is read into
/// memory, for the reason given.
#[cfg(test)]
pub const STREAMS_ONLY: &[(&str, &str)] = &[];

/// A basis fitted by gradient steps or chosen from the rows, not a
/// fixed-basis sum over them.
const NOT_A_SUM: &str = "its fit is not a fixed-basis sum over rows";

impl Method {
    /// This family's abilities: the one declaration every front end reads.
    ///
    /// ```
    /// use sgp_trainer::fit::Method;
    /// assert!(Method::Vsgp.capabilities().se_only.is_some());
    /// assert!(Method::Spgp.capabilities().not_streamed.is_none());
    /// ```
    pub const fn capabilities(self) -> Capabilities {
        let sparse_regression = Capabilities {
            regresses: true,
            classifies: false,
            se_only: None,
            not_streamed: Some(NOT_A_SUM),
            updatable: true,
        };
        match self {
            Method::Spgp => Capabilities {
                not_streamed: None,
                ..sparse_regression
            },
            Method::Vsgp => Capabilities {
                se_only: Some(
                    "its basis functions are Gaussians of their own widths, whose covariances \
                     with a Matérn kernel have no closed form",
                ),
                ..sparse_regression
            },
            Method::SpgpHs | Method::SpgpDr | Method::SpgpPca | Method::Gplasso => {
                sparse_regression
            }
            Method::Exact => Capabilities {
                classifies: true,
                updatable: false,
                not_streamed: Some("it keeps every row it is fitted on"),
                ..sparse_regression
            },
            Method::Ivm => Capabilities {
                classifies: true,
                updatable: false,
                ..sparse_regression
            },
            Method::Svgp => Capabilities {
                regresses: false,
                classifies: true,
                not_streamed: None,
                ..sparse_regression
            },
        }
    }
}

impl Method {
    /// Why the family refuses a Matérn kernel, in a sentence naming it
    /// (`None`: it takes every kernel).
    pub fn se_only_reason(self) -> Option<String> {
        let why = self.capabilities().se_only?;
        Some(format!(
            "{} takes the squared exponential only: {why}",
            self.name()
        ))
    }
}

/// The guide's table of what each family takes and does (docs/src/
/// cluster.md, "What streams"), from the declarations above.
#[cfg(test)]
pub fn markdown_table() -> String {
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let mut table = String::from(
        "| family | task | kernels | streams | learns on the device |\n|---|---|---|---|---|\n",
    );
    for &family in Method::ALL {
        let c = family.capabilities();
        let task = match (c.regresses, c.classifies) {
            (true, true) => "regression, classification",
            (true, false) => "regression",
            _ => "classification",
        };
        let kernels = match c.se_only {
            Some(_) => "se only",
            None => "se, matern12, matern32, matern52",
        };
        let streams = match c.not_streamed {
            None if c.regresses => "one or several targets, every kernel".to_owned(),
            None => "class labels, numeric or text, two or more classes".to_owned(),
            Some(why) => format!("no: {why}"),
        };
        let learns = match (c.updatable, c.classifies && c.updatable) {
            (true, true) => "yes (two classes)",
            (u, _) => yes_no(u),
        };
        table.push_str(&format!(
            "| {} | {task} | {kernels} | {streams} | {learns} |\n",
            family.name()
        ));
    }
    for (what, why) in STREAMS_ONLY {
        table.push_str(&format!("| {what} | | | no: {why} | |\n"));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guide states the table as the declarations give it.
    #[test]
    fn the_guide_states_the_table() {
        let page = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/src/cluster.md");
        let text = std::fs::read_to_string(page).expect("docs/src/cluster.md");
        assert!(
            text.contains(&markdown_table()),
            "docs/src/cluster.md's \"What streams\" table is not the declared one:\n{}",
            markdown_table()
        );
    }

    #[test]
    fn every_family_fits_some_task() {
        for &m in Method::ALL {
            let c = m.capabilities();
            assert!(c.regresses || c.classifies, "{}", m.name());
            assert_eq!(c.classifies, m.classifies(), "{}", m.name());
        }
    }
}
