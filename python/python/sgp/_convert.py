"""Blobs from Gaussian processes fitted by other libraries.

Each converter rewrites the fitted posterior in the runtime form every sgp
blob uses and exports it through the same f32 check as ``sgp fit`` (a model
the runtime cannot reproduce raises ``sgp.ExportError``). Kernels other than
a squared exponential, scaled and with white noise, cannot be represented
and are refused with a ``ValueError`` saying what is supported.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _native
from ._arrays import to_native
from ._device import Model

_SKLEARN_SUPPORTED = (
    "an RBF or Matern kernel with nu 0.5, 1.5 or 2.5 (isotropic or ARD), optionally "
    "times a ConstantKernel, plus an optional WhiteKernel"
)

#: scikit-learn's Matern ``nu`` and GPflow's kernel class names, by the
#: trainer's kernel name.
_SKLEARN_NU = {0.5: "matern12", 1.5: "matern32", 2.5: "matern52"}
_GPFLOW_KERNELS = {
    "SquaredExponential": "se",
    "RBF": "se",
    "Matern12": "matern12",
    "Exponential": "matern12",
    "Matern32": "matern32",
    "Matern52": "matern52",
}


def _fitted(
    X: Any,
    y: Any,
    input_names: Optional[Sequence[str]],
    target_name: str,
    lengthscales: Any,
    signal_variance: float,
    noise_variance: float,
    force: bool,
    kernel: str = "se",
) -> Dict[str, Any]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"training inputs must be 2-D, got shape {X.shape}")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"one output is supported, got targets of shape {y.shape}")
    n, d = X.shape
    names = [f"x{j}" for j in range(d)] if input_names is None else [str(s) for s in input_names]
    lengthscales = np.broadcast_to(np.asarray(lengthscales, dtype=np.float64), (d,))
    return {
        "x": to_native(X),
        "y": to_native(y),
        "n": n,
        "d": d,
        "input_names": names,
        "target_name": target_name,
        "lengthscales": [float(v) for v in lengthscales],
        "signal_variance": float(signal_variance),
        "noise_variance": float(noise_variance),
        "kernel": kernel,
        "force": bool(force),
    }


def _sklearn_kernel(kernel: Any) -> Tuple[Any, float, float, str]:
    """``(rbf, constant, white, name)`` of a supported scikit-learn kernel:
    ``rbf`` its RBF or Matern term, ``name`` the trainer's kernel name."""
    from sklearn.gaussian_process import kernels as k

    def terms(kern: Any) -> List[Any]:
        if isinstance(kern, k.Sum):
            return terms(kern.k1) + terms(kern.k2)
        return [kern]

    def factors(kern: Any) -> List[Any]:
        if isinstance(kern, k.Product):
            return factors(kern.k1) + factors(kern.k2)
        return [kern]

    def refuse(why: str) -> ValueError:
        return ValueError(
            f"sgp.from_sklearn cannot represent the kernel {kernel}: {why}; supported is "
            + _SKLEARN_SUPPORTED
        )

    rbf, constant, white = None, 1.0, 0.0
    for term in terms(kernel):
        if isinstance(term, k.WhiteKernel):
            white += float(term.noise_level)
            continue
        parts = factors(term)
        kinds = [type(p) for p in parts]
        # sklearn's Matern is a subclass of RBF: test it first.
        shapes = [p for p in parts if isinstance(p, k.RBF)]
        if len(shapes) != 1 or any(
            not isinstance(p, (k.RBF, k.ConstantKernel)) for p in parts
        ):
            raise refuse(f"the term {term} is not an RBF or Matern times constants")
        if rbf is not None:
            raise refuse("it sums two RBF or Matern terms")
        rbf = shapes[0]
        if isinstance(rbf, k.Matern):
            nu = float(rbf.nu)
            if nu not in _SKLEARN_NU:
                raise refuse(f"Matern nu={nu} has no closed form on the device")
            name = _SKLEARN_NU[nu]
        elif type(rbf) is k.RBF:
            name = "se"
        else:
            raise refuse(f"the term {term} is not an RBF or Matern times constants")
        for p in parts:
            if isinstance(p, k.ConstantKernel):
                constant *= float(p.constant_value)
    if rbf is None:
        raise refuse("it has no RBF or Matern term")
    return rbf, constant, white, name


