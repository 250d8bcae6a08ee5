use sgp_trainer::fit::{fit, ExactParams, FitParams};
use sgp_trainer::synth::{dataset, Shape};
fn main() {
    let data = dataset(Shape::Duplicated, 30, 1).unwrap();
    let f = fit(
        &data,
        &FitParams::Exact(ExactParams::default()),
        &mut |_| {},
    )
    .unwrap();
    println!("{:?}", f.report);
    let x = data.raw_x();
    let p = f.model.predict_raw(&x).unwrap();
    let dev = sgp_trainer::device::predict_all(
        &sgp_trainer::export::check(&f.model, &x).unwrap().blob,
        &x,
    )
    .unwrap();
    for i in 0..10 {
        println!(
            "x {:.4} y {:.4} f64 {:.4} {:.3e} f32 {:.4} {:.3e}",
            x[(i, 0)],
            data.raw_y()[i],
            p.mean[i],
            p.var[i],
            dev[i].mean,
            dev[i].variance
        );
    }
    println!("beta {:?}", &f.model.form.beta.as_slice()[..10]);
    for eps in [1e-4, 1e-2] {
        let (m, nlml) = f.with_jitter(eps).unwrap();
        let p = m.predict_raw(&x).unwrap();
        println!(
            "eps {eps} nlml {nlml} mean0 {} beta {:?}",
            p.mean[0],
            &m.form.beta.as_slice()[..4]
        );
    }
}
