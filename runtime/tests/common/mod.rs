//! Model builders shared by the runtime's integration tests.
#![allow(dead_code, clippy::needless_range_loop)] // matrix indices read as the maths

use sgp_runtime::{Learning, Link, ModelKind, ModelSpec, Observation, Shape, VarianceForm};

/// Deterministic pseudo-random numbers in [-1, 1) (xorshift), so tests need
/// no RNG crate.
pub struct Numbers(u64);

impl Numbers {
    pub fn new(seed: u64) -> Self {
        Numbers(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    pub fn vec(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| scale * self.next()).collect()
    }
}

/// Packed lower Cholesky factor (row-major) of a well-conditioned SPD
/// matrix `A A^T + n I`, in f64.
pub fn random_factor(numbers: &mut Numbers, m: usize) -> Vec<f64> {
    let a: Vec<f64> = numbers.vec(m * m, 1.0);
    let mut s = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..m {
            s[i * m + j] = (0..m).map(|k| a[i * m + k] * a[j * m + k]).sum::<f64>()
                + if i == j { m as f64 } else { 0.0 };
        }
    }
    let mut l = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..=i {
            let dot: f64 = (0..j).map(|k| l[i * m + k] * l[j * m + k]).sum();
            l[i * m + j] = if i == j {
                (s[i * m + i] - dot).sqrt()
            } else {
                (s[i * m + j] - dot) / l[j * m + j]
            };
        }
    }
    (0..m)
        .flat_map(|i| (0..=i).map(move |j| (i, j)))
        .map(|(i, j)| l[i * m + j])
        .collect()
}

pub fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// A random, valid model with the given sizes and switches (positional:
/// the call sites read as rows of a table).
#[allow(clippy::too_many_arguments)]
pub fn random_spec(
    seed: u64,
    m: usize,
    g: usize,
    d: usize,
    projected: bool,
    per_basis: bool,
    two_factors: bool,
    link: Link,
) -> ModelSpec {
    let mut n = Numbers::new(seed);
    let widths = if per_basis { m * g } else { g };
    let amplitudes = if per_basis { m } else { 1 };
    // L1 is scaled so that |L1^-1 k|^2 stays below the prior.
    let l1: Vec<f64> = random_factor(&mut n, m).iter().map(|v| v * 2.0).collect();
    let x_mean = f32s(&n.vec(d, 3.0));
    ModelSpec {
        shape: Shape {
            kind: if per_basis {
                ModelKind::Vsgp
            } else {
                ModelKind::Spgp
            },
            link,
            input_dim: d as u16,
            feature_dim: g as u16,
            n_basis: m as u16,
            projected,
            per_basis,
            two_factors,
        },
        input_names: (0..d).map(|i| format!("x{i}")).collect(),
        target_name: "y".into(),
        // The training range: three units either side of the mean.
        x_min: x_mean.iter().map(|m| m - 3.0).collect(),
        x_max: x_mean.iter().map(|m| m + 3.0).collect(),
        x_mean,
        x_scale: n.vec(d, 1.0).iter().map(|v| 1.5 + *v as f32).collect(),
        projection: if projected {
            f32s(&n.vec(g * d, 1.0))
        } else {
            vec![]
        },
        centres: f32s(&n.vec(m * g, 2.0)),
        widths: n
            .vec(widths, 1.0)
            .iter()
            .map(|v| 1.0 + 0.5 * *v as f32)
            .collect(),
        amplitudes: n
            .vec(amplitudes, 1.0)
            .iter()
            .map(|v| 1.0 + 0.3 * *v as f32)
            .collect(),
        beta: f32s(&n.vec(m, 1.0)),
        l1: f32s(&l1),
        l2: if two_factors {
            f32s(
                &random_factor(&mut n, m)
                    .iter()
                    .map(|v| v * 4.0)
                    .collect::<Vec<_>>(),
            )
        } else {
            vec![]
        },
        prior: 1.3,
        noise: 0.05,
        bias: 0.2,
        y_mean: 10.0,
        y_scale: 2.0,
        positive_class: 0.0,
        variance: VarianceForm::Solves,
        outputs: vec![],
        class_labels: vec![],
        learning: None,
        kernel: sgp_runtime::Kernel::SquaredExponential,
    }
}

