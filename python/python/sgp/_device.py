"""The device in Python: a blob evaluated by the f32 ``no_std`` runtime."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import numpy as np
from sklearn.utils.validation import check_array

from . import _native
from ._arrays import by_name, from_native, to_native

PathLike = Union[str, "os.PathLike[str]"]
_F32 = np.dtype("<f4")
_F64 = np.dtype("<f8")


def export_source(blob: bytes, format: str, name: str, source: str) -> str:
    """What ``sgp export --format FORMAT --name NAME`` writes for ``blob``."""
    return _native.export_source(blob, format, name, source)


class UncertainPrediction(NamedTuple):
    """The moments of a model's outputs at a Gaussian input
    (``Model.predict_uncertain``), raw units: ``mean`` (P,), ``covariance``
    (P, P; observation noise on the diagonal, as ``predict``'s variance),
    ``input_output`` (D, P; ``Cov[x_d, y_a]``). With ``derivatives=True``
    also their derivatives with respect to the input mean ``mu`` and
    covariance ``S`` (``S``'s are symmetric gradients: for a symmetric
    change ``dS``, the moment changes by ``sum(G * dS)``): ``dmean_dmu``
    (P, D), ``dmean_dcov`` (P, D, D), ``dcov_dmu`` (P, P, D), ``dcov_dcov``
    (P, P, D, D), ``dinput_output_dmu`` (D, P, D), ``dinput_output_dcov``
    (D, P, D, D); else those are None."""

    mean: np.ndarray
    covariance: np.ndarray
    input_output: np.ndarray
    dmean_dmu: Optional[np.ndarray] = None
    dmean_dcov: Optional[np.ndarray] = None
    dcov_dmu: Optional[np.ndarray] = None
    dcov_dcov: Optional[np.ndarray] = None
    dinput_output_dmu: Optional[np.ndarray] = None
    dinput_output_dcov: Optional[np.ndarray] = None


class Model:
    """A model blob, decoded and evaluated by ``sgp-runtime`` exactly as a
    microcontroller does (f32, the same code), so that the host can check
    what the device will compute.

    >>> import numpy as np, sgp
    >>> X = np.linspace(0, 6, 40)[:, None]
    >>> est = sgp.SparseGPRegressor(m=8).fit(X, np.sin(X[:, 0]))
    >>> mean, variance = sgp.Model.from_bytes(est.to_bytes()).predict(X)
    >>> bool(abs(mean - est.predict(X)).max() < 0.05)
    True

    One artefact either way: the container ``sgp fit --out`` (and
    ``to_bytes()``) writes where each output got its own model loads as one
    model too, whose ``predict`` gives every output's column, each member's
    own prediction (as ``sgp_runtime::Artefact`` and ``sgp_artefact_load``
    do on a device).
    """

    def __init__(
        self, native: "_native.Model", members: Optional[List["_native.Model"]] = None
    ) -> None:
        # A container's members, one model per output (None for a blob).
        self._members = members
        self._native = native if members is None else members[0]
        # Read once: the fast path of a one-row call checks against them.
        self._inputs = self._native.n_inputs
        self._single_output = self.n_outputs == 1

    def _models(self) -> List["_native.Model"]:
        """The blob's model, or a container's members in output order."""
        return [self._native] if self._members is None else self._members

    def _one_row(self, X: Any) -> Optional[Tuple[bytes, bool]]:
        """A 1-D float32 or float64 array of the model's inputs as its bytes
        and whether they are float32 (the fast path of a one-row call, which
        the runtime checks); None for anything else."""
        if (
            type(X) is np.ndarray
            and X.ndim == 1
            and X.shape[0] == self._inputs
            and self._single_output
        ):
            if X.dtype == _F64:
                return X.tobytes(), False
            if X.dtype == _F32:
                return X.tobytes(), True
        return None

    @classmethod
    def from_bytes(cls, blob: bytes) -> "Model":
        """Decodes ``blob``, or a container of one blob per output (what
        ``sgp fit --out`` writes where the outputs separate); a corrupted
        or truncated one, or a container whose members take other inputs
        than its first, raises ``ValueError`` with the reason."""
        blob = bytes(blob)
        if blob[:4] != b"SGPS":
            return cls(_native.Model.from_bytes(blob))
        members: List["_native.Model"] = []
        while True:
            member = _native.output_blob(blob, len(members))
            if member is None:
                break
            members.append(_native.Model.from_bytes(member))
        for k, other in enumerate(members[1:], start=1):
            if other.input_names != members[0].input_names:
                raise ValueError(
                    f"container member {k} takes other inputs ({other.input_names}) than "
                    f"member 0 ({members[0].input_names})"
                )
        return cls(members[0], members)

    @classmethod
    def load(cls, path: PathLike) -> "Model":
        """Reads a blob file (as written by ``sgp fit`` or ``save``)."""
        with open(path, "rb") as f:
            return cls.from_bytes(f.read())

    @property
    def input_names(self) -> List[str]:
        """Input column names, in the order ``predict`` reads them."""
        return self._native.input_names

    @property
    def target_name(self) -> str:
        """Target column name (a container's: its first output's)."""
        return self._native.target_name

    @property
    def is_container(self) -> bool:
        """Whether the artefact is a container, one model per output,
        rather than one blob."""
        return self._members is not None

    @property
    def kind(self) -> str:
        """Fitting procedure, e.g. ``"spgp"``."""
        return self._native.kind

    @property
    def is_classifier(self) -> bool:
        """Whether the blob is a probit classifier."""
        return self._native.is_classifier

    @property
    def n_outputs(self) -> int:
        """Outputs (regression) or class latents in the blob; a
        container's members."""
        if self._members is not None:
            return len(self._members)
        return self._native.n_outputs

    @property
    def class_labels(self) -> List[str]:
        """A classifier's class labels, in class order."""
        return self._native.class_labels

    @property
    def n_basis(self) -> int:
        """Number of basis functions M (a container's: its largest)."""
        return max(m.n_basis for m in self._models())

    @property
    def n_inputs(self) -> int:
        """Number of inputs D."""
        return self._native.n_inputs

    def to_bytes(self) -> bytes:
        """The blob (a container of the members' blobs), as the model is now."""
        if self._members is not None:
            return _native.artefact([m.to_bytes() for m in self._members])
        return self._native.to_bytes()

    def save(self, path: PathLike) -> None:
        """Writes the blob to ``path``, as ``sgp fit --out`` does: to a
        temporary file renamed over it, so a failure leaves any old file."""
        _native.write_file(os.fspath(path), self.to_bytes())

    def export_c(self, name: str = "model") -> str:
        """The blob as a C header for the sgp C library (``sgp export
        --format c --name NAME``)."""
        return export_source(self.to_bytes(), "c", name, f"{name}.sgp")

    def export_rust(self, name: str = "model") -> str:
        """The blob as a Rust module to ``include!`` (``sgp export --format
        rust --name NAME``)."""
        return export_source(self.to_bytes(), "rust", name, f"{name}.sgp")

    def inspect(self) -> Dict[str, Any]:
        """What ``sgp inspect --json`` prints: kind, sizes,
        hyperparameters, flash and RAM (a container's: each member's, and
        the RAM of the ``Artefact`` that loads them)."""
        if self._members is not None:
            return json.loads(_native.inspect_container_json(self.to_bytes()))
        return json.loads(self._native.inspect_json())

    def _rows(self, X: Any, finite: bool = True) -> np.ndarray:
        """``X`` as float64 rows of the model's inputs (a DataFrame's
        columns picked by name, a 1-D array one row), non-finite values
        refused if ``finite``."""
        X, _ = by_name(X, self.input_names)
        if np.ndim(X) == 1:
            X = np.asarray(X, dtype=np.float64)[None, :]
        X = check_array(X, dtype=np.float64, ensure_all_finite=finite)
        if X.shape[1] != self.n_inputs:
            raise ValueError(
                f"X has {X.shape[1]} columns, the model expects {self.n_inputs} "
                f"({', '.join(self.input_names)})"
            )
        return X

    def _run(self, X: Any) -> Tuple[np.ndarray, np.ndarray, Any]:
        X = self._rows(X)
        columns = []
        for model in self._models():
            raw_mean, raw_variance, raw_probability = model.predict(to_native(X), *X.shape)
            shape = (X.shape[0], model.n_outputs)
            columns.append(
                (
                    from_native(raw_mean).reshape(shape),
                    from_native(raw_variance).reshape(shape),
                    None if raw_probability is None else from_native(raw_probability),
                )
            )
        if len(columns) == 1:
            mean, variance, probability = columns[0]
            return _squeezed(mean), _squeezed(variance), probability
        # A container: each member's columns side by side.
        return (
            np.hstack([c[0] for c in columns]),
            np.hstack([c[1] for c in columns]),
            None,
        )

    def predict(self, X: Any) -> Tuple[np.ndarray, np.ndarray]:
        """The runtime's ``(mean, variance)`` at the rows of ``X`` (a
        DataFrame's columns are picked by name), float32 values widened to
        float64: of the target, noise included, for a regression; of the
        latent function, bias included, for a classifier; one column per
        output (or class latent) where the blob has several. A 1-D array
        is one row: a float32 or float64 one of a one-output model goes
        straight to the runtime (no conversion, no thread), for a loop that
        calls once per sample."""
        row = self._one_row(X)
        if row is not None:
            m, v = self._native.predict_one(*row)
            return np.array([m]), np.array([v])
        mean, variance, _ = self._run(X)
        return mean, variance

    def mean(self, X: Any) -> np.ndarray:
        """The runtime's predictive mean alone (``Model::mean``, of the first
        output) at the rows of ``X`` (a 1-D array is one row, as in
        ``predict``): no variance work, except in an updatable model, whose
        mean needs the same solve."""
        row = self._one_row(X)
        if row is not None:
            return np.array([self._native.mean_one(*row)])
        X = self._rows(X)
        # A container's first output is its first member's.
        return from_native(self._native.mean(to_native(X), *X.shape))

    def predict_uncertain(
        self, mean: Any, cov: Any, derivatives: bool = False
    ) -> UncertainPrediction:
        """The moments of every output at a Gaussian input ``x ~
        N(mean, cov)`` (raw units; ``cov`` D x D, its symmetric part used),
        as a device computes them: exact for the squared-exponential
        kernel (``sgp_runtime::Uncertain``, f32). Where no closed form exists (a
        Matérn kernel, a learned projection, a classifier's latent) they
        are the unscented transform's (``Model::predict_unscented``: 2D + 1
        sigma points; its error against Monte Carlo is in the guide's
        uncertain-input chapter), without derivatives. ``derivatives=True``
        adds their derivatives with respect to ``mean`` and ``cov`` (the
        runtime's f64 path, which also gives the moments then). See
        ``UncertainPrediction``.

        >>> import numpy as np, sgp
        >>> X = np.linspace(0, 6, 40)[:, None]
        >>> est = sgp.SparseGPRegressor(m=8).fit(X, np.sin(X[:, 0]))
        >>> model = sgp.Model.from_bytes(est.to_bytes())
        >>> y = model.predict_uncertain([3.0], [[0.01]])
        >>> y.mean.shape, y.covariance.shape, y.input_output.shape
        ((1,), (1, 1), (1, 1))
        >>> bool(abs(y.mean[0] - model.predict([[3.0]])[0][0]) < 0.01)
        True
        >>> model.predict_uncertain([3.0], [[0.01]], derivatives=True).dcov_dcov.shape
        (1, 1, 1, 1)
        """
        if self._members is not None:
            raise ValueError(
                "predict_uncertain of a container (one model per output): the outputs' "
                "covariance at an uncertain input couples models fitted apart; take each "
                "output's own model (sgp.Model.from_bytes(est.to_bytes(output=k)))"
            )
        d, p = self.n_inputs, self.n_outputs
        mu = np.asarray(mean, dtype=np.float64).reshape(-1)
        s = np.asarray(cov, dtype=np.float64)
        if mu.shape != (d,) or s.shape != (d, d):
            raise ValueError(
                f"mean must have {d} values and cov be {d} x {d} (the model's inputs); "
                f"got {mu.shape} and {s.shape}"
            )
        arrays = self._native.predict_uncertain(to_native(mu), to_native(s), derivatives)
        shapes: List[Tuple[int, ...]] = [
            (p,), (p, p), (d, p), (p, d), (p, d, d), (p, p, d), (p, p, d, d), (d, p, d), (d, p, d, d)
        ]
        return UncertainPrediction(
            *(from_native(a).reshape(shape) for a, shape in zip(arrays, shapes))
        )

    @property
    def is_updatable(self) -> bool:
        """Whether the blob learns on the device (``sgp fit --updatable``,
        ``SparseGPRegressor(updatable=True)``)."""
        return all(m.is_updatable for m in self._models())

    def update(
        self,
        X: Any,
        y: Any,
        forgetting: Optional[float] = None,
        gate: Optional[float] = None,
        gate_run: Optional[int] = None,
        noise_forgetting: Optional[float] = None,
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Conditions the model on observations, in order, exactly as a
        device's ``Model::update`` does (the same f32 code): one row (``X``
        of one row or a 1-D array of the inputs, ``y`` a number) or several
        (``X`` of N rows, ``y`` of N targets; a multi-output model: N x P).
        A classifier's targets are 1 for the positive class, 0 else.

        ``forgetting`` in (0, 1]: before each row the posterior drifts back
        towards the prior by this factor (None: the runtime's default, 1:
        nothing is forgotten, and the model is the batch posterior of every
        row it saw). ``gate``: a target further than this many predictive
        standard deviations from the prediction is not learned (None: every
        finite target is). ``gate_run``: a run of this many rows in a row
        beyond the gate opens it, the plant having moved (its last row and
        the rest of the run are learned; None: the gate never opens).
        ``noise_forgetting`` in (0, 1]: the noise variance follows the
        residuals of about the last ``1 / (1 - noise_forgetting)`` rows,
        from 0.01 times the fitted one to 100 times it or the prior variance,
        the larger (None: the fitted noise, which ``to_bytes()`` keeps too). All four are ``sgp replay``'s
        ``--forgetting``, ``--gate``, ``--gate-run`` and
        ``--noise-forgetting``, checked by the same code.

        Returns, per row, what the model predicted just before learning it
        (mean and variance, of the first output; a classifier's mean is
        ``P(y = +1)``) and whether it was learned; the model (and
        ``to_bytes()``) is then the updated one. On an error the model is
        as it was. One row of a one-output model as a 1-D float32 or
        float64 array and ``y`` a number goes straight to the runtime
        model kept loaded; several rows run in one call.

        >>> import numpy as np, sgp
        >>> X = np.linspace(0, 6, 40)[:, None]
        >>> est = sgp.SparseGPRegressor(m=8, updatable=True).fit(X, np.sin(X[:, 0]))
        >>> est.to_model().is_updatable
        True
        >>> model = sgp.Model.from_bytes(est.to_bytes())
        >>> mean, variance, learned = model.update([[3.0]], [2.0])
        >>> bool(model.predict([[3.0]])[0][0] > mean[0]) and bool(learned[0])
        True
        """
        forgetting = None if forgetting is None else float(forgetting)
        gate = None if gate is None else float(gate)
        gate_run = None if gate_run is None else int(gate_run)
        noise_forgetting = None if noise_forgetting is None else float(noise_forgetting)
        row = self._one_row(X)
        if row is not None and isinstance(y, (float, int, np.floating, np.integer)):
            m, v, kept = self._native.update_one(
                *row, float(y), forgetting, gate, gate_run, noise_forgetting
            )
            return np.array([m]), np.array([v]), np.array([kept])
        X = self._rows(X, finite=False)
        y = np.asarray(y, dtype=np.float64).reshape(X.shape[0], -1)
        if self._members is not None:
            return self._update_members(X, y, forgetting, gate, gate_run, noise_forgetting)
        mean, variance, learned = self._native.update_rows(
            to_native(X),
            X.shape[0],
            X.shape[1],
            to_native(y),
            y.shape[1],
            forgetting,
            gate,
            gate_run,
            noise_forgetting,
        )
        return from_native(mean), from_native(variance), np.asarray(learned, dtype=bool)

    def _update_members(
        self,
        X: np.ndarray,
        y: np.ndarray,
        forgetting: Optional[float],
        gate: Optional[float],
        gate_run: Optional[int],
        noise_forgetting: Optional[float],
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``update`` of a container: member ``k`` learns column ``k`` of
        ``y`` through its own update and gate. All or nothing: on an error
        every member is as it was. The first output's predictions; a row is
        learned if every member learned it."""
        assert self._members is not None
        if y.shape[1] != len(self._members):
            raise ValueError(
                f"y has {y.shape[1]} columns, the container {len(self._members)} outputs"
            )
        before = [m.to_bytes() for m in self._members]
        results = []
        try:
            for k, member in enumerate(self._members):
                column = np.ascontiguousarray(y[:, k : k + 1])
                results.append(
                    member.update_rows(
                        to_native(X), X.shape[0], X.shape[1], to_native(column), 1,
                        forgetting, gate, gate_run, noise_forgetting,
                    )
                )
        except Exception:
            self._members = [_native.Model.from_bytes(b) for b in before]
            self._native = self._members[0]
            raise
        learned = np.logical_and.reduce([np.asarray(r[2], dtype=bool) for r in results])
        return from_native(results[0][0]), from_native(results[0][1]), learned

    def predict_proba(self, X: Any) -> np.ndarray:
        """A classifier's class probabilities at the rows of ``X``, as
        scikit-learn's ``predict_proba``: n x K, one column per class in
        ``class_labels`` order (for a binary blob ``[negative, positive]``:
        the second column is ``P(y = positive class)``)."""
        if not self.is_classifier:
            raise ValueError("predict_proba needs a classifier blob; this one is a regression")
        if self._members is not None:
            raise ValueError("predict_proba of a container: it holds one model per output")
        _, _, probability = self._run(X)
        if self.n_outputs == 1:
            positive = np.asarray(probability, dtype=np.float64).reshape(-1)
            return np.column_stack([1.0 - positive, positive])
        return probability.reshape(-1, self.n_outputs)

    def __repr__(self) -> str:
        task = "classifier" if self.is_classifier else "regression"
        if self._members is not None:
            return (
                f"<sgp.Model container of {self.n_outputs} models, one per output: "
                f"inputs {self.input_names}>"
            )
        return (
            f"<sgp.Model {self.kind} {task}: {self.n_basis} basis functions, "
            f"inputs {self.input_names}, target {self.target_name!r}>"
        )


def _squeezed(a: np.ndarray) -> np.ndarray:
    """One column as a vector; several as they are."""
    return a[:, 0] if a.shape[1] == 1 else a
