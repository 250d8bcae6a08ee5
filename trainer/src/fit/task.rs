//! The task a training target asks for (a regression, a binary
//! classification, or one of `K > 2` classes), decided in one place for
//! `sgp fit`, `sgp sweep` and Python. Here, above the data, because the
//! models asked for take part (a regression-only model regresses).
//!
//! Without an explicit task, a target is a classification when it holds
//! text labels or exactly two distinct values, or a positive class is named
//! (unless a model asked for only regresses); otherwise a regression. A
//! classification needs every class in at least two rows.

use crate::data::labels;
use crate::data::{is_class, Dataset};
use crate::fit::Method;
use crate::{Error, Result};

/// Regression or classification, as asked for (`--task`, `--link`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Predict a number (Gaussian noise).
    Regression,
    /// Predict a class (probit likelihood).
    Classification,
}

/// What the target of the training data became.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) enum Classes {
    /// A regression: no labels.
    None,
    /// A binary classification: the labels `[negative, positive]`.
    Binary(Vec<String>),
    /// A classification of `K > 2` classes: the target keeps its class
    /// values (the fit codes them).
    Several,
}

/// The training data made ready for its task, and what to tell the user
/// about the choice (one line each).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct Target {
    /// The data: a binary target coded -1/+1, other targets as read.
    pub data: Dataset,
    /// The classes, if a classification.
    pub classes: Classes,
    /// The decision in words: the task, the labels found and their counts.
    pub notes: Vec<String>,
}

