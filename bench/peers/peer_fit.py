"""Fit FITC with GPy or GPflow on a training CSV, score on a test CSV.

    python peer_fit.py gpy|gpflow|gpflow-ms --train TRAIN.csv --test TEST.csv --m M [--iters N] [--seed S] [--points FILE] [--params FILE]

Prints one JSON line: seconds (fit only: initialisation + optimisation, not
imports or CSV reading), test NLPD and RMSE in raw target units, the
optimiser's iteration count and the final training NLML (on the
standardised data, in nats, as `sgp fit --json` reports it). Setup mirrors `sgp fit`'s defaults where the
libraries allow: inputs and target standardised on the training data, ARD
squared-exponential kernel (or --kernel's Matérn), pseudo-inputs started at k-means centres (scipy,
seeded), the same data-scale start as `sgp` (each length scale half its
input's range, signal variance 1, noise variance 0.1), noise floor 1e-6 (GPflow's default; GPy's is set to match),
L-BFGS-B (scipy) for at most --iters iterations. The last CSV column is the
target; every other column is an input. --params writes the start and the
fitted parameters in raw units (pseudo-inputs, length scales, signal and
noise variance) as JSON, to evaluate another fit's objective there.

`gpflow-ms` is GPflow's FITC (`GPRFITC`) with multiscale inducing variables
(`gpflow.inducing_variables.Multiscale`, Walder et al. 2008), the peer of
`sgp fit --model vsgp`: basis function m has its own width per input,
`Delta_md = (l_d + r_md)^2` with `r_md >= 0` (GPflow's `scales`; its Kuf
and Kuu add them to the kernel's length scales, so `r = 0` is plain
inducing points). Squared exponential only (GPflow has multiscale
covariances for it alone); every `r_md` starts at the kernel's start length
scale `l_d`, so every basis starts twice the kernel's width, and the
optimiser (the same L-BFGS-B budget) moves Z, r and the hyperparameters
together from there.
"""

import argparse
import json
import os
import sys
import time

import numpy as np


def load(path):
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return data[:, :-1], data[:, -1:]


def kmeans_centres(x, m, seed):
    from scipy.cluster.vq import kmeans2

    rng = np.random.default_rng(seed)
    init = x[rng.choice(len(x), size=m, replace=False)]
    centres, _ = kmeans2(x, init, iter=100, minit="matrix")
    return centres


def point_nlpd(mean, var, y):
    return (0.5 * np.log(2 * np.pi * var) + 0.5 * (y - mean) ** 2 / var).ravel()


def start_lengthscales(x):
    half = 0.5 * (x.max(0) - x.min(0))
    half[~(half > 0)] = 1.0
    return half


def fitted_params(z, lengthscales, signal_var, noise_var):
    """Fitted parameters in the standardised units of the fit."""
    return {
        "z": np.asarray(z, dtype=float).tolist(),
        "lengthscales": np.atleast_1d(np.asarray(lengthscales, dtype=float)).tolist(),
        "signal_var": float(np.asarray(signal_var).ravel()[0]),
        "noise_var": float(np.asarray(noise_var).ravel()[0]),
    }


def to_raw_units(params, xm, xsd, ysd):
    """`params` (standardised units) in the raw units of the data."""
    raw = {
        "z": (np.asarray(params["z"]) * xsd + xm).tolist(),
        "lengthscales": (np.asarray(params["lengthscales"]) * xsd).tolist(),
        "signal_var": params["signal_var"] * ysd * ysd,
        "noise_var": params["noise_var"] * ysd * ysd,
    }
    if "scales" in params:
        raw["scales"] = (np.asarray(params["scales"]) * xsd).tolist()
    return raw


def fit_gpy(x, y, z, iters, kernel="se"):
    import GPy

    d = x.shape[1]
    make = {
        "se": GPy.kern.RBF,
        "matern12": GPy.kern.Exponential,
        "matern32": GPy.kern.Matern32,
        "matern52": GPy.kern.Matern52,
    }[kernel]
    kern = make(d, variance=1.0, lengthscale=start_lengthscales(x), ARD=True)
    model = GPy.models.SparseGPRegression(x, y, kernel=kern, Z=z.copy())
    model.likelihood.variance = 0.1
    model.inference_method = GPy.inference.latent_function_inference.FITC()
    model.likelihood.variance.constrain_bounded(1e-6, 1e6, warning=False)
    model.optimize("lbfgsb", max_iters=iters, messages=False)
    iterations = int(getattr(model.optimization_runs[-1], "funct_eval", 0) or 0)

    def predict(xs):
        mean, var = model.predict(xs, include_likelihood=True)
        return mean, var

    fitted = fitted_params(
        model.Z.values, kern.lengthscale.values, kern.variance.values, model.likelihood.variance.values
    )
    return predict, iterations, float(-model.log_likelihood()), fitted


