//! What a reproducible fit's arithmetic costs: the dense products and
//! triangular solves of the sparse objectives at their usual shapes, with
//! the default kernels (`faer`) and with the fixed-order ones of
//! `sgp fit --reproducible`, one thread each.
//! `cargo run --release -p sgp-trainer --example fixed_order_cost`

use std::time::Instant;

use nalgebra::DMatrix;
use sgp_trainer::numerics::linalg::{cholesky, mat_ref, mul, solve_lower_mut};
use sgp_trainer::numerics::reproducible::reproducibly;

/// Best seconds per call over five batches of `reps` calls.
fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> f64 {
    f();
    (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..reps {
                std::hint::black_box(f());
            }
            start.elapsed().as_secs_f64() / reps as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> sgp_trainer::Result<()> {
    println!("products (rows x inner x columns), GFLOP/s: default, reproducible, ratio");
    // M x M by M x chunk (V = L^-1 Kuf), M x chunk by chunk x M (H V^T), the
    // kernel's distances (M x D by D x chunk), and a large square product.
    let shapes = [
        (32, 32, 512, false),
        (50, 50, 512, false),
        (100, 100, 512, false),
        (50, 512, 50, true),
        (50, 8, 512, false),
        (256, 256, 256, false),
    ];
    for (r, k, c, rhs_transposed) in shapes {
        let a = DMatrix::<f64>::from_fn(r, k, |i, j| ((i * 7 + j * 3) % 11) as f64 * 0.1);
        let b = if rhs_transposed {
            DMatrix::<f64>::from_fn(c, k, |i, j| ((i * 5 + j) % 13) as f64 * 0.1)
        } else {
            DMatrix::<f64>::from_fn(k, c, |i, j| ((i * 5 + j) % 13) as f64 * 0.1)
        };
        let rhs = if rhs_transposed {
            mat_ref(&b).transpose()
        } else {
            mat_ref(&b)
        };
        let reps = (2e8 / (r * k * c) as f64).max(1.0) as usize;
        let default = time(reps, || mul(mat_ref(&a), rhs));
        let fixed = reproducibly(|| time(reps, || mul(mat_ref(&a), rhs)))?;
        let rate = |t: f64| 2.0 * (r * k * c) as f64 / t / 1e9;
        let t = if rhs_transposed { "^T" } else { "" };
        println!(
            "  {r} x {k} x {c}{t}: {:.1}, {:.1}, {:.2}",
            rate(default),
            rate(fixed),
            fixed / default
        );
    }
    println!("solves L \\ B (M x M by M x 512), microseconds: default, reproducible, ratio");
    for m in [32usize, 50, 100] {
        let x = DMatrix::<f64>::from_fn(m, m, |i, j| {
            if i == j {
                m as f64
            } else {
                ((i * 7 + j * 3) % 11) as f64 * 0.01
            }
        });
        let l = cholesky(&(&x * x.transpose()))?;
        let b = DMatrix::<f64>::from_fn(m, 512, |i, j| ((i * 5 + j) % 13) as f64 * 0.1);
        let reps = (1e8 / (m * m * 512) as f64).max(1.0) as usize;
        let solve = || {
            let mut y = b.clone();
            solve_lower_mut(&l, &mut y).map(|()| y)
        };
        let default = time(reps, solve);
        let fixed = reproducibly(|| time(reps, solve))?;
        println!(
            "  M = {m}: {:.1}, {:.1}, {:.2}",
            default * 1e6,
            fixed * 1e6,
            fixed / default
        );
    }
    Ok(())
}
