"""sgp.from_gpflow against real GPflow models (not run by CI: it needs
TensorFlow). Trains SGPR, GPRFITC and SVGP (Gaussian, whitened or not, and
Bernoulli; SE, and each Matérn kernel for SGPR and GPRFITC, Matern32 for SVGP) on generated data, converts each, and compares the device's f32
predictions with GPflow's ``predict_y``: the mean within 1% of GPflow's
standard deviation (or, where the peer model itself cancels terms f32 cannot
hold, within the worst case of f32 evaluation it prints), the standard deviation
within 1%, a class probability within 1e-3. Prints one line per model and exits non-zero on a miss.

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


def f32_bound(model, test):
    """The worst mean deviation f32 evaluation alone can cause, as a fraction
    of the predictive sd: (the runtime's kernel-value error, 2.9e-7 relative,
    plus M unit round-offs of the sum) times sum_m |alpha_m k(x, z_m)| / sd,
    the mean being sum_m alpha_m k(x, z_m) with alpha = Kuu^-1 m(Z). A peer fit
    whose kernel variance dwarfs the data (a long length scale carrying a
    trend) cancels terms of 1e4 times the mean; no f32 form escapes that."""
    Z = model.inducing_variable.Z.numpy()
    kuu = model.kernel(Z).numpy()
    alpha = np.linalg.solve(kuu + 1e-10 * np.trace(kuu) * np.eye(len(Z)),
                            model.predict_f(Z)[0].numpy()[:, 0])
    terms = np.abs(alpha[:, None] * model.kernel(Z, test).numpy()).sum(0)
    sd = np.sqrt(model.predict_y(test)[1].numpy()[:, 0])
    return np.max((2.9e-7 + len(Z) * 2.0**-24) * terms / sd)


def regression_worst(model, converted, test):
    mean, var = (t.numpy()[:, 0] for t in model.predict_y(test))
    sd = np.sqrt(var)
    device_mean, device_var = converted.predict(test)
    return (
        np.max(np.abs(device_mean - mean) / sd),
        np.max(np.abs(np.sqrt(device_var) - sd) / sd),
    )


def main():
    X, Y, test = data()
    Z = X[np.random.default_rng(1).choice(len(X), 20, replace=False)].copy()
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
            note = f"  (refused without force=True: {str(refused)[:60]}...)"
        mean_ratio, sd_ratio = regression_worst(model, converted, test)
        bound = f32_bound(model, test)
        # Within 1% of the sd, or (the peer model's own conditioning) within
        # the worst case of f32 evaluation: a wrong conversion is off by far
        # more than either.
        ok = sd_ratio <= 1e-2 and mean_ratio <= max(1e-2, bound)
        verdict = ("ok" if mean_ratio <= 1e-2 else "f32-bound") if ok else "MISS"
        failures += not ok
        print(f"{name:28} worst |mean diff|/sd {mean_ratio:.2e} (f32 bound {bound:.1e})  "
              f"worst |sd diff|/sd {sd_ratio:.2e}  {verdict}{note}")
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
    print(f"{'SVGP Bernoulli':28} worst |p diff| {worst:.2e}  {'ok' if ok else 'MISS'}")
    return 1 if failures else 0


if __name__ == "__main__":
    tf.random.set_seed(0)
    sys.exit(main())
