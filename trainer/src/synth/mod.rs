//! Generated regression data with known truth, in the shapes users feed in.
//!
//! Every [`Shape`] is a noise-free function of the inputs (`truth`), an
//! input distribution, a noise level and a default size, deterministic in
//! the seed (ChaCha8): same shape, rows and seed, same numbers. Raw units;
//! `dataset` (and the tests' `train_test`) standardise through
//! [`Dataset::from_raw`]. Used by the robustness cases
//! (the tests' `robustness_cases`), the benchmark suite and `sgp synth`
//! ([`synthetic`]).

use std::io::Write;

use nalgebra::{DMatrix, DVector};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::Serialize;

use crate::data::Dataset;

pub mod drift;
pub mod dynamics;
use crate::Result;

named_enum! {
    /// A named kind of generated data set. The value names (`--shape linear`,
    /// ...) are the kebab-case variant names.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Shape {
        /// `y = 2x + N(0, 0.1^2)`, `x ~ U(0, 1)`: a straight line pushes the
        /// length scale to its ceiling, which the export must survive.
        Linear = "linear",
        /// `y = x^2 + N(0, 0.2^2)`, `x ~ U(-2, 2)`.
        Quadratic = "quadratic",
        /// A jump of 1 at `x = 0.5`, `x ~ U(0, 1)`, noise std 0.05.
        Step = "step",
        /// Four periods of a sine over `x ~ U(0, 10)`, noise std 0.1.
        Periodic = "periodic",
        /// `sin(2 pi x)`, noise std `1e-4` of the signal's std.
        NearNoiseFree = "near-noise-free",
        /// `sin(2 pi x)`, noise std twice the signal's std.
        VeryNoisy = "very-noisy",
        /// Ten rows of `sin(2x) + 0.4 cos(5x) + 0.3x` over [0, 6], noise std 0.25.
        Tiny = "tiny",
        /// Every row (inputs and target) appears two or three times, shuffled.
        Duplicated = "duplicated",
        /// Eight inputs `U(-1, 1)`, the target depends on the third only.
        OneOfEight = "one-of-eight",
        /// Large raw offsets with small spreads: a temperature of
        /// 293.15 +- 0.5 K and a pressure of 101325 +- 50 Pa.
        Offsets = "offsets",
        /// Two integer count inputs in 0..=20.
        Integer = "integer",
        /// 1-D, noise std growing with `x` (0.05 to 1.55), as in the
        /// motorcycle data.
        Heteroscedastic = "heteroscedastic",
        /// 1-D, smooth (one period per unit) on the left half of [0, 1],
        /// increasingly wiggly (up to 11 periods per unit) on the right half.
        Chirp = "chirp",
        /// 2-D, the length scale along `x2` shrinks as `x1` grows.
        Varying2d = "varying2d",
        /// The smooth 4-D ridge function of [`synthetic`].
        Ridge = "ridge",
        /// 32 unit-variance inputs `U(-sqrt 3, sqrt 3)`; the target depends on
        /// two linear combinations of them only (`few_directions`): SPGP+DR's
        /// case.
        FewDirections = "few-directions",
    }
}

/// Input dimension of [`Shape::Ridge`].
pub(crate) const RIDGE_DIM: usize = 4;

/// Standard deviation of `sin(2 pi x)` for `x ~ U(0, 1)`.
const SINE_STD: f64 = std::f64::consts::FRAC_1_SQRT_2;

impl Shape {
    /// Rows generated when the caller has no preference.
    #[cfg(test)]
    pub(crate) fn default_rows(self) -> usize {
        match self {
            Shape::Tiny => 10,
            Shape::Linear | Shape::Quadratic | Shape::NearNoiseFree => 100,
            Shape::Duplicated | Shape::Integer => 150,
            Shape::Step | Shape::Periodic | Shape::VeryNoisy | Shape::Offsets => 200,
            Shape::OneOfEight | Shape::Heteroscedastic => 300,
            Shape::Chirp => 400,
            Shape::Varying2d | Shape::Ridge => 500,
            Shape::FewDirections => 800,
        }
    }

    /// Number of inputs D.
    pub fn n_inputs(self) -> usize {
        match self {
            Shape::OneOfEight => 8,
            Shape::Offsets | Shape::Integer | Shape::Varying2d => 2,
            Shape::Ridge => RIDGE_DIM,
            Shape::FewDirections => FEW_DIRECTIONS_DIM,
            _ => 1,
        }
    }

