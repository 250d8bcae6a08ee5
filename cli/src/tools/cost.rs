//! Cortex-M4 instructions per prediction of a model of any size, from a
//! cost model fitted by least squares to what the firmware example measured
//! under QEMU (docs/src/device-cost.md, "The cost model of `sgp sweep`"):
//!
//! `instructions = b M + c M G + e F M (M + 1) / 2 + f D (1 + G [projected])`
//!
//! per basis function, per basis function and feature dimension, per
//! multiply-add of the `F` triangular passes of the variance, and per raw
//! input, plus `k M` for a Matérn kernel: `k` the instructions per basis
//! function its square root and polynomial add, from the firmware's
//! measured SE and Matérn 3/2 pair ([`kernel_per_basis`]). The
//! classifier's row is its `probability`.

use std::sync::LazyLock;

use nalgebra::{DMatrix, DVector};
use serde::Serialize;
use sgp_runtime::{Kernel, Shape, VarianceForm};

/// The sizes a prediction's cost depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Config {
    /// Basis functions M.
    pub m: usize,
    /// Feature dimension G.
    pub g: usize,
    /// Raw inputs D.
    pub d: usize,
    /// Whether the model projects its inputs (SPGP+DR, PCA).
    pub projected: bool,
    /// Triangular passes of the variance: 1 for the product form; for the
    /// solves, 2 (two factors) or 1 (the IVM classifier).
    pub factors: usize,
}

impl Config {
    /// The configuration of a model of this shape whose variance has this
    /// form.
    pub fn of(shape: &Shape, variance: VarianceForm) -> Config {
        // The updatable forms solve against L1 and multiply by G or W.
        let two_solves = variance != VarianceForm::Product && shape.two_factors;
        Config {
            m: usize::from(shape.n_basis),
            g: usize::from(shape.feature_dim),
            d: usize::from(shape.input_dim),
            projected: shape.projected,
            factors: if two_solves { 2 } else { 1 },
        }
    }

    /// The cost model's terms, in the order of [`CostModel::coefficients`].
    fn terms(&self) -> [f64; 4] {
        let (m, g, d) = (self.m as f64, self.g as f64, self.d as f64);
        let per_input = if self.projected { 1.0 + g } else { 1.0 };
        let solve_macs = self.factors as f64 * m * (m + 1.0) / 2.0;
        [m, m * g, solve_macs, d * per_input]
    }

    /// The fixed-point cost model's terms, in the order of
    /// [`FixedCostModel::coefficients`]: its inputs are its features
    /// (no projection), so `D` is `G`.
    fn fixed_terms(&self) -> [f64; 3] {
        let (m, g) = (self.m as f64, self.g as f64);
        [m, m * g, m * (m + 1.0) / 2.0]
    }
}

/// The coefficients of `terms` that best fit `points`' instructions, by
/// least squares (the terms are independent on each measured table:
/// tested); the solve fails only without U and V, which are asked for.
fn least_squares<const N: usize>(points: &[Measured], terms: fn(&Config) -> [f64; N]) -> [f64; N] {
    let a = DMatrix::from_row_iterator(
        points.len(),
        N,
        points.iter().flat_map(|p| terms(&p.config)),
    );
    let y = DVector::from_iterator(
        points.len(),
        points.iter().map(|p| f64::from(p.instructions)),
    );
    let x = a
        .svd(true, true)
        .solve(&y, 1e-12)
        .unwrap_or_else(|_| DVector::zeros(N));
    std::array::from_fn(|i| x[i])
}

/// One configuration the firmware example measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Measured {
    /// Model kind as the firmware README names it.
    pub kind: &'static str,
    /// Its sizes.
    pub config: Config,
    /// Instructions of one prediction (`predict`; the classifier's
    /// `probability`, at its largest), opt-level "s", the runtime's
    /// built-in `exp`.
    pub instructions: u32,
}

const fn measured(
    kind: &'static str,
    (m, g, d): (usize, usize, usize),
    projected: bool,
    factors: usize,
    instructions: u32,
) -> Measured {
    Measured {
        kind,
        config: Config {
            m,
            g,
            d,
            projected,
            factors,
        },
        instructions,
    }
}

