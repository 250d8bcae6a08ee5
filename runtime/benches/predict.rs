//! Host cost of one prediction (mean only, mean + variance, and both with
//! their input gradients) as M and D grow. Run with
//! `cargo bench -p sgp-runtime --features alloc`.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use sgp_runtime::{Link, Model};
use std::hint::black_box;

fn bench_size<const M: usize, const D: usize>(c: &mut Criterion) {
    let spec = common::random_spec(42, M, D, D, false, false, true, Link::Identity);
    let model = Model::<M, D, D>::from_bytes(&spec.to_bytes().unwrap()).unwrap();
    let x: Vec<f32> = (0..D).map(|i| 0.1 * i as f32).collect();
    let label = format!("M={M},D={D}");
    let mut group = c.benchmark_group("runtime");
    group.bench_with_input(BenchmarkId::new("predict", &label), &x, |b, x| {
        b.iter(|| model.predict(black_box(x)))
    });
    group.bench_with_input(BenchmarkId::new("mean", &label), &x, |b, x| {
        b.iter(|| model.mean(black_box(x)))
    });
    group.bench_with_input(
        BenchmarkId::new("predict_with_gradient", &label),
        &x,
        |b, x| b.iter(|| model.predict_with_gradient(black_box(x))),
    );
    group.finish();
}

fn benches(c: &mut Criterion) {
    bench_size::<16, 2>(c);
    bench_size::<16, 8>(c);
    bench_size::<32, 2>(c);
    bench_size::<32, 4>(c);
    bench_size::<32, 8>(c);
    bench_size::<64, 2>(c);
    bench_size::<64, 8>(c);
    bench_size::<128, 2>(c);
    bench_size::<128, 8>(c);
}

criterion_group! {
    name = runtime;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = benches
}
criterion_main!(runtime);