    /// Input column names.
    pub fn input_names(self) -> Vec<String> {
        match self {
            Shape::Offsets => vec!["temperature_K".into(), "pressure_Pa".into()],
            Shape::Integer => vec!["count_a".into(), "count_b".into()],
            _ if self.n_inputs() == 1 => vec!["x".into()],
            _ => numbered_names(self.n_inputs()),
        }
    }

    /// Standard deviation of the observation noise at raw input `x` (one
    /// row): constant except for [`Shape::Heteroscedastic`].
    pub(crate) fn noise_std(self, x: &[f64]) -> f64 {
        match self {
            Shape::Linear | Shape::Periodic | Shape::Duplicated | Shape::OneOfEight => 0.1,
            Shape::Chirp | Shape::Varying2d | Shape::Ridge | Shape::FewDirections => 0.1,
            Shape::Quadratic => 0.2,
            Shape::Step | Shape::Offsets => 0.05,
            Shape::NearNoiseFree => 1e-4 * SINE_STD,
            Shape::VeryNoisy => 2.0 * SINE_STD,
            Shape::Tiny => 0.25,
            Shape::Integer => 0.3,
            Shape::Heteroscedastic => 0.05 + 0.15 * x.first().copied().unwrap_or(0.0),
        }
    }

    /// Draws one input row (raw units).
    fn draw_input(self, rng: &mut ChaCha8Rng, row: &mut [f64]) {
        for (j, v) in row.iter_mut().enumerate() {
            *v = match self {
                Shape::Linear
                | Shape::Step
                | Shape::NearNoiseFree
                | Shape::VeryNoisy
                | Shape::Chirp
                | Shape::Varying2d => rng.random::<f64>(),
                Shape::Quadratic => rng.random_range(-2.0..2.0),
                Shape::Periodic | Shape::Heteroscedastic => rng.random_range(0.0..10.0),
                Shape::Tiny => 6.0 * rng.random::<f64>(),
                Shape::Duplicated => rng.random_range(0.0..5.0),
                Shape::OneOfEight => rng.random_range(-1.0..1.0),
                Shape::Offsets if j == 0 => rng.random_range(292.65..293.65),
                Shape::Offsets => rng.random_range(101_275.0..101_375.0),
                Shape::Integer => f64::from(rng.random_range(0..=20_u32)),
                Shape::Ridge => rng.random_range(-3.0..3.0),
                Shape::FewDirections => rng.random_range(-3f64.sqrt()..3f64.sqrt()),
            };
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The noise-free function of `shape` at one raw input row.
pub(crate) fn truth_at(shape: Shape, x: &[f64]) -> f64 {
    use std::f64::consts::TAU;
    let x0 = x.first().copied().unwrap_or(0.0);
    let x1 = x.get(1).copied().unwrap_or(0.0);
    match shape {
        Shape::Linear => 2.0 * x0,
        Shape::Quadratic => x0 * x0,
        Shape::Step => {
            if x0 < 0.5 {
                0.0
            } else {
                1.0
            }
        }
        Shape::Periodic => libm::sin(TAU * x0 / 2.5),
        Shape::NearNoiseFree | Shape::VeryNoisy => libm::sin(TAU * x0),
        Shape::Tiny => libm::sin(2.0 * x0) + 0.4 * libm::cos(5.0 * x0) + 0.3 * x0,
        Shape::Duplicated => libm::sin(x0) + 0.2 * x0,
        Shape::OneOfEight => libm::sin(3.0 * x.get(2).copied().unwrap_or(0.0)),
        Shape::Offsets => libm::sin(TAU * (x0 - 293.15)) + 0.5 * (x1 - 101_325.0) / 50.0,
        Shape::Integer => 2.0 * libm::log1p(x0) + 0.05 * x1,
        Shape::Heteroscedastic => 2.0 * libm::sin(x0),
        Shape::Chirp => {
            let r = (x0 - 0.5).max(0.0);
            libm::sin(TAU * (x0 + 10.0 * r * r))
        }
        Shape::Varying2d => libm::sin(TAU * x1 * (1.0 + 4.0 * x0)) + 0.5 * x0,
        Shape::Ridge => ridge_function(x),
        Shape::FewDirections => few_directions(x),
    }
}

/// Input dimension of [`Shape::FewDirections`].
pub(crate) const FEW_DIRECTIONS_DIM: usize = 32;

/// The function behind [`Shape::FewDirections`]: `sin(2 u1) + 0.8 cos(1.5
/// u2)` of two fixed unit-norm directions `u1 ~ cos(j)`, `u2 ~ sin(2j + 1)`
/// across the inputs (unit variance each for the shape's inputs).
pub(crate) fn few_directions(x: &[f64]) -> f64 {
    let direction = |f: &dyn Fn(f64) -> f64| {
        let w: Vec<f64> = (0..x.len()).map(|j| f(j as f64)).collect();
        let norm = w.iter().map(|v| v * v).sum::<f64>().sqrt();
        x.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() / norm
    };
    let u1 = direction(&|j| libm::cos(j));
    let u2 = direction(&|j| libm::sin(2.0 * j + 1.0));
    libm::sin(2.0 * u1) + 0.8 * libm::cos(1.5 * u2)
}

/// The noise-free function of `shape` at every row of raw inputs `x`
/// (`x.ncols()` must be `shape.n_inputs()`, or any D for the ridge): what
/// a benchmark compares a predictive mean with to measure error against
/// the truth.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn truth(shape: Shape, x: &DMatrix<f64>) -> DVector<f64> {
    DVector::from_iterator(
        x.nrows(),
        x.row_iter().map(|r| {
            let row: Vec<f64> = r.iter().copied().collect();
            truth_at(shape, &row)
        }),
    )
}

/// The ridge function behind [`synthetic`]: a sum of a few ridge functions
/// of the inputs, smooth in every direction.
pub(crate) fn ridge_function(x: &[f64]) -> f64 {
    let a: f64 = x
        .iter()
        .enumerate()
        .map(|(j, v)| v / (1.0 + j as f64))
        .sum();
    let b: f64 = x.iter().step_by(2).sum();
    libm::sin(a) + 0.5 * libm::cos(0.7 * b)
}

/// A smooth `d`-dimensional regression problem (raw units) with noise:
/// inputs uniform in [-3, 3]^d, target `ridge_function` plus
/// `N(0, 0.1^2)`. For `sgp synth`, examples and benchmarks.
pub fn synthetic(n: usize, d: usize, seed: u64) -> (DMatrix<f64>, DVector<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let x = DMatrix::from_fn(n, d, |_, _| rng.random_range(-3.0..3.0));
    let y = DVector::from_fn(n, |i, _| {
        let r: Vec<f64> = x.row(i).iter().copied().collect();
        ridge_function(&r) + 0.1 * rng.sample::<f64, _>(StandardNormal)
    });
    (x, y)
}

/// A generated data set in raw units, with the noise-free values.
#[derive(Clone, Debug, PartialEq)]
pub struct Generated {
    /// Which shape produced it.
    pub shape: Shape,
    /// Inputs (N x D, raw units).
    pub x: DMatrix<f64>,
    /// Noisy targets (length N, raw units).
    pub y: DVector<f64>,
    /// The noise-free function at each row of `x`.
    pub truth: DVector<f64>,
    /// Input column names.
    pub input_names: Vec<String>,
    /// Target column name.
    pub target_name: String,
}

impl Generated {
    /// Number of rows N.
    pub fn n_rows(&self) -> usize {
        self.x.nrows()
    }

    /// Validates and standardises into a [`Dataset`] (its `source` names
    /// the shape).
    ///
    /// # Errors
    /// As [`Dataset::from_raw`]: e.g. fewer than two rows.
    pub fn to_dataset(&self) -> Result<Dataset> {
        let mut data = Dataset::from_raw(
            self.x.clone(),
            self.y.clone(),
            self.input_names.clone(),
            self.target_name.clone(),
        )?;
        data.source = format!("synthetic '{}' ({} rows)", self.shape, self.n_rows());
        Ok(data)
    }

    /// Writes the data as CSV: a header row, the inputs, the target last
    /// (what `sgp fit` reads). Values are printed in full precision.
    ///
    /// # Errors
    /// If writing fails.
    pub fn write_csv(&self, out: impl Write) -> std::io::Result<()> {
        write_csv(
            (&self.x, &self.y),
            &self.input_names,
            &self.target_name,
            out,
        )
    }
}

/// Writes inputs `x` and target `y` as CSV: a header row of
/// `input_names` and `target_name`, the target last (what `sgp fit`
/// reads), every value in full precision.
///
/// # Errors
/// If writing fails.
pub fn write_csv(
    (x, y): (&DMatrix<f64>, &DVector<f64>),
    input_names: &[String],
    target_name: &str,
    mut out: impl Write,
) -> std::io::Result<()> {
    let header: Vec<&str> = input_names
        .iter()
        .map(String::as_str)
        .chain([target_name])
        .collect();
    writeln!(out, "{}", header.join(","))?;
    for (row, target) in x.row_iter().zip(y.iter()) {
        let cells: Vec<String> = row.iter().chain([target]).map(|v| format!("{v}")).collect();
        writeln!(out, "{}", cells.join(","))?;
    }
    out.flush()
}

/// `rows` rows of `shape`, deterministic in `seed`.
///
/// [`Shape::Ridge`] gives exactly `synthetic(rows, RIDGE_DIM, seed)`.
pub fn generate(shape: Shape, rows: usize, seed: u64) -> Generated {
    generate_stream(shape, rows, seed, 0)
}

/// The most bytes of numbers `sgp synth` generates: it holds its data in
/// memory before writing it.
pub(crate) const MAX_SYNTH_BYTES: u128 = 4 << 30;

/// Checks `sgp synth`'s sizes before anything is allocated: `rows` rows
/// of `columns` numbers each (inputs, outputs and the noise-free truth)
/// within `MAX_SYNTH_BYTES`, and at most 65,535 inputs (what a blob
/// holds).
///
/// ```
/// use sgp_trainer::synth::check_size;
/// assert!(check_size(1000, 4).is_ok());
/// assert!(check_size(1_000_000_000_000_000_000, 4).is_err());
/// assert!(check_size(10, 1_000_000).is_err());
/// ```
///
/// # Errors
/// [`crate::Error::BadInput`] saying which size is too large.
pub fn check_size(rows: usize, columns: usize) -> Result<()> {
    if rows == 0 || columns == 0 {
        return Err(crate::Error::BadInput(
            "--rows and --dim must be at least 1".into(),
        ));
    }
    if columns > usize::from(u16::MAX) {
        return Err(crate::Error::BadInput(format!(
            "--dim {columns}: a model holds at most {} inputs",
            u16::MAX
        )));
    }
    let per_row = (columns as u128 + 2) * 8;
    if rows as u128 * per_row > MAX_SYNTH_BYTES {
        return Err(crate::Error::BadInput(format!(
            "--rows {rows}: {} bytes of numbers, more than the {MAX_SYNTH_BYTES} sgp synth \
             generates in memory (at most {} rows of {columns} inputs)",
            rows as u128 * per_row,
            MAX_SYNTH_BYTES / per_row
        )));
    }
    Ok(())
}

/// The ridge data ([`synthetic`]) in `dim` dimensions, as `sgp synth`
/// writes it without `--shape`.
pub fn ridge(rows: usize, dim: usize, seed: u64) -> Generated {
    let (x, y) = synthetic(rows, dim, seed);
    Generated {
        shape: Shape::Ridge,
        truth: truth(Shape::Ridge, &x),
        x,
        y,
        input_names: numbered_names(dim),
        target_name: "y".into(),
    }
}

/// As [`generate`], from ChaCha8 stream `stream` of `seed`: different
/// streams are independent draws from the same distribution.
fn generate_stream(shape: Shape, rows: usize, seed: u64, stream: u64) -> Generated {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    let d = shape.n_inputs();
    let (x, y) = match shape {
        // Draw for draw what `sgp synth` writes: generated files stay the same.
        Shape::Ridge if stream == 0 => synthetic(rows, d, seed),
        Shape::Duplicated => duplicated(rows, &mut rng),
        _ => {
            let mut x = DMatrix::zeros(rows, d);
            let mut y = DVector::zeros(rows);
            let mut row = vec![0.0; d];
            for i in 0..rows {
                shape.draw_input(&mut rng, &mut row);
                let noise: f64 = rng.sample(StandardNormal);
                y[i] = truth_at(shape, &row) + shape.noise_std(&row) * noise;
                x.set_row(i, &nalgebra::RowDVector::from_row_slice(&row));
            }
            (x, y)
        }
    };
    Generated {
        shape,
        truth: truth(shape, &x),
        x,
        y,
        input_names: shape.input_names(),
        target_name: "y".into(),
    }
}

/// Distinct noisy rows, each copied two or three times (inputs and target
/// alike), `rows` in all, in shuffled order.
fn duplicated(rows: usize, rng: &mut ChaCha8Rng) -> (DMatrix<f64>, DVector<f64>) {
    let shape = Shape::Duplicated;
    let mut values: Vec<(f64, f64)> = Vec::with_capacity(rows);
    let mut left = rows;
    while left > 0 {
        let mut copies = rng.random_range(2..=3_usize).min(left);
        // Never leave a single row over: it could not be duplicated.
        if left - copies == 1 {
            copies = if copies == 2 { 3 } else { 2 };
        }
        let mut row = [0.0];
        shape.draw_input(rng, &mut row);
        let noise: f64 = rng.sample(StandardNormal);
        let y = truth_at(shape, &row) + shape.noise_std(&row) * noise;
        values.extend(std::iter::repeat_n((row[0], y), copies));
        left -= copies;
    }
    values.shuffle(rng);
    (
        DMatrix::from_iterator(rows, 1, values.iter().map(|v| v.0)),
        DVector::from_iterator(rows, values.iter().map(|v| v.1)),
    )
}

/// The generated sets of the benchmark suite and the measurements read
/// against it: shape and rows before the 70/30 split (seed 0).
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) const SUITE: [(Shape, usize); 7] = [
    (Shape::Chirp, 600),
    (Shape::Heteroscedastic, 600),
    (Shape::Periodic, 500),
    (Shape::OneOfEight, 800),
    (Shape::Varying2d, 800),
    (Shape::Ridge, 800),
    (Shape::FewDirections, 1000),
];

/// `rows` rows of `shape` as a validated [`Dataset`].
///
/// # Errors
/// As [`Dataset::from_raw`]: e.g. fewer than two rows.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn dataset(shape: Shape, rows: usize, seed: u64) -> Result<Dataset> {
    generate(shape, rows, seed).to_dataset()
}

