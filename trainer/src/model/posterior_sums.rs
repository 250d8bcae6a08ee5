//! The posterior of a sparse model as a sum over rows: the statistic a
//! streaming pass (or a cluster) computes chunk by chunk and merges.
//!
//! With the basis and the hyperparameters fixed, FITC's and VFE's posterior
//! needs the data only through M x M and M-vector sums over rows
//! (whitened: `A = sum V_n V_n^T / gamma_n`, `b = sum V_n y_n / gamma_n`,
//! and the scalars of the objective; docs/src/large-data.md).
//! [`PosteriorSums::merge`] adds two disjoint sets of rows, in any grouping;
//! `ChunkModel` computes one chunk's sums and turns the merged total into
//! the posterior and its objective. Memory is O(M^2) whatever the rows.

use std::f64::consts::PI;

use nalgebra::{DMatrix, DMatrixView, DVector};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::features::InducingFeatures;
use crate::model::inference::Approximation;
use crate::model::kernel::KernelParams;
use crate::numerics::linalg::{
    cholesky, cholesky_jittered, dot, log_det_from_factor, lower_inverse, mat_ref, mul,
    solve_lower_t_vec, solve_lower_vec, symmetrise, JitterPolicy, JitteredCholesky,
};
use crate::{Error, Result};

/// Which objective to evaluate, and its numerical settings.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct FitcConfig {
    /// Jitter added to `Kuu` (relative to `s2`) and its escalation.
    pub jitter: JitterPolicy,
    /// Rows of data per parallel chunk: the default, 512, keeps a chunk's
    /// blocks small enough for the allocator to reuse them.
    pub chunk_rows: usize,
    /// FITC (the default) or VFE.
    pub approximation: Approximation,
}

impl Default for FitcConfig {
    fn default() -> Self {
        Self {
            jitter: JitterPolicy::default(),
            chunk_rows: 512,
            approximation: Approximation::Fitc,
        }
    }
}

/// The posterior of either approximation: `L1 = chol(Kuu + jitter I)`,
/// `L2 = L1 L_A`, `beta = Q^{-1} Kuf Gamma^{-1} y = L1^{-T} A^{-1} b`, with
/// `Q = K + Kuf Gamma^{-1} Kfu` and the approximation's `Gamma`. For VFE
/// (`Gamma = sigma2 I`) this is the DTC predictive of GPflow's
/// `SGPR.predict_f`: the bound's optimal `q(u)` carries no diagonal
/// correction, so neither does its prediction.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct FitcPosterior {
    /// `L1`, lower triangular.
    pub l1: DMatrix<f64>,
    /// `L2 = L1 L_A`, lower triangular, `L2 L2^T = Q`.
    pub l2: DMatrix<f64>,
    /// Weights of the basis functions in the mean.
    pub beta: DVector<f64>,
    /// Absolute jitter in `L1`.
    pub kuu_jitter: f64,
    /// Jitter escalations needed for `Kuu`.
    pub jitter_escalations: u32,
    /// The objective that was used, on the training data: FITC's NLML or
    /// VFE's negative ELBO.
    pub nlml: f64,
}

/// The sums over a set of rows that a sparse posterior needs (module
/// documentation); serialisable, so a worker can ship them. Any grouping
/// of the same chunks gives the same total up to f64 rounding; the same
/// order gives the same bits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PosteriorSums {
    /// Rows summed.
    pub rows: u64,
    /// Number of basis functions M.
    pub m: usize,
    /// `sum_n V_n V_n^T / gamma_n`, M x M, column-major.
    pub a: Vec<f64>,
    /// `sum_n V_n y_n / gamma_n`, length M.
    pub b: Vec<f64>,
    /// `sum_n log gamma_n`.
    pub sum_log_gamma: f64,
    /// `sum_n y_n^2 / gamma_n`.
    pub y_gi_y: f64,
    /// `sum_n lambda_n` (VFE's trace term).
    pub sum_lambda: f64,
    /// The parts (a cluster's partitions, numbered by whoever splits the
    /// rows: [`PosteriorSums::of_part`]) these sums cover, as sorted,
    /// disjoint, half-open ranges; empty where nobody numbered them.
    pub parts: Vec<(u64, u64)>,
}

