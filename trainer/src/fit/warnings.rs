//! What a fit warns about its training data, for every front end: inputs
//! the model ignores, columns f32 cannot resolve, names a device refuses.
//! The fit's report carries these first among its warnings, so the
//! command line (text, `--quiet` and `--json`) and Python say the same.

use crate::data::{extremes, Dataset};
use crate::model::device::names_too_long;
use crate::model::precision;

/// Every warning about `data`'s columns, in a fixed order: constant
/// inputs, extreme values ([`extremes::warnings`]), f32 resolution
/// ([`precision::for_dataset`]), names longer than a device holds.
pub(crate) fn about_data(data: &Dataset) -> Vec<String> {
    let mut warnings: Vec<String> = data
        .constant_inputs
        .iter()
        .filter_map(|&j| {
            let name = data.input_names.get(j)?;
            let value = data.transform.x_mean.get(j)?;
            Some(format!(
                "input '{name}' is constant in the training data (value {value}): the model \
                 ignores it"
            ))
        })
        .collect();
    warnings.extend(extremes::warnings(data));
    warnings.extend(precision::for_dataset(data));
    let long = names_too_long(&data.input_names, &data.target_name);
    if !long.is_empty() {
        warnings.push(format!(
            "column names longer than the {} bytes a device Model holds: {}; a device will \
             refuse the blob (rename the columns)",
            sgp_runtime::NAME_CAPACITY,
            long.join(", ")
        ));
    }
    warnings
}

/// Puts `data`'s warnings ([`about_data`]) before `warnings` (a fit's
/// own), each once.
pub(crate) fn prepend_data_warnings(warnings: &mut Vec<String>, data: &Dataset) {
    let mut all = about_data(data);
    all.retain(|w| !warnings.contains(w));
    all.append(warnings);
    *warnings = all;
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{DMatrix, DVector};

    #[test]
    fn a_constant_input_and_a_long_name_are_warned_once_each_before_the_fits_own() {
        let x = DMatrix::from_fn(20, 2, |i, j| if j == 0 { i as f64 } else { 5.0 });
        let y = DVector::from_fn(20, |i, _| libm::sin(i as f64));
        let names = vec![
            "x".to_string(),
            "a_name_much_longer_than_a_device_holds".into(),
        ];
        let data = Dataset::from_raw(x, y, names, "y".into()).unwrap();
        let mut warnings = vec!["the fit's own".to_string()];
        prepend_data_warnings(&mut warnings, &data);
        prepend_data_warnings(&mut warnings, &data);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("input 'a_name_much_longer_than_a_device_holds' is constant"));
        assert!(warnings[1].contains("a device will refuse the blob"));
        assert_eq!(warnings[2], "the fit's own");
    }
}