def fit_gpflow(x, y, z, iters, threads, kernel="se", multiscale=None):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import gpflow

    make = {
        "se": gpflow.kernels.SquaredExponential,
        "matern12": gpflow.kernels.Matern12,
        "matern32": gpflow.kernels.Matern32,
        "matern52": gpflow.kernels.Matern52,
    }[kernel]
    kern = make(variance=1.0, lengthscales=start_lengthscales(x))
    inducing = z.copy()
    if multiscale is not None:
        if kernel != "se":
            sys.exit("peer_fit.py: gpflow-ms has the squared exponential kernel only")
        scales = multiscale * np.tile(start_lengthscales(x), (len(z), 1))
        inducing = gpflow.inducing_variables.Multiscale(inducing, scales)
    model = gpflow.models.GPRFITC(
        (x, y), kernel=kern, inducing_variable=inducing, noise_variance=0.1
    )
    res = gpflow.optimizers.Scipy().minimize(
        model.training_loss,
        model.trainable_variables,
        options=dict(maxiter=iters),
        compile=True,
    )

    def predict(xs):
        mean, var = model.predict_y(xs)
        return mean.numpy(), var.numpy()

    fitted = fitted_params(
        model.inducing_variable.Z.numpy(),
        kern.lengthscales.numpy(),
        kern.variance.numpy(),
        model.likelihood.variance.numpy(),
    )
    if multiscale is not None:
        fitted["scales"] = model.inducing_variable.scales.numpy().tolist()
    return predict, int(res.nit), float(model.training_loss().numpy()), fitted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool", choices=["gpy", "gpflow", "gpflow-ms"])
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--m", type=int, required=True)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--points", help="also write each test row's NLPD here, one per line")
    ap.add_argument("--params", help="also write the start and the fitted parameters (raw units) here, as JSON")
    ap.add_argument("--ms-scale", type=float, default=1.0,
                    help="gpflow-ms: each r_md starts at this times the start length scale l_d")
    ap.add_argument("--kernel", default="se", choices=["se", "matern12", "matern32", "matern52"])
    args = ap.parse_args()
    threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    x, y = load(args.train)
    xs, ys = load(args.test)
    # Import before the clock starts: library start-up is not fitting.
    if args.tool == "gpy":
        import GPy  # noqa: F401
    else:
        import gpflow  # noqa: F401
    start = time.perf_counter()
    xm, xsd = x.mean(0), x.std(0)
    xsd[xsd == 0] = 1.0
    ym, ysd = float(y.mean()), float(y.std())
    xn, yn = (x - xm) / xsd, (y - ym) / ysd
    z = kmeans_centres(xn, args.m, args.seed)
    start_params = fitted_params(z, start_lengthscales(xn), 1.0, 0.1)
    if args.tool == "gpy":
        predict, iterations, train_nlml, fitted = fit_gpy(xn, yn, z, args.iters, args.kernel)
    else:
        predict, iterations, train_nlml, fitted = fit_gpflow(
            xn, yn, z, args.iters, threads, args.kernel, multiscale=args.ms_scale if args.tool == "gpflow-ms" else None
        )
    seconds = time.perf_counter() - start
    mean, var = predict((xs - xm) / xsd)
    mean = mean * ysd + ym
    var = var * ysd * ysd
    points = point_nlpd(mean, var, ys)
    if args.points:
        np.savetxt(args.points, points)
    if args.params:
        with open(args.params, "w") as f:
            json.dump(
                {
                    "start": to_raw_units(start_params, xm, xsd, ysd),
                    "fitted": to_raw_units(fitted, xm, xsd, ysd),
                },
                f,
            )
    lo, hi = mean - 1.96 * np.sqrt(var), mean + 1.96 * np.sqrt(var)
    out = {
        "tool": args.tool,
        "kernel": args.kernel,
        "coverage": float(np.mean((ys >= lo) & (ys <= hi))),
        "seconds": seconds,
        "nlpd": float(points.mean()),
        "rmse": float(np.sqrt(np.mean((mean - ys) ** 2))),
        "iterations": iterations,
        "train_nlml": train_nlml,
    }
    if "scales" in fitted:
        # Each basis width over the kernel's, (l + r) / l: 1 is plain FITC.
        ratio = 1.0 + np.asarray(fitted["scales"]) / np.asarray(fitted["lengthscales"])
        out["width_ratio"] = [float(q) for q in np.quantile(ratio, [0.0, 0.5, 1.0])]
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
