"""scikit-learn estimators over the sgp trainer."""

from __future__ import annotations

import inspect
import json
import os
import sys
import tempfile
import textwrap
import warnings
from types import FrameType
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _native
from ._arrays import column_names, from_native, to_native
from ._device import Model, PathLike, export_source
from ._streamed import StreamedFit, print_progress, write_chunks

# The seed of a fit not given one: the trainer's (``sgp fit --help`` states
# the same).
_DEFAULT_SEED = int(_native.defaults()["seed"])
# The keywords of the trainer's settings (keyword, type, default, help).
_KEYWORDS = [keyword for keyword, *_ in _native.settings()]


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
        task: Optional[str] = None,
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
        self.task = task

    # The task this estimator fits: `task=None` means it in every entry
    # point (fit, fit_file, fit_chunks, sgp.cluster.fit_dask).
    _own_task = "regression"
    _other_estimator = "SparseGPClassifier"

    def _task(self) -> str:
        """The task asked for: the estimator's own (``task=None`` or its
        name); the other is refused, naming the estimator that fits it."""
        if self.task not in (None, "regression", "classification"):
            raise ValueError(
                f"task must be 'regression', 'classification' or None, not {self.task!r}"
            )
        if self.task not in (None, self._own_task):
            raise ValueError(
                f"task={self.task!r}: {type(self).__name__} fits a {self._own_task}; "
                f"{self._other_estimator} fits a {self.task}"
            )
        return self._own_task

    def _settings(self) -> dict:
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max) \
            if not isinstance(self.random_state, (int, np.integer)) else int(self.random_state)
        if seed < 0:
            raise ValueError(f"random_state must be non-negative, got {seed}")
        if self.m is not None and not isinstance(self.m, (int, np.integer)):
            raise ValueError(f"m must be an integer, got {self.m!r}")
        # Every setting of the trainer's table by its keyword; the trainer
        # sets each through its flag, as `sgp fit` does.
        settings = {keyword: getattr(self, keyword) for keyword in _KEYWORDS}
        # Below 1 the trainer refuses it, in `sgp fit --m 0`'s words.
        settings["m"] = None if self.m is None else max(int(self.m), 0)
        settings["random_state"] = seed
        return settings

    def _fit_native(
        self, X: Any, y: np.ndarray, names: Tuple[List[str], List[str]], classes: int = 0,
        text_labels: Sequence[str] = (),
    ) -> None:
        """Fits the validated ``X`` and ``y`` (n x P: one column per output;
        with ``classes``, one column of class values, or of their indices
        where ``text_labels`` names them); ``names``: the input and target
        names."""
        self._task()
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
        self._device: Optional[Model] = None
        summary = json.loads(summary_json)
        fits = summary.get("fits", [summary])
        self.blobs_ = [blobs] if isinstance(blobs, bytes) else list(blobs)
        self.basis_ = summary.get("basis")
        self._state = state
        for fit in fits:
            for message in fit["report"].get("warnings", []):
                _warn_caller(_native.spoken(message))
        models = [Model.from_bytes(blob) for blob in self.blobs_]
        # Every output's name, in output order: each model's target, or a
        # shared blob's outputs.
        self._blob_targets = [model.target_name for model in models]
        if len(models) == 1 and models[0].n_outputs > 1 and not models[0].is_classifier:
            self._blob_targets = [o["name"] for o in models[0].inspect()["outputs"]]

        def iterations(report: dict) -> int:
            optimiser = report.get("optimiser")
            return optimiser["iterations"] if optimiser else 0

        self.hyperparameters_: Any = _hyperparameters(fits)
        self.objective_: Any = _objective_name(fits[0]["report"])
        self.log_marginal_likelihood_value_: Any = -sum(fit["report"]["nlml"] for fit in fits)
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

    def _file_target(self, target: Any) -> Optional[str]:
        """``sgp fit --target``'s text: a list of several targets is
        comma-separated."""
        if isinstance(target, (list, tuple)):
            target = ",".join(str(t) for t in target) if target else None
        return None if target is None else str(target)

    def fit_file(
        self, path: PathLike, target: Union[str, Sequence[str], None] = None,
        inputs: Optional[Sequence[str]] = None,
    ) -> Any:
        """Fits the CSV or Parquet file, or the directory of Parquet files,
        ``path`` (``target``: its target column, default the last, or a
        list of several, or ``"a,b"``, for a regression of each;
        ``inputs``: its input columns, in the order the model takes them,
        default every other column) by the streamed fit ``sgp fit --data
        path`` runs on a large file, with this estimator's settings: the
        same blobs, memory bounded whatever the rows. Several targets get
        one basis or one model per output as ``sgp fit`` decides on the
        sample (``basis_`` says which and why). A directory's files are
        read in name order as one table. The target is fitted as the
        estimator's ``task`` (a 0/1 column is numbers to the regressor, as
        in ``fit``). Raises ``ValueError`` for a file or fit that does not
        stream (too few rows, another family)."""
        progress = print_progress if self.verbose else None
        blobs, state, summary = _native.fit_file(
            os.fspath(path), self._file_target(target), self._settings(), task=self._task(),
            inputs=_columns(inputs), force=self.force, progress=progress,
        )
        if progress is not None:
            print(file=sys.stderr)
        file_target = self._file_target(target)
        self._take_streamed(blobs, state, summary, 1 if file_target is None
                            else len(file_target.split(",")))
        return self

    def fit_chunks(
        self, chunks: Iterable[Any], names: Optional[List[str]] = None,
        inputs: Optional[Sequence[str]] = None, target: Optional[str] = None,
    ) -> Any:
        """Fits an iterator of ``(X, y)`` chunks as ``fit_file`` fits a
        file: they are written, one at a time, to a temporary CSV file that
        is then streamed. Its columns are ``names`` (the inputs' and the
        target's), else a DataFrame ``X``'s column names and a Series
        ``y``'s name, else x0, x1, ..., y; ``inputs`` and ``target`` pick
        among them as in ``fit_file`` (default: the target is the last)."""
        with tempfile.TemporaryDirectory(prefix="sgp-chunks-") as folder:
            path = os.path.join(folder, "chunks.csv")
            written = write_chunks(chunks, path, names)
            if target is None:
                target = written[-1]
            return self.fit_file(path, target, inputs)

    def start_file(
        self, path: PathLike, target: Union[str, Sequence[str], None] = None,
        inputs: Optional[Sequence[str]] = None,
    ) -> StreamedFit:
        """The first pass and subset fit of ``fit_file``, stopped before its
        passes over every row: run each anywhere with the returned
        ``StreamedFit``'s ``basis`` (``sgp.cluster`` for Dask), then call
        its ``advance`` (a classifier's rounds but the last) or ``finish``
        (``StreamedFit.run`` drives them)."""
        progress = print_progress if self.verbose else None
        native = _native.start_file(
            os.fspath(path), self._file_target(target), self._settings(), task=self._task(),
            inputs=_columns(inputs), progress=progress,
        )
        if progress is not None:
            print(file=sys.stderr)
        return StreamedFit(native, self)

    def _take_streamed(
        self, blobs: Sequence[bytes], state: bytes, summary: str, targets: int
    ) -> None:
        """Keeps a streamed fit of ``targets`` target columns as ``fit``
        keeps its fit."""
        self._take_fit(blobs, state, summary)
        model = Model.from_bytes(self.blobs_[0])
        inputs = model.input_names
        # Several targets: one output each, as `fit` of an n x P target.
        self._outputs = 0 if targets == 1 else targets
        self.n_features_in_ = len(inputs)
        self.feature_names_in_ = np.asarray(inputs, dtype=object)
        if self._own_task == "classification":
            # The blob's classes, in its order: a binary blob's positive
            # (the larger value) is the last, as `fit`'s classes_[1]. Text
            # labels sorted, as `fit` keeps them (the positive, the rarer,
            # may then be classes_[0]).
            labels = list(model.class_labels)
            try:
                self.classes_ = np.asarray([float(c) for c in labels])
                self._positive_first = False
            except ValueError:
                self.classes_ = np.asarray(sorted(labels))
                self._positive_first = len(labels) == 2 and labels[-1] == self.classes_[0]

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

    def log_marginal_likelihood(
        self, theta: Any = None, eval_gradient: bool = False, clone_kernel: bool = True
    ) -> float:
        """The fitted model's training objective as a log marginal
        likelihood (higher is better): ``objective_`` says which (the exact
        GP's, FITC's, VFE's or SVGP's evidence lower bound, ...), summed
        over the outputs, in standardised target units (as scikit-learn's
        ``normalize_y=True``). Only the fitted hyperparameters: ``theta``
        and ``eval_gradient`` are refused."""
        check_is_fitted(self)
        if theta is not None or eval_gradient:
            raise ValueError(
                "log_marginal_likelihood: only the fitted model's value; the trainer does not "
                "evaluate other hyperparameters (theta) or gradients from Python"
            )
        return float(self.log_marginal_likelihood_value_)

    # The device side.

    def to_bytes(self, output: Union[int, str, None] = None) -> bytes:
        """The one artefact ``sgp fit --out`` writes, whichever the fit
        kept: the blob, or where each output got its own model
        (``basis_["kept"] == "separate"``) the container of their blobs,
        which ``sgp_runtime::Artefact`` loads as one model of every output.
        ``output`` (its index or target name) gives that output's own blob
        either way: a container's member, or the one-output blob of a
        shared blob's output."""
        check_is_fitted(self)
        if output is None:
            return _native.artefact(self.blobs_)
        if isinstance(output, str):
            if output not in self._blob_targets:
                raise ValueError(f"no output {output!r}: the outputs are {self._blob_targets}")
            output = self._blob_targets.index(output)
        p = int(output)
        if not 0 <= p < len(self._blob_targets):
            raise ValueError(f"no output {p}: the outputs are {self._blob_targets}")
        if len(self.blobs_) > 1:
            return self.blobs_[p]
        blob = _native.output_blob(self.blobs_[0], p)
        assert blob is not None
        return blob

    def to_model(self, output: Union[int, str, None] = None) -> Model:
        """The artefact (``output``'s blob, as ``to_bytes``) decoded by the
        f32 runtime (what the device computes). One model either way: where
        each output has its own model, the container's ``predict`` gives
        every output's column (n x P), as a shared blob's does."""
        return Model.from_bytes(self.to_bytes(output))

    def save(self, path: PathLike) -> List[str]:
        """Writes ``to_bytes()`` to ``path`` (e.g. ``heater.sgp``), as ``sgp
        fit --out`` does: to a temporary file renamed over it, so a failure
        leaves any old file. One file either way (a container where each
        output got its own model). Returns the path written, in a list."""
        check_is_fitted(self)
        _native.write_file(os.fspath(path), self.to_bytes())
        return [os.fspath(path)]

    def export_c(self, name: str = "model", output: Union[int, str, None] = None) -> str:
        """The blob (``output``'s, as ``to_bytes``) as a C header for the
        sgp C library: what ``sgp export --format c --name NAME`` writes.
        ``output=k`` gives output ``k``'s own blob either way; a container
        (each output its own model) is for ``sgp_artefact_load``, which
        loads a blob too."""
        return export_source(self.to_bytes(output), "c", name, f"{name}.sgp")

    def export_rust(self, name: str = "model", output: Union[int, str, None] = None) -> str:
        """The artefact (``output``'s blob, as ``to_bytes``) as a Rust module
        to ``include!``: what ``sgp export --format rust --name NAME`` writes
        (for a container, its ``Model`` is an ``sgp_runtime::Artefact``)."""
        return export_source(self.to_bytes(output), "rust", name, f"{name}.sgp")