/// `spec` with the product form of the variance: one random factor `L1`,
/// scaled so that `|L1 k|^2` mostly stays below the prior, and no `L2`.
pub fn product_variance(mut spec: ModelSpec, seed: u64) -> ModelSpec {
    let m = usize::from(spec.shape.n_basis);
    let mut n = Numbers::new(seed ^ 0x5eed);
    let scale = 0.3 / m as f64;
    spec.l1 = f32s(
        &random_factor(&mut n, m)
            .iter()
            .map(|v| v * scale)
            .collect::<Vec<_>>(),
    );
    spec.l2.clear();
    spec.shape.two_factors = false;
    spec.variance = VarianceForm::Product;
    spec
}

/// The runtime form evaluated in f64 from the spec's (f32) numbers:
/// latent (mean, variance) in output units, before noise.
pub fn reference_latent(spec: &ModelSpec, x: &[f64]) -> (f64, f64) {
    let k = reference_basis(spec, x);
    latent_from_basis(spec, &k)
}

/// The basis values `k` of `spec` at raw input `x`, in f64.
pub fn reference_basis(spec: &ModelSpec, x: &[f64]) -> Vec<f64> {
    let s = &spec.shape;
    let (m, g, d) = (
        s.n_basis as usize,
        s.feature_dim as usize,
        s.input_dim as usize,
    );
    let f = |v: &[f32], i: usize| v[i] as f64;
    let standard: Vec<f64> = (0..d)
        .map(|i| (x[i] - f(&spec.x_mean, i)) / f(&spec.x_scale, i))
        .collect();
    let z: Vec<f64> = if s.projected {
        (0..g)
            .map(|r| {
                (0..d)
                    .map(|c| f(&spec.projection, r * d + c) * standard[c])
                    .sum()
            })
            .collect()
    } else {
        standard
    };
    let k: Vec<f64> = (0..m)
        .map(|i| {
            let a = if s.per_basis {
                f(&spec.amplitudes, i)
            } else {
                f(&spec.amplitudes, 0)
            };
            let q: f64 = (0..g)
                .map(|j| {
                    let w = if s.per_basis {
                        f(&spec.widths, i * g + j)
                    } else {
                        f(&spec.widths, j)
                    };
                    w * (z[j] - f(&spec.centres, i * g + j)).powi(2)
                })
                .sum();
            a * kernel_of_squared_distance(spec.kernel, q)
        })
        .collect();
    k
}

/// The kernel's profile at the scaled squared distance `r2`, in f64.
pub fn kernel_of_squared_distance(kernel: sgp_runtime::Kernel, r2: f64) -> f64 {
    use sgp_runtime::Kernel;
    let r = r2.sqrt();
    match kernel {
        Kernel::SquaredExponential => (-0.5 * r2).exp(),
        Kernel::Matern12 => (-r).exp(),
        Kernel::Matern32 => {
            let u = 3f64.sqrt() * r;
            (1.0 + u) * (-u).exp()
        }
        Kernel::Matern52 => {
            let u = 5f64.sqrt() * r;
            (1.0 + u + u * u / 3.0) * (-u).exp()
        }
    }
}

/// Latent (mean, variance) in output units from the basis values `k`.
pub fn latent_from_basis(spec: &ModelSpec, k: &[f64]) -> (f64, f64) {
    let s = &spec.shape;
    let m = s.n_basis as usize;
    let f = |v: &[f32], i: usize| v[i] as f64;
    let mean: f64 = (0..m).map(|i| k[i] * f(&spec.beta, i)).sum();
    let solve = |l: &[f32]| -> f64 {
        let mut u = vec![0.0; m];
        for i in 0..m {
            let row = i * (i + 1) / 2;
            let dot: f64 = (0..i).map(|j| f(l, row + j) * u[j]).sum();
            u[i] = (k[i] - dot) / f(l, row + i);
        }
        u.iter().map(|v| v * v).sum()
    };
    let product = |l: &[f32]| -> f64 {
        (0..m)
            .map(|i| {
                let row = i * (i + 1) / 2;
                let ui: f64 = (0..=i).map(|j| f(l, row + j) * k[j]).sum();
                ui * ui
            })
            .sum()
    };
    let mut var = spec.prior as f64
        - match spec.variance {
            VarianceForm::Solves => solve(&spec.l1),
            VarianceForm::Product => product(&spec.l1),
            VarianceForm::Whitened | VarianceForm::Covariance => solve(&spec.l1),
        };
    if spec.variance.learns() {
        let z = forward(&dense(&spec.l1, m), k);
        let s = if spec.variance == VarianceForm::Covariance {
            covariance_of_factor(&dense(&spec.l2, m))
        } else {
            covariance(&dense(&spec.l2, m))
        };
        var += quadratic(&s, &z).min(z.iter().map(|v| v * v).sum());
    } else if s.two_factors {
        var += solve(&spec.l2);
    }
    let var = var.max(0.0);
    match s.link {
        Link::Identity => (
            spec.y_mean as f64 + spec.y_scale as f64 * mean,
            (spec.y_scale as f64).powi(2) * var,
        ),
        Link::Probit | Link::OneVsRest | Link::Softmax => (mean + spec.bias as f64, var),
    }
}

