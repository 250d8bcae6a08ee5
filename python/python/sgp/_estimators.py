"""scikit-learn estimators over the sgp trainer."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from types import FrameType
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _native
from ._arrays import column_names, from_native, to_native
from ._device import Model, PathLike, export_source
from ._streamed import StreamedFit, print_progress, write_chunks

# What a setting not given becomes, in the trainer's words (``sgp fit
# --help`` states the same): the one home of the defaults.
_DEFAULTS = _native.defaults()
_DEFAULT_SEED = int(_DEFAULTS["seed"])


def _print_progress(iteration: int, budget: int, objective: float) -> None:
    """``verbose``'s progress line, rewritten in place on standard error
    (a terminal or a notebook's output)."""
    print(
        f"\rsgp fit: iteration {iteration}/{budget}, objective {objective:.4f}",
        end="",
        file=sys.stderr,
        flush=True,
    )


def _warn_caller(message: str) -> None:
    """Warns at the first frame outside the sgp package: the user's call,
    whichever entry point (``fit``, ``fit_file``, ``fit_chunks``,
    ``sgp.cluster.fit_dask``) led here."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame: Optional[FrameType] = sys._getframe(0)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


class _SparseGP(BaseEstimator):
    """What both estimators share: settings, the fit through the trainer,
    the blob and its exports. Every keyword is the ``sgp fit`` flag of its
    name (``max_iter`` is ``--max-iter``), read by the same library code
    with the same defaults (``None``: the flag's default)."""

    def __init__(
        self,
        model: Optional[str] = None,
        m: Optional[int] = None,
        objective: Optional[str] = None,
        restarts: Optional[int] = None,
        max_iter: Optional[int] = None,
        tol: Optional[float] = None,
        init: Optional[str] = None,
        init_hyper: Optional[str] = None,
        max_points: Optional[int] = None,
        dim: Optional[int] = None,
        kernel: Optional[str] = None,
        rank: Optional[int] = None,
        fixed_hyperparameters: bool = False,
        fixed_basis: bool = False,
        held_out_choice: bool = True,
        ivm_posterior: Optional[str] = None,
        reproducible: bool = False,
        force: bool = False,
        random_state: Any = _DEFAULT_SEED,
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
        self.rank = rank
        self.fixed_hyperparameters = fixed_hyperparameters
        self.fixed_basis = fixed_basis
        self.held_out_choice = held_out_choice
        self.ivm_posterior = ivm_posterior
        self.reproducible = reproducible
        self.force = force
        self.random_state = random_state
        self.verbose = verbose
        self.updatable = updatable

    def _settings(self) -> dict:
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max) \
            if not isinstance(self.random_state, (int, np.integer)) else int(self.random_state)
        if seed < 0:
            raise ValueError(f"random_state must be non-negative, got {seed}")
        if self.m is not None and not isinstance(self.m, (int, np.integer)):
            raise ValueError(f"m must be an integer, got {self.m!r}")
        return {
            "model": self.model,
            # Below 1 the trainer refuses it, in `sgp fit --m 0`'s words.
            "m": None if self.m is None else max(int(self.m), 0),
            "seed": seed,
            "dim": self.dim,
            "rank": self.rank,
            "fixed_hyperparameters": bool(self.fixed_hyperparameters),
            "fixed_basis": bool(self.fixed_basis),
            "objective": self.objective,
            "held_out_choice": bool(self.held_out_choice),
            "restarts": self.restarts,
            "max_iter": self.max_iter,
            "tol": self.tol,
            "init": self.init,
            "init_hyper": self.init_hyper,
            "max_points": self.max_points,
            "kernel": self.kernel,
            "ivm_posterior": self.ivm_posterior,
            "updatable": bool(self.updatable),
            "reproducible": bool(self.reproducible),
        }

    def _fit_native(
        self, X: Any, y: np.ndarray, names: Tuple[List[str], List[str]], classes: int = 0,
        text_labels: Sequence[str] = (),
    ) -> None:
        """Fits the validated ``X`` and ``y`` (n x P: one column per output;
        with ``classes``, one column of class values, or of their indices
        where ``text_labels`` names them); ``names``: the input and target
        names."""
        inputs, targets = names
        n, d = X.shape
        if n < 2:
            raise ValueError(f"n_samples={n}: a Gaussian process needs at least 2 samples")
        y = np.asarray(y, dtype=np.float64).reshape(n, -1)
        progress = _print_progress if self.verbose else None
        blobs, state, summary = _native.fit(
            to_native(X), n, d, to_native(y), y.shape[1], inputs, targets, self._settings(),
            classes=classes, text_labels=list(text_labels), force=self.force, progress=progress,
        )
        if progress is not None:
            print(file=sys.stderr)
        self._take_fit(blobs, state, summary)

    def _take_fit(
        self, blobs: Union[bytes, Sequence[bytes]], state: bytes, summary_json: str
    ) -> None:
        """Keeps a native fit's blobs (one, or one per output), fitted state
        and JSON summary (one fit's, or ``{basis, fits}``)."""
        summary = json.loads(summary_json)
        fits = summary.get("fits", [summary])
        self.blobs_ = [blobs] if isinstance(blobs, bytes) else list(blobs)
        self.basis_ = summary.get("basis")
        self._state = state
        for fit in fits:
            for message in fit["report"].get("warnings", []):
                _warn_caller(message)
        models = [Model.from_bytes(blob) for blob in self.blobs_]
        self._blob_targets = [model.target_name for model in models]

        def iterations(report: dict) -> int:
            optimiser = report.get("optimiser")
            return optimiser["iterations"] if optimiser else 0

        if len(self.blobs_) == 1:
            self.blob_: Optional[bytes] = self.blobs_[0]
            self.report_: Any = fits[0]["report"]
            self.fidelity_: Any = fits[0]["fidelity"]
            self.cure_: Any = fits[0]["cure"]
            self.n_iter_: Any = iterations(self.report_)
            self.n_basis_: Any = models[0].n_basis
        else:
            self.blob_ = None
            self.report_ = [fit["report"] for fit in fits]
            self.fidelity_ = [fit["fidelity"] for fit in fits]
            self.cure_ = [fit["cure"] for fit in fits]
            self.n_iter_ = [iterations(report) for report in self.report_]
            self.n_basis_ = [model.n_basis for model in models]

    # Data larger than memory: `sgp fit`'s streamed fit (sgp._streamed).

    _task: Optional[str] = None

    def _file_target(self, target: Any) -> Optional[str]:
        """``sgp fit --target``'s text: several targets are refused by the
        library, saying why."""
        if isinstance(target, (list, tuple)):
            target = ",".join(str(t) for t in target) if target else None
        return None if target is None else str(target)

    def fit_file(self, path: PathLike, target: Optional[str] = None) -> Any:
        """Fits the CSV or Parquet file, or the directory of Parquet files,
        ``path`` (``target``: its target column, default the last) by the
        streamed fit ``sgp fit --data path`` runs on a large file, with
        this estimator's settings: the same blob, memory bounded whatever
        the rows. A directory's files are read in name order as one table.
        Raises ``ValueError`` for a file or fit that does not stream (too
        few rows, a classification, another family, several targets)."""
        progress = print_progress if self.verbose else None
        blob, state, summary = _native.fit_file(
            os.fspath(path), self._file_target(target), self._settings(), task=self._task,
            force=self.force, progress=progress,
        )
        if progress is not None:
            print(file=sys.stderr)
        self._take_streamed(blob, state, summary)
        return self

    def fit_chunks(self, chunks: Iterable[Any], names: Optional[List[str]] = None) -> Any:
        """Fits an iterator of ``(X, y)`` chunks as ``fit_file`` fits a
        file: they are written, one at a time, to a temporary CSV file
        (``names``: its inputs' and target's column names; default x0, x1,
        ..., y) that is then streamed."""
        with tempfile.TemporaryDirectory(prefix="sgp-chunks-") as folder:
            path = os.path.join(folder, "chunks.csv")
            write_chunks(chunks, path, names)
            return self.fit_file(path, None if names is None else names[-1])

    def start_file(self, path: PathLike, target: Optional[str] = None) -> StreamedFit:
        """The first pass and subset fit of ``fit_file``, stopped before its
        pass over every row: run that pass anywhere with the returned
        ``StreamedFit``'s ``basis`` (``sgp.cluster`` for Dask), then call
        its ``finish``."""
        progress = print_progress if self.verbose else None
        native = _native.start_file(
            os.fspath(path), self._file_target(target), self._settings(), task=self._task,
            progress=progress,
        )
        if progress is not None:
            print(file=sys.stderr)
        return StreamedFit(native, self)

    def _take_streamed(self, blob: bytes, state: bytes, summary: str) -> None:
        """Keeps a streamed fit as ``fit`` keeps its fit."""
        self._take_fit(blob, state, summary)
        inputs = Model.from_bytes(blob).input_names
        self._outputs = 0
        self.n_features_in_ = len(inputs)
        self.feature_names_in_ = np.asarray(inputs, dtype=object)

    def _predict_native(self, X: Any) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
        """The fitted f64 models' means and variances (n x P, one column per
        output or class latent) and a classifier's probabilities (n x 1 for
        the positive class, n x K for K classes) at the rows of ``X``."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        n = X.shape[0]
        means, variances, probability = _native.predict_state(
            self._state, to_native(X), *X.shape
        )
        return (
            from_native(means).reshape(n, -1),
            from_native(variances).reshape(n, -1),
            None if probability is None else from_native(probability).reshape(n, -1),
        )

    # The device side.

    def to_bytes(self, output: Union[int, str, None] = None) -> bytes:
        """The blob, as ``sgp fit --out`` writes it. Where each output got
        its own model (``basis_["kept"] == "separate"``), ``output`` (its
        index or target name) picks one: the blob ``sgp fit`` writes to
        ``out.<target>.sgp``."""
        check_is_fitted(self)
        blobs = self.blobs_
        if output is None:
            if len(blobs) > 1:
                raise ValueError(
                    f"each output has its own model ({self.basis_['reason']}); pass output= "
                    f"one of {self._blob_targets} (or its index), or save(path), which "
                    "writes one file per output"
                )
            return blobs[0]
        if len(blobs) == 1:
            raise ValueError("the outputs share one blob: call without output")
        if isinstance(output, str):
            if output not in self._blob_targets:
                raise ValueError(f"no output {output!r}: the outputs are {self._blob_targets}")
            return blobs[self._blob_targets.index(output)]
        return blobs[int(output)]

    def to_model(self, output: Union[int, str, None] = None) -> Model:
        """The blob (``output``'s, as ``to_bytes``) decoded by the f32
        runtime (what the device computes)."""
        return Model.from_bytes(self.to_bytes(output))

    def save(self, path: PathLike) -> List[str]:
        """Writes the blob to ``path`` (e.g. ``heater.sgp``), as ``sgp fit
        --out`` does: to a temporary file renamed over it, so a failure
        leaves any old file. Where each output got its own model, writes
        each to ``path`` with its target name before the extension
        (``arm.sgp``: ``arm.ex.sgp``, ``arm.ey.sgp``, ...; a path separator
        in a name becomes ``_``), as ``sgp fit`` does. Returns the paths
        written."""
        check_is_fitted(self)
        if len(self.blobs_) == 1:
            written = [os.fspath(path)]
        else:
            written = [os.fspath(_native.separate_path(path, t)) for t in self._blob_targets]
            if len(set(written)) < len(written):
                raise ValueError(f"the outputs {self._blob_targets} would share a file: rename them")
        for file, blob in zip(written, self.blobs_):
            _native.write_file(file, blob)
        return written

    def export_c(self, name: str = "model", output: Union[int, str, None] = None) -> str:
        """The blob (``output``'s, as ``to_bytes``) as a C header for the
        sgp C library: what ``sgp export --format c --name NAME`` writes."""
        return export_source(self.to_bytes(output), "c", name, f"{name}.sgp")

    def export_rust(self, name: str = "model", output: Union[int, str, None] = None) -> str:
        """The blob (``output``'s, as ``to_bytes``) as a Rust module to
        ``include!``: what ``sgp export --format rust --name NAME`` writes."""
        return export_source(self.to_bytes(output), "rust", name, f"{name}.sgp")


_SETTINGS_DOC = """
    m : int or None, default=None
        Number of basis functions M (pseudo-inputs, active set); None:
        {m}.
    objective : {{"fitc", "vfe"}} or None, default=None
        Objective of a sparse fit. None: {objective_upper}, or on fewer than
        {held_out_rows} rows whichever of FITC and VFE predicts held-out
        rows better (as ``sgp fit`` without ``--objective``).
    restarts : int or None, default=None
        Starts of a sparse fit (None: {restarts}).
    max_iter : int or None, default=None
        Iteration cap of the final optimiser run (None: {max_iter}).
    tol : float or None, default=None
        Stop once the objective fell by less than this many nats per row
        over 50 iterations (None: {tol}; 0 runs to max_iter).
    init : {{"kmeans", "random"}} or None, default=None
        Pseudo-input initialisation of the first start (None: {init}).
    init_hyper : {{"scales", "exact"}} or None, default=None
        Hyperparameter initialisation (None: {init_hyper}).
    max_points : int or None, default=None
        Rows an exact GP (or the exact-subset initialisation) is fitted on
        (None: {max_points}).
    dim : int or None, default=None
        Projected dimension G of spgp-dr and spgp-pca (required there).
    kernel : {{"se", "matern12", "matern32", "matern52", "auto"}} or None, default=None
        Covariance function (None: "{kernel}", the squared exponential); the
        Matérn kernels suit rougher functions (``sgp fit --kernel``). vsgp
        takes "se" only. "auto" weighs the four on held-out rows and keeps
        se unless a Matérn kernel clearly wins (``report_["choice"]["kernel"]``
        says why).
    rank : int or None, default=None
        Rank of gplasso's incomplete Cholesky factor.
    fixed_hyperparameters, fixed_basis : bool, default=False
        gplasso's paper procedure, or its hyperparameters re-optimised with
        the selected basis kept.
    held_out_choice : bool, default=True
        Make the held-out comparisons on small data (``False``: ``sgp fit
        --no-held-out-choice``: FITC unless ``objective`` says otherwise,
        no family weighed against SPGP, spgp-hs's prior strength the fixed
        {spgp_hs_prior}, several targets on one basis).
    ivm_posterior : {{"all-rows", "active-set"}} or None, default=None
        The ivm classifier's posterior (None: {ivm_posterior}).
    reproducible : bool, default=False
        The same blob, bit for bit, from the same data and settings on any
        x86-64 or aarch64 CPU and at any thread count (``sgp fit
        --reproducible``): products and solves in one fixed order, no fused
        multiply-adds, at some cost in time (the guide's "Numerics and
        accuracy" chapter).
    force : bool, default=False
        Keep a model whose f32 blob fails the export check and that raising
        the jitter does not cure (otherwise ``sgp.ExportError``).
    random_state : int, RandomState or None, default={seed}
        Seed of every random choice: the same data and seed give the same
        blob byte for byte (and the blob ``sgp fit --seed`` writes).
    verbose : bool, default=False
        Print the optimiser's progress (iteration, budget, objective) on
        standard error, a line rewritten in place a few times a second.
    updatable : bool, default=False
        Export a blob that learns on the device (``sgp fit --updatable``:
        format version 9, ``sgp.Model.update``); sparse regressions and the
        svgp classifier.
""".format(objective_upper=_DEFAULTS["objective"].upper(), **_DEFAULTS)


class SparseGPRegressor(RegressorMixin, _SparseGP):
    # The settings' part is shared: an expression, so assigned.
    __doc__ = """Sparse Gaussian-process regression of one target or several,
    fitted by the sgp trainer and exported as a blob for a microcontroller.
    Several targets get one model on one basis, or, where that basis
    predicts some output clearly worse on held-out rows than the output's
    own fit, one model (and blob) per output, as ``sgp fit --target a,b``
    decides (``basis_`` says which and why).

    Parameters
    ----------
    model : str or None, default=None
        Fitting procedure, as ``sgp fit --model``: auto, spgp, vsgp,
        spgp-hs, spgp-dr, spgp-pca, gplasso, ivm or exact (None: auto, the
        family that predicts held-out rows best; spgp on larger data).
""" + _SETTINGS_DOC + """
    Attributes
    ----------
    blob_ : bytes or None
        The exported blob (None where each output has its own: ``blobs_``).
    blobs_ : list of bytes
        Every blob: ``[blob_]``, or one per output in output order.
    basis_ : dict or None
        For several targets, which basis was kept and why (``sgp fit
        --json``'s ``basis``: ``kept`` is ``"shared"`` or ``"separate"``,
        ``reason`` one sentence, ``outputs`` the held-out figures).
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
    (Where each output has its own model, ``report_``, ``fidelity_``,
    ``cure_``, ``n_basis_`` and ``n_iter_`` are lists, one per output.)
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

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def fit(self, X: Any, y: Any) -> "SparseGPRegressor":
        """Fits the model to ``X`` (n_samples x n_features; a DataFrame's
        column names become the blob's input names) and ``y`` (n_samples,
        or n_samples x n_outputs: one model on one basis, or one per output
        where that basis loses on held-out rows),
        with the GIL released, and exports the blob (checked against the
        f64 fit)."""
        names = _names(X, y)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, multi_output=True)
        self._outputs = 0 if np.ndim(y) == 1 else y.shape[1]
        inputs, targets = names(X.shape[1])
        if self._outputs and len(targets) != self._outputs:
            targets = [f"y{k}" for k in range(self._outputs)]
        self._fit_native(X, y, (inputs, targets))
        return self

    def predict(
        self, X: Any, return_std: bool = False
    ) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
        """The trainer's f64 predictive mean (and standard deviation of
        ``y``, noise included) at the rows of ``X``, one column per output
        where ``y`` had several. The device's f32 predictions are
        ``self.to_model().predict(X)``."""
        mean, variance, _ = self._predict_native(X)
        if not self._outputs:
            mean, variance = mean[:, 0], variance[:, 0]
        if return_std:
            return mean, np.sqrt(variance)
        return mean


class SparseGPClassifier(ClassifierMixin, _SparseGP):
    # The settings' part is shared: an expression, so assigned.
    __doc__ = """Gaussian-process classification of two classes (probit) or several
    (one latent per class on one basis, softmax), fitted by the sgp trainer
    and exported as a blob for a microcontroller.

    Parameters
    ----------
    model : str or None, default=None
        Fitting procedure (None: svgp, the sparse variational classifier;
        ivm and exact classify two classes).
""" + _SETTINGS_DOC + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, in order. A binary blob's positive class is the
        one ``sgp fit`` takes: the larger number, or the rarer text label
        (the later on a tie); ``to_model().class_labels[1]`` names it.
        ``predict_proba``'s columns follow ``classes_`` whichever it is.
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

    _task = "classification"

    def fit(self, X: Any, y: Any) -> "SparseGPClassifier":
        """Fits the classifier to ``X`` and labels ``y`` (any labels, two
        or more classes)."""
        check_classification_targets(y)
        names = _names(X, y)
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, encoded = np.unique(np.asarray(y), return_inverse=True)
        k = len(self.classes_)
        if k < 2:
            raise ValueError(f"y has {k} class(es); a classifier needs two or more")
        numeric = np.issubdtype(self.classes_.dtype, np.number) and np.all(
            np.asarray(self.classes_, dtype=np.float64) == np.round(np.asarray(self.classes_, dtype=np.float64))
        )
        if numeric:
            values, text = np.asarray(y, dtype=np.float64), []
        else:
            values, text = encoded.astype(np.float64), [str(c) for c in self.classes_]
        inputs, targets = names(X.shape[1])
        self._fit_native(X, values, (inputs, targets[:1]), classes=k, text_labels=text)
        # The blob's positive class of two may be classes_[0] (a rarer text
        # label): the probabilities it predicts are then classes_[0]'s.
        positive = Model.from_bytes(self.blobs_[0]).class_labels[-1:]
        self._positive_first = k == 2 and bool(text) and positive == text[:1]
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities (n_samples x n_classes, columns in
        ``classes_`` order), from the trainer's f64 model."""
        _, _, p = self._predict_native(X)
        assert p is not None, "a classifier's state predicts probabilities"
        if p.shape[1] == 1:
            positive = p[:, 0]
            if getattr(self, "_positive_first", False):
                return np.column_stack([positive, 1.0 - positive])
            return np.column_stack([1.0 - positive, positive])
        return p

    def decision_function(self, X: Any) -> np.ndarray:
        """The probit score ``(m + b) / sqrt(1 + v)`` of each latent (its
        mean and variance): positive for ``classes_[1]`` for two classes,
        one column per class for several."""
        mean, variance, _ = self._predict_native(X)
        score = mean / np.sqrt(1.0 + variance)
        if score.shape[1] > 1:
            return score
        # The blob's latent is its positive class's: classes_[1]'s score
        # is its negative where that class is classes_[0].
        return -score[:, 0] if getattr(self, "_positive_first", False) else score[:, 0]

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class of each row."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


def _names(X: Any, y: Any) -> Any:
    """The blob's input names (a DataFrame's string columns, else ``x0``,
    ...) and target names (a Series' name, a DataFrame's columns, else
    ``y``), read before validation turns them into arrays; a function of
    the number of inputs."""
    columns = getattr(y, "columns", None)
    if columns is not None:
        targets = [str(c) for c in columns]
    else:
        name = getattr(y, "name", None)
        targets = [name if isinstance(name, str) else "y"]
    return lambda d: (column_names(X, d), targets)
