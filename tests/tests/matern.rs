//! Matérn kernels from the fit to the device (issue 39): every family
//! that takes one fits with it through the options builder, records it in
//! the blob, and passes the export check (the runtime reproduces the
//! trainer's f64 predictions); VSGP refuses it and says why.

use sgp_runtime::{Kernel, ModelSpec};
use sgp_trainer::choose::{fit, Asked};
use sgp_trainer::data::Dataset;
use sgp_trainer::fit::Method;
use sgp_trainer::options::{KernelChoice, ModelChoice, Options};
use sgp_trainer::synth::{classification_dataset, synthetic, ClassShape};

fn regression() -> Dataset {
    let (x, y) = synthetic(150, 2, 5);
    Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).expect("valid")
}

/// `sgp fit --model METHOD --m 8 --max-iter 30 --kernel KERNEL`.
fn options(method: Method, kernel: Kernel) -> Options {
    Options {
        model: Some(ModelChoice::Family(method)),
        m: (method != Method::Exact).then_some(8),
        dim: matches!(method, Method::SpgpDr | Method::SpgpPca).then_some(1),
        max_iter: Some(30),
        kernel: Some(KernelChoice::Kernel(kernel)),
        ..Options::default()
    }
}

/// A fit of `method` with `kernel`, exported through the check.
fn exported(data: &Dataset, method: Method, kernel: Kernel) -> ModelSpec {
    let options = options(method, kernel);
    let name = format!("{} {}", method.name(), kernel.name());
    let request = options
        .request(data)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut fitted = fit(data, &request, &mut |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(fitted.report.kernel, kernel.name());
    let out = options
        .export(&mut fitted, &data.raw_x(), false)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(out.fidelity.passes(), "{name}");
    ModelSpec::from_bytes(&out.blob).expect("blob")
}

#[test]
fn every_family_but_vsgp_fits_exports_and_records_a_matern_kernel() {
    let data = regression();
    let methods = [
        Method::Spgp,
        Method::SpgpHs,
        Method::SpgpDr,
        Method::SpgpPca,
        Method::Gplasso,
        Method::Ivm,
        Method::Exact,
    ];
    for method in methods {
        let spec = exported(&data, method, Kernel::Matern32);
        assert_eq!(spec.kernel, Kernel::Matern32, "{}", method.name());
        assert_eq!(spec.version(), 8);
    }
    for kernel in [Kernel::Matern12, Kernel::Matern52] {
        assert_eq!(exported(&data, Method::Spgp, kernel).kernel, kernel);
    }
    // The SE default still writes the oldest version that holds it.
    let se = exported(&data, Method::Spgp, Kernel::SquaredExponential);
    assert_eq!((se.kernel, se.version()), (Kernel::SquaredExponential, 5));
    let classes = classification_dataset(ClassShape::Moons, 120, 1).expect("moons");
    for method in [Method::Svgp, Method::Ivm, Method::Exact] {
        let spec = exported(&classes, method, Kernel::Matern52);
        assert_eq!(
            spec.kernel,
            Kernel::Matern52,
            "{} classifier",
            method.name()
        );
    }
}

#[test]
fn vsgp_refuses_a_matern_kernel_and_says_why() {
    let err = options(Method::Vsgp, Kernel::Matern32)
        .request(&regression())
        .expect_err("vsgp takes SE only")
        .to_string();
    assert!(
        err.contains("--kernel does not apply to vsgp") && err.contains("no closed form"),
        "{err}"
    );
}

#[test]
fn auto_weighs_the_families_that_take_the_kernel() {
    let options = Options {
        kernel: Some(KernelChoice::Kernel(Kernel::Matern32)),
        ..Options::default()
    };
    let request = options.request(&regression()).expect("request");
    let families = request.asked.families();
    assert!(!families.contains(&Method::Vsgp), "{families:?}");
    assert!(families.contains(&Method::Spgp), "{families:?}");
    let Asked::Auto(candidates) = &request.asked else {
        panic!("auto asked for")
    };
    assert!(candidates.iter().all(|p| p.kernel() == Kernel::Matern32));
}
