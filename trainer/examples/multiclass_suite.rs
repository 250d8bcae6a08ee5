//! Multi-class benchmark: `svgp` with one probit latent per class on one
//! basis (M = 128, or N if smaller) on the sets `bench/classify/make_sets.py`
//! writes to `data/multiclass` (ten-class digits, three-class wine, four
//! noisy blobs), scored on the test CSV through both links the blob format
//! offers: normalised one-vs-rest probits (what the fit trains) and the
//! moderated softmax of the same latents.
//!
//! ```sh
//! python bench/classify/make_sets.py          # once (numpy, scikit-learn)
//! cargo run --release -p sgp-trainer --example multiclass_suite
//! cargo run --release -p sgp-trainer --example multiclass_suite -- --only digits10 --m 64
//! ```
//!
//! Prints a markdown table: test error, log loss, expected calibration
//! error (top class, 10 bins) and fit seconds. The tuned RBF SVM on the
//! same CSVs: `bench/classify/run_peers.py --multiclass --tools svm`.

use std::time::Instant;

use sgp_trainer::data::Dataset;
use sgp_trainer::evaluate::class_scores as scores;
use sgp_trainer::fit::svgp::SvgpParams;
use sgp_trainer::fit::{fit, FitParams};
use sgp_trainer::model::multiclass::{probabilities, ClassLink};
use sgp_trainer::Result;

mod bench_sets;

fn main() -> Result<()> {
    let args = bench_sets::args()?;
    let (dir, names) = bench_sets::sets("multiclass", &args.only)?;
    let m = args.m;
    println!("| set | K | M | link | error | log loss | ECE | fit s |");
    println!("|---|---:|---:|---|---:|---:|---:|---:|");
    for name in names {
        let train = Dataset::from_csv(dir.join(format!("{name}-train.csv")), Some("y"))?;
        let test_path = dir.join(format!("{name}-test.csv"));
        let test_input = sgp_trainer::files::Input::open(&test_path)?;
        let (x_test, y_test) = test_input.read_inputs_and_target(&train.input_names, "y")?;
        let m = m.min(train.n_rows());
        let params = SvgpParams {
            m,
            ..SvgpParams::default()
        };
        eprintln!("{name}: svgp M = {m}");
        let started = Instant::now();
        let classes = train.clone().into_classes()?;
        let fit = fit(&classes, &FitParams::Svgp(params), &mut |_| {})?;
        let seconds = started.elapsed().as_secs_f64();
        let classes = train.target_classes();
        let truth: Vec<usize> = y_test
            .iter()
            .map(|&v| {
                classes
                    .iter()
                    .position(|&c| (c - v).abs() < 1e-6)
                    .unwrap_or(usize::MAX)
            })
            .collect();
        for link in [ClassLink::OneVsRest, ClassLink::Softmax] {
            let s = scores(&probabilities(&fit.set, &x_test, link)?, &truth);
            println!(
                "| {name} | {} | {m} | {link:?} | {:.2}% | {:.3} | {:.3} | {seconds:.1} |",
                classes.len(),
                100.0 * s.error_rate,
                s.log_loss,
                s.ece
            );
        }
    }
    Ok(())
}
