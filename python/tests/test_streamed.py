"""The streamed fit of a large file from Python: the CLI's blob, its pass
over every row as a mergeable, picklable statistic, what does not stream."""

import os
import pickle
import subprocess

import numpy as np
import pandas as pd
import pytest

import sgp
from sgp._streamed import merge_tree

# More rows than a file fitted in memory (StreamedParams::in_memory_rows).
ROWS = 80_000
# Rows per chunk of the pass (the library's DEFAULT_CHUNK_ROWS).
CHUNK = 65_536
SETTINGS = dict(m=8, restarts=1, max_iter=15, random_state=3)


def frame(X):
    """Rows to predict at, named as the file's inputs."""
    return pd.DataFrame(X, columns=["a", "b", "c"])


def rows(n=ROWS, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, (n, 3))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    return X, y


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """80,000 rows of three inputs as CSV (exact digits) and the rows."""
    X, y = rows()
    path = tmp_path_factory.mktemp("big") / "big.csv"
    with open(path, "w") as out:
        out.write("a,b,c,y\n")
        np.savetxt(out, np.hstack([X, y[:, None]]), delimiter=",", fmt="%.17g")
    return str(path), X, y


@pytest.fixture(scope="module")
def fitted(big):
    path, _, _ = big
    return sgp.SparseGPRegressor(**SETTINGS).fit_file(path)


def test_fit_file_is_the_cli_streamed_fit(big, fitted, tmp_path):
    cli = os.environ.get("SGP_CLI")
    if not cli:
        pytest.skip("SGP_CLI (the path of the sgp binary) is not set; .ci/run sets it")
    path, X, _ = big
    out = tmp_path / "cli.sgp"
    subprocess.run(
        [cli, "-q", "fit", "--data", path, "--m", "8", "--restarts", "1", "--max-iter", "15",
         "--seed", "3", "--out", str(out)],
        check=True,
    )
    assert out.read_bytes() == fitted.to_bytes()
    assert fitted.report_["streamed"]["rows"] == ROWS
    assert fitted.n_features_in_ == 3
    mean = fitted.predict(frame(X[:5]))
    assert np.all(np.isfinite(mean))


def test_the_pass_as_a_statistic_gives_the_same_blob(big, fitted):
    path, X, y = big
    started = sgp.SparseGPRegressor(**SETTINGS).start_file(path)
    basis = pickle.loads(pickle.dumps(started.basis))
    assert basis.input_names == ["a", "b", "c"] and basis.target_name == "y"
    # Split where the file's pass starts a chunk: the file's sums, bit for bit.
    head = basis.sums(X[:CHUNK], y[:CHUNK])
    tail = pickle.loads(pickle.dumps(basis.sums(X[CHUNK:], y[CHUNK:])))
    total = head.merge(tail)
    assert total.rows == ROWS
    assert started.finish(total).to_bytes() == fitted.to_bytes()


def test_any_split_is_the_same_fit_up_to_rounding(big, fitted):
    path, X, y = big
    started = sgp.SparseGPRegressor(**SETTINGS).start_file(path)
    cuts = [0, 1000, 30_001, 52_345, ROWS]
    parts = [started.basis.sums(X[a:b], y[a:b]) for a, b in zip(cuts, cuts[1:])]
    once = merge_tree(parts)
    assert merge_tree(parts).data == once.data  # a fixed tree: the same bits
    est = started.finish(once)
    # The reassociated sums differ from the file's by rounding (1e-16
    # relative per merge), which moves the f64 predictions by far less
    # than 1e-9 of the target's scale.
    Xs = frame(X[:200])
    np.testing.assert_allclose(est.predict(Xs), fitted.predict(Xs), rtol=0, atol=1e-9)


def test_a_lost_or_repeated_partition_is_refused_and_named(big):
    """Issue 50, item 6: sums of less (or more) than every row never pass
    as the file's, and numbered partitions are named."""
    path, X, y = big
    started = sgp.SparseGPRegressor(**SETTINGS).start_file(path)
    cuts = [0, 1000, 30_001, 52_345, ROWS]
    parts = [
        started.basis.sums(X[a:b], y[a:b], part=k)
        for k, (a, b) in enumerate(zip(cuts, cuts[1:]))
    ]
    with pytest.raises(ValueError, match="parts 2 are in both sums"):
        merge_tree(parts + [parts[2]])
    lost = merge_tree(parts[:2] + parts[3:])
    with pytest.raises(ValueError, match="parts 2 are missing"):
        started.finish(lost, parts=4)
    unnumbered = merge_tree([started.basis.sums(X[a:b], y[a:b]) for a, b in [(0, 1000)]])
    with pytest.raises(ValueError, match="rows missing"):
        started.finish(unnumbered)
    # Refused, the start is kept: the whole set still fits.
    est = started.finish(merge_tree(parts), parts=4)
    assert est.report_["streamed"]["rows"] == ROWS


