//! Classification benchmark: `svgp` and the IVM at M = 128 (or N if
//! smaller) on the sets `bench/classify/make_sets.py` writes (generated
//! ring, XOR, label noise 0-10%, unbalanced classes; digits one-vs-rest,
//! breast cancer, wine), each fitted on its training CSV with the defaults,
//! exported (the blob and its runtime check) and scored by the f32 runtime
//! on the test CSV.
//!
//! ```sh
//! python bench/classify/make_sets.py          # once (numpy, scikit-learn)
//! cargo run --release -p sgp-trainer --example classify_suite
//! cargo run --release -p sgp-trainer --example classify_suite -- --only ring6 --m 64
//! ```
//!
//! Prints a markdown table: test error, log loss, Brier score, fit seconds
//! and blob bytes. The peers (GPflow SVGP, an exact GP classifier, an RBF
//! SVM) on the same CSVs: `bench/classify/run_peers.py`.

use std::path::PathBuf;
use std::time::Instant;

use sgp_trainer::data::{is_class, Dataset};
use sgp_trainer::evaluate::evaluate_classifier;
use sgp_trainer::export::export;
use sgp_trainer::fit::{fit, Method};
use sgp_trainer::options::Options;
use sgp_trainer::Result;

mod bench_sets;

fn main() -> Result<()> {
    let args = bench_sets::args()?;
    let (dir, names) = bench_sets::sets("", &args.only)?;
    let m = args.m;
    println!("| set | model | M | error | log loss | Brier | fit s | blob bytes |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for name in names {
        let train_path: PathBuf = dir.join(format!("{name}-train.csv"));
        let test_path = dir.join(format!("{name}-test.csv"));
        let train = Dataset::from_csv(&train_path, Some("y"))?.into_binary(Some(1.0))?;
        let test_input = sgp_trainer::files::Input::open(&test_path)?;
        let (x_test, y_test) = test_input.read_inputs_and_target(&train.input_names, "y")?;
        let labels = y_test.map(|v| if is_class(v, 1.0) { 1.0 } else { -1.0 });
        let m = m.min(train.n_rows());
        for method in [Method::Svgp, Method::Ivm] {
            eprintln!("{name}: {} M = {m}", method.name());
            let started = Instant::now();
            let mut fitted = fit(&train, &Options::defaults(method, m, 0, 0)?, &mut |_| {})?;
            let seconds = started.elapsed().as_secs_f64();
            let exported = export(&mut fitted, &train.raw_x(), false)?;
            let e = evaluate_classifier(&exported.blob, &x_test, &labels)?;
            println!(
                "| {name} | {} | {m} | {:.1}% | {:.3} | {:.3} | {seconds:.1} | {} |",
                method.name(),
                100.0 * e.error_rate,
                e.log_loss,
                e.brier,
                exported.blob.len()
            );
        }
    }
    Ok(())
}
