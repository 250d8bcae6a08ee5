//! What a setting not given becomes, in words, for `sgp fit --help` and
//! the Python docstrings: read back from the parameters [`Options`] builds
//! when nothing is given, so the help cannot state another value than the
//! fit uses.

use crate::evaluate::contest::CONTEST_ROWS;
use crate::fit::spgp_hs::H_PRIOR;
use crate::fit::streamed::StreamedParams;
use crate::fit::{FitParams, Method, PseudoInit};
use crate::options::{Named, Options, DEFAULT_M};

/// The default of `flag` (as the command line spells it: `--max-iter`), in
/// words, or `None` for a setting without one stated (a flag, a choice
/// made from the data).
///
/// ```
/// use sgp_trainer::options::defaults::stated;
///
/// assert_eq!(stated("--restarts").as_deref(), Some("4"));
/// assert_eq!(stated("--path"), None);
/// ```
pub fn stated(flag: &str) -> Option<String> {
    STATED
        .iter()
        .find(|(f, _)| *f == flag)
        .map(|(_, text)| text())
}

/// A setting, as the command line spells it, and its default in words.
pub(crate) type Stated = (&'static str, fn() -> String);

/// Every setting with a stated default and its words (one home: the
/// parameters of [`built`]).
pub const STATED: &[Stated] = &[
    ("--m", || format!("{DEFAULT_M}, at most the rows")),
    ("--restarts", || sparse().restarts.to_string()),
    ("--seed", || sparse().seed.to_string()),
    ("--max-iter", || {
        format!(
            "{}; ivm's rounds: {}",
            sparse().optimiser.max_iter,
            ivm().optimiser.max_iter
        )
    }),
    ("--tol", || {
        sparse()
            .optimiser
            .stall
            .map_or("0".into(), |s| s.per_row.to_string())
    }),
    ("--init", || match sparse().pseudo_init {
        PseudoInit::Sample(method) => method.name().into(),
        PseudoInit::Given(_) => "given".into(),
    }),
    ("--init-hyper", || sparse().hyper_init.name().into()),
    ("--max-points", || exact().max_points.to_string()),
    ("--ivm-posterior", || ivm().posterior.name().into()),
    ("--kernel", || Named::name(sparse().kernel).into()),
    ("--objective", || sparse().approximation.name().into()),
    ("held-out rows", || CONTEST_ROWS.to_string()),
    ("spgp-hs prior", || H_PRIOR.to_string()),
    ("streamed above", || {
        StreamedParams::default().in_memory_rows.to_string()
    }),
];

/// `method`'s parameters when no setting is given (G = 1 for a projected
/// family), on data of unbounded rows.
pub fn built(method: Method) -> FitParams {
    let options = Options {
        dim: method.is_projected().then_some(1),
        ..Options::default()
    };
    match options.params(method, usize::MAX) {
        Ok(params) => params,
        // Nothing given contradicts nothing: a defect, which the tests catch.
        Err(e) => unreachable!("the default options of {}: {e}", method.name()),
    }
}

fn sparse() -> crate::fit::SparseParams {
    match built(Method::Spgp) {
        FitParams::Spgp(p) => p,
        _ => unreachable!("spgp's parameters"),
    }
}

fn ivm() -> crate::fit::ivm::IvmParams {
    match built(Method::Ivm) {
        FitParams::Ivm(p) => p,
        _ => unreachable!("ivm's parameters"),
    }
}

fn exact() -> crate::fit::ExactParams {
    match built(Method::Exact) {
        FitParams::Exact(p) => p,
        _ => unreachable!("the exact GP's parameters"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One stated default holds for every family that reads the setting:
    /// the help states one value.
    #[test]
    fn every_family_reads_the_stated_default() {
        let sparse = sparse();
        let shared = (sparse.m, sparse.seed, sparse.kernel);
        for method in Method::ALL.iter().copied() {
            let name = method.name();
            let (m, seed, kernel) = match built(method) {
                FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => {
                    assert_eq!(p, sparse, "{name}");
                    continue;
                }
                FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => {
                    assert_eq!(p.sparse, sparse, "{name}");
                    continue;
                }
                FitParams::Exact(p) => {
                    assert_eq!(
                        (p.max_points, &p.optimiser),
                        (sparse.max_points, &sparse.optimiser)
                    );
                    (sparse.m, p.seed, p.kernel)
                }
                FitParams::Gplasso(p) => {
                    assert_eq!(
                        (p.max_points, &p.optimiser),
                        (sparse.max_points, &sparse.optimiser)
                    );
                    assert_eq!(p.approximation, sparse.approximation);
                    (p.m, p.seed, p.kernel)
                }
                FitParams::Ivm(p) => {
                    assert_eq!(p.kernel_points, sparse.max_points);
                    (p.m, p.seed, p.kernel)
                }
                FitParams::Svgp(p) => {
                    assert_eq!(
                        (p.restarts, &p.pseudo_init),
                        (sparse.restarts, &sparse.pseudo_init)
                    );
                    assert_eq!(p.optimiser, sparse.optimiser);
                    (p.m, p.seed, p.kernel)
                }
            };
            assert_eq!((m, seed, kernel), shared, "{name}");
        }
        assert_eq!(sparse.m, DEFAULT_M);
    }

    #[test]
    fn the_words_are_the_values() {
        assert_eq!(stated("--m").unwrap(), "20, at most the rows");
        assert_eq!(stated("--tol").unwrap(), "0.002");
        assert_eq!(stated("--init").unwrap(), "kmeans");
        assert_eq!(stated("--max-iter").unwrap(), "500; ivm's rounds: 100");
        assert!(STATED.iter().all(|(_, text)| !text().is_empty()));
    }
}