def test_chunks_are_streamed_as_their_file(big, fitted):
    path, X, y = big
    chunks = ((X[k:k + 7000], y[k:k + 7000]) for k in range(0, ROWS, 7000))
    est = sgp.SparseGPRegressor(**SETTINGS).fit_chunks(chunks, names=["a", "b", "c", "y"])
    assert est.to_bytes() == fitted.to_bytes()


def test_what_does_not_stream_is_an_error_saying_why(big, tmp_path):
    path, X, y = big
    with pytest.raises(ValueError, match="target column 'y' is continuous"):
        sgp.SparseGPClassifier(**SETTINGS).fit_file(path)
    with pytest.raises(ValueError, match="is a classifier and target column 'y' is continuous"):
        sgp.SparseGPRegressor(model="svgp").fit_file(path)
    small = tmp_path / "small.csv"
    with open(small, "w") as out:
        out.write("a,b,c,y\n")
        np.savetxt(out, np.hstack([X[:500], y[:500, None]]), delimiter=",", fmt="%.17g")
    with pytest.raises(ValueError, match="fitted in memory"):
        sgp.SparseGPRegressor().fit_file(small)
    basis = sgp.SparseGPRegressor(**SETTINGS).start_file(path).basis
    with pytest.raises(ValueError, match="basis reads 3 inputs"):
        basis.sums(X[:10, :2], y[:10])


@pytest.fixture(scope="module")
def parts(big, tmp_path_factory):
    """``big``'s rows as a directory of three Parquet files of uneven
    sizes, plus a file Spark would leave there (skipped by name)."""
    pytest.importorskip("pyarrow")
    _, X, y = big
    folder = tmp_path_factory.mktemp("parts")
    table = pd.DataFrame(np.hstack([X, y[:, None]]), columns=["a", "b", "c", "y"])
    for k, (a, b) in enumerate([(0, 20_000), (20_000, 70_001), (70_001, ROWS)]):
        table.iloc[a:b].to_parquet(folder / f"part-{k:05d}.parquet", index=False)
    (folder / "_SUCCESS").write_bytes(b"")
    return str(folder)


def test_a_directory_is_the_file_of_its_rows(parts, fitted):
    # Files in name order, cut into the pass's chunks across their ends:
    # the blob of the one file holding the rows, whatever the files' sizes.
    assert sgp.SparseGPRegressor(**SETTINGS).fit_file(parts).to_bytes() == fitted.to_bytes()


def test_a_directory_that_is_not_one_table_is_refused(big, tmp_path):
    pytest.importorskip("pyarrow")
    _, X, y = big
    with pytest.raises(ValueError, match="no Parquet files in this directory"):
        sgp.SparseGPRegressor().fit_file(tmp_path)
    pd.DataFrame(X[:10], columns=["a", "b", "c"]).assign(y=y[:10]).to_parquet(
        tmp_path / "0.parquet", index=False
    )
    pd.DataFrame(X[:10], columns=["a", "b", "z"]).assign(y=y[:10]).to_parquet(
        tmp_path / "1.parquet", index=False
    )
    with pytest.raises(ValueError, match=r"1.parquet: its columns \(a, b, z, y\) differ"):
        sgp.SparseGPRegressor().fit_file(tmp_path)


def test_warnings_point_at_the_callers_line(big, tmp_path):
    # A constant input is fitted, ignored and named in a warning, whose
    # place is the user's call whatever sgp function led to it.
    path, X, y = big
    X = X.copy()
    X[:, 2] = 1.5
    constant = tmp_path / "constant.csv"
    with open(constant, "w") as out:
        out.write("a,b,c,y\n")
        np.savetxt(out, np.hstack([X, y[:, None]]), delimiter=",", fmt="%.17g")
    chunks = ((X[k:k + 40_000], y[k:k + 40_000]) for k in range(0, ROWS, 40_000))
    for run in (
        lambda: sgp.SparseGPRegressor(**SETTINGS).fit_file(constant),
        lambda: sgp.SparseGPRegressor(**SETTINGS).fit_chunks(chunks, ["a", "b", "c", "y"]),
    ):
        with pytest.warns(UserWarning, match="'c'") as caught:
            run()
        assert {os.path.basename(w.filename) for w in caught} == {"test_streamed.py"}


