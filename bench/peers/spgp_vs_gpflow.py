"""`sgp fit --model spgp` against GPflow FITC over several splits of the
stand-ins of pumadyn32 (7,168 x 32, M = 50) and kin8 (8,192 x 8, M = 25):
the per-split gaps of test NLPD and training objective, and the CPU ratio,
as mean +- standard error (issue 51, item 4: "at its test NLPD").

    python spgp_vs_gpflow.py --sgp path/to/sgp [--splits 5] [--sets kin8,puma32]
        [--variant NAME='--max-iter 1000 ...'] ...

Split s draws the stand-in (`puma32_csv`, `arm8_csv` of fit_speed.py and
run_peers.py) with seed 100 + s, so every split is new data as well as a new
train/test cut; GPflow's k-means start takes seed s and sgp `--seed s`.
Each `--variant` is another `sgp fit --model spgp` run with extra flags
(`base` is the plain one); flags that begin with `@PATH` run the sgp
build at PATH instead (`--variant main=@/path/to/main/sgp`). Per split it prints each tool's CPU seconds (user
+ sys of the whole process, imports included), test NLPD and final training
objective (the negative log marginal likelihood on the standardised data,
in nats; the two tools standardise alike), and sgp's iterations and stop
reason; then per set and variant: the mean +- se over splits of
(sgp's NLPD - GPflow's), of (sgp's objective - GPflow's) and of GPflow's
CPU / sgp's. Run it with OMP_NUM_THREADS=1 RAYON_NUM_THREADS=1 for
comparable CPU figures.
"""

import argparse
import json
import os
import shlex
import statistics
import sys

import numpy as np

from fit_speed import puma32_csv, split, timed
from peer_fit import point_nlpd
from run_peers import arm8_csv

HERE = os.path.dirname(os.path.abspath(__file__))

# key: name, generator(seed), training rows, M
SETS = {
    "puma32": ("pumadyn32-like 7168 x 32", lambda seed: puma32_csv(8192, seed), 7168, 50),
    "kin8": ("kin8-like 8192 x 8", lambda seed: arm8_csv(10240, seed), 8192, 25),
}


def run_sgp(sgp, train, test, m, seed, work, extra):
    model = os.path.join(work, "spgp-vs-gpflow.sgp")
    cmd = [sgp, "fit", "--quiet", "--json", "--force", "--model", "spgp", "--data", train]
    cmd += ["--m", str(m), "--seed", str(seed), "--out", model] + list(extra)
    out, cpu, _ = timed(cmd)
    report = json.loads(out)["report"]
    pred, _, _ = timed([sgp, "predict", "--quiet", "--model", model, "--data", test])
    mean, var = np.loadtxt(pred.splitlines()[1:], delimiter=",", ndmin=2).T
    y = np.loadtxt(test, delimiter=",", skiprows=1, ndmin=2)[:, -1]
    opt = report["optimiser"]
    note = f"{report['approximation']}, {opt['iterations']} it, {opt['stop_reason']}"
    return cpu, float(point_nlpd(mean, var, y).mean()), report["nlml"], note


def run_gpflow(train, test, m, seed):
    cmd = [sys.executable, os.path.join(HERE, "peer_fit.py"), "gpflow", "--train", train, "--test", test]
    out, cpu, _ = timed(cmd + ["--m", str(m), "--iters", "300", "--seed", str(seed)])
    res = json.loads(out.strip().splitlines()[-1])
    return cpu, res["nlpd"], res["train_nlml"], f"{res['iterations']} it"


def mean_se(values):
    mean = statistics.mean(values)
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")
    return f"{mean:+.4f} +- {se:.4f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sgp", required=True)
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--first", type=int, default=0, help="the first split's number")
    ap.add_argument("--sets", default="kin8,puma32")
    ap.add_argument("--variant", action="append", default=[], help="NAME='extra sgp fit flags'")
    ap.add_argument("--work", default=os.path.join(HERE, "data"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    variants = {"base": []}
    for v in args.variant:
        name, _, flags = v.partition("=")
        variants[name] = shlex.split(flags)
    rows = {}
    for key in args.sets.split(","):
        name, make, train_rows, m = SETS[key]
        for s in range(args.first, args.first + args.splits):
            train, test = split(f"{key}-s{s} x", make(100 + s), train_rows, args.work)
            runs = {"gpflow": run_gpflow(train, test, m, s)}
            for vname, extra in variants.items():
                sgp, flags = (extra[0][1:], extra[1:]) if extra[:1] and extra[0].startswith("@") else (args.sgp, extra)
                runs[vname] = run_sgp(sgp, train, test, m, s, args.work, flags)
            for tool, (cpu, nlpd, obj, note) in runs.items():
                print(f"{key} split {s} {tool}: {cpu:.2f} CPU s, NLPD {nlpd:.4f}, objective {obj:.2f} ({note})",
                      flush=True)
            rows.setdefault(key, []).append(runs)
    print()
    print("| data | M | sgp run | splits | GPflow's CPU / sgp's | NLPD gap (sgp - GPflow) | objective gap, nats |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for key, splits in rows.items():
        name, _, _, m = SETS[key]
        for vname in variants:
            ratio = [r["gpflow"][0] / r[vname][0] for r in splits]
            gap = [r[vname][1] - r["gpflow"][1] for r in splits]
            obj = [r[vname][2] - r["gpflow"][2] for r in splits]
            print(f"| {name} | {m} | {vname} | {len(splits)} | {statistics.mean(ratio):.2f}x "
                  f"(median {statistics.median(ratio):.2f}x) | {mean_se(gap)} | {mean_se(obj)} |")


if __name__ == "__main__":
    main()
