//! The L-BFGS iteration: the two-loop recursion for the direction, then a
//! line search along it (Nocedal and Wright 2006, algorithm 7.4).
//!
//! Argmin's arithmetic operation for operation (the same fits bit for bit),
//! but the pairs' buffers are recycled and `y . s`, `y . y` taken once per
//! pair rather than every iteration.

use std::collections::VecDeque;

use argmin::core::{
    CostFunction, Error as ArgminError, Executor, Gradient, IterState, LineSearch,
    OptimizationResult, Problem, Solver, State, TerminationReason, TerminationStatus, KV,
};

/// The state argmin's executor carries between iterations.
pub(super) type VecState = IterState<Vec<f64>, Vec<f64>, (), (), (), f64>;

/// One remembered step `s = x_{k+1} - x_k` and gradient change
/// `y = g_{k+1} - g_k`, with the two products the recursion needs.
struct Pair {
    s: Vec<f64>,
    y: Vec<f64>,
    /// `y . s`, the curvature along `s`.
    ys: f64,
    /// `y . y`.
    yy: f64,
}

/// L-BFGS with line search `L`, remembering `memory` pairs; stops when the
/// gradient's norm falls below `sqrt(eps)` (the other stopping tests are
/// the caller's).
pub(super) struct Lbfgs<L> {
    linesearch: L,
    memory: usize,
    pairs: VecDeque<Pair>,
}

/// `a . b`, summed in order (as argmin sums it: the same fits bit for bit).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

impl<L> Lbfgs<L> {
    /// A solver remembering `memory` (at least 1) pairs.
    pub(super) fn new(linesearch: L, memory: usize) -> Self {
        Lbfgs {
            linesearch,
            memory: memory.max(1),
            pairs: VecDeque::with_capacity(memory.max(1)),
        }
    }

    /// The quasi-Newton direction `-H g` for the gradient `grad`.
    fn direction(&self, grad: &[f64]) -> Vec<f64> {
        // The initial inverse Hessian is `gamma I`, scaled by the newest pair.
        let gamma = self.pairs.back().map_or(1.0, |p| p.ys / p.yy);
        let mut q = grad.to_vec();
        let mut alpha = vec![0.0; self.pairs.len()];
        for (pair, a) in self.pairs.iter().zip(alpha.iter_mut()).rev() {
            *a = dot(&pair.s, &q) * (1.0 / pair.ys);
            for (q, y) in q.iter_mut().zip(&pair.y) {
                *q -= y * *a;
            }
        }
        for v in &mut q {
            *v *= gamma;
        }
        for (pair, a) in self.pairs.iter().zip(&alpha) {
            let beta = dot(&pair.y, &q) * (1.0 / pair.ys);
            let c = a - beta;
            for (r, s) in q.iter_mut().zip(&pair.s) {
                *r += s * c;
            }
        }
        for v in &mut q {
            *v = -*v;
        }
        q
    }

    /// Remembers the step from `from` to `to` and the gradient change from
    /// `from_grad` to `to_grad`, forgetting the oldest pair (and reusing
    /// its buffers) once `memory` are held.
    fn remember(&mut self, (from, to): (&[f64], &[f64]), (from_grad, to_grad): (&[f64], &[f64])) {
        let mut pair = if self.pairs.len() >= self.memory {
            self.pairs.pop_front()
        } else {
            None
        }
        .unwrap_or_else(|| Pair {
            s: Vec::with_capacity(to.len()),
            y: Vec::with_capacity(to.len()),
            ys: 0.0,
            yy: 0.0,
        });
        pair.s.clear();
        pair.s.extend(to.iter().zip(from).map(|(a, b)| a - b));
        pair.y.clear();
        pair.y
            .extend(to_grad.iter().zip(from_grad).map(|(a, b)| a - b));
        pair.ys = dot(&pair.y, &pair.s);
        pair.yy = dot(&pair.y, &pair.y);
        self.pairs.push_back(pair);
    }
}

