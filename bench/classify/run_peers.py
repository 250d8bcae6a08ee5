"""Classification peers, side by side in one run on the sets written by
make_sets.py: `sgp fit` (svgp and ivm, whole process timed), GPflow SVGP
(M learned inducing inputs, ARD, probit, whitened, full-batch L-BFGS), an
exact GP classifier (scikit-learn GaussianProcessClassifier, Laplace, ARD)
and an RBF SVM (scikit-learn SVC, C and gamma chosen by 5-fold CV, Platt
probabilities). Every tool runs with the same thread count (OMP_NUM_THREADS,
default 2; TensorFlow's intra-op pool is set to it, sgp's rayon pool is
RAYON_NUM_THREADS).

    python bench/classify/run_peers.py [--only NAME,...] [--tools sgp,ivm,gpflow,gpc,svm] [--m 128]
    python bench/classify/run_peers.py --multiclass --tools svm,gpflow   # data/multiclass

With --multiclass the sets of K > 2 classes are scored on all K
probabilities (error of the most probable class, log loss, ECE of its
probability); sgp's multi-class figures come from
`cargo run --release -p sgp-trainer --example multiclass_suite`.

Prints a markdown table: test error (%), log loss, ECE (10 equal-width
bins), fit seconds; one JSON line per fit on stderr.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
THREADS = int(os.environ.setdefault("OMP_NUM_THREADS", "2"))
os.environ.setdefault("RAYON_NUM_THREADS", str(THREADS))


def load(path):
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return data[:, :-1], data[:, -1]


def scores(p, y):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    err = float(np.mean((p >= 0.5) != (y > 0.5)))
    logloss = float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
    bins = np.minimum((p * 10).astype(int), 9)
    ece = sum(
        abs(np.mean(y[bins == b]) - np.mean(p[bins == b])) * np.mean(bins == b)
        for b in range(10)
        if np.any(bins == b)
    )
    return err, logloss, float(ece)


def multiclass_scores(p, y):
    """Error, log loss and top-class ECE (10 bins) of probabilities p (N x K)
    against class indices y."""
    top = p.argmax(axis=1)
    confidence = p.max(axis=1)
    right = top == y
    err = float(np.mean(~right))
    logloss = float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-12, 1))))
    bins = np.minimum((confidence * 10).astype(int), 9)
    ece = sum(
        abs(np.sum(confidence[bins == b]) - np.sum(right[bins == b])) for b in range(10)
    ) / len(y)
    return err, logloss, float(ece)


def run_sgp(sgp, train, test, m, model):
    with tempfile.TemporaryDirectory(prefix="classify-") as scratch:
        blob = os.path.join(scratch, "model.sgp")
        start = time.perf_counter()
        subprocess.run(
            [sgp, "fit", "--quiet", "--data", train, "--m", str(m), "--model", model, "--out", blob],
            check=True,
            capture_output=True,
        )
        seconds = time.perf_counter() - start
        out = subprocess.run(
            [sgp, "predict", "--model", blob, "--data", test],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
    header = out[0].split(",")
    col = header.index("probability")
    p = np.array([float(line.split(",")[col]) for line in out[1:]])
    return p, seconds


def standardise(x, xs):
    mean, sd = x.mean(0), x.std(0)
    sd[sd == 0] = 1.0
    return (x - mean) / sd, (xs - mean) / sd


def run_gpflow(x, y, xs, m, classes=None, seed=0):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import gpflow
    from scipy.cluster.vq import kmeans2

    start = time.perf_counter()
    x, xs = standardise(x, xs)
    rng = np.random.default_rng(seed)
    z, _ = kmeans2(x, x[rng.choice(len(x), size=m, replace=False)], iter=100, minit="matrix")
    # sgp's start (every length scale sqrt(D)): with 1, on the 60-D digits
    # sets every kernel value is about exp(-60) and GPflow never leaves
    # the prior (probability 1/2 everywhere).
    d = x.shape[1]
    kern = gpflow.kernels.SquaredExponential(lengthscales=np.full(d, np.sqrt(d)))
    if classes is None:
        likelihood, latents = gpflow.likelihoods.Bernoulli(), 1
    else:
        # GPflow's multi-class SVGP: K latents on one kernel and one set of
        # inducing inputs, robust-max link (its default).
        likelihood, latents = gpflow.likelihoods.MultiClass(classes), classes
    model = gpflow.models.SVGP(
        kern, likelihood, z, whiten=True, num_data=len(x), num_latent_gps=latents
    )
    data = (x, y[:, None])
    gpflow.optimizers.Scipy().minimize(
        model.training_loss_closure(data), model.trainable_variables, options=dict(maxiter=1000)
    )
    seconds = time.perf_counter() - start
    p, _ = model.predict_y(xs)
    p = p.numpy()
    return (p.ravel() if classes is None else p), seconds


def run_gpc(x, y, xs):
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    start = time.perf_counter()
    x, xs = standardise(x, xs)
    d = x.shape[1]
    kern = ConstantKernel(1.0) * RBF(length_scale=np.full(d, np.sqrt(d)), length_scale_bounds=(1e-2, 1e5))
    gpc = GaussianProcessClassifier(kernel=kern, random_state=0).fit(x, y)
    seconds = time.perf_counter() - start
    return gpc.predict_proba(xs)[:, 1], seconds


def run_svm(x, y, xs):
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    start = time.perf_counter()
    x, xs = standardise(x, xs)
    d = x.shape[1]
    grid = {"C": [0.1, 1, 10, 100, 1000], "gamma": [g / d for g in (0.1, 0.3, 1, 3, 10)]}
    search = GridSearchCV(SVC(kernel="rbf"), grid, cv=5, n_jobs=1).fit(x, y)
    svm = SVC(kernel="rbf", probability=True, random_state=0, **search.best_params_).fit(x, y)
    seconds = time.perf_counter() - start
    return svm.predict_proba(xs), seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--only", default="")
    ap.add_argument("--tools", default="sgp,ivm,gpflow,gpc,svm")
    ap.add_argument("--m", type=int, default=128)
    ap.add_argument("--multiclass", action="store_true")
    ap.add_argument("--sgp", default=os.path.join(ROOT, "target", "release", "sgp"))
    args = ap.parse_args()
    tools = args.tools.split(",")
    if args.multiclass:
        args.data = os.path.join(args.data, "multiclass")
        if not set(tools) <= {"svm", "gpflow"}:
            sys.exit("--multiclass runs --tools svm,gpflow only")
    names = sorted(f[: -len("-train.csv")] for f in os.listdir(args.data) if f.endswith("-train.csv"))
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    rows = []
    for name in names:
        train = os.path.join(args.data, f"{name}-train.csv")
        test = os.path.join(args.data, f"{name}-test.csv")
        x, y = load(train)
        xs, ys = load(test)
        m = min(args.m, len(x))
        for tool in tools:
            if tool == "sgp":
                p, sec = run_sgp(args.sgp, train, test, m, "svgp")
            elif tool == "ivm":
                p, sec = run_sgp(args.sgp, train, test, m, "ivm")
            elif tool == "gpflow":
                classes = int(y.max()) + 1 if args.multiclass else None
                p, sec = run_gpflow(x, y, xs, m, classes)
            elif tool == "gpc":
                p, sec = run_gpc(x, y, xs)
            elif tool == "svm":
                p, sec = run_svm(x, y, xs)
                if not args.multiclass:
                    p = p[:, 1]
            else:
                sys.exit(f"unknown tool {tool}")
            if args.multiclass:
                err, logloss, ece = multiclass_scores(p, ys.astype(int))
            else:
                err, logloss, ece = scores(p, ys)
            row = dict(set=name, tool=tool, error=err, logloss=logloss, ece=ece, seconds=sec)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    print(f"| set | " + " | ".join(tools) + " |")
    print("|---|" + "---|" * len(tools))
    for name in names:
        cells = []
        for tool in tools:
            r = next(r for r in rows if r["set"] == name and r["tool"] == tool)
            cells.append(f"{100 * r['error']:.1f}% / {r['logloss']:.3f} / {r['ece']:.3f} / {r['seconds']:.1f} s")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\ncells: test error / log loss / ECE / fit seconds")


if __name__ == "__main__":
    main()
