"""The rough data sets of bench/matern/run.sh, into the current directory:
m32_{train,test}.csv, a draw from a Matérn 3/2 GP in 3 inputs (length
scales 0.4, 0.6, 0.8 on [-1, 1]^3, noise sd 0.1), and kinks_{train,test}.csv,
a 2-input signal with kinks and a saturation (noise sd 0.05); 2000 training
and 1000 test rows each, seeded (first argument; default 39)."""
import sys
import numpy as np
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 39)
def matern32(X, Y, l):
    d = np.sqrt((((X[:, None, :] - Y[None, :, :]) / l) ** 2).sum(-1))
    u = np.sqrt(3) * d
    return (1 + u) * np.exp(-u)
def write(name, X, y):
    D = X.shape[1]
    with open(name, "w") as f:
        f.write(",".join([f"x{i}" for i in range(D)] + ["y"]) + "\n")
        for row, t in zip(X, y):
            f.write(",".join(f"{v:.6g}" for v in row) + f",{t:.6g}\n")
# 1) a draw from a Matérn 3/2 GP in 3 inputs
n = 3000
X = rng.uniform(-1, 1, size=(n, 3))
K = matern32(X, X, np.array([0.4, 0.6, 0.8])) + 1e-8 * np.eye(n)
f = np.linalg.cholesky(K) @ rng.standard_normal(n)
y = f + 0.1 * rng.standard_normal(n)
perm = rng.permutation(n)
write("m32_train.csv", X[perm[:2000]], y[perm[:2000]])
write("m32_test.csv", X[perm[2000:]], y[perm[2000:]])
# 2) a signal with kinks in 2 inputs: |.| and a saturation
n = 3000
X = rng.uniform(-2, 2, size=(n, 2))
f = np.abs(X[:, 0]) - np.abs(X[:, 1] - 0.5) + np.clip(2 * X[:, 0] * X[:, 1], -1, 1) + 0.5 * np.abs(np.sin(2 * X[:, 0]))
y = f + 0.05 * rng.standard_normal(n)
write("kinks_train.csv", X[:2000], y[:2000])
write("kinks_test.csv", X[2000:], y[2000:])