# The docstrings of Python's own keywords; every other keyword is a setting
# of the trainer's table, documented as it declares it (_settings_doc).
_OWN_DOC = {
    "force": ("bool", "False", "Keep a model whose f32 blob fails the export check and that "
              "raising the jitter does not cure (otherwise ``sgp.ExportError``)."),
    "verbose": ("bool", "False", "Print the optimiser's progress (iteration, budget, "
                "objective) on standard error, a line rewritten in place a few times a second."),
    "task": ('{"regression", "classification"} or None', "None",
             "The task the target is fitted as, in ``fit``, ``fit_file``, ``fit_chunks`` and "
             "``sgp.cluster.fit_dask`` alike (``sgp fit --task``): None is the estimator's "
             "own, regression for ``SparseGPRegressor`` (a 0/1 target is numbers, file or "
             "array) and classification for ``SparseGPClassifier``; the other task is "
             "refused, naming the estimator that fits it."),
}


def _settings_doc() -> str:
    """The keywords' part of the estimators' docstrings, in the order of
    their signature: each setting as the trainer's table declares it (its
    help, type and default, as ``sgp fit --help`` states them), and
    Python's own keywords."""
    entries = {keyword: (kind, default, text) for keyword, kind, default, text in
               _native.settings()}
    entries.update(_OWN_DOC)
    lines = []
    for name in inspect.signature(_SparseGP.__init__).parameters:
        if name == "self":
            continue
        kind, default, text = entries[name]
        lines.append(f"    {name} : {kind}, default={default}")
        lines += textwrap.wrap(text, 76, initial_indent=" " * 8, subsequent_indent=" " * 8,
                               break_on_hyphens=False, break_long_words=False)
    return "\n" + "\n".join(lines) + "\n"


