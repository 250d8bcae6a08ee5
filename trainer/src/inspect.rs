//! A human- and JSON-readable description of a blob (`sgp inspect`).

use serde::Serialize;
use sgp_runtime::{ram_bytes, Link, ModelSpec};

/// What `sgp inspect` prints.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Fitting procedure.
    pub kind: &'static str,
    /// `regression` or `classification`.
    pub task: &'static str,
    /// Basis functions `M`.
    pub n_basis: usize,
    /// Feature dimension `G`.
    pub feature_dim: usize,
    /// Input dimension `D`.
    pub input_dim: usize,
    /// Input column names.
    pub inputs: Vec<String>,
    /// Target column name.
    pub target: String,
    /// Length scales in raw input units (shared-width, unprojected models).
    pub lengthscales: Option<Vec<f64>>,
    /// Latent prior (signal) variance in raw target units.
    pub signal_variance: f64,
    /// Noise variance in raw target units (regression).
    pub noise_variance: f64,
    /// Size of the blob in bytes (flash for the model's numbers).
    pub blob_bytes: usize,
    /// RAM of `Model<M, G, D>` with capacities equal to these sizes on a
    /// 32-bit device.
    pub ram_bytes: usize,
}

/// Describes `spec`, encoded in `blob_bytes` bytes.
pub fn summarise(spec: &ModelSpec, blob_bytes: usize) -> Summary {
    let s = &spec.shape;
    let (m, g, d) = (
        usize::from(s.n_basis),
        usize::from(s.feature_dim),
        usize::from(s.input_dim),
    );
    let y_var = f64::from(spec.y_scale).powi(2);
    let lengthscales = (!s.per_basis && !s.projected).then(|| {
        spec.widths
            .iter()
            .zip(&spec.x_scale)
            .map(|(&w, &scale)| f64::from(scale) / f64::from(w).sqrt())
            .collect()
    });
    Summary {
        kind: s.kind.name(),
        task: match s.link {
            Link::Identity => "regression",
            Link::Probit => "classification",
        },
        n_basis: m,
        feature_dim: g,
        input_dim: d,
        inputs: spec.input_names.clone(),
        target: spec.target_name.clone(),
        lengthscales,
        signal_variance: f64::from(spec.prior) * y_var,
        noise_variance: f64::from(spec.noise) * y_var,
        blob_bytes,
        ram_bytes: ram_bytes(m, g, d),
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "kind            {} ({})", self.kind, self.task)?;
        writeln!(
            f,
            "sizes           M = {}, G = {}, D = {}",
            self.n_basis, self.feature_dim, self.input_dim
        )?;
        writeln!(f, "inputs          {}", self.inputs.join(", "))?;
        writeln!(f, "target          {}", self.target)?;
        if let Some(l) = &self.lengthscales {
            let l: Vec<String> = l.iter().map(|v| format!("{v:.4}")).collect();
            writeln!(f, "length scales   {}", l.join(", "))?;
        }
        writeln!(f, "signal variance {:.6}", self.signal_variance)?;
        writeln!(f, "noise variance  {:.6}", self.noise_variance)?;
        writeln!(f, "blob            {} bytes (flash)", self.blob_bytes)?;
        write!(
            f,
            "RAM             {} bytes for Model<{}, {}, {}>",
            self.ram_bytes, self.n_basis, self.feature_dim, self.input_dim
        )
    }
}