impl<O, L> Solver<O, VecState> for Lbfgs<L>
where
    O: CostFunction<Param = Vec<f64>, Output = f64>
        + Gradient<Param = Vec<f64>, Gradient = Vec<f64>>,
    L: Clone + LineSearch<Vec<f64>, f64> + Solver<O, VecState>,
{
    fn name(&self) -> &str {
        "L-BFGS"
    }

    fn init(
        &mut self,
        problem: &mut Problem<O>,
        mut state: VecState,
    ) -> Result<(VecState, Option<KV>), ArgminError> {
        let param = state
            .take_param()
            .ok_or_else(|| ArgminError::msg("L-BFGS: no starting point"))?;
        let cost = match state.get_cost() {
            c if c.is_infinite() => problem.cost(&param)?,
            c => c,
        };
        let grad = match state.take_gradient() {
            Some(g) => g,
            None => problem.gradient(&param)?,
        };
        Ok((state.param(param).cost(cost).gradient(grad), None))
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<O>,
        mut state: VecState,
    ) -> Result<(VecState, Option<KV>), ArgminError> {
        let param = state
            .take_param()
            .ok_or_else(|| ArgminError::msg("L-BFGS: no parameters in the state"))?;
        let grad = state
            .take_gradient()
            .ok_or_else(|| ArgminError::msg("L-BFGS: no gradient in the state"))?;
        let cost = state.get_cost();
        let mut linesearch = self.linesearch.clone();
        linesearch.search_direction(self.direction(&grad));
        let inner = problem
            .take_problem()
            .ok_or_else(|| ArgminError::msg("L-BFGS: the problem is missing"))?;
        let searched = Executor::new(inner, linesearch)
            .configure(|s| s.param(param.clone()).gradient(grad.clone()).cost(cost))
            .ctrlc(false)
            .run();
        let OptimizationResult {
            problem: mut searched_problem,
            state: mut searched_state,
            ..
        } = match searched {
            Ok(result) => result,
            Err(e) => {
                return Ok((
                    state.terminate_with(TerminationReason::SolverExit(format!(
                        "Line search terminated with: '{e}'"
                    ))),
                    None,
                ))
            }
        };
        let next = searched_state
            .take_param()
            .ok_or_else(|| ArgminError::msg("L-BFGS: the line search returned no point"))?;
        let next_cost = searched_state.get_cost();
        problem.problem = searched_problem.take_problem();
        problem.consume_func_counts(searched_problem);
        let next_grad = problem.gradient(&next)?;
        self.remember((&param, &next), (&grad, &next_grad));
        Ok((state.param(next).cost(next_cost).gradient(next_grad), None))
    }

    fn terminate(&mut self, state: &VecState) -> TerminationStatus {
        let norm = state.get_gradient().map_or(f64::INFINITY, |g| {
            g.iter().map(|v| v.powi(2)).sum::<f64>().sqrt()
        });
        if norm < f64::EPSILON.sqrt() {
            TerminationStatus::Terminated(TerminationReason::SolverConverged)
        } else {
            TerminationStatus::NotTerminated
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-loop recursion gives the direction of argmin's: on a
    /// quadratic whose pairs are exact (`y = A s`), the recursion with a
    /// full memory reproduces `-A^{-1} g` along the remembered steps.
    #[test]
    fn with_exact_pairs_the_direction_is_the_newton_step() {
        let diag = [1.0, 4.0, 9.0];
        let mut solver = Lbfgs::new((), 3);
        let origin = [0.0; 3];
        for k in 0..3 {
            let mut step = [0.0; 3];
            step[k] = 1.0;
            let grad_change: Vec<f64> = step.iter().zip(&diag).map(|(s, a)| s * a).collect();
            solver.remember((&origin, &step), (&[0.0; 3], &grad_change));
        }
        let g = [2.0, -8.0, 27.0];
        let d = solver.direction(&g);
        for ((d, g), a) in d.iter().zip(&g).zip(&diag) {
            assert!((d + g / a).abs() < 1e-12, "{d} vs {}", -g / a);
        }
    }

    /// The memory is a window: the oldest pair goes when a new one comes,
    /// its buffers reused.
    #[test]
    fn the_oldest_pair_is_forgotten() {
        let mut solver = Lbfgs::new((), 2);
        for k in 1..=3 {
            let to = [k as f64, 0.0];
            solver.remember((&[0.0, 0.0], &to), (&[0.0, 0.0], &to));
        }
        let firsts: Vec<f64> = solver.pairs.iter().map(|p| p.s[0]).collect();
        assert_eq!(firsts, [2.0, 3.0]);
        assert_eq!(solver.direction(&[0.0, 0.0]), [0.0, 0.0]);
    }
}