impl PosteriorSums {
    /// The sums over no rows, for M basis functions.
    pub fn zeros(m: usize) -> Self {
        PosteriorSums {
            rows: 0,
            m,
            a: vec![0.0; m * m],
            b: vec![0.0; m],
            sum_log_gamma: 0.0,
            y_gi_y: 0.0,
            sum_lambda: 0.0,
            parts: Vec::new(),
        }
    }

    /// These sums, labelled as those of part `part` (a partition of the
    /// rows), so that [`PosteriorSums::merge`] refuses it twice and
    /// [`PosteriorSums::check_covers`] names it when it is missing.
    pub fn of_part(mut self, part: u64) -> Self {
        self.parts = vec![(part, part.saturating_add(1))];
        self
    }

    /// Refuses sums that do not cover exactly `rows` rows and, when
    /// `parts` is given, exactly the parts `0..parts` (each once, which
    /// [`PosteriorSums::merge`] has checked): a lost or repeated partition
    /// must not pass as the whole file.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the rows missing or in excess and the
    /// parts missing or out of range.
    pub fn check_covers(&self, rows: u64, parts: Option<u64>) -> Result<()> {
        check_covers(&self.parts, self.rows, (rows, parts))
    }

    /// Adds the sums of another, disjoint set of rows.
    ///
    /// # Errors
    /// [`Error::BadInput`] if the two were computed for different M (or one
    /// is malformed, e.g. deserialised from a damaged message).
    pub fn merge(&mut self, other: &PosteriorSums) -> Result<()> {
        let well_formed = |s: &PosteriorSums| s.a.len() == s.m * s.m && s.b.len() == s.m;
        if other.m != self.m || !well_formed(self) || !well_formed(other) {
            return Err(Error::BadInput(format!(
                "cannot merge posterior sums of {} and {} basis functions",
                self.m, other.m
            )));
        }
        self.parts = union(&self.parts, &other.parts)?;
        self.rows += other.rows;
        for (s, o) in self.a.iter_mut().zip(&other.a) {
            *s += o;
        }
        for (s, o) in self.b.iter_mut().zip(&other.b) {
            *s += o;
        }
        self.sum_log_gamma += other.sum_log_gamma;
        self.y_gi_y += other.y_gi_y;
        self.sum_lambda += other.sum_lambda;
        Ok(())
    }

    /// The sums of the rows whose whitened basis columns are `v` (M x rows),
    /// prior variances `kdiag` and targets `y`. Writes each row's `gamma`
    /// and `V Gamma^{-1}` into `gamma` and `scratch` (M x rows), which the
    /// objective's adjoint pass reuses.
    pub(crate) fn of_whitened(
        v: &DMatrix<f64>,
        kdiag: &[f64],
        y: &[f64],
        noise_var: f64,
        approximation: Approximation,
        gamma: &mut [f64],
        scratch: &mut DMatrix<f64>,
    ) -> PosteriorSums {
        let m = v.nrows();
        let (mut sum_log_gamma, mut y_gi_y, mut sum_lambda) = (0.0, 0.0, 0.0);
        let columns = v.as_slice().chunks_exact(m.max(1));
        let rows = columns
            .zip(scratch.as_mut_slice().chunks_exact_mut(m.max(1)))
            .zip(kdiag.iter().zip(y))
            .zip(gamma.iter_mut());
        for (((vcol, gcol), (kd, yn)), g_out) in rows {
            // Round-off can make ||V_n||^2 exceed kdiag_n by a hair when a
            // pseudo-input sits on a data point; lambda is a variance.
            let lambda = (kd - dot(vcol, vcol)).max(0.0);
            let g = match approximation {
                Approximation::Fitc => lambda + noise_var,
                Approximation::Vfe => noise_var,
            };
            *g_out = g;
            let inv_g = 1.0 / g;
            for (o, v) in gcol.iter_mut().zip(vcol) {
                *o = inv_g * v;
            }
            sum_log_gamma += libm::log(g);
            y_gi_y += yn * yn / g;
            sum_lambda += lambda;
        }
        let a = mul(mat_ref(scratch), mat_ref(v).transpose());
        let b = &*scratch * DVector::from_column_slice(y);
        PosteriorSums {
            rows: y.len() as u64,
            m,
            a: a.as_slice().to_vec(),
            b: b.as_slice().to_vec(),
            sum_log_gamma,
            y_gi_y,
            sum_lambda,
            parts: Vec::new(),
        }
    }

