import pickle
import subprocess
import threading
import time
import os

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import check_estimator

import sgp
from conftest import mean_tolerance


# The trainer cannot weight rows or classes: weights other than all ones
# are refused (tests/test_sklearn_api.py), which these checks count as
# failures (they fit with other weights and expect a fit).
UNWEIGHTED = "the trainer cannot weight rows; such weights are refused, not ignored"
REFUSED_WEIGHTS = [
    "check_sample_weights_list",
    "check_sample_weights_not_overwritten",
    "check_sample_weight_equivalence_on_dense_data",
]
REFUSED_CLASS_WEIGHTS = [
    "check_classifiers_one_label_sample_weights",
    "check_class_weight_classifiers",
]


@pytest.mark.parametrize(
    "estimator", [sgp.SparseGPRegressor(m=8), sgp.SparseGPClassifier(m=8)], ids=type
)
def test_estimators_pass_scikit_learns_checks(estimator):
    names = REFUSED_WEIGHTS
    if isinstance(estimator, sgp.SparseGPClassifier):
        names = names + REFUSED_CLASS_WEIGHTS
    check_estimator(estimator, expected_failed_checks={n: UNWEIGHTED for n in names})


def test_dataframe_columns_and_series_name_become_the_blobs_names(ridge):
    X, y = ridge
    model = sgp.SparseGPRegressor(m=10).fit(X, y).to_model()
    assert model.input_names == ["temperature", "humidity"]
    assert model.target_name == "power"
    assert "temperature, humidity" in sgp.SparseGPRegressor(m=10).fit(X, y).export_c("heater")


def test_arrays_get_default_names():
    X = np.linspace(0, 1, 30)[:, None]
    model = sgp.SparseGPRegressor(m=5).fit(X, X[:, 0] ** 2).to_model()
    assert model.input_names == ["x0"] and model.target_name == "y"


@pytest.mark.parametrize("model", ["spgp", "vsgp", "gplasso", "exact"])
def test_device_predictions_equal_the_fit_within_the_export_tolerance(ridge, model):
    X, y = ridge
    m = {} if model == "exact" else {"m": 12}
    est = sgp.SparseGPRegressor(model=model, **m).fit(X, y)
    test = pd.DataFrame(np.random.default_rng(1).uniform(-1, 7, (200, 2)), columns=X.columns)
    mean, sd = est.predict(test, return_std=True)
    device_mean, device_var = sgp.Model.from_bytes(est.to_bytes()).predict(test)
    assert np.all(np.abs(device_mean - mean) <= mean_tolerance(sd, y.std()))
    assert np.all(np.abs(device_var - sd**2) <= 1e-2 * sd**2)
    # and the two are not the same numbers: the device computes in f32
    assert np.any(device_mean != mean)


def test_device_picks_dataframe_columns_by_name(ridge):
    X, y = ridge
    model = sgp.SparseGPRegressor(m=8).fit(X, y).to_model()
    straight = model.predict(X)[0]
    swapped = model.predict(X[["humidity", "temperature"]])[0]
    np.testing.assert_array_equal(straight, swapped)
    with pytest.raises(ValueError, match="humidity"):
        model.predict(X[["temperature"]])


def test_same_seed_same_blob_other_seed_other_blob(ridge):
    X, y = ridge
    # One start each: with restarts, neighbouring seeds share starts (seed
    # s tries s, s+1, ...) and may end on the same one.
    a = sgp.SparseGPRegressor(m=8, restarts=1, random_state=5).fit(X, y).to_bytes()
    b = sgp.SparseGPRegressor(m=8, restarts=1, random_state=5).fit(X, y).to_bytes()
    c = sgp.SparseGPRegressor(m=8, restarts=1, random_state=6).fit(X, y).to_bytes()
    assert a == b
    assert a != c


def test_save_and_exports_are_what_the_cli_writes(ridge, tmp_path):
    cli = os.environ.get("SGP_CLI")
    if not cli:
        pytest.skip("SGP_CLI (the path of the sgp binary) is not set; .ci/run sets it")
    X, y = ridge
    data = tmp_path / "train.csv"
    pd.concat([X, y], axis=1).to_csv(data, index=False, float_format="%.17g")
    cli_blob = tmp_path / "cli.sgp"
    subprocess.run(
        [cli, "-q", "fit", "--data", str(data), "--m", "9", "--seed", "4", "--out", str(cli_blob)],
        check=True,
    )
    est = sgp.SparseGPRegressor(m=9, random_state=4).fit(X, y)
    ours = tmp_path / "heater.sgp"
    est.save(ours)
    assert ours.read_bytes() == est.to_bytes() == cli_blob.read_bytes()
    for fmt, method in [("c", est.export_c), ("rust", est.export_rust)]:
        written = subprocess.run(
            [cli, "export", "--model", "heater.sgp", "--format", fmt, "--name", "heater"],
            check=True, capture_output=True, text=True, cwd=tmp_path,
        ).stdout
        assert method(name="heater") == written


