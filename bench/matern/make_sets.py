"""The rough data sets of bench/matern/run.sh, into the current directory,
2000 training and 1000 test rows each, seeded (first argument; default 39):

- m32: a draw from a Matérn 3/2 GP in 3 inputs (length scales 0.4, 0.6,
  0.8 on [-1, 1]^3, noise sd 0.1);
- kinks: a 2-input signal with kinks and a saturation (noise sd 0.05);
- m32d2, m32d4: Matérn 3/2 draws in 2 inputs (length scales 0.5, 0.8) and
  4 inputs (0.5, 0.7, 0.85, 1.0), noise sd 0.1;
- m32d2lo, m32d3lo, m32d4lo: the three draws' designs with noise sd 0.03.

m32 and kinks come from one generator in that order (their figures stay
comparable with earlier runs); every other set has its own generator
seeded by (seed, its name). Writes NAME_train.csv and NAME_test.csv; the
names are printed, one per line, when the second argument is --list."""
import sys
import zlib
import numpy as np

DESIGNS = {  # name: (length scales, noise sd)
    "m32": ([0.4, 0.6, 0.8], 0.1),
    "m32d2": ([0.5, 0.8], 0.1),
    "m32d4": ([0.5, 0.7, 0.85, 1.0], 0.1),
    "m32d2lo": ([0.5, 0.8], 0.03),
    "m32d3lo": ([0.4, 0.6, 0.8], 0.03),
    "m32d4lo": ([0.5, 0.7, 0.85, 1.0], 0.03),
}
NAMES = ["m32", "kinks"] + [d for d in DESIGNS if d != "m32"]


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


def matern_draw(rng, name):
    """A draw from a Matérn 3/2 GP on [-1, 1]^D with `name`'s design."""
    lengths, noise = DESIGNS[name]
    n = 3000
    X = rng.uniform(-1, 1, size=(n, len(lengths)))
    K = matern32(X, X, np.array(lengths)) + 1e-8 * np.eye(n)
    f = np.linalg.cholesky(K) @ rng.standard_normal(n)
    y = f + noise * rng.standard_normal(n)
    perm = rng.permutation(n)
    write(f"{name}_train.csv", X[perm[:2000]], y[perm[:2000]])
    write(f"{name}_test.csv", X[perm[2000:]], y[perm[2000:]])


def kinks(rng):
    """A signal with kinks in 2 inputs: |.| and a saturation."""
    n = 3000
    X = rng.uniform(-2, 2, size=(n, 2))
    f = np.abs(X[:, 0]) - np.abs(X[:, 1] - 0.5) + np.clip(2 * X[:, 0] * X[:, 1], -1, 1) + 0.5 * np.abs(np.sin(2 * X[:, 0]))
    y = f + 0.05 * rng.standard_normal(n)
    write("kinks_train.csv", X[:2000], y[:2000])
    write("kinks_test.csv", X[2000:], y[2000:])


def main():
    if sys.argv[2:3] == ["--list"]:
        print("\n".join(NAMES))
        return
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 39
    rng = np.random.default_rng(seed)
    matern_draw(rng, "m32")
    kinks(rng)
    for name in DESIGNS:
        if name != "m32":
            matern_draw(np.random.default_rng([seed, zlib.crc32(name.encode())]), name)


main()