    /// Solves the posterior's M x M system: `L_A = chol(I + A)`, `c =
    /// L_A^{-1} b`, `A^{-1} b`, and the objective (FITC's NLML or VFE's
    /// negative ELBO) of the rows summed.
    pub(crate) fn solve(&self, approximation: Approximation, noise_var: f64) -> Result<Solved> {
        let m = self.m;
        if self.rows == 0 || self.a.len() != m * m || self.b.len() != m {
            return Err(Error::BadInput(format!(
                "posterior sums over {} rows of {m} basis functions cannot give a posterior",
                self.rows
            )));
        }
        let a = DMatrix::from_column_slice(m, m, &self.a) + DMatrix::identity(m, m);
        let b = DVector::from_column_slice(&self.b);
        let la = cholesky(&symmetrise(a))?;
        let c = solve_lower_vec(&la, &b)?;
        let beta_v = solve_lower_t_vec(&la, &c)?;
        let trace = match approximation {
            Approximation::Fitc => 0.0,
            Approximation::Vfe => 0.5 * self.sum_lambda / noise_var,
        };
        let nlml = 0.5 * (self.y_gi_y - c.norm_squared())
            + 0.5 * (self.sum_log_gamma + log_det_from_factor(&la))
            + 0.5 * self.rows as f64 * libm::log(2.0 * PI)
            + trace;
        if !nlml.is_finite() {
            return Err(Error::Numerical(format!(
                "{approximation:?} objective is {nlml}"
            )));
        }
        Ok(Solved { la, beta_v, nlml })
    }
}

/// The posterior's M x M system, solved ([`PosteriorSums::solve`]).
pub(crate) struct Solved {
    /// `chol(I + A)`.
    pub la: DMatrix<f64>,
    /// `(I + A)^{-1} b`.
    pub beta_v: DVector<f64>,
    /// The objective of the rows summed.
    pub nlml: f64,
}

/// A fitted basis and kernel, factorised once, ready to sum chunks of rows
/// ([`Self::sums`]) and to turn the merged sums into the posterior
/// ([`Self::posterior`]).
pub(crate) struct ChunkModel<'a, F: ?Sized> {
    feat: &'a F,
    kern: &'a KernelParams,
    config: FitcConfig,
    chol: JitteredCholesky,
    linv: DMatrix<f64>,
}