def test_save_leaves_the_old_file_when_it_cannot_write(ridge, tmp_path):
    X, y = ridge
    est = sgp.SparseGPRegressor(m=6, random_state=0).fit(X, y)
    with pytest.raises(OSError, match="no-such-dir"):
        est.save(tmp_path / "no-such-dir" / "m.sgp")
    target = tmp_path / "m.sgp"
    target.write_bytes(b"old")
    est.to_model().save(target)
    assert target.read_bytes() == est.to_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.sgp"]


def test_a_reproducible_fit_is_the_blob_sgp_fit_reproducible_writes(ridge, tmp_path):
    cli = os.environ.get("SGP_CLI")
    if not cli:
        pytest.skip("SGP_CLI (the path of the sgp binary) is not set; .ci/run sets it")
    X, y = ridge
    data = tmp_path / "train.csv"
    pd.concat([X, y], axis=1).to_csv(data, index=False, float_format="%.17g")
    cli_blob = tmp_path / "cli.sgp"
    subprocess.run(
        [cli, "-q", "fit", "--data", str(data), "--m", "9", "--seed", "4", "--reproducible",
         "--out", str(cli_blob)],
        check=True,
    )
    est = sgp.SparseGPRegressor(m=9, random_state=4, reproducible=True).fit(X, y)
    assert est.get_params()["reproducible"] is True
    assert est.to_bytes() == cli_blob.read_bytes()


def test_classifier_device_probabilities_equal_its_own(ridge):
    X, _ = ridge
    labels = np.where(X["temperature"] + 0.5 * X["humidity"] > 4.0, "hot", "cold")
    clf = sgp.SparseGPClassifier(m=16).fit(X, labels)
    assert list(clf.classes_) == ["cold", "hot"]
    assert clf.score(X, labels) > 0.9
    device = sgp.Model.from_bytes(clf.to_bytes())
    assert device.is_classifier
    # The blob's positive class is sgp fit's: the rarer label, here "cold".
    assert device.class_labels == ["hot", "cold"]
    # Both (n, 2), columns in their own class order: the estimator's
    # classes_ (cold, hot), the blob's class_labels (hot, cold).
    proba = clf.predict_proba(X)
    assert np.max(np.abs(device.predict_proba(X)[:, ::-1] - proba)) <= 1e-3


def test_more_than_two_classes_are_one_model_on_one_basis(ridge):
    X, _ = ridge
    y = np.array(["cold", "mild", "hot"])[np.digitize(X["temperature"], [2.0, 4.0])]
    clf = sgp.SparseGPClassifier(m=12).fit(X, y)
    assert list(clf.classes_) == ["cold", "hot", "mild"]
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.score(X, y) > 0.8
    device = sgp.Model.from_bytes(clf.to_bytes())
    assert device.class_labels == ["cold", "hot", "mild"]
    assert np.max(np.abs(device.predict_proba(X) - proba)) <= 1e-3


def test_pickled_estimator_predicts_the_same(ridge):
    X, y = ridge
    est = sgp.SparseGPRegressor(m=8).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est.predict(X), again.predict(X))
    assert again.to_bytes() == est.to_bytes()


@pytest.mark.parametrize(
    "params, message",
    [
        ({"model": "spgq"}, r"model='spgq' is not one of: auto, exact, spgp"),
        ({"objective": "elbo"}, r"objective='elbo' is not one of: fitc, vfe"),
        ({"m": 0}, "^m must be at least 1"),
        ({"restarts": 0}, "^restarts must be at least 1"),
        ({"model": "spgp-dr"}, "needs dim"),
        ({"model": "spgp", "dim": 1}, "dim does not apply to spgp"),
        ({"kernel": "rbf"}, r"kernel='rbf' is not one of: auto, se, matern12"),
        ({"model": "vsgp", "kernel": "matern32"}, "kernel does not apply to vsgp"),
    ],
)
def test_bad_settings_raise_value_errors_with_the_trainers_words(ridge, params, message):
    X, y = ridge
    with pytest.raises(ValueError, match=message):
        sgp.SparseGPRegressor(**params).fit(X, y)


