"""scikit-learn estimators over the sgp trainer."""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any, Optional, Tuple, Union

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _native
from ._arrays import column_names, from_native, to_native
from ._device import Model, PathLike, export_source

#: The classifier's procedure until the variational (svgp) classifier lands.
DEFAULT_CLASSIFIER_MODEL = "ivm"


def _print_progress(iteration: int, budget: int, objective: float) -> None:
    """``verbose``'s progress line, rewritten in place on standard error
    (a terminal or a notebook's output)."""
    print(
        f"\rsgp fit: iteration {iteration}/{budget}, objective {objective:.4f}",
        end="",
        file=sys.stderr,
        flush=True,
    )


class _SparseGP(BaseEstimator):
    """What both estimators share: settings, the fit through the trainer,
    the blob and its exports."""

    #: The procedure ``model=None`` stands for.
    _default_model = "spgp"

    def __init__(
        self,
        model: Optional[str] = None,
        m: int = 32,
        objective: Optional[str] = None,
        restarts: Optional[int] = None,
        max_iter: Optional[int] = None,
        tol: Optional[float] = None,
        init: Optional[str] = None,
        init_hyper: Optional[str] = None,
        max_points: Optional[int] = None,
        dim: Optional[int] = None,
        kernel: Optional[str] = None,
        force: bool = False,
        random_state: Any = 0,
        verbose: bool = False,
        updatable: bool = False,
    ) -> None:
        self.model = model
        self.m = m
        self.objective = objective
        self.restarts = restarts
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.init_hyper = init_hyper
        self.max_points = max_points
        self.dim = dim
        self.kernel = kernel
        self.force = force
        self.random_state = random_state
        self.verbose = verbose
        self.updatable = updatable

    def _fit_native(self, X: Any, y: Any, positive_class: Optional[float]) -> None:
        target = getattr(y, "name", None)
        target = target if isinstance(target, str) else "y"
        columns = X
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=positive_class is None)
        names = column_names(columns, X.shape[1])
        if positive_class is not None:
            y = y.astype(np.float64)
        n, d = X.shape
        if n < 2:
            raise ValueError(f"n_samples={n}: a Gaussian process needs at least 2 samples")
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max) \
            if not isinstance(self.random_state, (int, np.integer)) else int(self.random_state)
        if seed < 0:
            raise ValueError(f"random_state must be non-negative, got {seed}")
        if not (isinstance(self.m, (int, np.integer)) and self.m >= 1):
            raise ValueError(f"m must be a positive integer, got {self.m!r}")
        settings = {
            "model": self._default_model if self.model is None else self.model,
            # More basis functions than rows buys nothing: at M = N the
            # sparse model is the full GP.
            "m": int(min(self.m, n)),
            "seed": seed,
            "objective": self.objective,
            "restarts": self.restarts,
            "max_iter": self.max_iter,
            "tol": self.tol,
            "init": self.init,
            "init_hyper": self.init_hyper,
            "max_points": self.max_points,
            "dim": self.dim,
            "kernel": self.kernel,
        }
        progress = _print_progress if self.verbose else None
        blob, state, summary = _native.fit(
            to_native(X), n, d, to_native(y), names, target, settings,
            positive_class=positive_class, force=self.force, progress=progress,
        )
        if progress is not None:
            print(file=sys.stderr)
        summary = json.loads(summary)
        if self.updatable:
            # The same f64 model, in the form that learns on the device.
            blob = _native.updatable_blob(
                state, summary["report"].get("approximation"), to_native(X), n, d,
                force=self.force,
            )
        self.blob_ = blob
        self._state = state
        for message in summary["warnings"]:
            warnings.warn(message, UserWarning, stacklevel=3)
        self.report_ = summary["report"]
        self.fidelity_ = summary["fidelity"]
        self.cure_ = summary["cure"]
        optimiser = self.report_.get("optimiser")
        self.n_iter_ = optimiser["iterations"] if optimiser else 0
        self.n_basis_ = Model.from_bytes(blob).n_basis

    def _predict_native(self, X: Any) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
        """The fitted f64 model's mean, variance and (classifier)
        probability at the rows of ``X``."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        mean, variance, probability = _native.predict_state(
            self._state, to_native(X), *X.shape
        )
        return (
            from_native(mean),
            from_native(variance),
            None if probability is None else from_native(probability),
        )

    # The device side.

    def to_bytes(self) -> bytes:
        """The blob, as ``sgp fit --out`` writes it."""
        check_is_fitted(self)
        return self.blob_

    def to_model(self) -> Model:
        """The blob decoded by the f32 runtime (what the device computes)."""
        return Model.from_bytes(self.to_bytes())

    def save(self, path: PathLike) -> None:
        """Writes the blob to ``path`` (e.g. ``heater.sgp``), as ``sgp fit
        --out`` does: to a temporary file renamed over it, so a failure
        leaves any old file."""
        _native.write_file(os.fspath(path), self.to_bytes())

    def export_c(self, name: str = "model") -> str:
        """The blob as a C header for the sgp C library: what ``sgp export
        --format c --name NAME`` writes."""
        return export_source(self.to_bytes(), "c", name, f"{name}.sgp")

    def export_rust(self, name: str = "model") -> str:
        """The blob as a Rust module to ``include!``: what ``sgp export
        --format rust --name NAME`` writes."""
        return export_source(self.to_bytes(), "rust", name, f"{name}.sgp")


_SETTINGS_DOC = """
    m : int, default=32
        Number of basis functions M (pseudo-inputs, active set); at most the
        number of training rows is used.
    objective : {"fitc", "vfe"} or None, default=None
        Objective of a sparse fit (ignored by exact and ivm).
        None: FITC, or on fewer than 2000 rows whichever of FITC and VFE
        predicts held-out rows better (as ``sgp fit`` without
        ``--objective``).
    restarts : int or None, default=None
        Starts of a sparse fit (None: the trainer's default, 4).
    max_iter : int or None, default=None
        Iteration cap of the final optimiser run (None: the procedure's
        default).
    tol : float or None, default=None
        Stop once the objective fell by less than this many nats per row
        over 50 iterations (None: the default, 0.002; 0 runs to max_iter).
    init : {"kmeans", "random"} or None, default=None
        Pseudo-input initialisation of the first start.
    init_hyper : {"scales", "exact"} or None, default=None
        Hyperparameter initialisation.
    max_points : int or None, default=None
        Rows an exact GP (or the exact-subset initialisation) is fitted on.
    dim : int or None, default=None
        Projected dimension G of spgp-dr and spgp-pca (required there).
    kernel : {"se", "matern12", "matern32", "matern52"} or None, default=None
        Covariance function (None: "se", the squared exponential); the
        Matérn kernels suit rougher functions (``sgp fit --kernel``). vsgp
        takes "se" only.
    force : bool, default=False
        Keep a model whose f32 blob fails the export check and that raising
        the jitter does not cure (otherwise ``sgp.ExportError``).
    random_state : int, RandomState or None, default=0
        Seed of every random choice: the same data and seed give the same
        blob byte for byte (and the blob ``sgp fit --seed`` writes).
    verbose : bool, default=False
        Print the optimiser's progress (iteration, budget, objective) on
        standard error, a line rewritten in place a few times a second.
    updatable : bool, default=False
        Export a blob that learns on the device (``sgp fit --updatable``:
        format version 7, ``sgp.Model.update``); sparse regressions and the
        svgp classifier.
"""


class SparseGPRegressor(RegressorMixin, _SparseGP):
    """Sparse Gaussian-process regression, fitted by the sgp trainer and
    exported as a blob for a microcontroller.

    Parameters
    ----------
    model : str or None, default=None
        Fitting procedure, as ``sgp fit --model``: spgp, vsgp, spgp-hs,
        spgp-dr, spgp-pca, gplasso, ivm or exact (None: spgp).
""" + _SETTINGS_DOC + """
    Attributes
    ----------
    blob_ : bytes
        The exported blob.
    report_ : dict
        The fit report (``sgp fit --json``'s ``report``).
    fidelity_ : dict
        How closely the f32 blob reproduces the f64 model.
    cure_ : dict or None
        The jitter raise the export needed, if any.
    n_basis_ : int
        Basis functions in the blob.
    n_iter_ : int
        Iterations of the final optimiser run (0 when none ran).
    n_features_in_, feature_names_in_
        As every scikit-learn estimator; a DataFrame's column names are the
        blob's input names.

    Examples
    --------
    >>> import numpy as np, sgp
    >>> X = np.linspace(0, 6, 60)[:, None]
    >>> est = sgp.SparseGPRegressor(m=10).fit(X, np.sin(X[:, 0]))
    >>> mean, std = est.predict(X, return_std=True)
    >>> header = est.export_c(name="sine")
    """

    def fit(self, X: Any, y: Any) -> "SparseGPRegressor":
        """Fits the model to ``X`` (n_samples x n_features; a DataFrame's
        column names become the blob's input names) and ``y``, with the GIL
        released, and exports the blob (checked against the f64 fit)."""
        self._fit_native(X, y, positive_class=None)
        return self

    def predict(
        self, X: Any, return_std: bool = False
    ) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
        """The trainer's f64 predictive mean (and standard deviation of
        ``y``, noise included) at the rows of ``X``. The device's f32
        predictions are ``self.to_model().predict(X)``."""
        mean, variance, _ = self._predict_native(X)
        if return_std:
            return mean, np.sqrt(variance)
        return mean


class SparseGPClassifier(ClassifierMixin, _SparseGP):
    """Binary Gaussian-process classification (probit), fitted by the sgp
    trainer and exported as a blob for a microcontroller. For more than two
    classes wrap it in ``sklearn.multiclass.OneVsRestClassifier``.

    Parameters
    ----------
    model : str or None, default=None
        Fitting procedure (None: ``DEFAULT_CLASSIFIER_MODEL``, the
        informative vector machine ``ivm``, the one that classifies today).
""" + _SETTINGS_DOC + """
    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two class labels; the blob's positive class is ``classes_[1]``.
    blob_, report_, fidelity_, cure_, n_basis_, n_iter_, n_features_in_, feature_names_in_
        As for ``SparseGPRegressor``.

    Examples
    --------
    >>> import numpy as np, sgp
    >>> X = np.linspace(-3, 3, 80)[:, None]
    >>> clf = sgp.SparseGPClassifier(m=10).fit(X, X[:, 0] > 0)
    >>> clf.predict([[-2.0], [2.0]]).tolist()
    [False, True]
    """

    _default_model = DEFAULT_CLASSIFIER_MODEL

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # One probit model separates two classes; OneVsRestClassifier
        # makes a multiclass classifier of several.
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X: Any, y: Any) -> "SparseGPClassifier":
        """Fits the classifier to ``X`` and two-class labels ``y`` (any
        labels: the larger, ``classes_[1]``, is the positive class)."""
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y")
        if y_type != "binary":
            raise ValueError(
                "Only binary classification is supported. The type of the target "
                f"is {y_type}: wrap SparseGPClassifier in "
                "sklearn.multiclass.OneVsRestClassifier for more than two classes"
            )
        self.classes_, encoded = np.unique(np.asarray(y), return_inverse=True)
        if len(self.classes_) != 2:
            raise ValueError(f"y has {len(self.classes_)} class(es); a classifier needs two")
        self._fit_native(X, encoded.astype(np.float64), positive_class=1.0)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities (n_samples x 2, columns in ``classes_``
        order), from the trainer's f64 model."""
        _, _, p = self._predict_native(X)
        assert p is not None, "a classifier's state predicts probabilities"
        return np.column_stack([1.0 - p, p])

    def decision_function(self, X: Any) -> np.ndarray:
        """The probit score ``(m + b) / sqrt(1 + v)`` of the latent mean
        and variance, whose normal CDF is ``P(classes_[1])``: positive for
        ``classes_[1]``."""
        mean, variance, _ = self._predict_native(X)
        return mean / np.sqrt(1.0 + variance)

    def predict(self, X: Any) -> np.ndarray:
        """The more probable class of each row."""
        positive = self.decision_function(X) > 0.0
        return self.classes_[positive.astype(int)]