_SETTINGS_DOC = _settings_doc()


def _learns_on_the_device(estimator: Any) -> bool:
    """Whether ``estimator`` exports a blob that learns (its ``partial_fit``
    is the device's update); else says how to get one."""
    if not estimator.updatable:
        raise ValueError(
            "partial_fit needs a model that learns on the device: fit it with updatable=True"
        )
    return True


class SparseGPRegressor(RegressorMixin, _SparseGP):
    # The settings' part is shared: an expression, so assigned.
    __doc__ = """Sparse Gaussian-process regression of one target or several,
    fitted by the sgp trainer and exported as a blob for a microcontroller.
    Several targets get one model on one basis, or, where that basis
    predicts some output clearly worse on held-out rows than the output's
    own fit, one model (and blob) per output, as ``sgp fit --target a,b``
    decides (``basis_`` says which and why).

    Parameters
    ----------""" + _SETTINGS_DOC + """
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
    hyperparameters_ : dict
        The fitted kernel: ``kernel``, ``length_scales`` by input name (raw
        input units), ``signal_variance`` and ``noise_variance`` (raw
        target units; a list, one per output, for several).
    objective_ : str
        Which objective ``log_marginal_likelihood()`` is ("FITC log
        marginal likelihood", "VFE evidence lower bound", ...).
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

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "SparseGPRegressor":
        """Fits the model to ``X`` (n_samples x n_features; a DataFrame's
        column names become the blob's input names) and ``y`` (n_samples,
        or n_samples x n_outputs: one model on one basis, or one per output
        where that basis loses on held-out rows),
        with the GIL released, and exports the blob (checked against the
        f64 fit). ``sample_weight``: None, or all 1; the trainer cannot
        weight rows, so other weights are refused (``ValueError``)."""
        names = _names(X, y)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, multi_output=True)
        _refuse_weights(sample_weight, X.shape[0])
        self._outputs = 0 if np.ndim(y) == 1 else y.shape[1]
        inputs, targets = names(X.shape[1])
        if self._outputs and len(targets) != self._outputs:
            targets = [f"y{k}" for k in range(self._outputs)]
        self._fit_native(X, y, (inputs, targets))
        return self

    def predict(
        self, X: Any, return_std: bool = False, return_cov: bool = False
    ) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
        """The trainer's f64 predictive mean (and standard deviation of
        ``y``, noise included, or the joint covariance of ``y`` between the
        rows: n x n, n x n x n_outputs for several outputs, its diagonal
        ``return_std``'s squares) at the rows of ``X``, one column per
        output where ``y`` had several. The device's f32 predictions are
        ``self.to_model().predict(X)``. ``return_cov`` is refused for a
        model whose basis functions are not its kernel at points (vsgp).
        After ``partial_fit`` they are the updated device model's (f32),
        and ``return_cov`` is refused."""
        if return_std and return_cov:
            raise RuntimeError("at most one of return_std and return_cov can be requested")
        device = getattr(self, "_device", None)
        if device is not None:
            if return_cov:
                raise ValueError(
                    "return_cov: after partial_fit the model is the device's, which predicts "
                    "each row's variance, not a joint covariance; fit again for it"
                )
            check_is_fitted(self)
            mean, variance = device.predict(validate_data(self, X, dtype=np.float64, reset=False))
        else:
            mean, variance, _ = self._predict_native(X)
            if not self._outputs:
                mean, variance = mean[:, 0], variance[:, 0]
        if return_std:
            return mean, np.sqrt(variance)
        if return_cov:
            return mean, self._covariance(X)
        return mean

    @available_if(_learns_on_the_device)
    def partial_fit(
        self,
        X: Any,
        y: Any,
        forgetting: Optional[float] = None,
        gate: Optional[float] = None,
        gate_run: Optional[int] = None,
        noise_forgetting: Optional[float] = None,
    ) -> "SparseGPRegressor":
        """Conditions the fitted model on more rows, in order, through the
        device's own update (``sgp.Model.update``: f32, the code a
        microcontroller runs; ``forgetting``, ``gate``, ``gate_run`` and
        ``noise_forgetting`` are its), with
        the hyperparameters and basis as fitted: ``blob_``, ``to_bytes()``,
        ``save`` and ``predict`` are then the updated model's. The first
        call on an unfitted estimator is ``fit``. Only with
        ``updatable=True`` (else the estimator has no ``partial_fit``, as
        scikit-learn's estimators that cannot learn incrementally) and one
        blob.

        >>> import numpy as np, sgp
        >>> X = np.linspace(0, 6, 40)[:, None]
        >>> est = sgp.SparseGPRegressor(m=8, updatable=True).fit(X, np.sin(X[:, 0]))
        >>> before = est.predict([[3.0]])[0]
        >>> bool(est.partial_fit([[3.0]], [before + 1.0]).predict([[3.0]])[0] > before)
        True
        """
        if not hasattr(self, "blobs_"):
            return self.fit(X, y)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if len(self.blobs_) != 1:
            raise ValueError(
                "partial_fit needs one blob; each output has its own model here "
                "(basis_['kept'] == 'separate')"
            )
        device = getattr(self, "_device", None) or Model.from_bytes(self.blobs_[0])
        device.update(
            X, np.asarray(y, dtype=np.float64), forgetting, gate, gate_run, noise_forgetting
        )
        self._device = device
        self.blob_ = device.to_bytes()
        self.blobs_ = [self.blob_]
        return self

    def _covariance(self, X: Any) -> np.ndarray:
        """The joint covariance of ``y`` at the rows of ``X`` (n x n, or n x
        n x n_outputs)."""
        X = validate_data(self, X, dtype=np.float64, reset=False)
        n = X.shape[0]
        cov = from_native(_native.predict_cov(self._state, to_native(X), *X.shape))
        cov = cov.reshape(-1, n, n)
        return cov[0] if not self._outputs else np.moveaxis(cov, 0, -1)

    def sample_y(self, X: Any, n_samples: int = 1, random_state: Any = 0) -> np.ndarray:
        """Draws of ``y`` (noise included) at the rows of ``X`` from the
        trainer's joint predictive distribution (``predict(X,
        return_cov=True)``): n x n_samples, or n x n_outputs x n_samples
        for several outputs, as scikit-learn's ``sample_y``."""
        rng = check_random_state(random_state)
        mean, cov = self.predict(X, return_cov=True)
        if not self._outputs:
            return rng.multivariate_normal(mean, cov, n_samples).T
        return np.stack(
            [rng.multivariate_normal(mean[:, k], cov[..., k], n_samples).T
             for k in range(mean.shape[1])],
            axis=1,
        )