/// The small regression model behind the documentation examples and
/// `tests/data/doc-model.sgp`.
pub fn doc_spec() -> ModelSpec {
    ModelSpec {
        shape: Shape {
            kind: ModelKind::Spgp,
            link: Link::Identity,
            input_dim: 2,
            feature_dim: 2,
            n_basis: 3,
            projected: false,
            per_basis: false,
            two_factors: true,
        },
        input_names: vec!["speed".into(), "load".into()],
        target_name: "torque".into(),
        x_mean: vec![1.0, -0.5],
        x_scale: vec![2.0, 0.5],
        projection: vec![],
        centres: vec![-1.0, 0.0, 0.0, 0.5, 1.0, -0.5],
        widths: vec![1.0, 0.5],
        amplitudes: vec![1.0],
        beta: vec![0.8, -0.3, 0.5],
        l1: vec![1.0, 0.3, 0.9, 0.1, 0.2, 0.8],
        l2: vec![2.0, 0.4, 1.8, 0.2, 0.3, 1.7],
        prior: 1.0,
        noise: 0.1,
        bias: 0.0,
        y_mean: 3.0,
        y_scale: 2.0,
        positive_class: 0.0,
        x_min: vec![-3.0, -1.5],
        x_max: vec![5.0, 0.5],
        variance: VarianceForm::Solves,
        outputs: vec![],
        class_labels: vec![],
        learning: None,
        kernel: sgp_runtime::Kernel::SquaredExponential,
    }
}

/// The blob of `spec` as a writer without checks would encode it, with
/// `version` in its preamble (and its body: no learning block and no
/// kernel before version 8).
pub fn unchecked_blob(spec: &ModelSpec, version: u16) -> Vec<u8> {
    let mut body = postcard::to_allocvec(spec).unwrap();
    if version < 8 {
        assert_eq!(
            body.pop(),
            Some(0),
            "a kernel other than the squared exponential in a version-{version} blob"
        );
    }
    if version < 7 {
        assert_eq!(
            body.pop(),
            Some(0),
            "a learning block in a version-{version} blob"
        );
    }
    let mut blob = b"SGPM".to_vec();
    blob.extend_from_slice(&version.to_le_bytes());
    blob.extend_from_slice(&(body.len() as u32).to_le_bytes());
    blob.extend_from_slice(&body);
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&blob);
    blob.extend_from_slice(&crc.to_le_bytes());
    blob
}

/// Every truncation of `blob` and every single flipped bit is an error
/// (never a panic) for `load` (a device model of the caller's capacity)
/// and for `ModelSpec::from_bytes`.
pub fn assert_every_damage_is_an_error<E>(blob: &[u8], load: impl Fn(&[u8]) -> Result<(), E>) {
    for cut in 0..blob.len() {
        assert!(load(&blob[..cut]).is_err(), "cut at {cut}");
        assert!(ModelSpec::from_bytes(&blob[..cut]).is_err());
    }
    for byte in 0..blob.len() {
        for bit in 0..8 {
            let mut bad = blob.to_vec();
            bad[byte] ^= 1 << bit;
            assert!(load(&bad).is_err(), "byte {byte} bit {bit}");
            assert!(ModelSpec::from_bytes(&bad).is_err());
        }
    }
}

/// FORMAT.md's size example: one output in the product form, `M = 32`,
/// `D = 4`, inputs `x0..x3` and target `y`, a 2,913-byte blob.
pub fn size_example_spec() -> ModelSpec {
    let mut spec = product_variance(
        random_spec(1, 32, 4, 4, false, false, false, Link::Identity),
        1,
    );
    spec.input_names = (0..4).map(|i| format!("x{i}")).collect();
    spec.target_name = "y".into();
    assert_eq!(spec.to_bytes().unwrap().len(), 2913);
    spec
}

