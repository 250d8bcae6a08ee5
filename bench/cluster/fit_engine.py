"""One streamed fit of a Parquet file on a local engine, timed: the subset
fit on the driver, the pass over every row on the workers (bench/cluster/run.sh).

    python fit_engine.py dask  FILE WORKERS OUT.sgp [classify | TARGET,TARGET...] [KERNEL]
    python fit_engine.py spark FILE WORKERS OUT.sgp [classify | TARGET,TARGET...] [KERNEL]

Prints one JSON line: seconds (start: first pass and subset fit; pass:
the passes over every row once the engine is up, a classifier's rounds
together; total, engine start-up included), the driver's CPU seconds,
the driver's and the workers' peak resident memory in MB. Settings: --m
64, seed 0, as run.sh's `sgp fit`; `classify` fits a SparseGPClassifier,
a comma-separated list of targets a regression of each; KERNEL
(matern32, ...) as `sgp fit --kernel`.
"""

import json
import os
import resource
import sys
import time

import sgp
from sgp._streamed import ChunkSums


def peak_mb() -> float:
    """This process's peak resident memory (VmHWM; a forked worker's counts
    from its own start)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def on_dask(started, path, workers):
    import distributed
    from sgp.cluster import read_frame, tree_sums

    cluster = distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with distributed.Client(cluster) as client:
        client.run(cpu_s)  # workers up
        t = time.perf_counter()
        frame = read_frame(path, started.basis)
        est = started.run(
            lambda basis: client.compute(tree_sums(frame, basis)).result(),
            parts=frame.npartitions,
        )
        seconds = time.perf_counter() - t
        worker_mb = max(client.run(peak_mb).values())
    cluster.close()
    return est, worker_mb, seconds


def on_spark(started, path, workers):
    import pandas as pd
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(f"local[{workers}]")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    t = time.perf_counter()
    columns = started.basis.input_names + started.basis.target_names
    frame = spark.read.parquet(path).select(*columns)
    peaks = []

    def pass_sums(basis_now):
        basis = spark.sparkContext.broadcast(basis_now)

        def partition_sums(batches):
            total = None
            for batch in batches:
                sums = basis.value.sums(batch)
                total = sums if total is None else total.merge(sums)
            if total is not None:
                yield pd.DataFrame({"sums": [total.data], "mb": [peak_mb()]})

        rows = frame.mapInPandas(partition_sums, schema="sums binary, mb double").rdd
        sums, mb = rows.map(lambda r: (ChunkSums(bytes(r.sums)), r.mb)).treeReduce(
            lambda a, b: (a[0].merge(b[0]), max(a[1], b[1]))
        )
        peaks.append(mb)
        return sums

    est = started.run(pass_sums)
    seconds = time.perf_counter() - t
    spark.stop()
    return est, max(peaks), seconds


def main():
    engine, path, workers, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    kind = sys.argv[5] if len(sys.argv) > 5 else None
    kernel = sys.argv[6] if len(sys.argv) > 6 else None
    t0 = time.perf_counter()
    if kind == "classify":
        started = sgp.SparseGPClassifier(m=64, random_state=0, kernel=kernel).start_file(path)
    else:
        targets = kind.split(",") if kind else None
        started = sgp.SparseGPRegressor(m=64, random_state=0, kernel=kernel).start_file(
            path, targets
        )
    t1 = time.perf_counter()
    est, worker_mb, pass_s = {"dask": on_dask, "spark": on_spark}[engine](started, path, workers)
    est.save(out)
    t3 = time.perf_counter()
    report = est.report_ if isinstance(est.report_, dict) else est.report_[0]
    print(json.dumps({
        "engine": engine, "workers": workers, "rows": report["streamed"]["rows"],
        "start_s": round(t1 - t0, 1), "pass_s": round(pass_s, 1), "total_s": round(t3 - t0, 1),
        "driver_cpu_s": round(cpu_s(), 1),
        "driver_mb": round(peak_mb()), "worker_mb": round(worker_mb),
    }))


if __name__ == "__main__":
    main()