class SparseGPClassifier(ClassifierMixin, _SparseGP):
    # The settings' part is shared: an expression, so assigned.
    __doc__ = """Gaussian-process classification of two classes (probit) or several
    (one latent per class on one basis, softmax), fitted by the sgp trainer
    and exported as a blob for a microcontroller.

    Parameters
    ----------""" + _SETTINGS_DOC + """    class_weight : None, default=None
        Refused unless None: the trainer's likelihood counts every row
        once and cannot weight classes (resample the rarer class instead).

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

    _own_task = "classification"
    _other_estimator = "SparseGPRegressor"

    def __init__(self, class_weight: Any = None, **settings: Any) -> None:
        super().__init__(**settings)
        self.class_weight = class_weight

    # The shared keywords plus class_weight, as scikit-learn reads them
    # (get_params, clone): the settings stay declared once, in _SparseGP.
    __init__.__signature__ = inspect.signature(_SparseGP.__init__).replace(  # type: ignore
        parameters=list(inspect.signature(_SparseGP.__init__).parameters.values())
        + [inspect.Parameter("class_weight", inspect.Parameter.KEYWORD_ONLY, default=None)]
    )

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "SparseGPClassifier":
        """Fits the classifier to ``X`` and labels ``y`` (any labels, two
        or more classes). ``sample_weight``: None, or all 1, as for the
        regressor."""
        if self.class_weight is not None:
            raise ValueError(
                "class_weight: the sgp classifier cannot weight classes (its likelihood counts "
                "every row once); resample the rarer class instead, or pass class_weight=None"
            )
        check_classification_targets(y)
        names = _names(X, y)
        X, y = validate_data(self, X, y, dtype=np.float64)
        _refuse_weights(sample_weight, X.shape[0])
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


def _columns(columns: Optional[Sequence[str]]) -> Optional[List[str]]:
    """``inputs=``'s column names as the library takes them: a list of
    strings (a single name is a list of one)."""
    if columns is None:
        return None
    if isinstance(columns, str):
        return [columns]
    return [str(c) for c in columns]


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


def _objective_name(report: dict) -> str:
    """Which objective ``report['nlml']`` is, in words."""
    approximation = report.get("approximation")
    method = report["method"]
    if approximation == "fitc":
        return "FITC log marginal likelihood"
    if approximation == "vfe":
        return "VFE evidence lower bound"
    if method == "svgp":
        return "SVGP evidence lower bound"
    if method == "exact":
        return "exact GP log marginal likelihood"
    return f"{method}'s training objective (negated)"


def _hyperparameters(fits: List[dict]) -> dict:
    """The fitted kernel's hyperparameters from the fit reports: the
    kernel, length scales by input (raw input units; a projected model's
    projection instead), and each output's signal and noise variance (raw
    target units; a float for one output, else a list)."""
    first = fits[0]["report"]
    outputs = [output for fit in fits for output in fit["report"]["outputs"]]
    signal = [output["signal_variance"] for output in outputs]
    noise = [output["noise_variance"] for output in outputs]
    hyper = {
        "kernel": first["kernel"],
        "length_scales": dict(zip(first["inputs"], first["lengthscales"])),
        "signal_variance": signal[0] if len(signal) == 1 else signal,
        "noise_variance": noise[0] if len(noise) == 1 else noise,
    }
    if first.get("projection") is not None:
        hyper["projection"] = first["projection"]
    return hyper


def _refuse_weights(sample_weight: Any, n: int) -> None:
    """``sample_weight``: the trainer's likelihood counts every row once, so
    only weights that are all 1 (no weighting) are taken; others are
    refused rather than ignored."""
    if sample_weight is None:
        return
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.ndim == 0:
        weights = np.full(n, float(weights))
    if weights.shape != (n,):
        raise ValueError(f"sample_weight.shape == {weights.shape}, expected {(n,)}")
    if np.all(weights == 0.0):
        raise ValueError("sample_weight: every weight is zero: there is no row to fit")
    if not np.all(weights == 1.0):
        raise ValueError(
            "sample_weight: the sgp trainer cannot weight rows (its likelihood counts every "
            "row once); repeat or subsample rows instead, or pass sample_weight=None"
        )
