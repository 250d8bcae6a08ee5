"""The streamed fit on a Dask cluster: the subset fit on the client, each
pass over every row on the workers (one for a regression of one target or
several, a classifier's rounds), one partition each, reduced in the fixed
tree of ``merge_tree`` (so the blob is the one process's blob on the same
partitions, bit for bit).

Dask is not a dependency of sgp: ``pip install "dask[dataframe]"
distributed``. Spark's recipe (``mapInPandas`` then ``treeReduce``) is in
the guide's chapter "On a cluster".
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Union

from ._streamed import ChunkBasis, ChunkSums, merge_tree


def _merge(a: ChunkSums, b: ChunkSums) -> ChunkSums:
    return a.merge(b)


def _partition_sums(basis: ChunkBasis, partition: Any, part: int) -> ChunkSums:
    return basis.sums(partition, part=part)


def parquet_files(path: str) -> List[str]:
    """The files ``sgp fit --data DIR`` reads, in its order: the
    directory's entries sorted by name (as bytes), skipping names that
    start with ``.`` or ``_``."""
    names = sorted(os.listdir(path), key=os.fsencode)
    return [os.path.join(path, n) for n in names if not n.startswith((".", "_"))]


def read_frame(path: str, basis: ChunkBasis, blocksize: Any = "16MB") -> Any:
    """``path`` (Parquet or CSV, told apart by content as ``sgp fit`` does,
    or a directory of Parquet files, in ``parquet_files``' order) as a dask
    DataFrame of the basis's columns, in partitions of about ``blocksize``
    of a file (whole row groups for Parquet): a worker holds one partition
    at a time."""
    import dask.dataframe as dd

    columns = basis.input_names + basis.target_names
    if os.path.isdir(path):
        # The library has checked the files (start_file read them all).
        return dd.read_parquet(parquet_files(path), columns=columns, blocksize=blocksize)
    with open(path, "rb") as f:
        parquet = f.read(4) == b"PAR1"
    if parquet:
        return dd.read_parquet(path, columns=columns, blocksize=blocksize)
    return dd.read_csv(path, usecols=columns, dtype="float64", blocksize=blocksize)[columns]


def tree_sums(frame: Any, basis: ChunkBasis) -> Any:
    """A dask Delayed of the sums of every row of the dask DataFrame
    ``frame``: one task per partition, merged pairwise in partition order
    (``merge_tree``'s tree), each merge a task on a worker. Each
    partition's sums carry its number, so a partition summed twice is
    refused and ``finish(sums, parts=frame.npartitions)`` names a lost
    one."""
    import dask

    level: List[Any] = [
        dask.delayed(_partition_sums)(basis, part, k)
        for k, part in enumerate(frame.to_delayed())
    ]
    if not level:
        raise ValueError("the frame has no partitions")
    while len(level) > 1:
        pairs = [dask.delayed(_merge)(level[k], level[k + 1]) for k in range(0, len(level) - 1, 2)]
        level = pairs + level[len(level) - len(level) % 2:]
    return level[0]


def fit_dask(
    estimator: Any,
    path: str,
    target: Union[str, Sequence[str], None] = None,
    client: Any = None,
    frame: Any = None,
    inputs: Optional[List[str]] = None,
) -> Any:
    """Fits ``estimator`` (a ``SparseGPRegressor``, of one target or
    several, or a ``SparseGPClassifier``) to the CSV or Parquet file, or
    the directory of Parquet files, ``path`` as ``estimator.fit_file``
    does (``target`` and ``inputs``: its columns, as there), with each
    pass over every row on ``client``'s workers (default: dask's current
    scheduler). ``frame``: the file's rows as a dask DataFrame of your own
    partitioning (default ``read_frame``), the same for every pass.
    Returns the fitted estimator."""
    started = estimator.start_file(path, target, inputs)
    if frame is None:
        frame = read_frame(path, started.basis)

    def pass_sums(basis: ChunkBasis) -> ChunkSums:
        total = tree_sums(frame, basis)
        return client.compute(total).result() if client is not None else total.compute()

    return started.run(pass_sums, parts=frame.npartitions)