impl<'a, F: InducingFeatures + ?Sized> ChunkModel<'a, F> {
    /// Factorises `Kuu` (with `config`'s jitter policy) for `feat` and `kern`.
    ///
    /// # Errors
    /// [`Error::Numerical`] if `Kuu` cannot be factorised with the jitter
    /// the policy allows, or a parameter is not finite.
    pub fn new(feat: &'a F, kern: &'a KernelParams, config: &FitcConfig) -> Result<Self> {
        if !kern.is_finite() || feat.params().iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical("non-finite model parameters".into()));
        }
        let chol = cholesky_jittered(&feat.kuu(kern), kern.signal_var(), &config.jitter)?;
        let linv = lower_inverse(&chol.l)?;
        Ok(ChunkModel {
            feat,
            kern,
            config: *config,
            chol,
            linv,
        })
    }

    /// The sums over the rows `x` (standardised inputs, rows x D) with
    /// targets `y`. Blocks of [`FitcConfig::chunk_rows`] rows run in
    /// parallel and are merged in order, so the result does not depend on
    /// the number of threads.
    ///
    /// # Errors
    /// [`Error::BadInput`] if the shapes disagree.
    pub fn sums(&self, x: DMatrixView<'_, f64>, y: &[f64]) -> Result<PosteriorSums> {
        if x.nrows() != y.len() || x.ncols() != self.feat.input_dim() {
            return Err(Error::BadInput(format!(
                "posterior sums: x is {}x{}, y has {} entries, the basis expects {} inputs",
                x.nrows(),
                x.ncols(),
                y.len(),
                self.feat.input_dim()
            )));
        }
        let m = self.feat.num_inducing();
        let step = self.config.chunk_rows.max(1);
        let starts: Vec<usize> = (0..y.len()).step_by(step).collect();
        let parts: Vec<PosteriorSums> = starts
            .par_iter()
            .map(|&start| {
                let len = step.min(y.len() - start);
                let xc = x.rows(start, len);
                let v = mul(mat_ref(&self.linv), mat_ref(&self.feat.kuf(self.kern, xc)));
                let kd = self.feat.kdiag(self.kern, xc);
                let mut gamma = vec![0.0; len];
                let mut scratch = DMatrix::zeros(m, len);
                PosteriorSums::of_whitened(
                    &v,
                    kd.as_slice(),
                    &y[start..start + len],
                    self.kern.noise_var(),
                    self.config.approximation,
                    &mut gamma,
                    &mut scratch,
                )
            })
            .collect();
        let mut total = PosteriorSums::zeros(m);
        for part in &parts {
            total.merge(part)?;
        }
        Ok(total)
    }

    /// The posterior (runtime factors, weights, objective) of the rows
    /// whose merged sums are `sums`.
    ///
    /// # Errors
    /// [`Error::BadInput`] for sums of another M or of no rows;
    /// [`Error::Numerical`] if the system cannot be factorised.
    pub fn posterior(&self, sums: &PosteriorSums) -> Result<FitcPosterior> {
        if sums.m != self.feat.num_inducing() {
            return Err(Error::BadInput(format!(
                "posterior sums of {} basis functions for a basis of {}",
                sums.m,
                self.feat.num_inducing()
            )));
        }
        let solved = sums.solve(self.config.approximation, self.kern.noise_var())?;
        Ok(FitcPosterior {
            l2: mul(mat_ref(&self.chol.l), mat_ref(&solved.la)),
            beta: solve_lower_t_vec(&self.chol.l, &solved.beta_v)?,
            l1: self.chol.l.clone(),
            kuu_jitter: self.chol.jitter,
            jitter_escalations: self.chol.escalations,
            nlml: solved.nlml,
        })
    }
}

/// Refuses sums of `summed` rows covering the parts `covered` unless they
/// are exactly `rows` rows and, when `parts` is given, exactly the parts
/// `0..parts` ([`PosteriorSums::check_covers`]; every pass's sums share it).
///
/// # Errors
/// [`Error::BadInput`] naming the rows missing or in excess and the parts
/// missing or out of range.
pub(crate) fn check_covers(
    covered: &[(u64, u64)],
    summed: u64,
    (rows, parts): (u64, Option<u64>),
) -> Result<()> {
    if let Some(n) = parts {
        let missing = gaps(covered, n);
        let beyond = covered.last().filter(|&&(_, end)| end > n);
        if !missing.is_empty() || beyond.is_some() {
            let mut why = Vec::new();
            if !missing.is_empty() {
                why.push(format!("parts {} are missing", ranges_text(&missing)));
            }
            if let Some(&(_, end)) = beyond {
                why.push(format!(
                    "parts up to {} are beyond the {n} expected",
                    end - 1
                ));
            }
            return Err(Error::BadInput(format!(
                "the sums do not cover parts 0..{n} exactly: {} (a lost or extra \
                 partition; sum every partition once, numbered 0 to {})",
                why.join("; "),
                n.saturating_sub(1)
            )));
        }
    }
    if summed != rows {
        let (by, what) = if summed < rows {
            (rows - summed, "missing (a lost partition?)")
        } else {
            (summed - rows, "too many (a partition summed twice?)")
        };
        return Err(Error::BadInput(format!(
            "the sums cover {} rows but the data have {rows}: {by} rows {what}; sum every \
             row once",
            summed
        )));
    }
    Ok(())
}