/// A training set of `train_rows` and an independent test set of
/// `test_rows` drawn from the same distribution (a different ChaCha8
/// stream of the same seed). The test set stays in raw units, with its
/// noise-free truth, ready for `evaluate::figures` against
/// `test.y` or `test.truth`.
///
/// # Errors
/// As [`Dataset::from_raw`] for the training part.
#[cfg(test)]
pub(crate) fn train_test(
    shape: Shape,
    train_rows: usize,
    test_rows: usize,
    seed: u64,
) -> Result<(Dataset, Generated)> {
    let train = dataset(shape, train_rows, seed)?;
    Ok((train, generate_stream(shape, test_rows, seed, 1)))
}

/// One robustness case: a generated data set and the pseudo-input counts
/// to fit it with.
#[cfg(test)]
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Case {
    /// The shape.
    pub shape: Shape,
    /// Rows N.
    pub rows: usize,
    /// Generator seed.
    pub seed: u64,
    /// Pseudo-input counts M to try: those of {4, 16, 64} with M <= N.
    pub m: Vec<usize>,
}

#[cfg(test)]
impl Case {
    /// A short label, e.g. `linear/N=100/seed=0`, for test messages.
    pub fn name(&self) -> String {
        format!("{}/N={}/seed={}", self.shape, self.rows, self.seed)
    }

