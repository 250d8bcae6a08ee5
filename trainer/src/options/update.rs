//! The settings of the device's update (`sgp replay`, Python's
//! `Model.update`): their defaults are the runtime's, and a value out of
//! range is refused before any row, with one message for both.

use sgp_runtime::UpdateSettings;

use crate::{Error, Result};

/// `--forgetting`, `--gate`, `--gate-run` and `--noise-forgetting`
/// (`None`: the runtime's default, nothing forgotten, no gate, a gate that
/// never opens, the fitted noise) as the runtime's settings.
///
/// ```
/// use sgp_trainer::options::update::update_settings;
///
/// assert_eq!(update_settings(None, None, None, None).unwrap(), sgp_runtime::UpdateSettings::default());
/// let err = update_settings(Some(2.0), None, None, None).unwrap_err().to_string();
/// assert!(err.contains("--forgetting must be in (0, 1], not 2"));
/// let err = update_settings(None, None, Some(3), None).unwrap_err().to_string();
/// assert!(err.contains("--gate-run needs a --gate"));
/// let err = update_settings(None, None, None, Some(0.0)).unwrap_err().to_string();
/// assert!(err.contains("--noise-forgetting must be in (0, 1], not 0"));
/// ```
///
/// # Errors
/// [`Error::BadInput`] naming the setting out of range.
pub fn update_settings(
    forgetting: Option<f32>,
    gate: Option<f32>,
    gate_run: Option<u8>,
    noise_forgetting: Option<f32>,
) -> Result<UpdateSettings> {
    let defaults = UpdateSettings::default();
    if gate.is_none() && gate_run.is_some_and(|r| r > 0) {
        return Err(Error::BadInput(
            "--gate-run needs a --gate: it counts the rows beyond the gate".into(),
        ));
    }
    let settings = UpdateSettings {
        forgetting: forgetting.unwrap_or(defaults.forgetting),
        gate: gate.unwrap_or(defaults.gate),
        gate_run: gate_run.unwrap_or(defaults.gate_run),
        noise_forgetting: noise_forgetting.unwrap_or(defaults.noise_forgetting),
    };
    let forgetting = settings.forgetting;
    if forgetting.is_nan() || forgetting <= 0.0 || forgetting > 1.0 {
        return Err(Error::BadInput(format!(
            "--forgetting must be in (0, 1], not {} (1 forgets nothing)",
            settings.forgetting
        )));
    }
    let noise = settings.noise_forgetting;
    if noise.is_nan() || noise <= 0.0 || noise > 1.0 {
        return Err(Error::BadInput(format!(
            "--noise-forgetting must be in (0, 1], not {noise} (1 keeps the fitted noise)"
        )));
    }
    if settings.gate.is_nan() || settings.gate <= 0.0 {
        return Err(Error::BadInput(format!(
            "--gate must be above 0 predictive standard deviations, not {}",
            settings.gate
        )));
    }
    Ok(settings)
}
