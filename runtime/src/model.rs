//! The evaluator: one procedure for every model kind (MATH.md, "One runtime
//! form for every model").

use crate::error::Error;
use crate::format::{
    open, Field, Kernel, Link, ModelKind, Observation, Reader, Shape, VarianceForm, KERNEL_VERSION,
    LEARNING_VERSION,
};
use crate::math;
use crate::whitened;

mod fixed;
mod gradient;
mod inputs;
mod learning;
mod outputs;
mod uncertain;

pub use fixed::{
    ram_bytes as fixed_ram_bytes, supports as fixed_point_supports, FixedError, FixedModel,
};
pub use gradient::{PredictionWithGradient, ProbabilityWithGradient};
pub use inputs::{Name, NAME_CAPACITY};
pub use learning::{Innovation, UpdateSettings, NOISE_CEILING, NOISE_FLOOR};
use learning::{Learns, Origin, Spans};
use outputs::Output;
pub use outputs::{Classification, Outputs};
pub use uncertain::{Uncertain, UncertainDerivatives, UncertainPrediction};

/// A predictive distribution.
///
/// For regression models, [`Model::predict`] gives the mean and variance of
/// the target `y` in raw units, noise included. For probit models it gives
/// the latent function `f + b` (see [`Model::probability`]).
///
/// ```
/// let p = sgp_runtime::Prediction { mean: 1.0, variance: 0.25 };
/// assert_eq!(p.std_dev(), 0.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Prediction {
    /// Predictive mean.
    pub mean: f32,
    /// Predictive variance: never negative, never NaN.
    pub variance: f32,
}

impl Prediction {
    /// Standard deviation, `sqrt(variance)`.
    ///
    /// ```
    /// let p = sgp_runtime::Prediction { mean: 0.0, variance: 4.0 };
    /// assert_eq!(p.std_dev(), 2.0);
    /// ```
    pub fn std_dev(&self) -> f32 {
        libm::sqrtf(self.variance)
    }
}

/// A model loaded into fixed-capacity storage: at most `M` basis functions
/// living in at most `G` dimensions, fed at most `D` raw inputs, with at
/// most `P` outputs (or class latents) on that basis; `P` defaults to one.
///
/// Loading copies and checks every number once; predictions then do no
/// allocation, no bounds-checked indexing that could panic, and the same
/// amount of work whatever the input values. A `Model` is immutable and
/// `Sync`, so one instance can serve several tasks.
///
/// RAM: `4 (P (M^2 + 3M + 11) + M (2G + 1) + G D + 4D + 12) + 32 (D + P)`
/// bytes plus a few words (see [`ram_bytes`], [`ram_bytes_with_outputs`]);
/// each output's two triangular factors share one `M x M` array, the
/// column names take [`NAME_CAPACITY`] + 1 bytes each.
///
/// ```
/// use sgp_runtime::Model;
/// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
/// let model = Model::<16, 2, 2>::from_bytes(blob)?;
/// let p = model.predict(&[0.5, -1.0])?;
/// assert!(p.variance > 0.0);
/// # Ok::<(), sgp_runtime::Error>(())
/// ```
#[derive(Debug, Clone)]
#[repr(C)] // the hot arrays first, where load offsets need no address arithmetic
pub struct Model<const M: usize, const G: usize, const D: usize, const P: usize = 1> {
    /// `(s_ig c_ig, s_ig)` side by side, `s_ig = sqrt(w_ig / 2)` in the
    /// exp's fixed-point units (see `scale_own_widths`): one stream for the
    /// hottest loop. With shared widths, `(s_g c_ig, 1)` instead, `s_g`
    /// folded into the features (see `fold_shared_widths`). Every row is
    /// full length (zeros past `g`), so that loop runs over the constant
    /// `G` and unrolls; a zero width adds nothing.
    basis_params: [[[f32; 2]; G]; M],
    /// `a_i`: the amplitudes (read by VSGP's basis loop only).
    amplitudes: [f32; M],
    /// `math::scaled_exp2_poly` of the amplitude shared by every basis
    /// function (every kind but VSGP, whose basis loop reads `a_i`).
    exp_poly: [f32; math::EXP2_TERMS],
    /// Weights, factors and scalars of each output; the first is the one
    /// the single-output calls evaluate.
    outputs: [Output<M>; P],
    x_mean: [f32; D],
    /// `1 / x_scale`, times `s_g` with shared widths and no projection.
    x_inv_scale: [f32; D],
    /// The projection, row `g` times `s_g` with shared widths.
    projection: [[f32; D]; G],
    /// Training-input range (raw units); meaningful only when `ranged`.
    x_min: [f32; D],
    x_max: [f32; D],
    /// What [`Model::update`] does with an observation, once set; all zero
    /// bits (a forgetting factor of 0, out of range) until then, as an
    /// empty model must be, or the compiler keeps a flash image of it to
    /// copy (an `Option` would take a word more).
    settings: UpdateSettings,
    /// `settings`' forgetting factor to the power `min(m, 256)` (what the
    /// covariance form forgets a coordinate by), kept with them so that an
    /// update does not recompute it; 0 until they are set.
    forget_power: f32,
    /// The loaded blob, for [`Model::write_blob`] (an updatable model).
    origin: Origin,
    shape: Shape,
    m: usize,
    g: usize,
    input_names: [Name; D],
    ranged: bool,
    /// Beside `ranged`, in the padding after the names (whose bytes come
    /// in multiples of four), so it costs no RAM.
    variance: VarianceForm,
    /// Outputs in the loaded blob, `1..=P` (0 when empty); in the same
    /// padding.
    p: u16,
    /// How an updatable model (format version 7) learns, or not.
    learning: Learns,
    /// The whitened coordinate the covariance form forgets next
    /// (`whitened::forget_coordinate`), cycling over `0..min(m, 256)`; in
    /// the same padding.
    forget_next: u8,
    /// How many rows in a row the gate has refused or let through
    /// ([`UpdateSettings::gate_run`]), saturating; in the same padding.
    gated: u8,
    /// The basis's covariance function (format version 7); in the same
    /// padding.
    kernel: Kernel,
}

