//! The first pass over a training file: every cell validated, the
//! standardisation computed (mean and sample standard deviation by
//! Welford's update, which stays accurate over 10^8 rows where the sum of
//! squares would cancel), and a uniform random sample of rows kept
//! (reservoir sampling, seeded), all in O(sample + columns) memory.

use nalgebra::{DMatrix, DVector};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{ReadProgress, TableFile};
use crate::data::Standardisation;
use crate::{Error, Result};

/// What the first pass learned about a file.
#[derive(Clone, Debug)]
pub struct Scan {
    /// Data rows.
    pub rows: u64,
    /// Standardisation of every row (as [`crate::data::Dataset`] computes
    /// it: mean, sample standard deviation, range; scale 1 for a constant
    /// input).
    pub transform: Standardisation,
    /// Indices of the constant inputs.
    pub constant_inputs: Vec<usize>,
    /// The sampled rows' inputs in raw units, in a seeded random order
    /// (all rows when the file has no more than the sample size).
    pub sample_x: DMatrix<f64>,
    /// The sampled rows' targets in raw units.
    pub sample_y: DVector<f64>,
    /// Up to three distinct target values (three means "more than two").
    pub target_values: Vec<f64>,
}

/// Running mean, sum of squared deviations and range of one column.
#[derive(Clone, Copy)]
struct Moments {
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl Moments {
    fn new() -> Self {
        Moments {
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    fn add(&mut self, v: f64, n: f64) {
        let delta = v - self.mean;
        self.mean += delta / n;
        self.m2 += delta * (v - self.mean);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Mean and sample standard deviation; `None` for a constant column.
    fn scale(&self, n: f64, source: &str, role: &str, name: &str) -> Result<Option<(f64, f64)>> {
        if self.min == self.max {
            return Ok(None);
        }
        let std = (self.m2 / (n - 1.0)).sqrt();
        crate::data::unstandardisable(source, role, name, (self.min, self.max), self.mean, std)?;
        Ok(Some((self.mean, std)))
    }
}

/// Reads every row of `table` in chunks of `chunk_rows`, validating it,
/// and keeps a uniform random sample of `sample_rows` rows (seeded:
/// the same file and seed give the same sample). `progress` is called
/// after each chunk.
///
/// # Errors
/// Every error of [`TableFile::for_each_chunk`]; [`Error::BadInput`] for
/// fewer than two rows, a constant target, only constant inputs, or values
/// too large to standardise.
pub(crate) fn scan(
    table: &TableFile,
    sample_rows: usize,
    seed: u64,
    chunk_rows: usize,
    progress: &mut dyn FnMut(ReadProgress),
) -> Result<Scan> {
    let d = table.input_names.len();
    let mut moments = vec![Moments::new(); d + 1];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut sample: Vec<Vec<f64>> = Vec::new();
    let mut target_values: Vec<f64> = Vec::new();
    let mut seen = 0u64;
    let rows = table.for_each_chunk(chunk_rows, &mut |chunk, at| {
        let mut row = vec![0.0; d + 1];
        for i in 0..chunk.y.len() {
            for (j, cell) in row.iter_mut().take(d).enumerate() {
                *cell = chunk.x[(i, j)];
            }
            row[d] = chunk.y[i];
            seen += 1;
            let n = seen as f64;
            for (m, &v) in moments.iter_mut().zip(&row) {
                m.add(v, n);
            }
            if target_values.len() < 3 && !target_values.contains(&row[d]) {
                target_values.push(row[d]);
            }
            // Reservoir sampling (Vitter's algorithm R).
            if sample.len() < sample_rows {
                sample.push(row.clone());
            } else {
                let j = rng.random_range(0..seen);
                if let Some(slot) = usize::try_from(j).ok().and_then(|j| sample.get_mut(j)) {
                    slot.copy_from_slice(&row);
                }
            }
        }
        progress(at);
        Ok(())
    })?;
    let source = &table.source;
    if rows < 2 {
        return Err(Error::BadInput(format!(
            "{source}: {rows} data row(s); at least 2 are needed to standardise the data"
        )));
    }
    let n = rows as f64;
    let (mut x_mean, mut x_scale, mut constant_inputs) = (Vec::new(), Vec::new(), Vec::new());
    for (j, (m, name)) in moments.iter().zip(&table.input_names).enumerate() {
        let (mean, scale) = match m.scale(n, source, "input", name)? {
            Some(ms) => ms,
            None => {
                constant_inputs.push(j);
                (m.min, 1.0)
            }
        };
        x_mean.push(mean);
        x_scale.push(scale);
    }
    if constant_inputs.len() == d {
        return Err(Error::BadInput(format!(
            "{source}: every input column ({}) is constant: there is nothing to learn from",
            table.input_names.join(", ")
        )));
    }
    let target = moments[d];
    let Some((y_mean, y_scale)) = target.scale(n, source, "target", &table.target_name)? else {
        return Err(Error::BadInput(format!(
            "{source}: target column '{}' is constant (every row is {}): there is nothing to learn",
            table.target_name, target.min
        )));
    };
    // The reservoir holds rows partly in file order and files are often
    // sorted (a log by time): shuffled, every prefix is a random sample too.
    sample.shuffle(&mut rng);
    let sample_x = DMatrix::from_fn(sample.len(), d, |i, j| sample[i][j]);
    let sample_y = DVector::from_fn(sample.len(), |i, _| sample[i][d]);
    Ok(Scan {
        rows,
        transform: Standardisation {
            x_mean,
            x_scale,
            x_min: moments.iter().take(d).map(|m| m.min).collect(),
            x_max: moments.iter().take(d).map(|m| m.max).collect(),
            y_mean,
            y_scale,
        },
        constant_inputs,
        sample_x,
        sample_y,
        target_values,
    })
}