/// A packed lower triangle (row by row) as a dense f64 matrix.
pub fn dense(packed: &[f32], m: usize) -> Vec<Vec<f64>> {
    let mut l = vec![vec![0.0; m]; m];
    let mut at = 0;
    for (i, row) in l.iter_mut().enumerate() {
        for v in row.iter_mut().take(i + 1) {
            *v = f64::from(packed[at]);
            at += 1;
        }
    }
    l
}

/// `L^-1 b` for lower-triangular `L`.
pub fn forward(l: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let mut z = vec![0.0; b.len()];
    for i in 0..b.len() {
        let s: f64 = (0..i).map(|j| l[i][j] * z[j]).sum();
        z[i] = (b[i] - s) / l[i][i];
    }
    z
}

/// `S = I - (I - G)^T (I - diag(d)) (I - G)` of the whitened form, from
/// its `l2` as a dense matrix: `G` strictly below the diagonal, `d` on it.
pub fn covariance(g: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let m = g.len();
    let u = |i: usize, j: usize| {
        if i == j {
            1.0
        } else if j < i {
            -g[i][j]
        } else {
            0.0
        }
    };
    let mut s = vec![vec![0.0; m]; m];
    for a in 0..m {
        for b in 0..m {
            let e: f64 = (0..m).map(|r| u(r, a) * (1.0 - g[r][r]) * u(r, b)).sum();
            s[a][b] = if a == b { 1.0 } else { 0.0 } - e;
        }
    }
    s
}

/// `S = W^T diag(D) W` of the covariance form's `l2` (dense: `W - I`
/// strictly below the diagonal, `D` on it).
pub fn covariance_of_factor(w: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let m = w.len();
    let unit = |i: usize, j: usize| match j.cmp(&i) {
        std::cmp::Ordering::Less => w[i][j],
        std::cmp::Ordering::Equal => 1.0,
        std::cmp::Ordering::Greater => 0.0,
    };
    (0..m)
        .map(|a| {
            (0..m)
                .map(|b| (0..m).map(|r| unit(r, a) * w[r][r] * unit(r, b)).sum())
                .collect()
        })
        .collect()
}

/// `spec` (the whitened form) in the covariance form of format version 9:
/// the same `S`, factored in f64 as `W^T diag(D) W`, last row first.
pub fn as_covariance(spec: &ModelSpec) -> ModelSpec {
    let m = spec.shape.n_basis as usize;
    let s = covariance(&dense(&spec.l2, m));
    let mut w = vec![vec![0.0f64; m]; m];
    let mut d = vec![0.0f64; m];
    for j in (0..m).rev() {
        d[j] = (s[j][j] - (j + 1..m).map(|k| w[k][j] * w[k][j] * d[k]).sum::<f64>()).max(0.0);
        for i in 0..j {
            w[j][i] = if d[j] > 0.0 {
                (s[i][j] - (j + 1..m).map(|k| w[k][i] * w[k][j] * d[k]).sum::<f64>()) / d[j]
            } else {
                0.0
            };
        }
    }
    let mut out = spec.clone();
    out.l2 = (0..m)
        .flat_map(|i| (0..=i).map(move |j| (i, j)))
        .map(|(i, j)| {
            if i == j {
                (d[i] as f32).max(1e-30)
            } else {
                w[i][j] as f32
            }
        })
        .collect();
    out.variance = VarianceForm::Covariance;
    out
}

/// The whitened form's `l2` of `I - S = e` (packed: `G` strictly below
/// the diagonal, `d` on it), from a Cholesky factorisation of `e` with rows
/// and columns reversed: `e = F^T F`, `F = D^(1/2) (I - G)`.
pub fn ud_packed(e: &dyn Fn(usize, usize) -> f64, m: usize) -> Vec<f32> {
    let rev = |i: usize| m - 1 - i;
    let mut l = vec![vec![0.0; m]; m];
    for i in 0..m {
        for j in 0..=i {
            let dot: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            let v = e(rev(i), rev(j)) - dot;
            l[i][j] = if i == j {
                v.max(1e-300).sqrt()
            } else {
                v / l[j][j]
            };
        }
    }
    let mut out = Vec::new();
    for i in 0..m {
        let fii = l[rev(i)][rev(i)];
        for j in 0..=i {
            let f = l[rev(j)][rev(i)];
            out.push(if i == j {
                ((1.0 - fii * fii) as f32).max(1e-30)
            } else {
                (-f / fii) as f32
            });
        }
    }
    out
}