@pytest.mark.parametrize("model", ["spgp", "exact"])
@pytest.mark.parametrize("kernel", ["matern12", "matern32", "matern52"])
def test_matern_device_predictions_equal_the_fit_within_the_export_tolerance(ridge, model, kernel):
    X, y = ridge
    m = None if model == "exact" else 12
    est = sgp.SparseGPRegressor(model=model, m=m, kernel=kernel).fit(X, y)
    assert est.report_["kernel"] == kernel
    test = pd.DataFrame(np.random.default_rng(1).uniform(-1, 7, (200, 2)), columns=X.columns)
    mean, sd = est.predict(test, return_std=True)
    device_mean, device_var = sgp.Model.from_bytes(est.to_bytes()).predict(test)
    assert np.all(np.abs(device_mean - mean) <= mean_tolerance(sd, y.std()))
    assert np.all(np.abs(device_var - sd**2) <= 1e-2 * sd**2)


def test_bad_data_is_refused(ridge):
    X, y = ridge
    bad = X.copy()
    bad.iloc[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        sgp.SparseGPRegressor(m=5).fit(bad, y)
    with pytest.raises(ValueError, match="constant"):
        sgp.SparseGPRegressor(m=5).fit(X, np.ones(len(X)))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        sgp.SparseGPRegressor(m=5).fit(X, y[:-1])


def test_corrupted_and_truncated_blobs_are_refused(ridge):
    X, y = ridge
    blob = sgp.SparseGPRegressor(m=8).fit(X, y).to_bytes()
    with pytest.raises(ValueError, match="model blob"):
        sgp.Model.from_bytes(blob[: len(blob) // 2])
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0xFF
    with pytest.raises(ValueError, match="model blob"):
        sgp.Model.from_bytes(bytes(flipped))
    with pytest.raises(ValueError, match="model blob"):
        sgp.Model.from_bytes(b"")


def test_export_names_are_checked(ridge):
    X, y = ridge
    est = sgp.SparseGPRegressor(m=8).fit(X, y)
    with pytest.raises(ValueError, match="name"):
        est.export_c(name="Not A Name")


def test_error_classes():
    assert issubclass(sgp.ExportError, sgp.SgpError)
    assert issubclass(sgp.NumericalError, sgp.SgpError)
    assert issubclass(sgp.SgpError, RuntimeError)


def test_fit_releases_the_gil():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 6, (3000, 4))
    y = np.sin(X).sum(axis=1)
    est = sgp.SparseGPRegressor(m=30, restarts=1, max_iter=100, tol=0.0)
    fit = threading.Thread(target=est.fit, args=(X, y))
    started = time.perf_counter()
    ticks = [started]
    fit.start()
    while fit.is_alive():
        ticks.append(time.perf_counter())
    fit.join()
    duration = ticks[-1] - started
    # Holding the GIL through the fit would stop this loop for all of it
    # (one gap as long as the fit); released, it only pauses at switches.
    assert np.max(np.diff(ticks)) < 0.5 * duration
    assert est.n_iter_ == 100


def test_inspect_reports_the_blob(ridge):
    X, y = ridge
    summary = sgp.SparseGPRegressor(m=8).fit(X, y).to_model().inspect()
    assert summary["kind"] == "spgp" and summary["n_basis"] == 8
    assert summary["inputs"] == ["temperature", "humidity"]


def test_the_clis_data_warnings_are_python_warnings(ridge):
    X, y = ridge
    X = X.assign(sensor_that_never_moved=3.0)
    with pytest.warns(UserWarning, match="'sensor_that_never_moved' is constant"):
        est = sgp.SparseGPRegressor(m=8).fit(X, y)
    assert est.report_["ignored_inputs"] == ["sensor_that_never_moved"]
    long = X.rename(columns={"humidity": "relative_humidity_in_the_north_east_corner_of_the_hall"})
    with pytest.warns(UserWarning, match="longer than the .* bytes a device Model holds"):
        sgp.SparseGPRegressor(m=8).fit(long, y)


def test_verbose_fits_print_their_progress(ridge, capsys):
    X, y = ridge
    sgp.SparseGPRegressor(
        model="spgp", m=8, max_iter=30, tol=0.0, restarts=1, verbose=True
    ).fit(X, y)
    err = capsys.readouterr().err
    assert "sgp fit: iteration 30/" in err and "objective" in err
    sgp.SparseGPRegressor(m=8, max_iter=30).fit(X, y)
    assert capsys.readouterr().err == ""


def test_an_exception_in_the_progress_callback_reaches_the_caller(ridge):
    X, y = ridge

    def interrupt(iteration, budget, objective):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sgp._native.fit(
            sgp._arrays.to_native(X), len(X), 2, sgp._arrays.to_native(y), 1,
            ["a", "b"], ["y"],
            {"model": "spgp", "m": 5, "random_state": 0, "objective": "fitc"},
            progress=interrupt,
        )
