"""Three classes on the ring's inputs: the bands r < 0.8, 0.8 <= r < 1.6
and r >= 1.6 of the first two inputs' distance r from 0, 5% of the labels
moved to one of the other two classes at random (Bayes error 5%).

    python3 bench/classify/three_bands.py RING.csv OUT.csv SEED

RING.csv: `sgp synth --classes ring` output (its label column replaced).
Standard library only; docs/src/cluster.md ("Classifiers") uses it.
"""
import csv
import os
import random
import sys


def main() -> None:
    src, dst, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    with open(src, newline="") as f, open(dst + ".tmp", "w", newline="") as g:
        rows, out = csv.reader(f), csv.writer(g)
        out.writerow(next(rows))
        for row in rows:
            x1, x2 = float(row[0]), float(row[1])
            r = (x1 * x1 + x2 * x2) ** 0.5
            k = 0 if r < 0.8 else (1 if r < 1.6 else 2)
            if rng.random() < 0.05:
                k = (k + rng.choice([1, 2])) % 3
            row[-1] = str(k)
            out.writerow(row)
    os.replace(dst + ".tmp", dst)


if __name__ == "__main__":
    main()