/// `z^T S z`.
pub fn quadratic(s: &[Vec<f64>], z: &[f64]) -> f64 {
    (0..z.len())
        .map(|a| (0..z.len()).map(|b| z[a] * s[a][b] * z[b]).sum::<f64>())
        .sum()
}

/// `spec` (two factors, the solves) in the whitened form of an updatable
/// blob, computed in f64 from its f32 numbers as the trainer does: `S =
/// A^-1` with `A = L1^-1 L2 L2^T L1^-T`, `I - S = F^T F` (F lower, by a
/// Cholesky factorisation with rows and columns reversed), `G = I - F`,
/// and the means `L1^T beta`.
pub fn whitened(spec: &ModelSpec, observation: Observation) -> ModelSpec {
    let m = spec.shape.n_basis as usize;
    let l1 = dense(&spec.l1, m);
    let l2 = dense(&spec.l2, m);
    // L_A = L1^-1 L2 column by column; S = L_A^-T L_A^-1.
    let mut la = vec![vec![0.0; m]; m];
    for c in 0..m {
        let col: Vec<f64> = (0..m).map(|r| l2[r][c]).collect();
        let x = forward(&l1, &col);
        for r in 0..m {
            la[r][c] = x[r];
        }
    }
    let mut inv = vec![vec![0.0; m]; m];
    for c in 0..m {
        let e: Vec<f64> = (0..m).map(|r| if r == c { 1.0 } else { 0.0 }).collect();
        let x = forward(&la, &e);
        for r in 0..m {
            inv[r][c] = x[r];
        }
    }
    let s: Vec<Vec<f64>> = (0..m)
        .map(|a| {
            (0..m)
                .map(|b| (0..m).map(|r| inv[r][a] * inv[r][b]).sum())
                .collect()
        })
        .collect();
    let e = |a: usize, b: usize| (if a == b { 1.0 } else { 0.0 }) - s[a][b];
    let l2 = ud_packed(&e, m);
    let beta: Vec<f64> = spec.beta.iter().map(|&v| f64::from(v)).collect();
    let mean: Vec<f64> = (0..m)
        .map(|j| (j..m).map(|i| l1[i][j] * beta[i]).sum())
        .collect();
    let mut out = spec.clone();
    out.l2 = l2;
    out.variance = VarianceForm::Whitened;
    out.learning = Some(Learning {
        observation,
        means: vec![mean.iter().map(|&v| v as f32).collect()],
    });
    out
}

/// The documentation's updatable model (`tests/data/doc-updatable.sgp`):
/// [`doc_spec`] in the whitened form, learning with FITC's row variance.
pub fn doc_updatable_spec() -> ModelSpec {
    whitened(&doc_spec(), Observation::Fitc)
}

/// The Cholesky factor of a symmetric positive definite matrix, in f64.
pub fn cholesky(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let m = a.len();
    let mut l = vec![vec![0.0; m]; m];
    for i in 0..m {
        for j in 0..=i {
            let dot: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            l[i][j] = if i == j {
                (a[i][i] - dot).sqrt()
            } else {
                (a[i][j] - dot) / l[j][j]
            };
        }
    }
    l
}

fn packed(l: &[Vec<f64>]) -> Vec<f32> {
    (0..l.len())
        .flat_map(|i| (0..=i).map(move |j| (i, j)))
        .map(|(i, j)| l[i][j] as f32)
        .collect()
}

/// The whitened posterior `N(alpha, S)` of `spec`'s basis (its `l1`) from
/// the prior `N(0, I)` and `rows` (raw input, raw target), each with the
/// row variance of `observation`, in f64: `A = I + sum z z^T / gamma`,
/// `S = A^-1`, `alpha = S sum z y / gamma` (standardised targets).
pub fn batch_posterior(
    spec: &ModelSpec,
    rows: &[(Vec<f64>, f64)],
    observation: Observation,
) -> (Vec<f64>, Vec<Vec<f64>>) {
    let m = spec.shape.n_basis as usize;
    let l1 = dense(&spec.l1, m);
    let prior = f64::from(spec.prior);
    let noise = f64::from(spec.noise);
    let mut a = vec![vec![0.0; m]; m];
    for (i, row) in a.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    let mut b = vec![0.0; m];
    for (x, y) in rows {
        let z = forward(&l1, &reference_basis(spec, x));
        let n: f64 = z.iter().map(|v| v * v).sum();
        let gamma = match observation {
            Observation::Fitc => (prior - n).max(0.0) + noise,
            _ => noise,
        };
        let y = (y - f64::from(spec.y_mean)) / f64::from(spec.y_scale);
        for i in 0..m {
            for j in 0..m {
                a[i][j] += z[i] * z[j] / gamma;
            }
            b[i] += z[i] * y / gamma;
        }
    }
    let la = cholesky(&a);
    let mut s = vec![vec![0.0; m]; m];
    for c in 0..m {
        let e: Vec<f64> = (0..m).map(|r| if r == c { 1.0 } else { 0.0 }).collect();
        let x = forward(&la, &e);
        // S e_c = L_A^-T L_A^-1 e_c
        let mut y = x.clone();
        for i in (0..m).rev() {
            y[i] /= la[i][i];
            for j in 0..i {
                y[j] -= la[i][j] * y[i];
            }
        }
        for r in 0..m {
            s[r][c] = y[r];
        }
    }
    let alpha = (0..m)
        .map(|i| (0..m).map(|j| s[i][j] * b[j]).sum())
        .collect();
    (alpha, s)
}