/// The firmware example's table (`docs/src/device-cost.md`, "Instructions per
/// prediction", with the command that measures it). Rows of the same
/// configuration (SPGP, VSGP and GPLasso at M = 32) are all kept, so they
/// weigh it as the table does. The classifier's row is its `probability`
/// at its largest.
pub(crate) const MEASURED: [Measured; 8] = [
    measured("spgp", (16, 4, 4), false, 1, 1321),
    measured("spgp", (32, 4, 4), false, 1, 2929),
    measured("spgp", (64, 4, 4), false, 1, 7820),
    measured("vsgp", (32, 4, 4), false, 1, 3314),
    measured("gplasso", (32, 4, 4), false, 1, 2929),
    measured("ivm (probit, probability)", (32, 4, 4), false, 1, 3069),
    measured("spgp-dr", (32, 4, 16), true, 1, 3457),
    measured("spgp", (32, 16, 16), false, 1, 5632),
];

/// Cortex-M4 `predict` of the same model (the firmware example's SPGP,
/// M = [`KERNEL_PAIR_M`], D = 4, product form) with the squared
/// exponential and with Matérn 3/2: `bash firmware-example/run.sh`, its
/// `cost:` lines for `spgp M=32` and `matern32 M=32`
/// (docs/src/device-cost.md, "Matérn kernels").
pub(crate) const KERNEL_PAIR: (u32, u32) = (2885, 3531);

/// Basis functions of the model `KERNEL_PAIR` measured.
pub(crate) const KERNEL_PAIR_M: usize = 32;

/// Instructions per basis function `kernel` adds to the squared
/// exponential's prediction: the measured Matérn 3/2 difference over M
/// (`KERNEL_PAIR`). Matérn 1/2 and 5/2 run the same loop, within a
/// multiply-add or two, and are charged the same (not measured).
pub fn kernel_per_basis(kernel: Kernel) -> f64 {
    match kernel {
        Kernel::SquaredExponential => 0.0,
        Kernel::Matern12 | Kernel::Matern32 | Kernel::Matern52 => {
            let (se, matern) = KERNEL_PAIR;
            f64::from(matern - se) / KERNEL_PAIR_M as f64
        }
    }
}

/// The fitted cost model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CostModel {
    /// Instructions per basis function, per basis function and feature
    /// dimension, per solve multiply-add (`F M (M + 1) / 2`), and per raw
    /// input (times `1 + G` when projected).
    pub coefficients: [f64; 4],
}

impl CostModel {
    /// Least squares over `points`.
    fn fit(points: &[Measured]) -> CostModel {
        CostModel {
            coefficients: least_squares(points, Config::terms),
        }
    }

    /// Predicted instructions of one prediction in `config` with the
    /// squared exponential.
    pub fn instructions(&self, config: &Config) -> f64 {
        config
            .terms()
            .iter()
            .zip(&self.coefficients)
            .map(|(t, c)| t * c)
            .sum()
    }

    /// Predicted instructions of one prediction in `config` with `kernel`.
    pub fn instructions_with(&self, config: &Config, kernel: Kernel) -> f64 {
        self.instructions(config) + kernel_per_basis(kernel) * config.m as f64
    }

    /// The formula with its coefficients, for people.
    pub fn formula(&self) -> String {
        let [b, c, e, f] = self.coefficients;
        let k = kernel_per_basis(Kernel::Matern32);
        format!(
            "{b:.1} M + {c:.2} M G + {e:.2} F M (M + 1) / 2 + {f:.2} D (1 + G if projected) + \
             {k:.1} M if Matérn"
        )
    }

    /// Relative error on one measured configuration.
    #[cfg(test)]
    fn relative_error(&self, p: &Measured) -> f64 {
        let measured = f64::from(p.instructions);
        (self.instructions(&p.config) - measured).abs() / measured
    }

    /// Largest relative error over `MEASURED`.
    #[cfg(test)]
    pub fn worst_relative_error(&self) -> f64 {
        MEASURED
            .iter()
            .map(|p| self.relative_error(p))
            .fold(0.0, f64::max)
    }
}

/// The cost model fitted to [`MEASURED`].
pub(crate) static CORTEX_M4: LazyLock<CostModel> = LazyLock::new(|| CostModel::fit(&MEASURED));