/// Decides the task of `data` and prepares its target: `asked` if given,
/// else from the target (module documentation). `models` are the models
/// asked for, named by the option `flag` (`--model`, `--models`; empty: the
/// task's default model); `positive` names the positive class.
///
/// # Errors
/// [`Error::BadInput`] for a classification asked of a regression-only
/// model, `positive` with a regression, a regression of text labels, a
/// class with fewer than two rows (naming them), and every error of
/// `labels::class_value` and [`Dataset::into_binary`].
pub(crate) fn choose_task(
    data: Dataset,
    asked: Option<Task>,
    positive: Option<&str>,
    flag: &str,
    models: &[Method],
) -> Result<Target> {
    let regression_only = models.iter().find(|m| !m.classifies());
    let classes = data.target_classes();
    let text = !data.class_labels.is_empty();
    let two = classes.len() == 2;
    let mut notes = Vec::new();
    let task = match (asked, regression_only) {
        (Some(task), _) => task,
        (None, Some(model)) => {
            if two || text {
                notes.push(format!(
                    "target '{}' holds {} but {flag} {} is a regression model: fitting it as a \
                     number ({flag} svgp, ivm or exact classifies)",
                    data.target_name,
                    if text { "text labels" } else { "two values" },
                    model.name()
                ));
            }
            Task::Regression
        }
        (None, None) if two || text || positive.is_some() => Task::Classification,
        (None, None) => Task::Regression,
    };
    match task {
        Task::Regression if positive.is_some() => Err(Error::BadInput(
            "--positive names the positive class of a classification".into(),
        )),
        Task::Regression if text => Err(Error::BadInput(format!(
            "{}: target column '{}' holds text labels ({}): a regression needs numbers",
            data.source,
            data.target_name,
            data.class_labels
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        Task::Regression => Ok(Target {
            data,
            classes: Classes::None,
            notes,
        }),
        Task::Classification => classification(data, positive, flag, models, notes),
    }
}

fn classification(
    data: Dataset,
    positive: Option<&str>,
    flag: &str,
    models: &[Method],
    mut notes: Vec<String>,
) -> Result<Target> {
    if let Some(model) = models.iter().find(|m| !m.classifies()) {
        return Err(Error::BadInput(format!(
            "classification needs {flag} svgp, {flag} ivm or {flag} exact, not {flag} {}",
            model.name()
        )));
    }
    let classes = data.target_classes();
    let text = !data.class_labels.is_empty();
    // Non-integer values are a continuous column: refused by into_binary.
    let integral = classes.iter().all(|&v| is_class(v, v.round()));
    // Two values are two classes whether or not they are integers.
    if classes.len() >= 2 && (integral || text || classes.len() == 2) {
        every_class_twice(&data, &classes)?;
    }
    let rows_of = |value: f64| data.raw_y().iter().filter(|&&v| is_class(v, value)).count();
    if positive.is_none() && classes.len() > 2 && integral {
        if let Some(model) = models.iter().find(|&&m| m != Method::Svgp) {
            return Err(Error::BadInput(format!(
                "{}: target column '{}' holds {} classes: a multi-class classifier is {flag} \
                 svgp, not {flag} {} (--positive LABEL fits that class against the rest)",
                data.source,
                data.target_name,
                classes.len(),
                model.name()
            )));
        }
        let names: Vec<String> = classes
            .iter()
            .map(|&c| labels::class_name(&data, c))
            .collect();
        let counts: Vec<String> = classes.iter().map(|&c| rows_of(c).to_string()).collect();
        notes.push(format!(
            "target '{}': classification of {} classes ({}) in {} rows, one latent each on \
             one basis (--positive LABEL fits one class against the rest)",
            data.target_name,
            names.len(),
            names.join(", "),
            counts.join(", ")
        ));
        return Ok(Target {
            data,
            classes: Classes::Several,
            notes,
        });
    }
    let chosen = positive.is_some();
    let positive = match positive {
        Some(label) => labels::class_value(&data, label)?,
        None => labels::default_positive(&data)?,
    };
    let names = labels::binary_labels(&data, positive);
    let positives = rows_of(positive);
    let negatives = data.n_rows() - positives;
    let why = match (chosen, text) {
        (true, _) => "--positive",
        (false, true) => "the rarer label",
        (false, false) => "the larger value",
    };
    notes.push(format!(
        "target '{}': binary classification, positive class '{}' against '{}' ({why}; {positives} \
         and {negatives} rows; --positive LABEL chooses another, --link identity fits numbers)",
        data.target_name,
        names.get(1).map_or("", String::as_str),
        names.first().map_or("", String::as_str),
    ));
    let data = data.into_binary(Some(positive))?;
    Ok(Target {
        data,
        classes: Classes::Binary(names),
        notes,
    })
}

/// Refuses a class seen in fewer than two rows, naming them.
fn every_class_twice(data: &Dataset, classes: &[f64]) -> Result<()> {
    let raw = data.raw_y();
    for &class in classes {
        let rows: Vec<usize> = (0..raw.len())
            .filter(|&i| is_class(raw[i], class))
            .collect();
        if let [only] = rows[..] {
            return Err(Error::BadInput(format!(
                "{}: data row {}, column '{}': class '{}' appears in no other row (of {} \
                 classes): a classifier needs every class in at least two rows; a typing error? \
                 (--task regression fits the column as numbers)",
                data.source,
                only + 1,
                data.target_name,
                labels::class_name(data, class),
                classes.len()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(text: &str) -> Dataset {
        Dataset::from_reader(text.as_bytes(), "t.csv", None).unwrap()
    }

    /// A one-row class is refused whatever the two values are (integers or
    /// fractions), as text labels' is and as the guide says.
    #[test]
    fn a_one_row_class_is_refused_for_any_two_values() {
        for (a, b) in [("0", "1"), ("0.5", "2.5")] {
            let mut text = "x,y\n".to_owned();
            for i in 0..20 {
                text += &format!("{i},{}\n", if i == 7 { b } else { a });
            }
            let err = match choose_task(data(&text), None, None, "--model", &[]) {
                Err(e) => e.to_string(),
                Ok(t) => panic!("{a}/{b}: fitted as {:?}", t.classes),
            };
            assert!(err.contains("appears in no other row"), "{err}");
        }
    }

    #[test]
    fn two_values_classify_and_more_regress_unless_asked() {
        let two = data("x,y\n1,0\n2,1\n3,1\n4,0\n");
        let t = choose_task(two.clone(), None, None, "--model", &[]).unwrap();
        assert_eq!(t.classes, Classes::Binary(vec!["0".into(), "1".into()]));
        assert!(
            t.notes[0].contains("positive class '1' against '0' (the larger value; 2 and 2 rows"),
            "{:?}",
            t.notes
        );
        let t = choose_task(two.clone(), None, None, "--models", &[Method::Spgp]).unwrap();
        assert_eq!(t.classes, Classes::None);
        assert!(t.notes[0].contains("regression model"), "{:?}", t.notes);
        let t = choose_task(two, Some(Task::Regression), None, "--model", &[]).unwrap();
        assert_eq!(t.classes, Classes::None);
        let many = data("x,y\n1,0.5\n2,1\n3,1.5\n4,0\n");
        let t = choose_task(many, None, None, "--model", &[]).unwrap();
        assert_eq!(t.classes, Classes::None);
    }

    #[test]
    fn a_class_of_one_row_is_named() {
        let three = data("x,y\n1,0\n2,1\n3,1\n4,0\n5,7\n");
        let err = choose_task(three, Some(Task::Classification), None, "--model", &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("data row 5, column 'y': class '7' appears in no other row"),
            "{err}"
        );
    }

    #[test]
    fn several_classes_are_listed_with_their_counts() {
        let three = data("x,c\n1,a\n2,b\n3,c\n4,a\n5,b\n6,c\n7,c\n");
        let t = choose_task(three.clone(), None, None, "--model", &[]).unwrap();
        assert_eq!(t.classes, Classes::Several);
        assert!(
            t.notes[0].contains("3 classes (a, b, c) in 2, 2, 3 rows"),
            "{:?}",
            t.notes
        );
        let err = choose_task(three.clone(), None, None, "--model", &[Method::Ivm])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("multi-class classifier is --model svgp"),
            "{err}"
        );
        let t = choose_task(three, None, Some("c"), "--model", &[]).unwrap();
        assert_eq!(t.classes, Classes::Binary(vec!["other".into(), "c".into()]));
        assert!(
            t.notes[0].contains("'c' against 'other' (--positive; 3 and 4 rows"),
            "{:?}",
            t.notes
        );
    }
}