/// What [`Model::load`] publishes once a blob decoded without error.
struct Decoded {
    shape: Shape,
    /// Whether a training-input range was read.
    ranged: bool,
    variance: VarianceForm,
    /// The number of outputs.
    outputs: u16,
    learning: Option<Observation>,
    origin: Origin,
    kernel: Kernel,
}

/// Bytes of RAM a `Model<M, G, D>` occupies on a 32-bit target, for sizing
/// capacities before building firmware (and for `sgp sweep`, which cannot
/// name a `Model` type for a runtime M). Exactly `size_of` there: checked
/// at compile time on 32-bit targets, and on the host against its own
/// layout.
///
/// ```
/// use sgp_runtime::{ram_bytes, Model};
/// assert!(ram_bytes(32, 4, 4) >= core::mem::size_of::<Model<32, 4, 4>>() - 24);
/// ```
pub const fn ram_bytes(m: usize, g: usize, d: usize) -> usize {
    ram_bytes_with_outputs(m, g, d, 1)
}

/// [`ram_bytes`] of a `Model<M, G, D, P>` with room for `p` outputs.
///
/// ```
/// use sgp_runtime::{ram_bytes, ram_bytes_with_outputs};
/// // A second output costs its weights, factors and name, not a basis.
/// let extra = ram_bytes_with_outputs(32, 4, 4, 2) - ram_bytes(32, 4, 4);
/// assert_eq!(extra, 4 * (32 * 32 + 3 * 32 + 11) + 32);
/// ```
pub const fn ram_bytes_with_outputs(m: usize, g: usize, d: usize, p: usize) -> usize {
    // Each output's numbers, name, shared-variance ratio and learned spans.
    let output = 4 * (m * m + 3 * m + 11) + NAME_CAPACITY + 1;
    // The basis, the exp polynomial, the scaling, the range, the update settings (four words)
    // with their forgetting's power (one) and the origin (two).
    let numbers = m * (2 * g + 1) + math::EXP2_TERMS + g * d + 4 * d + 7;
    let names = (NAME_CAPACITY + 1) * d;
    // Shape (11 bytes, padded to 12), two usize sizes, the `ranged` flag,
    // the variance form, the output count, the learning flag, the kernel
    // and the coordinate forgotten next (two words with the names'
    // padding).
    p * output + 4 * numbers + 12 + 2 * 4 + names + 8
}

// On 32-bit targets (the devices) the formula is the layout, exactly.
#[cfg(target_pointer_width = "32")]
const _: () = {
    use core::mem::size_of;
    assert!(size_of::<Model<1, 1, 1>>() == ram_bytes(1, 1, 1));
    assert!(size_of::<Model<7, 3, 5>>() == ram_bytes(7, 3, 5));
    assert!(size_of::<Model<32, 4, 4>>() == ram_bytes(32, 4, 4));
    assert!(size_of::<Model<32, 4, 16>>() == ram_bytes(32, 4, 16));
    assert!(size_of::<Model<33, 16, 16>>() == ram_bytes(33, 16, 16));
    assert!(size_of::<Model<32, 4, 4, 3>>() == ram_bytes_with_outputs(32, 4, 4, 3));
};

/// The shape of an empty model. A constant of its own: taking
/// `Self::EMPTY.shape` made the compiler keep a flash image of the whole
/// (all-zero) model per capacity, 27 KB in the firmware example.
const EMPTY_SHAPE: Shape = Shape {
    kind: ModelKind::Exact,
    link: Link::Identity,
    input_dim: 0,
    feature_dim: 0,
    n_basis: 0,
    projected: false,
    per_basis: false,
    two_factors: false,
};

/// The empty model, as [`Model::new`].
///
/// ```
/// let model: sgp_runtime::Model<4, 1, 1> = Default::default();
/// assert!(model.mean(&[0.0]).is_err());
/// ```
impl<const M: usize, const G: usize, const D: usize, const P: usize> Default for Model<M, G, D, P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Model<M, G, D, P> {
    const EMPTY: Self = Model {
        shape: EMPTY_SHAPE,
        variance: VarianceForm::Solves,
        m: 0,
        g: 0,
        p: 0,
        x_mean: [0.0; D],
        x_inv_scale: [0.0; D],
        projection: [[0.0; D]; G],
        basis_params: [[[0.0; 2]; G]; M],
        amplitudes: [0.0; M],
        exp_poly: [0.0; math::EXP2_TERMS],
        outputs: [const { Output::EMPTY }; P],
        x_min: [0.0; D],
        x_max: [0.0; D],
        input_names: [const { Name::new() }; D],
        ranged: false,
        settings: UpdateSettings::UNSET,
        forget_power: 0.0,
        origin: Origin {
            len: 0,
            fingerprint: 0,
        },
        learning: Learns::Not,
        forget_next: 0,
        gated: 0,
        kernel: Kernel::SquaredExponential,
    };

