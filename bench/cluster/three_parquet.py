"""bench/classify/three_bands.py's three classes for a Parquet file of the
ring (`sgp synth --classes ring --parquet`): the bands r < 0.8,
0.8 <= r < 1.6 and r >= 1.6 of the first two inputs, 5% of the labels
moved to one of the other two classes (Bayes error 5%).

    python bench/cluster/three_parquet.py RING.parquet OUT.parquet SEED

Needs numpy and pyarrow (bench/cluster/cases.sh).
"""

import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def main() -> None:
    src, dst, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    table = pq.read_table(src)
    x1 = table.column(0).to_numpy()
    x2 = table.column(1).to_numpy()
    r = np.hypot(x1, x2)
    k = np.where(r < 0.8, 0, np.where(r < 1.6, 1, 2))
    rng = np.random.default_rng(seed)
    moved = rng.random(len(k)) < 0.05
    k = np.where(moved, (k + rng.integers(1, 3, len(k))) % 3, k)
    last = table.num_columns - 1
    table = table.set_column(last, table.schema.field(last).name, pa.array(k.astype(np.float64)))
    pq.write_table(table, dst)


if __name__ == "__main__":
    main()
