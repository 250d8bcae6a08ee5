"""What the ring's training rows allow: on the rows bench/classify/ring.sh
drew (train-ROWS-SEED.csv, test-SEED.csv in its output directory), the
held-out rows' own Bayes-rule error, the Bayes rule's family (two radii
on the first two inputs) fitted by least training error, an RBF SVM on the
two relevant inputs tuned by 5-fold cross-validation, and (--gpc, slow:
10 minutes a seed on a loaded 2-core machine) scikit-learn's
GaussianProcessClassifier with an ARD RBF on every input and on the two
relevant inputs.

    python bench/classify/ring_limit.py /tmp/sgp-ring-bench 2000 "1 2 3 4 5" [--gpc]

Needs numpy and scikit-learn (not CI).
"""

import sys

import numpy as np
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC


def ring(x, inner, outer):
    r = np.hypot(x[:, 0], x[:, 1])
    return ((r > inner) & (r < outer)).astype(float)


def main():
    out, rows, seeds = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
    gpc = "--gpc" in sys.argv[4:]
    print("| seed | Bayes rule | fitted radii | SVM, x1 x2 | GPC | GPC, x1 x2 |")
    print("|---:|---:|---:|---:|---:|---:|")
    for seed in seeds:
        train = np.loadtxt(f"{out}/train-{rows}-{seed}.csv", delimiter=",", skiprows=1)
        test = np.loadtxt(f"{out}/test-{seed}.csv", delimiter=",", skiprows=1)
        x, y, xt, yt = train[:, :2], train[:, -1], test[:, :2], test[:, -1]
        bayes = np.mean(ring(xt, 0.8, 1.6) != yt)
        grid = np.linspace(0.3, 2.5, 111)
        _, inner, outer = min(
            (np.mean(ring(x, a, b) != y), a, b) for a in grid for b in grid if b > a
        )
        fitted = np.mean(ring(xt, inner, outer) != yt)
        svm = GridSearchCV(
            SVC(kernel="rbf"), {"C": [0.3, 1, 3, 10, 30], "gamma": [0.3, 1, 3, 10]}, cv=5
        ).fit(x, y)
        svm_err = np.mean(svm.predict(xt) != yt)
        gpc_err = ["-", "-"]
        if gpc:
            for k, (a, b) in enumerate([(train[:, :-1], test[:, :-1]), (x, xt)]):
                rbf = RBF(np.ones(a.shape[1]), length_scale_bounds=(1e-2, 1e3))
                model = GaussianProcessClassifier(
                    kernel=ConstantKernel(1.0) * rbf, random_state=int(seed)
                ).fit(a, y)
                gpc_err[k] = f"{100 * np.mean(model.predict(b) != yt):.2f}%"
        print(
            f"| {seed} | {100 * bayes:.2f}% | {100 * fitted:.2f}% ({inner:.2f}, {outer:.2f}) "
            f"| {100 * svm_err:.2f}% | {gpc_err[0]} | {gpc_err[1]} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
