"""sgp.from_gpflow against real GPflow models (not run by CI: it needs
TensorFlow). Trains SGPR, GPRFITC and SVGP (Gaussian, whitened or not, and
Bernoulli; SE, and each Matérn kernel for SGPR and GPRFITC, Matern32 for
SVGP) on generated data, converts each, and compares the device's f32
predictions with GPflow's ``predict_y``: the mean and the standard deviation
within 1% of GPflow's standard deviation, a class probability within 1e-3.

Each regression line splits the deviations into their sources, each as a
fraction of GPflow's sd (worst over the test points). ``algebra``: the
runtime form of MATH.md computed in f64 from the peer's parameters, against
GPflow (the mean's, and in the last two columns the sd's). ``stored``: that
form's mean from the numbers a blob stores for it rounded to f32 (evaluated
in f64), against the f64 form. ``f32 eval``: the device against the rounded
form. ``total``: the device against GPflow. ``cancel`` is
``max sum_m |beta_m k(x, z_m)| / sd``: a mean that is a sum of terms that
many times its sd loses about that many f32 round-offs (6e-8) in any f32
evaluation of the form. A line misses when the mean or the sd is off by
more than 1%. A miss of the mean alone is marked ``f32`` when the
conversion is exact (its ``algebra`` under 1e-6) and the device's own
deviation is within 4 f32 round-offs times ``cancel``; the script exits
non-zero on any other miss.
Arguments are data seeds (default 0: the guide's table); each seed draws
its own data and initial inducing inputs.

    python -m venv /tmp/venv-gpflow
    /tmp/venv-gpflow/bin/pip install -r bench/peers/requirements.txt ./python
    /tmp/venv-gpflow/bin/python python/bench/check_from_gpflow.py
"""

import sys

import gpflow
import numpy as np
import tensorflow as tf

import sgp


def data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 5.0, (n, 2)) + np.array([0.0, 50.0])
    y = 3.0 * np.sin(X[:, 0]) + 0.5 * (X[:, 1] - 52.5) + 0.2 * rng.standard_normal(n)
    test = rng.uniform(-1.0, 6.0, (400, 2)) + np.array([0.0, 50.0])
    return X, y[:, None], test


def kernel(name="SquaredExponential"):
    return getattr(gpflow.kernels, name)(lengthscales=[1.0, 1.0])


def train(model, data=None, iterations=300):
    if data is None:
        gpflow.optimizers.Scipy().minimize(
            model.training_loss, model.trainable_variables, options={"maxiter": iterations}
        )
    else:
        loss = model.training_loss_closure(data)
        gpflow.optimizers.Scipy().minimize(
            loss, model.trainable_variables, options={"maxiter": iterations}
        )
    return model


ROUNDOFF = 2.0**-24


def runtime_form(model, X, Y):
    """``(beta, L1, L2)`` of MATH.md's runtime form, in f64 from the peer's
    kernel and parameters: FITC or VFE for GPRFITC and SGPR, the SVGP
    rewrite of ``sgp._convert``."""
    Z = model.inducing_variable.Z.numpy()
    kuu = model.kernel(Z).numpy() + gpflow.config.default_jitter() * np.eye(len(Z))
    L = np.linalg.cholesky(kuu)
    kind = type(model).__name__
    if kind == "SVGP":
        q_mu = model.q_mu.numpy()[:, 0]
        beta, B = (np.linalg.solve(L.T, q_mu), L.T) if model.whiten else (
            np.linalg.solve(kuu, q_mu), kuu)
        R = np.linalg.solve(model.q_sqrt.numpy()[0], B)
        return beta, L, np.linalg.cholesky(R.T @ R)
    V = np.linalg.solve(L, model.kernel(Z, X).numpy())
    noise = float(model.likelihood.variance.numpy())
    if kind == "GPRFITC":
        gamma = model.kernel(X, full_cov=False).numpy() - (V * V).sum(0) + noise
    else:
        gamma = np.full(len(X), noise)
    A = np.eye(len(Z)) + (V / gamma) @ V.T
    beta = np.linalg.solve(L.T, np.linalg.solve(A, V @ (Y[:, 0] / gamma)))
    return beta, L, L @ np.linalg.cholesky(A)


def stored_mean(model, X, beta, test):
    """The mean from the numbers a blob stores for it (input
    standardisation, standardised centres, inverse squared widths,
    amplitude, beta) rounded to f32, evaluated in f64."""
    f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)  # noqa: E731
    mean, scale = f32(X.mean(0)), f32(X.std(0))
    z = (f32(test) - mean) / scale
    c = f32((model.inducing_variable.Z.numpy() - mean) / scale)
    widths = f32((scale / model.kernel.lengthscales.numpy()) ** 2)
    r = np.sqrt((((z[:, None, :] - c[None]) ** 2) * widths).sum(-1))
    shape = {
        "SquaredExponential": lambda r: np.exp(-0.5 * r * r),
        "Matern12": lambda r: np.exp(-r),
        "Matern32": lambda r: (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r),
        "Matern52": lambda r: (1 + np.sqrt(5) * r + 5 * r * r / 3) * np.exp(-np.sqrt(5) * r),
    }[type(model.kernel).__name__]
    return f32(model.kernel.variance.numpy()) * shape(r) @ f32(beta)


