#!/usr/bin/env bash
# The IVM classifier against svgp and GPflow's SVGP at M = 128 on digits
# 3 / 8 / 9 vs rest and the 2-D rings, over three train/test splits: test
# error, log loss and fit seconds of each tool, per split and averaged.
#
#   bash bench/classify/ivm.sh [OUT_DIR]   # default /tmp/sgp-ivm-bench
#
# Needs target/release/sgp (cargo build --release) and a Python with
# numpy, scikit-learn, GPflow and TensorFlow (PYTHON, default python3; the
# peers' virtualenv has them). Fit seconds are wall clock of one run each,
# on a quiet machine; compare them side by side, not across runs.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${1:-/tmp/sgp-ivm-bench}"
PYTHON="${PYTHON:-python3}"
SETS="${SETS:-digits3,digits8,digits9,rings2}"
TOOLS="${TOOLS:-ivm,sgp,gpflow}"
mkdir -p "$OUT"
for split in 0 1 2; do
  "$PYTHON" "$HERE/make_sets.py" "$OUT/split$split" --split-seed "$split" 2>/dev/null
  "$PYTHON" "$HERE/run_peers.py" --data "$OUT/split$split" --only "$SETS" --tools "$TOOLS" \
    --m 128 2>"$OUT/split$split.jsonl" | tee "$OUT/split$split.md"
done
"$PYTHON" - "$OUT" <<'PY'
import collections, json, sys
rows = collections.defaultdict(list)
for split in range(3):
    for line in open(f"{sys.argv[1]}/split{split}.jsonl"):
        if line.startswith("{"):
            r = json.loads(line)
            rows[(r["set"], r["tool"])].append(r)
tools = sorted({t for _, t in rows}, key=lambda t: ["ivm", "sgp", "gpflow"].index(t) if t in ("ivm", "sgp", "gpflow") else 9)
print("\nmean over 3 splits: test error / log loss / fit seconds (sgp = svgp)")
print("| set | " + " | ".join(tools) + " |")
print("|---|" + "---|" * len(tools))
for name in sorted({s for s, _ in rows}):
    cells = []
    for t in tools:
        r = rows[(name, t)]
        n = len(r)
        cells.append(f"{100 * sum(x['error'] for x in r) / n:.1f}% / "
                     f"{sum(x['logloss'] for x in r) / n:.3f} / {sum(x['seconds'] for x in r) / n:.1f} s")
    print(f"| {name} | " + " | ".join(cells) + " |")
PY
