"""The streamed fit on a two-process Dask LocalCluster: the single process's
blob on the same partitions, bit for bit (skipped without dask)."""

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import sgp  # noqa: E402
from sgp.cluster import fit_dask, read_frame  # noqa: E402
from sgp._streamed import merge_tree  # noqa: E402

from test_streamed import SETTINGS, big, fitted, frame as named, parts  # noqa: E402,F401


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_dask_is_the_single_process_fit(big, fitted, client):
    path, X, _ = big
    basis = sgp.SparseGPRegressor(**SETTINGS).start_file(path).basis
    frame = read_frame(path, basis, blocksize="1MB")
    assert frame.npartitions >= 4
    est = fit_dask(sgp.SparseGPRegressor(**SETTINGS), path, client=client, frame=frame)
    assert len(client.scheduler_info()["workers"]) == 2

    # One process, the same partitions, the same tree: the same bytes.
    started = sgp.SparseGPRegressor(**SETTINGS).start_file(path)
    parts = [started.basis.sums(p.compute()) for p in frame.to_delayed()]
    alone = started.finish(merge_tree(parts))
    assert est.to_bytes() == alone.to_bytes()
    assert est.report_["rows"] == 80_000

    # The file's own pass merges other blocks: the same fit up to rounding.
    Xs = named(X[:200])
    np.testing.assert_allclose(est.predict(Xs), fitted.predict(Xs), rtol=0, atol=1e-9)


def test_dask_on_a_directory_is_the_single_process_fit(big, parts, fitted, client):
    # The files in sgp fit's order; one process on the same partitions and
    # tree gives the same bytes, the directory's own pass the same fit up
    # to rounding (its chunks run across the files' ends, the partitions
    # do not).
    est = fit_dask(sgp.SparseGPRegressor(**SETTINGS), parts, client=client)
    started = sgp.SparseGPRegressor(**SETTINGS).start_file(parts)
    frame = read_frame(parts, started.basis)
    assert frame.npartitions >= 3
    sums = [started.basis.sums(p.compute()) for p in frame.to_delayed()]
    assert est.to_bytes() == started.finish(merge_tree(sums)).to_bytes()
    assert est.report_["rows"] == 80_000
    Xs = named(big[1][:200])
    np.testing.assert_allclose(est.predict(Xs), fitted.predict(Xs), rtol=0, atol=1e-9)


def test_dask_takes_the_input_columns_fit_file_takes(big, client):
    path, _, _ = big
    est = fit_dask(sgp.SparseGPRegressor(**SETTINGS), path, client=client, inputs=["c", "a"])
    alone = sgp.SparseGPRegressor(**SETTINGS).fit_file(path, inputs=["c", "a"])
    assert est.to_model().input_names == ["c", "a"]
    rows = named(np.random.default_rng(2).uniform(-2.0, 2.0, (50, 3)))[["c", "a"]]
    np.testing.assert_allclose(est.predict(rows), alone.predict(rows), rtol=1e-9, atol=1e-9)
