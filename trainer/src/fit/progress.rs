//! One iteration count over every optimiser run of a fit. A fit is often
//! several runs (restarts, screening rounds, stages such as SPGP then
//! VSGP's widths), and each run counts its iterations from 1; the user sees
//! a single count that rises to [`super::FitParams::iteration_budget`].

use std::cell::Cell;

use crate::numerics::optimise::Progress;

/// `progress` for a run that follows `done` iterations of the same fit:
/// the run's iterations are shown after those. `done` is read at every
/// call, so the caller can add each run's iterations as it ends.
pub(crate) fn continuing<'a>(
    done: &'a Cell<u64>,
    progress: &'a mut dyn FnMut(Progress),
) -> impl FnMut(Progress) + 'a {
    move |p| {
        progress(Progress {
            iteration: done.get() + p.iteration,
            ..p
        })
    }
}

/// `progress` passed on unchanged, with the last iteration shown kept in
/// `shown`, so that the next stage can continue the count from there.
pub(crate) fn recording<'a>(
    shown: &'a Cell<u64>,
    progress: &'a mut dyn FnMut(Progress),
) -> impl FnMut(Progress) + 'a {
    move |p| {
        shown.set(p.iteration);
        progress(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(iteration: u64) -> Progress {
        Progress {
            iteration,
            best_value: 1.0,
            evaluations: iteration,
        }
    }

    #[test]
    fn a_later_run_continues_the_count_of_the_earlier_ones() {
        let mut seen = Vec::new();
        let mut sink = |p: Progress| seen.push(p.iteration);
        let shown = Cell::new(0);
        {
            let mut first = recording(&shown, &mut sink);
            first(at(1));
            first(at(2));
        }
        let mut second = continuing(&shown, &mut sink);
        second(at(1));
        shown.set(shown.get() + 5);
        second(at(1));
        drop(second);
        assert_eq!(seen, [1, 2, 3, 8]);
        assert_eq!(shown.get(), 7);
    }
}