def regression_line(name, model, converted, X, Y, test):
    """One regression model's line, and whether it fails."""
    mean, var = (t.numpy()[:, 0] for t in model.predict_y(test))
    sd = np.sqrt(var)
    device_mean, device_var = converted.predict(test)
    beta, L1, L2 = runtime_form(model, X, Y)
    k = model.kernel(test, model.inducing_variable.Z.numpy()).numpy()
    f64_var = (model.kernel(test, full_cov=False).numpy() + model.likelihood.variance.numpy()
               - (np.linalg.solve(L1, k.T) ** 2).sum(0) + (np.linalg.solve(L2, k.T) ** 2).sum(0))
    rounded = stored_mean(model, X, beta, test)
    worst = lambda a, b: np.max(np.abs(a - b) / sd)  # noqa: E731
    algebra, stored = worst(k @ beta, mean), worst(rounded, k @ beta)
    arithmetic, total = worst(device_mean, rounded), worst(device_mean, mean)
    sd_algebra, sd_total = worst(np.sqrt(f64_var), sd), worst(np.sqrt(device_var), sd)
    cancel = np.max(np.abs(k * beta).sum(1) / sd)
    if total <= 1e-2 and sd_total <= 1e-2:
        verdict, failed = "ok", False
    elif sd_total <= 1e-2 and algebra <= 1e-6 and arithmetic <= 4 * ROUNDOFF * cancel:
        verdict, failed = "MISS (f32)", False
    else:
        verdict, failed = "MISS", True
    line = (f"{name:27} {algebra:8.1e} {stored:8.1e} {arithmetic:8.1e} {total:8.1e} "
            f"{cancel:8.1e} {sd_algebra:8.1e} {sd_total:8.1e}  {verdict}")
    return line, failed


def main(seed=0):
    X, Y, test = data(seed)
    Z = X[np.random.default_rng(seed + 1).choice(len(X), 20, replace=False)].copy()
    failures = 0
    cases = [
        ("SGPR", lambda: train(gpflow.models.SGPR((X, Y), kernel(), Z.copy())), None),
        ("GPRFITC", lambda: train(gpflow.models.GPRFITC((X, Y), kernel(), Z.copy())), None),
    ]
    for name in ("Matern12", "Matern32", "Matern52"):
        cases.append((
            f"SGPR {name}",
            lambda name=name: train(gpflow.models.SGPR((X, Y), kernel(name), Z.copy())),
            None,
        ))
        cases.append((
            f"GPRFITC {name}",
            lambda name=name: train(gpflow.models.GPRFITC((X, Y), kernel(name), Z.copy())),
            None,
        ))
    cases.append((
        "SVGP Gaussian Matern32",
        lambda: train(
            gpflow.models.SVGP(kernel("Matern32"), gpflow.likelihoods.Gaussian(), Z.copy(),
                               num_data=len(X)),
            data=(X, Y),
        ),
        (X, Y),
    ))
    for whiten in (True, False):
        cases.append((
            f"SVGP Gaussian whiten={whiten}",
            lambda whiten=whiten: train(
                gpflow.models.SVGP(kernel(), gpflow.likelihoods.Gaussian(), Z.copy(),
                                   whiten=whiten, num_data=len(X)),
                data=(X, Y),
            ),
            (X, Y),
        ))
    print(f"{'':27} {'mean deviation / sd':^35} {'':8} {'sd deviation / sd':^17}".rstrip())
    print(f"{'model':27} {'algebra':>8} {'stored':>8} {'f32 eval':>8} {'total':>8} "
          f"{'cancel':>8} {'algebra':>8} {'total':>8}")
    for name, make, given in cases:
        model = make()
        note = ""
        try:
            converted = sgp.from_gpflow(model, data=given)
        except sgp.ExportError as refused:
            # The export check holds the f32 variance to 1% relative at the
            # training inputs; a peer fit that interpolates (noise near 0)
            # has variances f32 cannot resolve there. The refusal is the
            # contract; the forced blob is still compared on the test points.
            converted = sgp.from_gpflow(model, data=given, force=True)
            note = "  (refused without force=True)"
        line, failed = regression_line(name, model, converted, X, Y, test)
        failures += failed
        print(line + note)
    labels = (Y[:, 0] > np.median(Y)).astype(float)[:, None]
    model = train(
        gpflow.models.SVGP(kernel(), gpflow.likelihoods.Bernoulli(), Z.copy(), num_data=len(X)),
        data=(X, labels),
    )
    converted = sgp.from_gpflow(model, data=(X, labels))
    # GPflow's inv_probit squashes Phi into [1e-3, 1 - 1e-3]; sgp's runtime
    # computes Phi itself.
    squash = 1e-3
    p = (model.predict_y(test)[0].numpy()[:, 0] - squash) / (1.0 - 2.0 * squash)
    worst = np.max(np.abs(converted.predict_proba(test) - p))
    ok = worst <= 1e-3
    failures += not ok
    print(f"{'SVGP Bernoulli':27} worst |p diff| {worst:.1e}  {'ok' if ok else 'MISS'}")
    return 1 if failures else 0


if __name__ == "__main__":
    failed = 0
    for seed in [int(a) for a in sys.argv[1:]] or [0]:
        tf.random.set_seed(0)
        if len(sys.argv) > 2:
            print(f"seed {seed}")
        failed |= main(seed)
    sys.exit(failed)
