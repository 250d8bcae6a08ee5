"""The streamed fit on a two-process Dask LocalCluster: the single process's
blob on the same partitions, bit for bit (skipped without dask)."""

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import sgp  # noqa: E402
from sgp.cluster import fit_dask, read_frame  # noqa: E402
from sgp._streamed import merge_tree  # noqa: E402

from test_streamed import (  # noqa: E402,F401
    SETTINGS, big, fitted, frame as named, labelled, parts, two_targets,
)


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


def merged_alone(started, frame):
    """Every pass of ``started`` over ``frame``'s partitions in one process,
    merged in ``tree_sums``' tree."""
    parts = [p.compute() for p in frame.to_delayed()]
    return started.run(
        lambda basis: merge_tree([basis.sums(p, part=k) for k, p in enumerate(parts)]),
        parts=len(parts),
    )


def test_dask_fits_a_classifier_as_one_process(labelled, client):
    """Issue 50, item 5: a classifier's rounds on Dask give the blob of one
    process on the same partitions and tree, and fit_file's fit up to
    rounding (the partitions are not its chunks)."""
    path, X, c = labelled
    started = sgp.SparseGPClassifier(**SETTINGS).start_file(path)
    frame = read_frame(path, started.basis, blocksize="1MB")
    assert frame.npartitions >= 3
    alone = merged_alone(started, frame)
    est = fit_dask(sgp.SparseGPClassifier(**SETTINGS), path, client=client, frame=frame)
    assert est.to_bytes() == alone.to_bytes()
    assert est.report_["streamed"]["rows"] == len(c)
    whole = sgp.SparseGPClassifier(**SETTINGS).fit_file(path)
    Xs = named(X[:200])
    np.testing.assert_allclose(
        est.predict_proba(Xs), whole.predict_proba(Xs), rtol=0, atol=1e-9
    )


def test_dask_fits_two_targets_as_one_process(two_targets, client):
    """Issue 50, item 5: several targets on Dask: the same choice of basis
    and the blobs of one process on the same partitions and tree."""
    path, X, Y = two_targets
    started = sgp.SparseGPRegressor(**SETTINGS).start_file(path, ["y", "z"])
    frame = read_frame(path, started.basis, blocksize="1MB")
    alone = merged_alone(started, frame)
    est = fit_dask(sgp.SparseGPRegressor(**SETTINGS), path, ["y", "z"], client=client,
                   frame=frame)
    assert est.blobs_ == alone.blobs_
    assert est.basis_["kept"] == alone.basis_["kept"]
    assert est.predict(named(X[:5])).shape == (5, 2)