def test_a_two_valued_target_is_fitted_as_the_estimators_task_everywhere(big, tmp_path):
    """A 0/1 target is numbers to the regressor in fit and fit_file alike
    (as task='regression' says); the other task is refused, naming the
    estimator that fits it."""
    path, X, y = big
    binary = tmp_path / "binary.csv"
    flags = (y > np.median(y)).astype(float)
    with open(binary, "w") as out:
        out.write("a,b,c,y\n")
        np.savetxt(out, np.hstack([X, flags[:, None]]), delimiter=",", fmt="%.17g")
    streamed = sgp.SparseGPRegressor(**SETTINGS).fit_file(binary)
    said = sgp.SparseGPRegressor(task="regression", **SETTINGS).fit_file(binary)
    assert streamed.to_bytes() == said.to_bytes()
    assert streamed.to_model().class_labels == []
    in_memory = sgp.SparseGPRegressor(m=8, max_iter=15).fit(X[:2000], flags[:2000])
    assert in_memory.to_model().class_labels == []
    with pytest.raises(ValueError, match="task='classification': SparseGPRegressor fits a "
                                         "regression; SparseGPClassifier"):
        sgp.SparseGPRegressor(task="classification").fit_file(binary)
    with pytest.raises(ValueError, match="SparseGPRegressor fits a regression"):
        sgp.SparseGPClassifier(task="regression").fit(X[:50], flags[:50])
    with pytest.raises(ValueError, match="task must be"):
        sgp.SparseGPRegressor(task="ranking").fit(X[:50], y[:50])


def test_inputs_pick_and_order_the_files_columns_as_the_cli_does(big, tmp_path):
    path, X, y = big
    est = sgp.SparseGPRegressor(**SETTINGS).fit_file(path, target="y", inputs=["c", "a"])
    assert est.to_model().input_names == ["c", "a"]
    assert list(est.feature_names_in_) == ["c", "a"]
    with pytest.raises(ValueError, match="no column named 'd'"):
        sgp.SparseGPRegressor(**SETTINGS).fit_file(path, inputs=["a", "d"])
    with pytest.raises(ValueError, match="column 'y' is a target and cannot be one of inputs"):
        sgp.SparseGPRegressor(**SETTINGS).fit_file(path, inputs=["a", "y"])
    cli = os.environ.get("SGP_CLI")
    if cli:
        out = tmp_path / "cli.sgp"
        subprocess.run(
            [cli, "-q", "fit", "--data", path, "--inputs", "c,a", "--m", "8", "--restarts",
             "1", "--max-iter", "15", "--seed", "3", "--out", str(out)],
            check=True,
        )
        assert out.read_bytes() == est.to_bytes()


def test_chunks_of_dataframes_keep_their_names_and_pick_inputs(big):
    path, X, y = big
    names = ["a", "b", "c"]
    chunks = (
        (pd.DataFrame(X[k:k + 20_000], columns=names), pd.Series(y[k:k + 20_000], name="power"))
        for k in range(0, ROWS, 20_000)
    )
    est = sgp.SparseGPRegressor(**SETTINGS).fit_chunks(chunks, inputs=["b", "a"])
    model = est.to_model()
    assert model.input_names == ["b", "a"] and model.target_name == "power"


def classes(n=ROWS, seed=5):
    """Two classes (0/1) of three inputs, a noisy boundary."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, (n, 3))
    f = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2
    return X, (f + 0.3 * rng.standard_normal(n) > np.median(f)).astype(float)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """80,000 rows of two classes as CSV, and the rows."""
    X, c = classes()
    path = tmp_path_factory.mktemp("labelled") / "labelled.csv"
    with open(path, "w") as out:
        out.write("a,b,c,label\n")
        np.savetxt(out, np.hstack([X, c[:, None]]), delimiter=",", fmt="%.17g")
    return str(path), X, c


@pytest.fixture(scope="module")
def two_targets(tmp_path_factory):
    """80,000 rows of three inputs and two targets y, z as CSV, and the
    rows (z varies where y does not: one model per output is likely)."""
    X, y = rows(seed=6)
    rng = np.random.default_rng(7)
    z = np.cos(X[:, 0]) * X[:, 2] + 0.1 * rng.standard_normal(len(y))
    Y = np.column_stack([y, z])
    path = tmp_path_factory.mktemp("two") / "two.csv"
    with open(path, "w") as out:
        out.write("a,b,c,y,z\n")
        np.savetxt(out, np.hstack([X, Y]), delimiter=",", fmt="%.17g")
    return str(path), X, Y


def by_hand(started, X, Y, cuts):
    """Every pass of ``started`` summed by hand over the parts cut at
    ``cuts``, numbered, merged in ``merge_tree``'s order."""
    def pass_sums(basis):
        bounds = list(zip(cuts, cuts[1:]))
        return merge_tree([
            basis.sums(X[a:b], None if Y is None else Y[a:b], part=k)
            for k, (a, b) in enumerate(bounds)
        ])
    return started.run(pass_sums, parts=len(cuts) - 1)


