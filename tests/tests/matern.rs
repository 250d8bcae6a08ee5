//! Matérn kernels from the fit to the device (issue 39): every family
//! that takes one fits with it, records it in the blob, and passes the
//! export check (the runtime reproduces the trainer's f64 predictions);
//! VSGP refuses it and says why.

use sgp_runtime::{Kernel, ModelSpec};
use sgp_trainer::data::Dataset;
use sgp_trainer::export::cure::export_fitted;
use sgp_trainer::fit::{fit, FitParams, Method};
use sgp_trainer::tools::synth::{classification_dataset, synthetic, ClassShape};

fn regression() -> Dataset {
    let (x, y) = synthetic(150, 2, 5);
    Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).expect("valid")
}

/// A fit of `method` with `kernel`, exported through the check.
fn exported(data: &Dataset, method: Method, kernel: Kernel) -> ModelSpec {
    let dim = if method.is_projected() { 1 } else { 0 };
    let mut params = FitParams::defaults(method, 8, dim, 0);
    params.set_kernel(kernel);
    params.optimiser_mut().max_iter = 30;
    let mut fitted = fit(data, &params, &mut |_| {})
        .unwrap_or_else(|e| panic!("{} {}: {e}", method.name(), kernel.name()));
    assert_eq!(fitted.report.hyper.kernel, kernel.name());
    let (out, _) = export_fitted(&mut fitted, &data.raw_x(), false)
        .unwrap_or_else(|e| panic!("{} {}: {e}", method.name(), kernel.name()));
    assert!(out.fidelity.passes(), "{} {}", method.name(), kernel.name());
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
        assert_eq!(spec.version(), 7);
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
    let mut params = FitParams::defaults(Method::Vsgp, 8, 0, 0);
    params.set_kernel(Kernel::Matern32);
    let err = fit(&regression(), &params, &mut |_| {})
        .expect_err("vsgp takes SE only")
        .to_string();
    assert!(
        err.contains("vsgp works with the squared-exponential kernel only, not --kernel matern32"),
        "{err}"
    );
}