/// Cortex-M4 instructions of one call predicting all `outputs` outputs of
/// a model of this shape and kernel (rounded), from [`CORTEX_M4`]: the
/// standardising, distances and kernel once, and per further output its
/// variance pass and the `M` multiply-adds of its mean, both at the
/// per-multiply-add coefficient (exact for one output; an estimate from
/// the single-output measurements for more).
pub(crate) fn instructions_per_prediction(
    shape: &Shape,
    variance: VarianceForm,
    outputs: usize,
    kernel: Kernel,
) -> u64 {
    let config = Config::of(shape, variance);
    let m = config.m as f64;
    let further_macs =
        outputs.saturating_sub(1) as f64 * (config.factors as f64 * m * (m + 1.0) / 2.0 + m);
    let estimate =
        CORTEX_M4.instructions_with(&config, kernel) + CORTEX_M4.coefficients[2] * further_macs;
    estimate.max(0.0).round() as u64
}

/// Cortex-M3 (mps2-an385, no FPU) instructions of the fixed-point form's
/// `FixedModel::predict` (mean and variance) of the firmware's SPGP models,
/// the largest over their golden inputs: `bash firmware-example/run.sh`,
/// its `cortex-m3: golden ... fixed:` lines (docs/src/device-cost.md,
/// "Fixed point").
pub(crate) const FIXED_MEASURED: [Measured; 4] = [
    measured("spgp fixed", (16, 4, 4), false, 1, 3788),
    measured("spgp fixed", (32, 4, 4), false, 1, 8219),
    measured("spgp fixed", (64, 4, 4), false, 1, 20955),
    measured("spgp fixed", (32, 16, 16), false, 1, 13952),
];

/// The fixed-point form's cost model on a core without an FPU, fitted to
/// [`FIXED_MEASURED`]: `b M + c M G + e M (M + 1) / 2`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FixedCostModel {
    /// Instructions per basis function, per basis function and input, and
    /// per multiply-add of the variance's triangular product.
    pub coefficients: [f64; 3],
}

impl FixedCostModel {
    /// Predicted Cortex-M3 instructions of one fixed-point prediction.
    pub fn instructions(&self, config: &Config) -> f64 {
        let terms = config.fixed_terms();
        terms
            .iter()
            .zip(&self.coefficients)
            .map(|(t, c)| t * c)
            .sum()
    }

    /// The formula with its coefficients, for people.
    pub fn formula(&self) -> String {
        let [b, c, e] = self.coefficients;
        format!("{b:.1} M + {c:.2} M G + {e:.2} M (M + 1) / 2")
    }

    /// Largest relative error over [`FIXED_MEASURED`].
    #[cfg(test)]
    fn worst_relative_error(&self) -> f64 {
        FIXED_MEASURED
            .iter()
            .map(|p| {
                let measured = f64::from(p.instructions);
                (self.instructions(&p.config) - measured).abs() / measured
            })
            .fold(0.0, f64::max)
    }
}

/// The fixed-point cost model fitted to [`FIXED_MEASURED`].
pub(crate) static CORTEX_M3_FIXED: LazyLock<FixedCostModel> = LazyLock::new(|| FixedCostModel {
    coefficients: least_squares(&FIXED_MEASURED, Config::fixed_terms),
});

/// What the fixed-point form of a model costs on a core without an FPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FixedCost {
    /// Cortex-M3 instructions per prediction, from [`CORTEX_M3_FIXED`]
    /// (rounded).
    pub instructions: u64,
    /// RAM of the `FixedModel<M, G>` (flash: the same blob).
    pub ram_bytes: usize,
}

/// The fixed-point form's cost for a model of this kind, or `None` where
/// the runtime has no such form (`sgp_runtime::fixed_point_supports`).
pub(crate) fn fixed_point_cost(
    shape: &Shape,
    variance: VarianceForm,
    outputs: usize,
    kernel: Kernel,
) -> Option<FixedCost> {
    sgp_runtime::fixed_point_supports(kernel, shape, variance, outputs).ok()?;
    let config = Config::of(shape, variance);
    Some(FixedCost {
        instructions: CORTEX_M3_FIXED.instructions(&config).max(0.0).round() as u64,
        ram_bytes: sgp_runtime::fixed_ram_bytes(config.m, config.g),
    })
}