def test_a_classifier_streams_in_chunks_as_fit_file(labelled):
    """Issue 50, items 1, 5 and 6: a classifier's rounds summed by hand in
    two parts cut where the file's pass starts a chunk give fit_file's
    blob, byte for byte; a lost part or a round's sums out of turn are
    refused, naming them."""
    path, X, c = labelled
    whole = sgp.SparseGPClassifier(**SETTINGS).fit_file(path)
    assert whole.report_["streamed"]["rows"] == ROWS
    assert whole.report_["streamed"]["passes"] >= 2
    assert list(whole.classes_) == [0.0, 1.0]
    assert whole.score(frame(X[:2000]), c[:2000]) > 0.6

    started = sgp.SparseGPClassifier(**SETTINGS).start_file(path)
    assert started.rounds == whole.report_["streamed"]["passes"]
    assert started.basis.target_names == ["label"]
    first = pickle.loads(pickle.dumps(started.basis))
    head = first.sums(X[:CHUNK], c[:CHUNK], part=0)
    tail = first.sums(X[CHUNK:], c[CHUNK:], part=1)
    with pytest.raises(ValueError, match="parts 1 are missing"):
        started.advance(head, parts=2)
    started.advance(head.merge(tail), parts=2)
    with pytest.raises(ValueError, match="sums of round 0"):
        started.advance(head.merge(tail), parts=2)
    with pytest.raises(ValueError, match="round 1 with those of round 0"):
        started.basis.sums(X[:CHUNK], c[:CHUNK], part=0).merge(tail)
    est = by_hand(started, X, c, [0, CHUNK, ROWS])
    assert est.to_bytes() == whole.to_bytes()
    np.testing.assert_array_equal(est.predict(frame(X[:50])), whole.predict(frame(X[:50])))


def test_text_labels_stream_as_the_numbers_they_index(tmp_path):
    """A file of text labels streams as the same rows labelled by the
    labels' indices (sorted: no = 0, yes = 1; yes the rarer, so the positive
    class either way): the same predictions, the blob's labels the text;
    its rounds summed by hand from text blocks give fit_file's blob; a
    label the file's first pass did not find is refused, naming it."""
    rng = np.random.default_rng(9)
    X = rng.uniform(-2.0, 2.0, (ROWS, 3))
    f = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.3 * rng.standard_normal(ROWS)
    c = (f > np.quantile(f, 0.6)).astype(float)
    text = np.where(c > 0.5, "yes", "no")
    numbers, words = tmp_path / "numbers.csv", tmp_path / "words.csv"
    pd.DataFrame(np.hstack([X, c[:, None]]), columns=["a", "b", "c", "label"]).to_csv(
        numbers, index=False, float_format="%.17g")
    table = pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=text)
    table.to_csv(words, index=False, float_format="%.17g")
    by_number = sgp.SparseGPClassifier(**SETTINGS).fit_file(str(numbers))
    by_word = sgp.SparseGPClassifier(**SETTINGS).fit_file(str(words))
    assert by_word.to_model().class_labels == ["no", "yes"]
    assert list(by_word.classes_) == ["no", "yes"]
    np.testing.assert_array_equal(
        by_word.predict_proba(frame(X[:500])), by_number.predict_proba(frame(X[:500])))
    assert list(by_word.predict(frame(X[:20]))) == [
        "yes" if v else "no" for v in by_number.predict(frame(X[:20]))]

    started = sgp.SparseGPClassifier(**SETTINGS).start_file(str(words))
    assert started.basis.class_labels == ["no", "yes"]
    est = by_hand(started, table, None, [0, CHUNK, ROWS])
    assert est.to_bytes() == by_word.to_bytes()
    odd = table.iloc[:10].copy()
    odd.loc[7, "label"] = "maybe"
    with pytest.raises(ValueError, match="row 8 of this block, column 'label': label 'maybe'"):
        pickle.loads(pickle.dumps(started.basis)).sums(odd)


def test_several_targets_stream_from_python_with_the_trainers_choice(two_targets):
    """Issue 50, items 3 and 5: fit_file takes several target columns, one
    basis or one model per output as the trainer decides on the sample
    (basis_ says which); the chunk path's sums give the same blobs."""
    path, X, Y = two_targets
    whole = sgp.SparseGPRegressor(**SETTINGS).fit_file(path, target=["y", "z"])
    assert whole.basis_["kept"] in ("shared", "separate")
    assert [o["name"] for o in whole.basis_["outputs"]] == ["y", "z"]
    assert whole.predict(frame(X[:5])).shape == (5, 2)
    started = sgp.SparseGPRegressor(**SETTINGS).start_file(path, target="y,z")
    assert started.basis.target_names == ["y", "z"]
    est = by_hand(started, X, Y, [0, CHUNK, ROWS])
    assert est.blobs_ == whole.blobs_
    np.testing.assert_array_equal(est.predict(frame(X[:50])), whole.predict(frame(X[:50])))