    /// An empty model (every prediction fails with [`Error::InputLength`])
    /// to [`Model::load`] a blob into, e.g. in a `static` so that a large
    /// model never sits on the stack.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let mut model = sgp_runtime::Model::<16, 2, 2>::new();
    /// assert!(model.predict(&[0.0, 0.0]).is_err());
    /// model.load(blob)?;
    /// assert!(model.predict(&[0.0, 0.0]).is_ok());
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub const fn new() -> Self {
        Self::EMPTY
    }

    /// Loads and checks a blob. The bytes are untrusted: every malformed
    /// blob gives an [`Error`], never a panic.
    ///
    /// ```
    /// use sgp_runtime::{Error, Model};
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// assert!(Model::<16, 2, 2>::from_bytes(blob).is_ok());
    /// assert!(matches!(
    ///     Model::<16, 2, 2>::from_bytes(&blob[..blob.len() - 1]),
    ///     Err(Error::Truncated { .. })
    /// ));
    /// assert!(matches!(
    ///     Model::<2, 2, 2>::from_bytes(blob),
    ///     Err(Error::CapacityExceeded { .. })
    /// ));
    /// ```
    ///
    /// # Errors
    /// Any variant describing a malformed blob or a capacity too small.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let mut model = Self::EMPTY;
        model.load(bytes)?;
        Ok(model)
    }

    /// Loads a blob into this model in place (no second copy of the model on
    /// the stack, unlike [`Model::from_bytes`]). On error the model is left
    /// empty: every prediction then fails with [`Error::InputLength`].
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let mut model = sgp_runtime::Model::<16, 2, 2>::new();
    /// model.load(blob)?;
    /// assert!(model.load(&blob[..10]).is_err());
    /// assert!(model.predict(&[0.0, 0.0]).is_err());
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::from_bytes`].
    pub fn load(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.shape = EMPTY_SHAPE;
        self.m = 0;
        self.g = 0;
        self.p = 0;
        self.ranged = false;
        self.learning = Learns::Not;
        self.kernel = Kernel::SquaredExponential;
        self.forget_next = 0;
        self.gated = 0;
        let decoded = self.decode(bytes)?;
        let shape = decoded.shape;
        self.shape = shape;
        self.ranged = decoded.ranged;
        // The covariance form is the whitened one but for the variance's
        // sum, its slopes and the update: `learning` says which.
        let covariance = decoded.variance == VarianceForm::Covariance;
        self.variance = if covariance {
            VarianceForm::Whitened
        } else {
            decoded.variance
        };
        self.m = usize::from(shape.n_basis);
        self.forget_power = learning::forget_power(self.settings.forgetting, self.m);
        self.g = usize::from(shape.feature_dim);
        self.p = decoded.outputs;
        self.learning = Learns::of(decoded.learning, covariance);
        self.origin = decoded.origin;
        self.kernel = decoded.kernel;
        Ok(())
    }

    /// Decodes every number into place; the caller publishes the shape (and
    /// whether an input range was read, the variance form and the number of
    /// outputs) only on success, so a failed load leaves an empty model.
    fn decode(&mut self, bytes: &[u8]) -> Result<Decoded, Error> {
        let (version, body) = open(bytes)?;
        let mut reader = Reader::new(body);
        let shape: Shape = reader.value()?;
        shape.validate()?;
        shape.fits(M, G, D)?;
        let model = self;
        let first = model.outputs.first_mut().ok_or(Error::CapacityExceeded {
            dimension: crate::Dimension::Output,
            required: 1,
            capacity: P,
        })?;
        // NonZero: `usize / NonZeroUsize` cannot panic, so the loader keeps
        // no division-by-zero path (validate() already rejected 0).
        let g =
            core::num::NonZeroUsize::new(usize::from(shape.feature_dim)).ok_or(Error::Malformed)?;
        let d =
            core::num::NonZeroUsize::new(usize::from(shape.input_dim)).ok_or(Error::Malformed)?;

        first.name = inputs::read_names(&mut reader, &mut model.input_names, d.get())?;

        reader.numbers(&shape, Field::XMean, |i, v| set(&mut model.x_mean, i, v))?;
        reader.numbers(&shape, Field::XScale, |i, v| {
            set(&mut model.x_inv_scale, i, 1.0 / v)
        })?;
        reader.numbers(&shape, Field::Projection, |i, v| {
            set_2d(&mut model.projection, i / d, i % d, v)
        })?;
        // A previous, larger model may have left numbers past `g`.
        for row in model.basis_params.iter_mut() {
            *row = [[0.0; 2]; G];
        }
        reader.numbers(&shape, Field::Centres, |i, v| {
            set_param(&mut model.basis_params, i / g, i % g, 0, v)
        })?;
        let per_basis = shape.per_basis;
        reader.numbers(&shape, Field::Widths, |i, v| {
            if per_basis {
                set_param(&mut model.basis_params, i / g, i % g, 1, 0.5 * v)
            } else {
                (0..M).try_for_each(|row| set_param(&mut model.basis_params, row, i, 1, 0.5 * v))
            }
        })?;
        if per_basis {
            model.scale_own_widths();
        } else {
            model.fold_shared_widths(g.get(), shape.projected);
        }
        reader.numbers(&shape, Field::Amplitudes, |i, v| {
            if per_basis {
                set(&mut model.amplitudes, i, v)
            } else {
                model.amplitudes = [v; M];
                Ok(())
            }
        })?;
        let amplitude = model.amplitudes.first().copied().unwrap_or(0.0);
        model.exp_poly = math::scaled_exp2_poly(amplitude);
        let first = model.outputs.first_mut().ok_or(Error::Malformed)?;
        first.read_numbers(&mut reader, &shape, None)?;
        if version >= 2 {
            // Host tools map labels with it; the device only checks it.
            reader.scalar(Field::PositiveClass)?;
        }
        let ranged = version >= 3
            && inputs::read_range(&mut reader, d.get(), &mut model.x_min, &mut model.x_max)?;
        let variance = if version >= 4 {
            reader.value::<VarianceForm>()?.check(&shape, version)?
        } else {
            VarianceForm::Solves
        };
        let p = if version >= 5 {
            outputs::read_outputs(&mut reader, &shape, &mut model.outputs, version)?
        } else {
            1
        };
        let learning = if version >= LEARNING_VERSION {
            learning::read_block(&mut reader, &shape, variance, &mut model.outputs, p)?
        } else {
            None
        };
        let kernel = if version >= KERNEL_VERSION {
            Kernel::from_index(reader.value()?)?
        } else {
            Kernel::SquaredExponential
        };
        reader.finish()?;
        if let Some(rate) = kernel.rate() {
            model.rescale_for_matern(&shape, rate);
        }
        let m = usize::from(shape.n_basis);
        if variance != VarianceForm::Product {
            for output in model.outputs.iter_mut().take(p) {
                output.invert_diagonals(m, variance == VarianceForm::Solves);
            }
        }
        if variance.learns() {
            // The mean is z . a (see `latent`): beta, which an update
            // would have to solve for, is written only with the blob.
            for output in model.outputs.iter_mut() {
                output.beta = [0.0; M];
            }
        }
        let origin = if learning.is_some() {
            let mut spans = [Spans::default(); P];
            for (span, output) in spans.iter_mut().zip(&model.outputs).take(p) {
                *span = output.spans;
            }
            Origin {
                len: learning::offset(bytes.len())?,
                fingerprint: learning::fingerprint(bytes, spans.get(..p).unwrap_or(&[]), m),
            }
        } else {
            Origin::default()
        };
        Ok(Decoded {
            shape,
            ranged,
            variance,
            outputs: u16::try_from(p).map_err(|_| Error::Malformed)?,
            learning,
            origin,
            kernel,
        })
    }

    /// A Matérn basis takes the distance's square root, the exponent
    /// `sqrt(2 nu) r` in the exp's fixed-point units: the squared-exponential
    /// scaling (`r^2 / 2` in those units) times `2 nu FIXED_PER_NAT`, by
    /// scaling the features (or the projection) and every scaled centre
    /// (and per-basis scale) once more at load.
    fn rescale_for_matern(&mut self, shape: &Shape, rate: f32) {
        let factor = rate * libm::sqrtf(2.0 * math::FIXED_PER_NAT);
        let (g, per_basis) = (usize::from(shape.feature_dim), shape.per_basis);
        let limit = math::MATERN_FEATURE_LIMIT;
        for row in self.basis_params.iter_mut() {
            for pair in row.iter_mut().take(g) {
                pair[0] = scaled_centre(pair[0], factor).clamp(-limit, limit);
                if per_basis {
                    pair[1] *= factor;
                }
            }
        }
        if per_basis {
            return;
        }
        if shape.projected {
            for v in self.projection.iter_mut().take(g).flatten() {
                *v *= factor;
            }
        } else {
            for v in self.x_inv_scale.iter_mut().take(g) {
                *v *= factor;
            }
        }
    }

    /// With widths shared by every basis function, `h_g (z_g - c_ig)^2 =
    /// (s_g z_g - s_g c_ig)^2` for `s_g = sqrt(h_g)`: `s_g` goes into the
    /// standardisation (or the projection's row `g`) and the centres, the
    /// stored scales become 1, and the hot loop drops a load and a
    /// multiply per basis function and dimension ([`math::unit_distance`]).
    /// `s_g` carries the square root of the exp's fixed-point units too
    /// ([`math::FIXED_PER_NAT`]), so the distance comes out in them. The
    /// gradient needs no change: its chain rule runs through the same
    /// folded scales.
    fn fold_shared_widths(&mut self, g: usize, projected: bool) {
        for col in 0..g {
            let Some(&[_, half_width]) = self.basis_params.first().and_then(|row| row.get(col))
            else {
                return;
            };
            let scale = fixed_point_scale(half_width);
            for pair in self
                .basis_params
                .iter_mut()
                .filter_map(|row| row.get_mut(col))
            {
                *pair = [scaled_centre(pair[0], scale), 1.0];
            }
            let folded = if projected {
                self.projection.get_mut(col).map(|row| row.as_mut_slice())
            } else {
                self.x_inv_scale.get_mut(col..=col)
            };
            for v in folded.into_iter().flatten() {
                *v *= scale;
            }
        }
    }

    /// Widths of each basis function's own (VSGP): the pair `(c, h)`
    /// becomes `(s c, s)`, `s = sqrt(h)` in the exp's fixed-point units,
    /// for [`math::scaled_distance`].
    fn scale_own_widths(&mut self) {
        for pair in self.basis_params.iter_mut().flatten() {
            let scale = fixed_point_scale(pair[1]);
            *pair = [scaled_centre(pair[0], scale), scale];
        }
    }

    /// Sizes, kind and link of the loaded model.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.shape().n_basis, 3);
    /// assert_eq!(model.shape().kind, sgp_runtime::ModelKind::Spgp);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Number of raw inputs a prediction takes.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.input_dim(), 2);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn input_dim(&self) -> usize {
        usize::from(self.shape.input_dim)
    }

    /// Noise variance of the target in raw units (regression models).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert!((model.noise_variance() - 0.4).abs() < 1e-6);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn noise_variance(&self) -> f32 {
        self.outputs.first().map_or(0.0, Output::noise_variance)
    }

    /// Predictive mean only: `O(M G)`, no variance work (an updatable
    /// model, whose mean is `z . a` with `z = L1^-1 k`, runs
    /// [`Model::predict_latent`]: `O(M G + M^2)`).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let x = [0.5, -1.0];
    /// assert_eq!(model.mean(&x)?, model.predict(&x)?.mean);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::predict`].
    pub fn mean(&self, x: &[f32]) -> Result<f32, Error> {
        if self.variance == VarianceForm::Whitened {
            // The mean z . a needs the solve for z.
            return Ok(self.predict_latent(x)?.mean);
        }
        let mut k = [0.0f32; M];
        let latent = self.basis(x, &mut k)?;
        Ok(self.output_mean(self.first()?, latent))
    }

    /// Predictive mean and variance: `O(M G + M^2)`.
    ///
    /// Regression: of the target `y` in raw units, noise included. Probit
    /// classification: of the latent `f + b`.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// // Far from every basis function the variance is prior + noise.
    /// let far = model.predict(&[1e6, 1e6])?;
    /// assert!((far.variance - (model.prior_variance() + model.noise_variance())).abs() < 1e-5);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InputLength`] if `x` does not have [`Model::input_dim`] values,
    /// [`Error::NonFiniteInput`] for a NaN or infinite value,
    /// [`Error::InputOverflow`] for one so far out that f32 overflows.
    pub fn predict(&self, x: &[f32]) -> Result<Prediction, Error> {
        Ok(self.observed(self.first()?, self.predict_latent(x)?))
    }

    /// [`Model::predict`] of exactly `D` inputs, the capacity: the compiler
    /// then rejects an input vector of the wrong length. Meant for the
    /// usual firmware whose capacity `D` is the blob's input count; a blob
    /// with fewer inputs than `D` makes every call [`Error::InputLength`]
    /// (use the slice form, [`Model::predict`], with such a model).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// use sgp_runtime::{Error, Model};
    /// let model = Model::<16, 2, 2>::from_bytes(blob)?;
    /// let x = [0.5, -1.0];
    /// assert_eq!(model.predict_array(&x)?, model.predict(&x)?);
    /// // The same two-input blob in a three-input capacity:
    /// let wide = Model::<16, 3, 3>::from_bytes(blob)?;
    /// assert_eq!(
    ///     wide.predict_array(&[0.5, -1.0, 0.0]),
    ///     Err(Error::InputLength { expected: 2, found: 3 })
    /// );
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::predict`].
    pub fn predict_array(&self, x: &[f32; D]) -> Result<Prediction, Error> {
        self.predict(x)
    }

    /// Mean and variance of the latent function, without observation noise
    /// (regression: in raw target units).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let x = [0.0, 0.0];
    /// let (y, f) = (model.predict(&x)?, model.predict_latent(&x)?);
    /// assert!((y.variance - f.variance - model.noise_variance()).abs() < 1e-6);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::predict`].
    pub fn predict_latent(&self, x: &[f32]) -> Result<Prediction, Error> {
        let mut k = [0.0f32; M];
        let latent_mean = self.basis(x, &mut k)?;
        let (latent, _) = self.latent(self.first()?, latent_mean, &k, None)?;
        Ok(latent)
    }

    /// Class probability `P(y = +1 | x) = Phi((m + b) / sqrt(1 + v))` of a
    /// probit model.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// use sgp_runtime::{Error, Model};
    /// let regression = Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(regression.probability(&[0.0, 0.0]), Err(Error::NotClassifier));
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotClassifier`] for a regression model,
    /// [`Error::InputLength`] if `x` has the wrong length.
    pub fn probability(&self, x: &[f32]) -> Result<f32, Error> {
        if self.shape.link != Link::Probit {
            return Err(Error::NotClassifier);
        }
        let latent = self.predict_latent(x)?;
        Ok(math::normal_cdf(
            latent.mean / libm::sqrtf(1.0 + latent.variance),
        ))
    }

    /// Latent prior variance in output units: the variance far from all
    /// basis functions, noise excluded.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert!((model.prior_variance() - 4.0).abs() < 1e-6);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn prior_variance(&self) -> f32 {
        self.outputs
            .first()
            .map_or(0.0, |output| output.prior_variance(self.shape.link))
    }

    /// The first output, which the single-output calls evaluate. Always
    /// there (`P >= 1` is checked at load: a `Model` with `P = 0` loads
    /// nothing), so the error is never returned.
    #[inline(always)]
    fn first(&self) -> Result<&Output<M>, Error> {
        self.outputs.first().ok_or(Error::InputLength {
            expected: 0,
            found: 0,
        })
    }

    /// Step 5 and the output units of step 6, from the basis values `k` and
    /// the latent mean `beta . k`: the latent prediction, whether its
    /// variance was above the clamp at zero, and in `u`, if given, the
    /// vectors whose squared norms the variance sums (see
    /// `math::solve_packed`, `math::multiply_packed`; for an output that
    /// shares the first output's variance, the first output's vectors).
    /// Without `u` the product keeps nothing (a plain prediction then
    /// neither zero-fills nor stores a scratch vector: 160 instructions at
    /// M = 32). An updatable model's mean `z . a` comes from the same pass
    /// (its `beta . k` is zero); [`Error::InputOverflow`] if it overflows.
    #[inline(always)]
    fn latent(
        &self,
        output: &Output<M>,
        latent_mean: f32,
        k: &[f32; M],
        u: Option<&mut [[f32; 2]; M]>,
    ) -> Result<(Prediction, bool), Error> {
        let (source, ratio) = self.variance_source(output);
        let (variance, unclamped, whitened_mean) = self.latent_variance(source, output, k, u);
        let latent_mean = match (self.variance, output.shared_variance) {
            // An updatable model's mean is z . a (its beta is zero); an
            // output sharing the first's factors has z scaled by
            // sqrt(ratio). Its sum is checked here, as the basis's is.
            (VarianceForm::Whitened, shared) => {
                let scale = shared.map_or(1.0, |r| whitened::root_and_reciprocal(r).0);
                let mean = latent_mean + scale * whitened_mean;
                if !mean.is_finite() {
                    return Err(Error::InputOverflow);
                }
                mean
            }
            _ => latent_mean,
        };
        Ok((
            self.scaled_latent(output, latent_mean, ratio * variance),
            unclamped,
        ))
    }

    /// The output whose factors give `output`'s variance, and the ratio
    /// that scales it: `output` itself and 1, or the first output and the
    /// ratio of the priors (format version 6).
    #[inline(always)]
    fn variance_source<'a>(&'a self, output: &'a Output<M>) -> (&'a Output<M>, f32) {
        match (output.shared_variance, self.outputs.first()) {
            (Some(ratio), Some(first)) => (first, ratio),
            _ => (output, 1.0),
        }
    }

    /// Step 5 for `output`'s own factors: the latent variance in
    /// standardised units, clamped at zero, whether it was above the
    /// clamp, and for the whitened form `z . a` with `mean_of`'s
    /// whitened mean `a` (else 0).
    #[inline(always)]
    fn latent_variance(
        &self,
        output: &Output<M>,
        mean_of: &Output<M>,
        k: &[f32; M],
        u: Option<&mut [[f32; 2]; M]>,
    ) -> (f32, bool, f32) {
        let mut whitened_mean = 0.0;
        let factors = output.factors.as_flattened();
        let (explained, restored) = match self.variance {
            VarianceForm::Product => (
                math::multiply_packed(
                    output.product_factor(),
                    &output.diagonal1,
                    k,
                    self.m,
                    u.map(|u| u.as_flattened_mut()),
                ),
                0.0,
            ),
            VarianceForm::Whitened | VarianceForm::Covariance => {
                let mut scratch = [[0.0f32; 2]; M];
                let u = u.unwrap_or(&mut scratch);
                let (explained, restored, mean) = if self.learning.covariance() {
                    whitened::solve_and_multiply_with(
                        factors,
                        &output.diagonal1,
                        &output.inv_diagonal2,
                        mean_of.mean(),
                        k,
                        self.m,
                        u,
                        whitened::covariance_term,
                    )
                } else {
                    whitened::solve_and_multiply(
                        factors,
                        &output.diagonal1,
                        &output.inv_diagonal2,
                        mean_of.mean(),
                        k,
                        self.m,
                        u,
                    )
                };
                whitened_mean = mean;
                // z^T S z is in [0, |z|^2] (S <= I): clamped there, the
                // variance stays between 0 and the prior whatever f32 did.
                let restored = if restored > 0.0 { restored } else { 0.0 };
                let restored = if restored < explained {
                    restored
                } else {
                    explained
                };
                (explained, restored)
            }
            VarianceForm::Solves => {
                // Each row's solution feeds the next: the solves need it.
                let mut scratch = [[0.0f32; 2]; M];
                math::solve_packed(
                    factors,
                    &output.diagonal1,
                    &output.inv_diagonal2,
                    k,
                    self.m,
                    self.shape.two_factors,
                    u.unwrap_or(&mut scratch),
                )
            }
        };
        let variance = output.prior - explained + restored;
        // f32 cancellation can push the difference below zero near the
        // basis centres; the comparison also maps NaN to zero, and unlike
        // `f32::max` it needs no libm call on a Cortex-M4.
        let unclamped = variance > 0.0;
        (
            if unclamped { variance } else { 0.0 },
            unclamped,
            whitened_mean,
        )
    }

    /// `output`'s latent prediction from its latent mean `beta . k` and
    /// its clamped latent variance in standardised units.
    #[inline(always)]
    fn scaled_latent(&self, output: &Output<M>, latent_mean: f32, variance: f32) -> Prediction {
        let mean = self.output_mean(output, latent_mean);
        let variance = if self.shape.link == Link::Identity {
            variance * (output.y_scale * output.y_scale)
        } else {
            variance
        };
        Prediction { mean, variance }
    }

    /// What [`Model::predict`] reports for a latent prediction: regression
    /// adds the observation noise.
    #[inline(always)]
    fn observed(&self, output: &Output<M>, latent: Prediction) -> Prediction {
        match self.shape.link {
            Link::Identity => Prediction {
                mean: latent.mean,
                variance: latent.variance + output.noise_variance(),
            },
            Link::Probit | Link::OneVsRest | Link::Softmax => latent,
        }
    }

    fn output_mean(&self, output: &Output<M>, latent: f32) -> f32 {
        match self.shape.link {
            Link::Identity => output.y_mean + output.y_scale * latent,
            Link::Probit | Link::OneVsRest | Link::Softmax => latent + output.bias,
        }
    }

    /// Steps 1-4 of the runtime form: standardise, project, basis values
    /// into `k` (entries past `m` untouched); returns the latent mean
    /// `beta . k`, summed in the same pass.
    fn basis(&self, x: &[f32], k: &mut [f32; M]) -> Result<f32, Error> {
        let z = self.features(x)?;
        self.kernel(&z, k)
    }

    /// Steps 1-2: the checked input, standardised and projected (zeros
    /// past `g`).
    ///
    /// This and the other steps shared with the gradient are always
    /// inlined: once the gradient also called them LLVM outlined them, and
    /// the feature array went through two `memcpy` calls (+326
    /// instructions per `mean`, +408 per `predict` at M = 32 on the
    /// Cortex-M4).
    #[inline(always)]
    fn features(&self, x: &[f32]) -> Result<[f32; G], Error> {
        let d = self.input_dim();
        if x.len() != d {
            return Err(Error::InputLength {
                expected: d,
                found: x.len(),
            });
        }
        let mut z = [0.0f32; G];
        if self.shape.projected {
            let mut standard = [0.0f32; D];
            standardise(&mut standard, x, &self.x_mean, &self.x_inv_scale);
            for (zg, row) in z.iter_mut().zip(&self.projection).take(self.g) {
                *zg = row.iter().zip(&standard).take(d).map(|(p, s)| p * s).sum();
            }
        } else {
            standardise(&mut z, x, &self.x_mean, &self.x_inv_scale);
        }
        // Every non-finite input makes some feature non-finite (NaN stays
        // NaN, inf times a zero scale or projection weight is NaN), so the
        // features alone are checked: G tests rather than D, and the input
        // only on the way out. A non-finite feature from finite inputs
        // (a huge input, a tiny scale; a projection's inf - inf) is an
        // overflow. NaN would otherwise read as distance 0 in the exp.
        // A Matérn model's features stay within MATERN_FEATURE_LIMIT, so
        // its distances stay finite. On the magnitude's bits (`<= f32::MAX`
        // is `is_finite`, NaN is above every limit), as `is_finite` itself.
        let limit = if self.kernel == Kernel::SquaredExponential {
            f32::MAX
        } else {
            math::MATERN_FEATURE_LIMIT
        }
        .to_bits();
        if !z.iter().all(|v| v.to_bits() & 0x7FFF_FFFF <= limit) {
            return Err(if x.iter().all(|v| v.is_finite()) {
                Error::InputOverflow
            } else {
                Error::NonFiniteInput
            });
        }
        Ok(z)
    }

    /// Steps 3-4 at features `z`: basis values into `k` (entries past `m`
    /// untouched) and the latent mean `beta . k`, summed in the same pass.
    ///
    /// With finite features (checked by [`Model::features`]) and the
    /// loader's finite scaled centres no distance is NaN and every `k_i` is
    /// finite; the mean can still overflow for an absurd blob (weights near
    /// `f32::MAX`), which one comparison catches.
    #[inline(always)]
    fn kernel(&self, z: &[f32; G], k: &mut [f32; M]) -> Result<f32, Error> {
        // Shared widths were folded into the features at load.
        let mean =
            if self.shape.per_basis {
                match self.kernel {
                    Kernel::SquaredExponential => {
                        self.basis_values(z, k, math::scaled_distance, |d, a| {
                            a * math::scaled_exp2_of_negative(d, &math::EXP2_OF_NEGATIVE)
                        })
                    }
                    // A per-basis scale times a feature may overflow: clamp.
                    Kernel::Matern12 => self.basis_values(z, k, math::scaled_distance, |d, a| {
                        a * math::matern::<1>(math::finite_distance(d), &math::EXP2_OF_NEGATIVE)
                    }),
                    Kernel::Matern32 => self.basis_values(z, k, math::scaled_distance, |d, a| {
                        a * math::matern::<3>(math::finite_distance(d), &math::EXP2_OF_NEGATIVE)
                    }),
                    Kernel::Matern52 => self.basis_values(z, k, math::scaled_distance, |d, a| {
                        a * math::matern::<5>(math::finite_distance(d), &math::EXP2_OF_NEGATIVE)
                    }),
                }
            } else {
                let poly = &self.exp_poly;
                match self.kernel {
                    Kernel::SquaredExponential => {
                        self.basis_values(z, k, math::unit_distance, |d, _| {
                            math::scaled_exp2_of_negative(d, poly)
                        })
                    }
                    // Features and centres are within MATERN_FEATURE_LIMIT:
                    // every distance is finite.
                    Kernel::Matern12 => self
                        .basis_values(z, k, math::unit_distance, |d, _| math::matern::<1>(d, poly)),
                    Kernel::Matern32 => self
                        .basis_values(z, k, math::unit_distance, |d, _| math::matern::<3>(d, poly)),
                    Kernel::Matern52 => self
                        .basis_values(z, k, math::unit_distance, |d, _| math::matern::<5>(d, poly)),
                }
            };
        if mean.is_finite() {
            Ok(mean)
        } else {
            Err(Error::InputOverflow)
        }
    }
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Model<M, G, D, P> {
    /// The loop of [`Model::kernel`] with one distance function and one
    /// basis value `value(distance, amplitude)`.
    #[inline(always)]
    fn basis_values(
        &self,
        z: &[f32; G],
        k: &mut [f32; M],
        distance: impl Fn(&[[f32; 2]; G], &[f32; G]) -> f32,
        value: impl Fn(f32, f32) -> f32,
    ) -> f32 {
        let mut mean = 0.0f32;
        let beta = self
            .outputs
            .first()
            .map_or(&[0.0; M], |output| &output.beta);
        let rows = self.basis_params.iter().zip(&self.amplitudes).zip(beta);
        for (ki, ((params, &amplitude), &beta)) in k.iter_mut().zip(rows).take(self.m) {
            *ki = value(distance(params, z), amplitude);
            mean += beta * *ki;
        }
        mean
    }
}

/// `sqrt(h)` in the exp's fixed-point units: finite for every finite `h`
/// (the square root is taken first).
fn fixed_point_scale(half_width: f32) -> f32 {
    libm::sqrtf(half_width) * libm::sqrtf(math::FIXED_PER_NAT)
}

/// `s c`, kept finite (an absurd blob's product may overflow): a distance
/// `(s z - s c)^2` is then never `inf - inf`. A centre that far away gives
/// 0 wherever an input can be.
fn scaled_centre(centre: f32, scale: f32) -> f32 {
    (centre * scale).clamp(f32::MIN, f32::MAX)
}

/// `out[i] = (x[i] - mean[i]) * inv_scale[i]` over the shortest of them.
fn standardise(out: &mut [f32], x: &[f32], mean: &[f32], inv_scale: &[f32]) {
    for (o, ((x, m), s)) in out.iter_mut().zip(x.iter().zip(mean).zip(inv_scale)) {
        *o = (x - m) * s;
    }
}

/// Row and column of element `index` of a packed row-major lower triangle
/// (`index = row (row + 1) / 2 + col`). Runs once per element at load time.
fn unpack(index: usize) -> (usize, usize) {
    // Float square root guess, then exact integer correction.
    let mut row = ((libm::sqrt(8.0 * index as f64 + 1.0) - 1.0) / 2.0) as usize;
    while row * (row + 1) / 2 > index {
        row -= 1;
    }
    while (row + 1) * (row + 2) / 2 <= index {
        row += 1;
    }
    (row, index - row * (row + 1) / 2)
}

fn set(slots: &mut [f32], index: usize, value: f32) -> Result<(), Error> {
    let slot = slots.get_mut(index).ok_or(Error::Malformed)?;
    *slot = value;
    Ok(())
}

/// Element `which` of pair `col` of row `row` of the basis parameters.
fn set_param<const G: usize>(
    rows: &mut [[[f32; 2]; G]],
    row: usize,
    col: usize,
    which: usize,
    value: f32,
) -> Result<(), Error> {
    set_2d(
        rows.get_mut(row).ok_or(Error::Malformed)?,
        col,
        which,
        value,
    )
}

fn set_2d<const N: usize>(
    rows: &mut [[f32; N]],
    row: usize,
    col: usize,
    value: f32,
) -> Result<(), Error> {
    let row = rows.get_mut(row).ok_or(Error::Malformed)?;
    set(row, col, value)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn unpack_walks_a_packed_triangle_row_by_row() {
        let mut expected = [(0, 0); 5050];
        let mut i = 0;
        for row in 0..100 {
            for col in 0..=row {
                expected[i] = (row, col);
                i += 1;
            }
        }
        for (index, pair) in expected.iter().enumerate() {
            assert_eq!(unpack(index), *pair, "index {index}");
        }
    }

    /// `size_of::<Model<M, G, D, P>>()` on this host, field by field in
    /// `Model`'s `repr(C)` order: the leading floats (six of them the
    /// amplitude-scaled exp polynomial, then each output's numbers and
    /// name, then the input scaling and range), the 12-byte shape, the two
    /// sizes (`usize`, aligned to it), the names (bytes), the `ranged` flag
    /// and the variance form (one byte each), the output count (`u16`) and
    /// the padding to the `usize` alignment. Where `usize` is 4 bytes this
    /// is [`ram_bytes_with_outputs`].
    fn host_size(m: usize, g: usize, d: usize, p: usize) -> usize {
        let word = core::mem::size_of::<usize>();
        let output = 4 * (m * m + 3 * m + 11) + NAME_CAPACITY + 1;
        let leading = 4 * (m * (2 * g + 1) + math::EXP2_TERMS + g * d + 4 * d + 7) + p * output;
        let sizes_at = (leading + 12).next_multiple_of(word);
        let names = (NAME_CAPACITY + 1) * d;
        (sizes_at + 2 * word + names + 6).next_multiple_of(word)
    }

    #[test]
    fn ram_bytes_is_the_struct_size() {
        use core::mem::size_of;
        assert_eq!(size_of::<Shape>(), 12);
        // Odd and even M (the shape's offset alternates between 4 and 8
        // modulo 8), odd and even D, projected and unprojected sizes, the
        // firmware's.
        let cases = [
            (size_of::<Model<1, 1, 1>>(), host_size(1, 1, 1, 1)),
            (size_of::<Model<7, 3, 5>>(), host_size(7, 3, 5, 1)),
            (size_of::<Model<16, 4, 4>>(), host_size(16, 4, 4, 1)),
            (size_of::<Model<32, 4, 4>>(), host_size(32, 4, 4, 1)),
            (size_of::<Model<32, 4, 16>>(), host_size(32, 4, 16, 1)),
            (size_of::<Model<32, 16, 16>>(), host_size(32, 16, 16, 1)),
            (size_of::<Model<33, 2, 9>>(), host_size(33, 2, 9, 1)),
            (size_of::<Model<64, 4, 4>>(), host_size(64, 4, 4, 1)),
            (size_of::<Model<32, 4, 4, 3>>(), host_size(32, 4, 4, 3)),
            (size_of::<Model<7, 3, 5, 2>>(), host_size(7, 3, 5, 2)),
        ];
        for (i, (size, expected)) in cases.iter().enumerate() {
            assert_eq!(size, expected, "case {i}");
        }
        // The firmware README's figures.
        assert_eq!(ram_bytes(16, 4, 4), 2204);
        assert_eq!(ram_bytes(32, 4, 4), 6044);
    }
}