    /// The case's data set.
    ///
    /// # Errors
    /// As [`dataset`].
    pub fn dataset(&self) -> Result<Dataset> {
        dataset(self.shape, self.rows, self.seed)
    }
}

/// The M values tried in robustness cases.
#[cfg(test)]
const ROBUSTNESS_M: [usize; 3] = [4, 16, 64];

/// Data sets every fitting procedure must fit and export: every shape at
/// its default size and at other sizes and seeds (45 cases, N <= 300),
/// each with the M of `ROBUSTNESS_M` that do not exceed N.
#[cfg(test)]
pub(crate) fn robustness_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for &shape in Shape::ALL {
        let sizes: &[usize] = match shape {
            // The tiny shape is about N itself: 10, the smallest M fits, and less.
            Shape::Tiny => &[10, 5, 12],
            _ => &[shape.default_rows().min(300), 30, 64],
        };
        for (seed, &rows) in (0_u64..).zip(sizes) {
            cases.push(Case {
                shape,
                rows,
                seed,
                m: ROBUSTNESS_M.into_iter().filter(|&m| m <= rows).collect(),
            });
        }
    }
    cases
}

fn numbered_names(d: usize) -> Vec<String> {
    (1..=d).map(|j| format!("x{j}")).collect()
}

#[cfg(test)]
#[path = "robustness_tests.rs"]
mod robustness;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_data_other_seed_other_data() {
        for &shape in Shape::ALL {
            let n = shape.default_rows();
            let a = generate(shape, n, 7);
            assert_eq!(a, generate(shape, n, 7), "{shape}");
            assert_ne!(a.y, generate(shape, n, 8).y, "{shape}");
        }
    }

    #[test]
    fn sizes_names_and_truth_match() {
        for &shape in Shape::ALL {
            for n in [2, 10, shape.default_rows()] {
                let g = generate(shape, n, 1);
                assert_eq!(g.x.shape(), (n, shape.n_inputs()), "{shape}");
                assert_eq!(g.y.len(), n, "{shape}");
                assert_eq!(g.truth, truth(shape, &g.x), "{shape}");
                assert_eq!(g.input_names.len(), shape.n_inputs(), "{shape}");
                assert!(g.x.iter().chain(g.y.iter()).all(|v| v.is_finite()));
            }
            let data = dataset(shape, shape.default_rows(), 3).unwrap();
            assert_eq!(data.n_rows(), shape.default_rows());
            assert!(data.source.contains(shape.name()));
        }
        assert_eq!(Shape::Tiny.default_rows(), 10);
        assert_eq!(Shape::OneOfEight.n_inputs(), 8);
    }

    #[test]
    fn value_names_are_the_kebab_case_names() {
        for &shape in Shape::ALL {
            let parsed: Shape = crate::options::parse(shape.name(), "--shape").unwrap();
            assert_eq!(parsed, shape);
            assert_eq!(
                serde_json::to_string(&shape).unwrap(),
                format!("\"{}\"", shape.name())
            );
        }
        assert_eq!(Shape::ALL.len(), 16);
    }

    #[test]
    fn noise_is_what_each_shape_says() {
        // Residuals from the truth have the stated std (to sampling error).
        for shape in [Shape::Linear, Shape::NearNoiseFree, Shape::VeryNoisy] {
            let g = generate(shape, 4000, 2);
            let r = &g.y - &g.truth;
            let sd = (r.norm_squared() / r.len() as f64).sqrt();
            let want = shape.noise_std(&[0.0]);
            assert!((sd / want - 1.0).abs() < 0.05, "{shape}: {sd} vs {want}");
        }
        // Linear: y = 2x + noise with x in (0, 1).
        let g = generate(Shape::Linear, 500, 0);
        assert!(g.x.iter().all(|&x| (0.0..1.0).contains(&x)));
        assert_eq!(g.truth, g.x.column(0) * 2.0);
        // Heteroscedastic: the noise at the right end is many times that at the left.
        let g = generate(Shape::Heteroscedastic, 4000, 0);
        let spread = |lo: f64, hi: f64| {
            let r: Vec<f64> = (0..g.n_rows())
                .filter(|&i| (lo..hi).contains(&g.x[(i, 0)]))
                .map(|i| g.y[i] - g.truth[i])
                .collect();
            (r.iter().map(|v| v * v).sum::<f64>() / r.len() as f64).sqrt()
        };
        assert!(spread(8.0, 10.0) > 5.0 * spread(0.0, 2.0));
    }

    #[test]
    fn duplicated_rows_really_appear_two_or_three_times() {
        for (rows, seed) in [(150, 0), (30, 1), (64, 2), (2, 3), (3, 4), (4, 5), (7, 6)] {
            let g = generate(Shape::Duplicated, rows, seed);
            assert_eq!(g.n_rows(), rows);
            let mut pairs: Vec<(u64, u64)> = (0..rows)
                .map(|i| (g.x[(i, 0)].to_bits(), g.y[i].to_bits()))
                .collect();
            pairs.sort_unstable();
            let mut counts = Vec::new();
            for chunk in pairs.chunk_by(|a, b| a == b) {
                counts.push(chunk.len());
            }
            assert!(
                counts.iter().all(|c| (2..=3).contains(c)),
                "rows {rows}: copies {counts:?}"
            );
            // Distinct inputs are distinct draws (no accidental collisions).
            let mut xs: Vec<u64> = pairs.iter().map(|p| p.0).collect();
            xs.dedup();
            assert_eq!(xs.len(), counts.len());
        }
    }

    #[test]
    fn offsets_are_large_and_spreads_small() {
        let g = generate(Shape::Offsets, 1000, 0);
        assert_eq!(g.input_names, ["temperature_K", "pressure_Pa"]);
        let (t, p) = (g.x.column(0), g.x.column(1));
        assert!(t.iter().all(|v| (292.65..293.65).contains(v)));
        assert!(p.iter().all(|v| (101_275.0..101_375.0).contains(v)));
        assert!((t.mean() - 293.15).abs() < 0.05 && t.max() - t.min() > 0.9);
        assert!((p.mean() - 101_325.0).abs() < 5.0 && p.max() - p.min() > 90.0);
        // The raw offsets survive standardisation and come back out.
        let data = g.to_dataset().unwrap();
        assert!((data.transform.x_mean[1] - 101_325.0).abs() < 5.0);
        assert!(data.transform.x_scale[0] < 0.5);
        assert!((data.raw_x() - &g.x).amax() < 1e-6);
    }

    #[test]
    fn integer_inputs_are_counts() {
        let g = generate(Shape::Integer, 500, 0);
        assert!(g
            .x
            .iter()
            .all(|&v| v.fract() == 0.0 && (0.0..=20.0).contains(&v)));
        assert_eq!(g.x.min(), 0.0);
        assert_eq!(g.x.max(), 20.0);
    }

    #[test]
    fn one_of_eight_depends_on_the_third_input_only() {
        let g = generate(Shape::OneOfEight, 50, 0);
        let mut x = g.x.clone();
        for j in [0, 1, 3, 4, 5, 6, 7] {
            x.column_mut(j).fill(0.3);
        }
        assert_eq!(truth(Shape::OneOfEight, &x), g.truth);
    }

    #[test]
    fn chirp_is_smooth_on_the_left_and_wiggly_on_the_right() {
        let grid = |lo: f64| DMatrix::from_fn(1001, 1, |i, _| lo + 0.5 * i as f64 / 1000.0);
        let crossings = |f: DVector<f64>| {
            f.as_slice()
                .windows(2)
                .filter(|w| w[0] * w[1] < 0.0)
                .count()
        };
        let left = crossings(truth(Shape::Chirp, &grid(0.0)));
        let right = crossings(truth(Shape::Chirp, &grid(0.5)));
        assert!(left <= 2 && right >= 5 * left.max(1), "{left} vs {right}");
    }

    #[test]
    fn ridge_is_the_old_synthetic_data() {
        let (x, y) = synthetic(300, RIDGE_DIM, 4);
        let g = generate(Shape::Ridge, 300, 4);
        assert_eq!((g.x, g.y), (x, y));
    }

    #[test]
    fn test_sets_are_independent_draws_in_raw_units() {
        let (train, test) = train_test(Shape::Chirp, 200, 100, 5).unwrap();
        assert_eq!(train, dataset(Shape::Chirp, 200, 5).unwrap());
        assert_eq!(test.n_rows(), 100);
        let first = generate(Shape::Chirp, 100, 5);
        assert_ne!(test.x, first.x);
        assert!(test.x.iter().all(|&v| (0.0..1.0).contains(&v)));
        let (train2, test2) = train_test(Shape::Ridge, 50, 20, 5).unwrap();
        assert_eq!(train2.n_rows(), 50);
        assert_ne!(test2.x.rows(0, 20), train2.raw_x().rows(0, 20));
        assert_eq!(test2, train_test(Shape::Ridge, 50, 20, 5).unwrap().1);
    }

    #[test]
    fn csv_round_trips_through_the_reader() {
        let g = generate(Shape::Offsets, 20, 0);
        let mut text = Vec::new();
        g.write_csv(&mut text).unwrap();
        let data = Dataset::from_reader(text.as_slice(), "synth", None).unwrap();
        assert_eq!(data.input_names, g.input_names);
        assert!((data.raw_x() - &g.x).amax() < 1e-6);
        assert!((data.raw_y() - &g.y).amax() < 1e-9);
    }

    #[test]
    fn robustness_cases_cover_every_shape_within_budget() {
        let cases = robustness_cases();
        assert!(cases.len() >= 30);
        for &shape in Shape::ALL {
            assert!(
                cases.iter().filter(|c| c.shape == shape).count() >= 2,
                "{shape}"
            );
        }
        for case in &cases {
            assert!(case.rows <= 300, "{}", case.name());
            assert!(!case.m.is_empty(), "{}", case.name());
            assert!(case
                .m
                .iter()
                .all(|&m| m <= case.rows && ROBUSTNESS_M.contains(&m)));
            assert_eq!(
                case.m.len(),
                ROBUSTNESS_M.iter().filter(|&&m| m <= case.rows).count()
            );
            assert_eq!(
                case.dataset().unwrap().n_rows(),
                case.rows,
                "{}",
                case.name()
            );
        }
        let mut names: Vec<String> = cases.iter().map(Case::name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), cases.len());
    }
}