def _scalar(v: Any, what: str) -> float:
    a = np.ravel(np.asarray(v, dtype=np.float64))
    if a.size != 1:
        raise ValueError(f"one output is supported, {what} has {a.size} values")
    return float(a[0])


def from_sklearn(
    gpr: Any,
    input_names: Optional[Sequence[str]] = None,
    target_name: str = "y",
    force: bool = False,
) -> Model:
    """A blob from a fitted ``sklearn.gaussian_process.GaussianProcessRegressor``
    whose device predictions match ``gpr.predict(X, return_std=True)``
    (within the export check's tolerance: 1% of the standard deviation).

    The kernel must be an ``RBF`` or a ``Matern`` with ``nu`` 0.5, 1.5 or
    2.5 (isotropic or ARD), optionally times a ``ConstantKernel``, plus an
    optional ``WhiteKernel``; ``normalize_y`` may
    be on or off. The model is an exact GP, one basis function per training
    row (at most 4096). Input names come from ``input_names``, else the
    ``feature_names_in_`` of a fit on a DataFrame, else ``x0, x1, ...``.

    A model the f32 runtime cannot reproduce raises ``sgp.ExportError``
    (``force=True`` exports it anyway). That happens to a GP with almost no
    noise, which interpolates its data with large weights of alternating
    sign, and to one without ``normalize_y`` on a target far from zero.

    >>> import numpy as np, sgp
    >>> from sklearn.gaussian_process import GaussianProcessRegressor
    >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    >>> X = np.linspace(0, 5, 30)[:, None]
    >>> y = np.sin(X[:, 0]) + 0.1 * np.random.default_rng(0).standard_normal(30)
    >>> gpr = GaussianProcessRegressor(RBF() + WhiteKernel(0.01)).fit(X, y)
    >>> model = sgp.from_sklearn(gpr)
    >>> mean, sd = gpr.predict(X, return_std=True)
    >>> bool(np.all(abs(model.predict(X)[0] - mean) <= 0.01 * sd))
    True
    """
    if not hasattr(gpr, "X_train_") or not hasattr(gpr, "L_"):
        raise ValueError("sgp.from_sklearn needs a fitted GaussianProcessRegressor")
    rbf, constant, white, kernel_name = _sklearn_kernel(gpr.kernel_)
    if input_names is None and hasattr(gpr, "feature_names_in_"):
        input_names = list(gpr.feature_names_in_)
    fitted = _fitted(
        gpr.X_train_, gpr.y_train_, input_names, target_name, rbf.length_scale, constant, white,
        force, kernel_name,
    )
    alpha = np.asarray(gpr.alpha_, dtype=np.float64)
    if alpha.ndim == 2 and alpha.shape[1] != 1:
        raise ValueError(f"one output is supported, the model has {alpha.shape[1]}")
    try:
        blob = _native.exact_blob(
            fitted,
            to_native(alpha.ravel()),
            to_native(gpr.L_),
            _scalar(gpr._y_train_mean, "the target mean"),
            _scalar(gpr._y_train_std, "the target scale"),
        )
    except _native.ExportError as e:
        noise = white + float(np.max(gpr.alpha))
        advice = []
        if noise < 1e-4 * constant:
            advice.append(
                f"the noise ({noise:.2g}: WhiteKernel plus alpha) is under 1e-4 of the signal "
                "variance, so the GP interpolates with weights f32 cannot resolve: add a "
                "WhiteKernel, or raise its noise_level_bounds"
            )
        y = np.asarray(gpr.y_train_, dtype=np.float64)
        if not gpr.normalize_y and abs(y.mean()) > y.std():
            advice.append(
                "the target's mean is far from the prior mean 0: fit with normalize_y=True"
            )
        raise _native.ExportError("; ".join([str(e)] + advice)) from e
    return Model.from_bytes(blob)


def _value(p: Any) -> np.ndarray:
    """A GPflow parameter's (or a plain array's) value."""
    return np.asarray(p.numpy() if hasattr(p, "numpy") else p, dtype=np.float64)


def _gpflow_jitter(model: Any) -> float:
    """GPflow's jitter on ``Kuu``; gpflow is imported only for its own models."""
    if type(model).__module__.startswith("gpflow"):
        import gpflow

        return float(gpflow.config.default_jitter())
    return 1e-6


