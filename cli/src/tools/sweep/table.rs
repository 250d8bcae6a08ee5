//! The sweep's table as `sgp sweep` prints it: a header, one row per grid
//! point (and one line per output of several), notes, the choice and the
//! cost formulas.

use super::*;

impl fmt::Display for Sweep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label_width = self
            .rows
            .iter()
            .map(|r| r.point.model.name().len())
            .max()
            .unwrap_or(5)
            .max(5);
        self.write_header(f, label_width)?;
        for row in &self.rows {
            self.write_row(f, row, label_width)?;
        }
        self.write_notes(f)?;
        self.write_choice(f)?;
        writeln!(f)?;
        writeln!(
            f,
            "instr: Cortex-M4 instructions per prediction, estimated by {} (see --help)",
            self.cost_formula
        )?;
        write!(
            f,
            "M3 fixed: Cortex-M3 (no FPU) instructions of the fixed-point form \
             (sgp_runtime::FixedModel, same blob), estimated by {}; - where the model has none",
            self.fixed_cost_formula
        )
    }
}

impl Sweep {
    /// What was fitted on what, several outputs' rule, the column names.
    fn write_header(&self, f: &mut fmt::Formatter<'_>, label_width: usize) -> fmt::Result {
        writeln!(
            f,
            "{} fits on {} ({} rows, D = {}), evaluated on {} ({} rows) through the runtime; \
             budget: {}",
            self.rows.len(),
            self.train,
            self.train_rows,
            self.inputs,
            self.test,
            self.test_rows,
            self.budget.describe()
        )?;
        if self.targets.len() > 1 {
            writeln!(
                f,
                "{} outputs ({}) on one basis per model: NLPD is the sum of the outputs' (the \
                 output vector's), RMSE the vector's (root of the summed MSEs), cover95 the \
                 worst output's; each output's own figures below its row",
                self.targets.len(),
                self.targets.join(", ")
            )?;
        }
        let accuracy = match self.task {
            Task::Regression => ["NLPD", "RMSE", "cover95"],
            Task::Classification => ["error", "log loss", "Brier"],
        };
        writeln!(
            f,
            "  {:<label_width$} {:>5} {:>3} {:>8} {:>9} {:>10} {:>8} {:>7} {:>8} {:>9} {:>8} {:>8}  budget",
            "model",
            "M",
            "G",
            "kernel",
            accuracy[0],
            accuracy[1],
            accuracy[2],
            "fit s",
            "blob B",
            "RAM B",
            "instr",
            "M3 fixed",
        )
    }

    /// One grid point's row: its figures, or why it failed.
    fn write_row(&self, f: &mut fmt::Formatter<'_>, row: &Row, label_width: usize) -> fmt::Result {
        let mark = if row.chosen { '*' } else { ' ' };
        let name = row.point.model.name();
        let done = match &row.outcome {
            Outcome::Ok(done) => done,
            Outcome::Failed { reason, .. } => {
                let m = row.point.m.map_or("-".into(), |m| m.to_string());
                let g = row.point.dim.map_or("-".into(), |g| g.to_string());
                let kernel = row.point.kernel.name();
                return writeln!(
                    f,
                    "{mark} {name:<label_width$} {m:>5} {g:>3} {kernel:>8}  failed after {:.2} \
                     s: {reason}",
                    row.fit_seconds
                );
            }
        };
        let figures = match &done.figures {
            Figures::Regression(e) => regression_cells(e),
            Figures::Classification(c) => [
                format!("{:.4}", c.error_rate),
                format!("{:.4}", c.log_loss),
                format!("{:.4}", c.brier),
            ],
        };
        let budget = if !self.budget.is_set() {
            "-".to_string()
        } else if done.over_budget.is_empty() {
            "ok".to_string()
        } else {
            let over: Vec<&str> = done.over_budget.iter().map(|l| l.name()).collect();
            format!("over: {}", over.join(", "))
        };
        writeln!(
            f,
            "{mark} {name:<label_width$} {:>5} {:>3} {:>8} {:>9} {:>10} {:>8} {:>7.2} \
             {:>8} {:>9} {:>8} {:>8}  {budget}",
            done.n_basis,
            done.feature_dim,
            row.point.kernel.name(),
            figures[0],
            figures[1],
            figures[2],
            row.fit_seconds,
            done.blob_bytes,
            done.ram_bytes,
            done.instructions,
            done.fixed_point
                .map_or("-".to_string(), |c| c.instructions.to_string()),
        )?;
        for output in &done.outputs {
            let [nlpd, rmse, cover] = regression_cells(&output.evaluation);
            let name = &output.output;
            writeln!(
                f,
                "    {name:<label_width$} {:>18} {nlpd:>9} {rmse:>10} {cover:>8}",
                ""
            )?;
        }
        Ok(())
    }

    /// Where a row's model differs from what was asked, or was cured.
    fn write_notes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for row in &self.rows {
            let Some(done) = row.done() else { continue };
            if row.point.m.is_some_and(|m| m != done.n_basis) {
                writeln!(
                    f,
                    "note: {}: the model has {} basis functions",
                    row.point.label(),
                    done.n_basis
                )?;
            }
            if let Some(c) = &done.cure {
                writeln!(
                    f,
                    "note: {}: export cured, jitter {:.0e} -> {:.0e} s2 (training NLML {:.4} -> {:.4})",
                    row.point.label(),
                    c.from_eps,
                    c.to_eps,
                    c.nlml_before,
                    c.nlml_after
                )?;
            }
        }
        Ok(())
    }

    /// The chosen model and by what rule, or why none was.
    fn write_choice(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fitted = self.rows.iter().filter(|r| r.done().is_some()).count();
        let criterion = match self.task {
            Task::Regression if self.targets.len() > 1 => "lowest summed test NLPD",
            Task::Regression => "lowest test NLPD",
            Task::Classification => "lowest test error rate",
        };
        match self.chosen.and_then(|i| self.rows.get(i)) {
            Some(row) => {
                let within = self
                    .rows
                    .iter()
                    .filter(|r| r.done().is_some_and(|d| d.over_budget.is_empty()))
                    .count();
                write!(
                    f,
                    "* chosen: {} ({criterion} of the {within} of {fitted} fitted models within the \
                     budget)",
                    row.point.label()
                )
            }
            None if fitted == 0 => write!(f, "no model chosen: every grid point failed"),
            None => write!(
                f,
                "no model chosen: none of the {fitted} fitted models is within the budget"
            ),
        }
    }
}

/// A regression row's NLPD, RMSE and 95% coverage as the table prints them.
fn regression_cells(e: &Evaluation) -> [String; 3] {
    let (nlpd, cover) = (format!("{:.4}", e.nlpd), format!("{:.3}", e.coverage_95));
    [nlpd, number(e.rmse), cover]
}

/// Four decimals, or scientific notation where they would not show the
/// value (raw targets can be of any scale).
fn number(v: f64) -> String {
    if v != 0.0 && (v.abs() < 1e-2 || v.abs() >= 1e5) {
        format!("{v:.3e}")
    } else {
        format!("{v:.4}")
    }
}
