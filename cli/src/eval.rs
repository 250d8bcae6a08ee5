//! `sgp eval`: a blob's accuracy on a CSV with targets.

use nalgebra::{DMatrix, DVector};
use sgp_trainer::data::labels;
use sgp_trainer::evaluate::{
    evaluate_blob, evaluate_classifier, ClassEvaluation, Evaluation, OutputEvaluation,
};
use sgp_trainer::export::artefact::{is_container, output_descriptions};
use sgp_trainer::Result;

use super::{in_file, to_json, BlobAndData, BlobOnData, Opened};

/// `sgp eval` of a multi-output regression (one blob or a container):
/// each output against its own target column (named as in the blob).
pub(crate) fn eval_outputs(input: &BlobAndData, opened: &Opened, json: bool) -> Result<()> {
    input.refuse_target("evaluated")?;
    let mut all = Vec::new();
    for output in output_descriptions(&opened.blob)? {
        let (x, y) = opened
            .data
            .read_inputs_and_target(&output.input_names, &output.target_name)?;
        all.push(OutputEvaluation {
            evaluation: evaluate_blob(&output.to_bytes()?, &x, &y)
                .map_err(in_file(opened.data.name()))?,
            output: output.target_name,
        });
    }
    if json {
        println!("{}", to_json(&all)?);
        return Ok(());
    }
    for (k, e) in all.iter().enumerate() {
        if k > 0 {
            println!();
        }
        println!("output          {}", e.output);
        print_evaluation(&e.evaluation);
    }
    Ok(())
}

pub(crate) fn eval_command(input: &BlobAndData, json: bool) -> Result<()> {
    let opened = input.open(None)?;
    let spec = &opened.spec;
    let several = !spec.outputs.is_empty() || is_container(&opened.blob);
    if several && spec.shape.link == sgp_runtime::Link::Identity {
        return eval_outputs(input, &opened, json);
    }
    if spec.shape.link != sgp_runtime::Link::Identity {
        return eval_classes(input, &opened, json);
    }
    let source = opened.data.name().to_owned();
    let BlobOnData { blob, x, y, .. } = opened.read(input.target.as_deref())?;
    let evaluation = evaluate_blob(&blob, &x, &y).map_err(in_file(&source))?;
    if json {
        println!("{}", to_json(&evaluation)?);
    } else {
        print_evaluation(&evaluation);
    }
    Ok(())
}

/// What `sgp eval --json` prints for a classifier of `K > 2` classes.
#[derive(serde::Serialize)]
pub(crate) struct ClassesEvaluation {
    rows: usize,
    /// The class labels, in class order.
    classes: Vec<String>,
    error_rate: f64,
    /// Mean `-ln p(true class)`, nats.
    log_loss: f64,
    /// Expected calibration error of the most probable class.
    ece: f64,
}

/// `sgp eval` of a classifier: the test target's labels (text or numbers)
/// mapped through the blob's; the binary figures for one probit output,
/// error rate, log loss and ECE for `K` classes.
pub(crate) fn eval_classes(input: &BlobAndData, opened: &Opened, json: bool) -> Result<()> {
    let (blob, spec) = (&opened.blob, &opened.spec);
    let named = in_file(opened.data.name());
    let target = input.target.as_deref().unwrap_or(&spec.target_name);
    let (x, truth) = opened.data.read_classes(spec, target)?;
    let names = labels::blob_labels(spec);
    if spec.shape.link == sgp_runtime::Link::Probit {
        let signs = DVector::from_iterator(
            truth.len(),
            truth.iter().map(|&k| if k == 1 { 1.0 } else { -1.0 }),
        );
        let evaluation = evaluate_classifier(blob, &x, &signs).map_err(&named)?;
        if json {
            println!("{}", to_json(&evaluation)?);
        } else {
            let positive = names.get(1).map_or("", String::as_str);
            print_class_evaluation(&evaluation, positive);
        }
        return Ok(());
    }
    let classified = sgp_trainer::model::device::classify_all(blob, &x).map_err(&named)?;
    let k = names.len();
    let p = DMatrix::from_row_iterator(
        classified.len(),
        k,
        classified
            .iter()
            .flat_map(|(_, q)| (0..k).map(|j| q.get(j).map_or(0.0, |&v| f64::from(v)))),
    );
    let s = sgp_trainer::evaluate::class_scores(&p, &truth);
    let evaluation = ClassesEvaluation {
        rows: truth.len(),
        classes: names,
        error_rate: s.error_rate,
        log_loss: s.log_loss,
        ece: s.ece,
    };
    if json {
        println!("{}", to_json(&evaluation)?);
        return Ok(());
    }
    println!("rows        {}", evaluation.rows);
    println!("classes     {}", evaluation.classes.join(", "));
    println!("error rate  {:.6}", evaluation.error_rate);
    println!(
        "log loss    {:.6}  (mean -ln p(true class), nats)",
        evaluation.log_loss
    );
    println!(
        "ECE         {:.6}  (expected calibration error of the most probable class, {} \
         confidence bins)",
        evaluation.ece,
        ClassEvaluation::ECE_BINS
    );
    Ok(())
}

pub(crate) fn print_class_evaluation(e: &ClassEvaluation, positive: &str) {
    println!("rows        {}", e.rows);
    println!("error rate  {:.6}", e.error_rate);
    println!("log loss    {:.6}  (mean binary NLPD, nats)", e.log_loss);
    println!("Brier       {:.6}", e.brier);
    println!(
        "ECE         {:.6}  (expected calibration error, {} confidence bins)",
        e.ece,
        ClassEvaluation::ECE_BINS
    );
    println!(
        "confusion   positive class {positive}: {} true positive, {} false positive, {} true \
         negative, {} false negative",
        e.true_positives, e.false_positives, e.true_negatives, e.false_negatives
    );
}

pub(crate) fn print_evaluation(e: &Evaluation) {
    println!("rows        {}", e.rows);
    println!("RMSE        {:.6}", e.rmse);
    println!("MSE         {:.6}", e.mse);
    println!("SMSE        {:.6}", e.smse);
    println!("mean NLPD   {:.6}", e.nlpd);
    println!("95% cover   {:.3}", e.coverage_95);
}
