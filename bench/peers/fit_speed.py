"""Paired fit costs of the default `sgp fit` (one or two builds) and GPflow
FITC on stand-ins of pumadyn32 (7,168 x 32, M = 50) and kin8 (8,192 x 8,
M = 25), with the test NLPD beside each (issue 51, item 4).

    python fit_speed.py --sgp path/to/sgp [--before path/to/older/sgp] [--spgp] [--rounds R]

The real sets are kept outside the project; the stand-ins: `puma32_csv`
(32 inputs U(-1, 1), a target of four of them plus N(0, 0.2^2)) and
`arm8_csv` of `run_peers.py` (the 8-link arm). Each round runs the tools one
after the other, in an order that turns with the round, on the same split;
it prints each run's CPU seconds (user + sys of the whole process, imports
included) and wall seconds, then the medians and the ratios to GPflow's.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

from peer_fit import point_nlpd
from run_peers import arm8_csv

HERE = os.path.dirname(os.path.abspath(__file__))


def puma32_csv(rows, seed):
    """A pumadyn32-like set: 32 inputs, four of them relevant and nonlinear
    (a product of two waves, an interaction and a wave), moderate noise."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(rows, 32))
    f = np.sin(2.5 * x[:, 3]) * np.cos(1.5 * x[:, 5]) + 0.8 * x[:, 14] * x[:, 20]
    y = f + 0.5 * np.sin(3 * x[:, 20]) + 0.2 * rng.standard_normal(rows)
    header = ",".join(f"x{j}" for j in range(32)) + ",y"
    return [header] + [",".join(f"{v:.10g}" for v in row) for row in np.column_stack([x, y])]


# name, lines, training rows, M
SETS = [
    ("pumadyn32-like 7168 x 32", lambda: puma32_csv(8192, 5), 7168, 50),
    ("kin8-like 8192 x 8", lambda: arm8_csv(10240, 7), 8192, 25),
]


def split(name, lines, train_rows, work):
    slug = name.split()[0]
    paths = [os.path.join(work, f"{slug}-{part}.csv") for part in ("train", "test")]
    header, body = lines[0], lines[1:]
    for path, part in zip(paths, (body[:train_rows], body[train_rows:])):
        with open(path, "w") as f:
            f.write("\n".join([header] + part) + "\n")
    return paths


def timed(cmd, **kw):
    """Runs `cmd`; its CPU seconds (user + sys) and wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, cpu, wall


def run_sgp(sgp, train, test, m, work, extra=()):
    model = os.path.join(work, "fit-speed.sgp")
    cmd = [sgp, "fit", "--quiet", "--force", "--data", train, "--m", str(m), "--seed", "0", "--out", model]
    _, cpu, wall = timed(cmd + list(extra))
    pred, _, _ = timed([sgp, "predict", "--quiet", "--model", model, "--data", test])
    mean, var = np.loadtxt(pred.splitlines()[1:], delimiter=",", ndmin=2).T
    y = np.loadtxt(test, delimiter=",", skiprows=1, ndmin=2)[:, -1]
    return cpu, wall, float(point_nlpd(mean, var, y).mean())


def run_gpflow(train, test, m, work):
    cmd = [sys.executable, os.path.join(HERE, "peer_fit.py"), "gpflow", "--train", train, "--test", test]
    out, cpu, wall = timed(cmd + ["--m", str(m), "--iters", "300", "--seed", "0"])
    return cpu, wall, json.loads(out.strip().splitlines()[-1])["nlpd"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sgp", required=True)
    ap.add_argument("--before", help="an older sgp build to pair with --sgp")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--spgp", action="store_true", help="also --sgp with --model spgp (no held-out choice)")
    ap.add_argument("--work", default=os.path.join(HERE, "data"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    tools = {"sgp": lambda tr, te, m: run_sgp(args.sgp, tr, te, m, args.work)}
    if args.before:
        tools["sgp before"] = lambda tr, te, m: run_sgp(args.before, tr, te, m, args.work)
    if args.spgp:
        tools["sgp --model spgp"] = lambda tr, te, m: run_sgp(args.sgp, tr, te, m, args.work, ["--model", "spgp"])
    tools["gpflow"] = lambda tr, te, m: run_gpflow(tr, te, m, args.work)
    results = {}
    for name, make, train_rows, m in SETS:
        train, test = split(name, make(), train_rows, args.work)
        names = list(tools)
        for r in range(args.rounds):
            for tool in names[r % len(names):] + names[: r % len(names)]:
                cpu, wall, nlpd = tools[tool](train, test, m)
                print(f"{name} M={m} {tool}: {cpu:.2f} CPU s, {wall:.2f} s wall, test NLPD {nlpd:.4f}", flush=True)
                results.setdefault((name, m), {}).setdefault(tool, []).append((cpu, wall, nlpd))
    print()
    print("| data | M | tool | CPU s | wall s | GPflow's CPU / tool's | test NLPD |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for (name, m), by_tool in results.items():
        peer = statistics.median(c for c, _, _ in by_tool["gpflow"])
        for tool, runs in by_tool.items():
            cpu = statistics.median(c for c, _, _ in runs)
            wall = statistics.median(w for _, w, _ in runs)
            nlpd = statistics.mean(n for _, _, n in runs)
            print(f"| {name} | {m} | {tool} | {cpu:.1f} | {wall:.1f} | {peer / cpu:.2f}x | {nlpd:.3f} |")


if __name__ == "__main__":
    main()