/// What `sgp sweep --help` says about the instruction figure; the tests
/// hold its numbers to the fitted model.
pub const HELP: &str = "Instructions per prediction are Cortex-M4 instructions (opt-level \"s\") \
of predict (a classifier's probability; predict_with_gradient costs about 2.6 times as much, 3 times with Matérn 3/2) from \
a cost model fitted by least squares to the firmware example's measured table \
(docs/src/device-cost.md: M = 16 to 64, G = 4 or 16, D = 4 or 16, SPGP, VSGP, GPLasso, SPGP+DR, the \
IVM classifier, all with the product form of the variance): 41.1 M + 6.54 M G + 1.68 F M (M + \
1) / 2 + 5.23 D (1 + G if projected) + 20.2 M if Matérn, F the triangular passes of the variance \
(1; a blob that fell back to the solves: 2, the IVM classifier 1), the Matérn term the square \
root and polynomial of its basis functions (measured for Matérn 3/2: 3,531 against SE's 2,885 \
at M = 32, D = 4; Matérn 1/2 and 5/2, whose loops differ by a multiply-add or two, are charged \
the same). It is within 7.7% of every measured count \
(VSGP, whose per-basis widths cost more, is the worst); beyond the measured sizes it is an \
extrapolation (refitted without one configuration it missed that one by up to 10% at D = 4, and \
by 7% on the only projected one). A model of P outputs (several targets) is charged one call \
predicting all of them: the basis once, and per further output its variance pass and mean at the \
per-multiply-add coefficient (an estimate from these single-output measurements). \
M3 fixed is the fixed-point form a core without an FPU runs (sgp_runtime::FixedModel, built on \
the device from the same blob, so the same flash; RAM: its own, plus the f32 Model while it is \
built; SE regression with shared widths, no projection, one output, the product form; - for any \
other model): Cortex-M3 instructions of its predict, mean and variance, from 133.2 M + 14.63 M G \
+ 4.17 M (M + 1) / 2, fitted to the firmware's four measured FixedModel predictions (M = 16 to \
64 at G = 4, M = 32 at G = 16), within 4.1% of each (f32 in soft float on that core costs about \
45 times the Cortex-M4 figure).";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_model_reproduces_the_measured_table() {
        let model = *CORTEX_M4;
        for p in &MEASURED {
            assert!(
                model.relative_error(p) < 0.078,
                "{}: {:?}: {:.0} vs {}",
                p.kind,
                p.config,
                model.instructions(&p.config),
                p.instructions
            );
        }
        let worst = model.worst_relative_error();
        assert!(worst > 0.076 && worst < 0.078, "{worst}");
    }

    #[test]
    fn the_help_states_the_fitted_formula_and_its_error() {
        let model = *CORTEX_M4;
        let formula = model.formula();
        let help = HELP.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(help.contains(&formula), "{formula}\n{HELP}");
        let percent = format!("within {:.1}%", 100.0 * model.worst_relative_error());
        assert!(HELP.contains(&percent), "{percent}\n{HELP}");
    }

    #[test]
    fn leaving_one_configuration_out_misses_it_by_at_most_what_the_help_says() {
        // G = D = 16 unprojected is the only configuration that separates
        // the distance term from the input term: without it the terms are
        // not independent, so it cannot be left out.
        let mut worst: f64 = 0.0;
        for (i, left_out) in MEASURED.iter().enumerate() {
            if left_out.config.g == 16 && !left_out.config.projected {
                continue;
            }
            let rest: Vec<Measured> = MEASURED
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, p)| *p)
                .collect();
            worst = worst.max(CostModel::fit(&rest).relative_error(left_out));
        }
        assert!(worst > 0.098 && worst < 0.099, "{worst}");
    }

    /// The Matérn model of the firmware costs what was measured, within
    /// the SE model's own error at that size; SE costs are unchanged.
    #[test]
    fn a_matern_kernel_costs_its_measured_instructions_per_basis_function() {
        let model = *CORTEX_M4;
        let config = MEASURED[1].config;
        assert_eq!((config.m, config.d), (KERNEL_PAIR_M, 4));
        let se = model.instructions_with(&config, Kernel::SquaredExponential);
        assert_eq!(se, model.instructions(&config));
        let matern = model.instructions_with(&config, Kernel::Matern32);
        let (measured_se, measured_matern) = KERNEL_PAIR;
        assert!((matern - se - f64::from(measured_matern - measured_se)).abs() < 1e-9);
        let off = |predicted: f64, measured: u32| {
            (predicted - f64::from(measured)).abs() / f64::from(measured)
        };
        assert!(off(matern, measured_matern) <= off(se, measured_se) + 1e-12);
        assert!(off(matern, measured_matern) < 0.05, "{matern}");
        let per_basis = kernel_per_basis(Kernel::Matern32);
        assert!((per_basis - 20.1875).abs() < 1e-12, "{per_basis}");
        assert!(
            HELP.contains(&format!("+ {per_basis:.1} M if Matérn")),
            "{HELP}"
        );
        for kernel in [Kernel::Matern12, Kernel::Matern52] {
            assert_eq!(kernel_per_basis(kernel), per_basis);
        }
    }

    #[test]
    fn the_fixed_point_cost_model_reproduces_its_measured_table_and_the_help() {
        let model = *CORTEX_M3_FIXED;
        assert!(model.coefficients.iter().all(|&c| c > 0.0), "{model:?}");
        let worst = model.worst_relative_error();
        assert!(worst < 0.05, "{worst}: {model:?}");
        let help = HELP.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            help.contains(&model.formula()),
            "{}\n{HELP}",
            model.formula()
        );
        let percent = format!("within {:.1}% of each", 100.0 * worst);
        assert!(help.contains(&percent), "{percent}\n{HELP}");
    }

    #[test]
    fn only_a_model_with_a_fixed_point_form_is_charged_for_one() {
        let shape = |projected, per_basis, link| Shape {
            kind: sgp_runtime::ModelKind::Spgp,
            link,
            input_dim: 4,
            feature_dim: 4,
            n_basis: 32,
            projected,
            per_basis,
            two_factors: false,
        };
        let plain = shape(false, false, sgp_runtime::Link::Identity);
        let se = Kernel::SquaredExponential;
        let cost = fixed_point_cost(&plain, VarianceForm::Product, 1, se).unwrap();
        let measured = FIXED_MEASURED[1];
        assert_eq!((measured.config.m, measured.config.g), (32, 4));
        let off = (cost.instructions as f64 - f64::from(measured.instructions)).abs();
        assert!(off < 0.05 * f64::from(measured.instructions), "{cost:?}");
        assert_eq!(cost.ram_bytes, sgp_runtime::fixed_ram_bytes(32, 4));
        let none = [
            fixed_point_cost(&plain, VarianceForm::Solves, 1, se),
            fixed_point_cost(&plain, VarianceForm::Product, 2, se),
            fixed_point_cost(&plain, VarianceForm::Product, 1, Kernel::Matern32),
            fixed_point_cost(
                &shape(true, false, sgp_runtime::Link::Identity),
                VarianceForm::Product,
                1,
                se,
            ),
            fixed_point_cost(
                &shape(false, true, sgp_runtime::Link::Identity),
                VarianceForm::Product,
                1,
                se,
            ),
            fixed_point_cost(
                &shape(false, false, sgp_runtime::Link::Probit),
                VarianceForm::Product,
                1,
                se,
            ),
        ];
        assert!(none.iter().all(Option::is_none), "{none:?}");
    }

    #[test]
    fn the_cost_grows_with_every_size() {
        let model = *CORTEX_M4;
        assert!(model.coefficients.iter().all(|&c| c > 0.0), "{model:?}");
        let base = Config {
            m: 32,
            g: 4,
            d: 4,
            projected: false,
            factors: 2,
        };
        let cost = |config: Config| model.instructions(&config);
        assert!(cost(Config { m: 33, ..base }) > cost(base));
        assert!(cost(Config { g: 5, d: 5, ..base }) > cost(base));
        assert!(
            cost(Config {
                d: 16,
                projected: true,
                ..base
            }) > cost(base)
        );
        assert!(cost(Config { factors: 1, ..base }) < cost(base));
    }
}
