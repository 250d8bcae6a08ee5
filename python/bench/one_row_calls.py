"""Median cost of one-row ``sgp.Model`` calls (``predict``, ``mean``,
``update`` of a 1-D float64 array) over 10,000 calls each, on an updatable
M = 32, D = 4 model. Run from the repository root after installing the
package: ``python python/bench/one_row_calls.py [--save PATH]`` (``--save``
writes the blob, for ``capi/c/bench_calls.c``)."""

import sys
import time

import numpy as np

import sgp

CALLS = 10_000


def median_us(call, rows):
    times = np.empty(len(rows))
    clock = time.perf_counter_ns
    for i, row in enumerate(rows):
        start = clock()
        call(row)
        times[i] = clock() - start
    return float(np.median(times)) / 1e3


def main():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(400, 4))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.3 * X[:, 2] * X[:, 3] + 0.05 * rng.standard_normal(400)
    est = sgp.SparseGPRegressor(m=32, updatable=True, restarts=1).fit(X, y)
    model = sgp.Model.from_bytes(est.to_bytes())
    if sys.argv[1:2] == ["--save"]:
        model.save(sys.argv[2])
    rows = list(rng.uniform(-2, 2, size=(CALLS, 4)))
    targets = iter(np.sin(np.array(rows)[:, 0]) + 0.1)
    model.predict(rows[0])  # loads the runtime model
    figures = {
        "predict": median_us(model.predict, rows),
        "mean": median_us(model.mean, rows),
        "update": median_us(lambda x: model.update(x, next(targets), forgetting=0.999), rows),
        "predict (float32 row)": median_us(model.predict, [r.astype(np.float32) for r in rows]),
    }
    start = time.perf_counter()
    model.update(np.array(rows), np.sin(np.array(rows)[:, 0]))
    batched = (time.perf_counter() - start) / CALLS * 1e6
    print(f"M = {model.n_basis}, D = {model.n_inputs}, median of {CALLS} one-row calls:")
    for name, us in figures.items():
        print(f"  {name:22} {us:6.1f} us")
    print(f"  {'update, batched':22} {batched:6.1f} us a row ({CALLS} rows in one call)")


if __name__ == "__main__":
    main()