/// `spec` with the whitened posterior `N(alpha, S)` as its learned state:
/// `G` from `I - S` (reversed Cholesky), `beta = L1^-T alpha`.
pub fn with_posterior(
    spec: &ModelSpec,
    alpha: &[f64],
    s: &[Vec<f64>],
    observation: Observation,
) -> ModelSpec {
    let m = alpha.len();
    let l1 = dense(&spec.l1, m);
    let l2 = ud_packed(&|a, b| (if a == b { 1.0 } else { 0.0 }) - s[a][b], m);
    let mut beta = alpha.to_vec();
    for i in (0..m).rev() {
        beta[i] /= l1[i][i];
        for j in 0..i {
            beta[j] -= l1[i][j] * beta[i];
        }
    }
    let mut out = spec.clone();
    out.l2 = l2;
    out.beta = beta.iter().map(|&v| v as f32).collect();
    out.shape.two_factors = true;
    out.variance = VarianceForm::Whitened;
    out.learning = Some(Learning {
        observation,
        means: vec![alpha.iter().map(|&v| v as f32).collect()],
    });
    out
}

/// A regression model whose `L1` is the Cholesky factor of its own
/// basis's `K_M` (so `|L1^-1 k|^2 <= prior`, as a fit gives), SE basis
/// functions with shared widths, conditioned on `rows` in f64: a fitted
/// SPGP in the whitened form, as `sgp fit --updatable` writes one.
pub fn fitted_spec(
    seed: u64,
    m: usize,
    d: usize,
    rows: &[(Vec<f64>, f64)],
    observation: Observation,
) -> ModelSpec {
    let mut spec = random_spec(seed, m, d, d, false, false, true, Link::Identity);
    spec.amplitudes = vec![spec.prior];
    let a = f64::from(spec.prior);
    let c = |i: usize, g: usize| f64::from(spec.centres[i * d + g]);
    let mut k = vec![vec![0.0; m]; m];
    for i in 0..m {
        for j in 0..m {
            let q: f64 = (0..d)
                .map(|g| f64::from(spec.widths[g]) * (c(i, g) - c(j, g)).powi(2))
                .sum();
            k[i][j] = a * (-0.5 * q).exp() + if i == j { 1e-5 * a } else { 0.0 };
        }
    }
    spec.l1 = packed(&cholesky(&k));
    let (alpha, s) = batch_posterior(&spec, rows, observation);
    with_posterior(&spec, &alpha, &s, observation)
}

/// `n` raw rows near `spec`'s data (inputs within its training range) with
/// smooth targets plus noise of standard deviation `noise`.
pub fn rows_for(spec: &ModelSpec, n: usize, seed: u64, noise: f64) -> Vec<(Vec<f64>, f64)> {
    let mut numbers = Numbers::new(seed);
    let d = spec.shape.input_dim as usize;
    (0..n)
        .map(|_| {
            let x: Vec<f64> = (0..d)
                .map(|i| {
                    f64::from(spec.x_mean[i]) + 2.0 * f64::from(spec.x_scale[i]) * numbers.next()
                })
                .collect();
            let s: f64 = x
                .iter()
                .zip(&spec.x_mean)
                .zip(&spec.x_scale)
                .map(|((v, m), sc)| (v - f64::from(*m)) / f64::from(*sc))
                .sum();
            let y = f64::from(spec.y_mean)
                + f64::from(spec.y_scale) * (0.8 * s.sin())
                + noise * numbers.next();
            (x, y)
        })
        .collect()
}