named_enum! {
    /// A generated binary classification problem (labels 0 and 1), for the
    /// classifiers' tests and `sgp synth --classes`. The value names are
    /// the kebab-case variant names.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum ClassShape {
        /// Two classes on either side of the line `x1 + 0.5 x2 = 0`, with a
        /// gap of 0.3 around it: separable, error 0 possible.
        Separable = "separable",
        /// scikit-learn's two interleaved half circles with Gaussian noise of
        /// standard deviation 0.25 on each input (overlapping).
        Moons = "moons",
        /// Noisy XOR: four Gaussian blobs of standard deviation 0.5 at
        /// `(±1, ±1)`, the class the XOR of the signs of the blob's centre
        /// (overlapping: Bayes error about 4%).
        Xor = "xor",
        /// Six standard normal inputs, class 1 on the annulus `0.8 < r < 1.6`
        /// of the first two (`r` their distance from 0), the other four
        /// irrelevant, 5% of the labels flipped: Bayes error 5%.
        Ring = "ring",
    }
}

/// Fraction of [`ClassShape::Ring`]'s labels flipped: its Bayes error.
pub(crate) const RING_FLIPPED: f64 = 0.05;

impl ClassShape {
    /// Number of inputs D.
    pub fn n_inputs(self) -> usize {
        match self {
            ClassShape::Ring => 6,
            _ => 2,
        }
    }