def from_gpflow(
    model: Any,
    data: Optional[Tuple[Any, Any]] = None,
    input_names: Optional[Sequence[str]] = None,
    target_name: str = "y",
    force: bool = False,
) -> Model:
    """A blob from a trained GPflow ``SGPR``, ``GPRFITC`` or ``SVGP`` with a
    ``SquaredExponential``, ``Matern12``, ``Matern32`` or ``Matern52``
    kernel, a zero mean function and one latent GP,
    whose device predictions match ``model.predict_y`` (``SVGP`` with a
    ``Bernoulli`` likelihood: the probit class probability).

    ``data=(X, Y)`` is the training data; ``SGPR`` and ``GPRFITC`` carry
    theirs, ``SVGP`` needs it (for the blob's input scaling and training
    range, and the export check). Models are recognised by their class
    names, so gpflow is imported only to read its jitter setting. A model
    the f32 runtime cannot reproduce raises ``sgp.ExportError``
    (``force=True`` exports it anyway).
    """
    kind = type(model).__name__
    if kind not in ("SGPR", "GPRFITC", "SVGP"):
        raise ValueError(f"sgp.from_gpflow converts SGPR, GPRFITC and SVGP models, not {kind}")
    kernel = type(model.kernel).__name__
    if kernel not in _GPFLOW_KERNELS:
        raise ValueError(
            "sgp.from_gpflow needs a SquaredExponential, Matern12, Matern32 or Matern52 "
            f"kernel (ARD or not), not {kernel}"
        )
    mean = type(getattr(model, "mean_function", None)).__name__
    if mean not in ("Zero", "NoneType"):
        raise ValueError(f"sgp.from_gpflow needs a zero mean function, not {mean}")
    inducing = type(model.inducing_variable).__name__
    if inducing != "InducingPoints":
        raise ValueError(f"sgp.from_gpflow needs InducingPoints, not {inducing}")
    if data is None:
        if kind == "SVGP":
            raise ValueError("an SVGP does not keep its data: pass data=(X, Y)")
        data = model.data
    X, Y = (_value(a) for a in data)
    likelihood = type(model.likelihood).__name__
    probit = likelihood == "Bernoulli"
    if not probit and likelihood != "Gaussian":
        raise ValueError(f"sgp.from_gpflow needs a Gaussian or Bernoulli likelihood, not {likelihood}")
    if probit and kind != "SVGP":
        raise ValueError(f"a Bernoulli likelihood needs an SVGP, not {kind}")
    if probit and "probit" not in getattr(model.likelihood.invlink, "__name__", ""):
        raise ValueError("sgp.from_gpflow needs the Bernoulli likelihood's probit link")
    fitted = _fitted(
        X,
        Y,
        input_names,
        target_name,
        _value(model.kernel.lengthscales),
        _scalar(_value(model.kernel.variance), "the kernel variance"),
        0.0 if probit else _scalar(_value(model.likelihood.variance), "the noise variance"),
        force,
        _GPFLOW_KERNELS[kernel],
    )
    Z = _value(model.inducing_variable.Z)
    if kind != "SVGP":
        objective = "vfe" if kind == "SGPR" else "fitc"
        blob = _native.inducing_blob(
            fitted, to_native(Z), len(Z), objective, _gpflow_jitter(model)
        )
        return Model.from_bytes(blob)
    q_mu = _value(model.q_mu)
    q_sqrt = _value(model.q_sqrt)
    if q_mu.ndim == 2 and q_mu.shape[1] != 1:
        raise ValueError(f"one latent GP is supported, q_mu has {q_mu.shape[1]}")
    if getattr(model, "q_diag", False) or q_sqrt.ndim == 2:
        q_sqrt = np.diag(np.ravel(q_sqrt))
    elif q_sqrt.shape[0] != 1:
        raise ValueError(f"one latent GP is supported, q_sqrt has {q_sqrt.shape[0]}")
    else:
        q_sqrt = q_sqrt[0]
    blob = _native.variational_blob(
        fitted,
        to_native(Z),
        len(Z),
        to_native(q_mu.ravel()),
        to_native(q_sqrt),
        bool(model.whiten),
        _gpflow_jitter(model),
        probit,
    )
    return Model.from_bytes(blob)