/// The union of two sets of disjoint sorted half-open ranges of parts,
/// merged where they touch.
///
/// # Errors
/// [`Error::BadInput`] naming the parts both hold.
pub(crate) fn union(a: &[(u64, u64)], b: &[(u64, u64)]) -> Result<Vec<(u64, u64)>> {
    let mut all: Vec<(u64, u64)> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(all.len());
    let mut twice = Vec::new();
    for (start, end) in all {
        match out.last_mut() {
            Some(last) if start < last.1 => {
                twice.push((start, end.min(last.1)));
                last.1 = last.1.max(end);
            }
            Some(last) if start == last.1 => last.1 = end,
            _ => out.push((start, end)),
        }
    }
    if twice.is_empty() {
        Ok(out)
    } else {
        Err(Error::BadInput(format!(
            "parts {} are in both sums: a partition summed twice (a retried task counted \
             again?); sum every partition once",
            ranges_text(&twice)
        )))
    }
}

/// The parts of `0..n` that `covered` (sorted, disjoint) leaves out.
fn gaps(covered: &[(u64, u64)], n: u64) -> Vec<(u64, u64)> {
    let mut gaps = Vec::new();
    let mut next = 0;
    for &(start, end) in covered {
        if start > next {
            gaps.push((next, start.min(n)));
        }
        next = next.max(end);
    }
    if next < n {
        gaps.push((next, n));
    }
    gaps.retain(|&(s, e)| s < e);
    gaps
}