    /// Input column names of [`classification`]'s sets: `x1` to `xD`.
    pub fn input_names(self) -> Vec<String> {
        numbered_names(self.n_inputs())
    }
}

/// `rows` rows of `shape`: inputs (N x D) and labels in {0, 1},
/// deterministic in `seed`.
pub fn classification(shape: ClassShape, rows: usize, seed: u64) -> (DMatrix<f64>, DVector<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x0C1A_55E5);
    let mut x = DMatrix::zeros(rows, shape.n_inputs());
    let mut y = DVector::zeros(rows);
    for i in 0..rows {
        let (a, b, label) = match shape {
            ClassShape::Separable => loop {
                let a: f64 = rng.random_range(-2.0..2.0);
                let b: f64 = rng.random_range(-2.0..2.0);
                let s = a + 0.5 * b;
                if s.abs() > 0.15 {
                    break (a, b, if s > 0.0 { 1.0 } else { 0.0 });
                }
            },
            ClassShape::Moons => {
                let t: f64 = rng.random_range(0.0..std::f64::consts::PI);
                let upper = rng.random::<bool>();
                let na: f64 = rng.sample(StandardNormal);
                let nb: f64 = rng.sample(StandardNormal);
                let (a, b) = if upper {
                    (libm::cos(t), libm::sin(t))
                } else {
                    (1.0 - libm::cos(t), 0.5 - libm::sin(t))
                };
                (a + 0.25 * na, b + 0.25 * nb, if upper { 0.0 } else { 1.0 })
            }
            ClassShape::Xor => {
                let ca = if rng.random::<bool>() { 1.0 } else { -1.0 };
                let cb = if rng.random::<bool>() { 1.0 } else { -1.0 };
                let na: f64 = rng.sample(StandardNormal);
                let nb: f64 = rng.sample(StandardNormal);
                let label = if ca == cb { 1.0 } else { 0.0 };
                (ca + 0.5 * na, cb + 0.5 * nb, label)
            }
            ClassShape::Ring => {
                for j in 2..shape.n_inputs() {
                    x[(i, j)] = rng.sample(StandardNormal);
                }
                let a: f64 = rng.sample(StandardNormal);
                let b: f64 = rng.sample(StandardNormal);
                let r = libm::hypot(a, b);
                let inside = r > 0.8 && r < 1.6;
                let flipped = rng.random::<f64>() < RING_FLIPPED;
                (a, b, f64::from(u8::from(inside != flipped)))
            }
        };
        x[(i, 0)] = a;
        x[(i, 1)] = b;
        y[i] = label;
    }
    (x, y)
}

/// [`classification`] as a binary [`Dataset`] (inputs
/// [`ClassShape::input_names`], target `class`, positive class 1).
///
/// # Errors
/// As [`Dataset::from_raw`] and [`Dataset::into_binary`] (e.g. one class).
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn classification_dataset(shape: ClassShape, rows: usize, seed: u64) -> Result<Dataset> {
    let (x, y) = classification(shape, rows, seed);
    let names = shape.input_names();
    let mut data = Dataset::from_raw(x, y, names, "class".into())?;
    data.source = format!("synthetic '{shape:?}' classification ({rows} rows)");
    data.into_binary(None)
}
