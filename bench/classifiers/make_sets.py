"""Writes the classifier benchmark sets as CSVs (inputs..., label 0/1) and,
with --peers, scores scikit-learn's GaussianProcessClassifier (Laplace,
logistic, ARD for up to 10 inputs) and an RBF SVC (C by 5-fold
cross-validation, Platt probabilities) on the same splits.

Not run by CI. Usage (see docs/src/classifier-evaluation.md):
    python bench/classifiers/make_sets.py OUT_DIR [--peers]
"""

import json
import warnings
import sys
from pathlib import Path

import numpy as np


def flip(rng, y, rate):
    mask = rng.random(len(y)) < rate
    return np.where(mask, 1 - y, y)


def ring(rng, n):
    # 6-D: the label is an annulus in the first two inputs; four irrelevant.
    x = rng.standard_normal((n, 6))
    r = np.hypot(x[:, 0], x[:, 1])
    return x, flip(rng, ((r > 0.8) & (r < 1.6)).astype(int), 0.05)


def xor(rng, n):
    x = rng.uniform(-1, 1, (n, 2))
    return x, flip(rng, (x[:, 0] * x[:, 1] > 0).astype(int), 0.05)


def smooth(rng, n):
    x = rng.uniform(-2, 2, (n, 4))
    return x, np.sin(1.5 * x[:, 0]) + 0.5 * x[:, 1] * x[:, 2]


def balanced(rng, n):
    x, f = smooth(rng, n)
    return x, flip(rng, (f > 0).astype(int), 0.10)


def unbalanced(rng, n):
    # About one row in ten positive, no label noise.
    x, f = smooth(rng, n)
    return x, (f > 1.0).astype(int)


def generated():
    for name, make, n_train, n_test in [
        ("ring6", ring, 2000, 2000),
        ("xor", xor, 1000, 1000),
        ("balanced", balanced, 1000, 1000),
        ("unbalanced", unbalanced, 1000, 1000),
    ]:
        rng = np.random.default_rng(19)
        x, y = make(rng, n_train + n_test)
        yield name, x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def public():
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    for k in (3, 8, 9):
        y = (digits.target == k).astype(int)
        xtr, xte, ytr, yte = train_test_split(
            digits.data, y, test_size=0.25, random_state=0, stratify=y
        )
        yield f"digits{k}", xtr, ytr, xte, yte
    cancer = load_breast_cancer()
    xtr, xte, ytr, yte = train_test_split(
        cancer.data, cancer.target, test_size=0.3, random_state=0, stratify=cancer.target
    )
    yield "cancer", xtr, ytr, xte, yte


def write(path, x, y):
    names = [f"x{j}" for j in range(x.shape[1])] + ["label"]
    np.savetxt(path, np.column_stack([x, y]), delimiter=",", header=",".join(names),
               comments="", fmt="%.10g")


def scores(p, y):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return {
        "error": float(np.mean((p >= 0.5) != (y == 1))),
        "log_loss": float(-np.mean(np.where(y == 1, np.log(p), np.log(1 - p)))),
    }


def peers(xtr, ytr, xte, yte):
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    scaler = StandardScaler().fit(xtr)
    ztr, zte = scaler.transform(xtr), scaler.transform(xte)
    d = xtr.shape[1]
    ls = np.ones(d) if d <= 10 else 1.0
    gpc = GaussianProcessClassifier(ConstantKernel(1.0) * RBF(ls), random_state=0)
    gpc.fit(ztr[:1000], ytr[:1000])
    svc = GridSearchCV(
        make_pipeline(StandardScaler(), SVC(probability=True, random_state=0)),
        {"svc__C": [0.3, 1, 3, 10, 30]},
        cv=5,
    ).fit(xtr, ytr)
    return {
        "gpc": scores(gpc.predict_proba(zte)[:, 1], yte),
        "svc": scores(svc.predict_proba(xte)[:, 1], yte),
    }


def main():
    warnings.simplefilter("ignore", FutureWarning)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name, xtr, ytr, xte, yte in list(generated()) + list(public()):
        write(out / f"{name}-train.csv", xtr, ytr)
        write(out / f"{name}-test.csv", xte, yte)
        if "--peers" in sys.argv:
            results[name] = peers(xtr, ytr, xte, yte)
            print(name, json.dumps(results[name]), flush=True)
    if results:
        (out / "peers.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