/// `[(3, 4), (7, 10)]` as "3, 7-9", at most ten ranges then a count.
fn ranges_text(ranges: &[(u64, u64)]) -> String {
    let mut text: Vec<String> = ranges
        .iter()
        .take(10)
        .map(|&(s, e)| {
            if e == s + 1 {
                s.to_string()
            } else {
                format!("{s}-{}", e - 1)
            }
        })
        .collect();
    if ranges.len() > 10 {
        text.push(format!("and {} more ranges", ranges.len() - 10));
    }
    text.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::features::PseudoInputs;
    use crate::model::inference::fitc::fitc_posterior;
    use crate::model::inference::test_util::problem;

    /// Two workers, one half each: the merged sums are the whole data's.
    #[test]
    fn two_halves_merged_are_the_whole() {
        let x = DMatrix::from_fn(40, 1, |i, _| i as f64 / 10.0);
        let y = x.map(libm::sin).column(0).into_owned();
        let z = PseudoInputs::new(DMatrix::from_column_slice(3, 1, &[0.5, 2.0, 3.5])).unwrap();
        let kern = KernelParams::new(&[1.0], 1.0, 0.01).unwrap();
        let model = ChunkModel::new(&z, &kern, &FitcConfig::default()).unwrap();
        let mut sums = model.sums(x.rows(0, 25), &y.as_slice()[..25]).unwrap();
        sums.merge(&model.sums(x.rows(25, 15), &y.as_slice()[25..]).unwrap())
            .unwrap();
        assert_eq!(sums.rows, 40);
        let whole = model.sums(x.rows(0, 40), y.as_slice()).unwrap();
        let (a, b) = (
            model.posterior(&sums).unwrap(),
            model.posterior(&whole).unwrap(),
        );
        assert!(a.nlml.is_finite());
        assert!(
            (a.nlml - b.nlml).abs() < 1e-9 * b.nlml.abs().max(1.0),
            "{} {}",
            a.nlml,
            b.nlml
        );
    }

    /// Issue 50, item 6: a lost or repeated partition is refused, named.
    #[test]
    fn a_lost_or_repeated_part_is_refused_and_named() {
        let (x, y, z, kern) = setup();
        let model = ChunkModel::new(&z, &kern, &FitcConfig::default()).unwrap();
        let part = |k: usize| {
            let rows = 300 / 6;
            let ys = &y.as_slice()[k * rows..(k + 1) * rows];
            model
                .sums(x.rows(k * rows, rows), ys)
                .unwrap()
                .of_part(k as u64)
        };
        let mut all = part(0);
        for k in 1..6 {
            all.merge(&part(k)).unwrap();
        }
        all.check_covers(300, Some(6)).unwrap();
        assert_eq!(all.parts, vec![(0, 6)]);

        // Part 3 lost: the rows and the part are named.
        let mut lost = part(0);
        for k in [1, 2, 4, 5] {
            lost.merge(&part(k)).unwrap();
        }
        let e = lost.check_covers(300, None).unwrap_err().to_string();
        assert!(
            e.contains("250 rows") && e.contains("50 rows missing"),
            "{e}"
        );
        let e = lost.check_covers(300, Some(6)).unwrap_err().to_string();
        assert!(e.contains("parts 3 are missing"), "{e}");

        // Part 2 twice (a retried task): refused at the merge, named.
        let mut twice = part(1);
        twice.merge(&part(2)).unwrap();
        let e = twice.merge(&part(2)).unwrap_err().to_string();
        assert!(e.contains("parts 2 are in both sums"), "{e}");
        // Unnumbered sums summed twice are caught by their rows.
        let mut doubled = model.sums(x.rows(0, 300), y.as_slice()).unwrap();
        doubled
            .merge(&model.sums(x.rows(0, 50), &y.as_slice()[..50]).unwrap())
            .unwrap();
        let e = doubled.check_covers(300, None).unwrap_err().to_string();
        assert!(e.contains("50 rows too many"), "{e}");
        // A part beyond those expected.
        let e = part(5)
            .of_part(6)
            .check_covers(50, Some(6))
            .unwrap_err()
            .to_string();
        assert!(e.contains("beyond the 6 expected"), "{e}");
    }

    fn setup() -> (DMatrix<f64>, DVector<f64>, PseudoInputs, KernelParams) {
        let (x, y) = problem(3, 300, 2);
        let z = PseudoInputs::new(x.rows(0, 12).into_owned()).unwrap();
        let kern = KernelParams::new(&[0.8, 1.3], 1.2, 0.05).unwrap();
        (x, y, z, kern)
    }

    /// Summing in chunks, merging in another grouping, gives the posterior
    /// of the whole data set in one piece (both objectives).
    #[test]
    fn merged_chunks_give_the_whole_data_posterior() {
        let (x, y, z, kern) = setup();
        for approximation in [Approximation::Fitc, Approximation::Vfe] {
            let config = FitcConfig {
                approximation,
                chunk_rows: 7,
                ..FitcConfig::default()
            };
            let whole = fitc_posterior(&z, &kern, &x, &y, &config).unwrap();
            let model = ChunkModel::new(&z, &kern, &config).unwrap();
            let mut sums = PosteriorSums::zeros(12);
            for start in (0..300).step_by(55) {
                let len = 55.min(300 - start);
                let part = model
                    .sums(x.rows(start, len), &y.as_slice()[start..start + len])
                    .unwrap();
                sums.merge(&part).unwrap();
            }
            assert_eq!(sums.rows, 300);
            let streamed = model.posterior(&sums).unwrap();
            assert!((streamed.nlml - whole.nlml).abs() < 1e-9 * whole.nlml.abs());
            assert!((&streamed.beta - &whole.beta).amax() < 1e-8 * whole.beta.amax());
            assert!((&streamed.l2 - &whole.l2).amax() < 1e-9 * whole.l2.amax());
            assert_eq!(streamed.l1, whole.l1);
        }
    }

    #[test]
    fn sums_survive_serialisation_and_refuse_a_foreign_merge() {
        let (x, y, z, kern) = setup();
        let model = ChunkModel::new(&z, &kern, &FitcConfig::default()).unwrap();
        let sums = model.sums(x.rows(0, 40), &y.as_slice()[..40]).unwrap();
        let text = serde_json::to_string(&sums).unwrap();
        let back: PosteriorSums = serde_json::from_str(&text).unwrap();
        // JSON text rounds the last bit of some values.
        let near = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .all(|(p, q)| (p - q).abs() <= 1e-14 * q.abs())
        };
        assert!(near(&back.a, &sums.a) && near(&back.b, &sums.b));
        assert_eq!((back.rows, back.m), (sums.rows, sums.m));
        let mut other = PosteriorSums::zeros(5);
        let err = other.merge(&sums).unwrap_err().to_string();
        assert!(err.contains("5 and 12 basis functions"), "{err}");
        let mut damaged = sums.clone();
        damaged.a.pop();
        assert!(damaged.clone().merge(&sums).is_err());
        assert!(model.posterior(&damaged).is_err());
        assert!(model.posterior(&PosteriorSums::zeros(12)).is_err());
        assert!(model.sums(x.rows(0, 4), &y.as_slice()[..3]).is_err());
    }
}
