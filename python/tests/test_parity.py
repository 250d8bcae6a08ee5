"""The command line and the Python estimators are thin layers over one
options builder: the same data and settings give the same blob, byte for
byte, for every family, two outputs and three classes."""

import os
import subprocess

import numpy as np
import pandas as pd
import pytest

import sgp

CLI = os.environ.get("SGP_CLI")
pytestmark = pytest.mark.skipif(
    not CLI, reason="SGP_CLI (the path of the sgp binary) is not set; python/ci.sh sets it"
)


def frame(rows=160, seed=5):
    """Three inputs and two smooth targets, the second a class of the first."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(-2.0, 2.0, (rows, 3)), columns=["a", "b", "c"])
    y = np.sin(2.0 * X["a"]) + 0.5 * X["b"] * X["c"] + 0.1 * rng.standard_normal(rows)
    z = np.cos(X["b"]) - 0.3 * X["a"] + 0.1 * rng.standard_normal(rows)
    return X, pd.Series(y, name="y"), pd.Series(z, name="z")


def cli_blob(tmp_path, table, args):
    """The blob `sgp fit` writes for `table` (written as the CSV it reads,
    every float round-tripping exactly) and `args`."""
    data = tmp_path / "train.csv"
    table.to_csv(data, index=False, float_format="%.17g")
    out = tmp_path / "cli.sgp"
    subprocess.run(
        [CLI, "-q", "fit", "--data", str(data), "--out", str(out)] + args,
        check=True,
        capture_output=True,
    )
    return out.read_bytes()


FAMILIES = [
    ("spgp", {}),
    ("vsgp", {}),
    ("spgp-hs", {}),
    ("spgp-dr", {"dim": 2}),
    ("spgp-pca", {"dim": 2}),
    ("gplasso", {}),
    ("ivm", {}),
    ("exact", {}),
    ("auto", {}),
]


def settings(model, extra):
    """The estimator's keywords: a few iterations, a seed, and 8 basis
    functions (the exact GP has none: `m` does not apply to it)."""
    given = {"max_iter": 40, "random_state": 3}
    if model != "exact":
        given["m"] = 8
    return {**given, **extra}


def flags(model, given):
    """The same settings as `sgp fit` flags."""
    args = ["--model", model]
    for key, value in given.items():
        key = "seed" if key == "random_state" else key
        args += ["--" + key.replace("_", "-"), str(value)]
    return args


@pytest.mark.parametrize("model, extra", FAMILIES, ids=[f for f, _ in FAMILIES])
def test_every_regression_family_writes_the_clis_blob(tmp_path, model, extra):
    X, y, _ = frame()
    given = settings(model, extra)
    ours = sgp.SparseGPRegressor(model=model, **given).fit(X, y).to_bytes()
    assert ours == cli_blob(tmp_path, pd.concat([X, y], axis=1), flags(model, given))


@pytest.mark.parametrize("model", ["svgp", "ivm", "exact"])
def test_every_classifier_writes_the_clis_blob(tmp_path, model):
    X, y, _ = frame()
    labels = pd.Series((y > 0).astype(int), name="label")
    given = settings(model, {})
    ours = sgp.SparseGPClassifier(model=model, **given)
    blob = ours.fit(X, labels).to_bytes()
    assert blob == cli_blob(tmp_path, pd.concat([X, labels], axis=1), flags(model, given))


def twins(rows=160, seed=5):
    """Three inputs and two targets that vary alike (z is twice y's
    function, each with its own noise), which one basis serves as well as
    each output's own."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(-2.0, 2.0, (rows, 3)), columns=["a", "b", "c"])
    f = np.sin(2.0 * X["a"]) + 0.5 * X["b"] * X["c"]
    y = f + 0.1 * rng.standard_normal(rows)
    z = 2.0 * f + 0.1 * rng.standard_normal(rows)
    return X, pd.Series(y, name="y"), pd.Series(z, name="z")


def cli_files(tmp_path, table, args):
    """Every file `sgp fit --out out.sgp` writes for `table` and `args`
    (one: a blob or a container), by file name."""
    data = tmp_path / "train.csv"
    table.to_csv(data, index=False, float_format="%.17g")
    folder = tmp_path / "cli"
    folder.mkdir()
    subprocess.run(
        [CLI, "-q", "fit", "--data", str(data), "--out", str(folder / "out.sgp")] + args,
        check=True,
        capture_output=True,
    )
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.parametrize("data, kept", [(frame, "separate"), (twins, "shared")])
def test_two_outputs_write_the_clis_one_file(tmp_path, data, kept):
    # Default settings: the held-out choice of one basis or one model per
    # output is made alike, and the one file (a blob, or a container of
    # each output's) is the CLI's, byte for byte.
    X, y, z = data()
    targets = pd.concat([y, z], axis=1)
    given = settings("spgp", {})
    est = sgp.SparseGPRegressor(model="spgp", **given).fit(X, targets)
    assert est.basis_["kept"] == kept, est.basis_["reason"]
    folder = tmp_path / "py"
    folder.mkdir()
    written = est.save(folder / "out.sgp")
    ours = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert set(ours) == {"out.sgp"} and written == [str(folder / "out.sgp")]
    assert ours["out.sgp"] == est.to_bytes()
    assert est.to_bytes()[:4] == (b"SGPS" if kept == "separate" else b"SGPM")
    table = pd.concat([X, targets], axis=1)
    assert ours == cli_files(tmp_path, table, flags("spgp", given) + ["--target", "y,z"])
    mean, std = est.predict(X, return_std=True)
    assert mean.shape == std.shape == (len(X), 2)
    # Each output's own blob either way: a member verbatim, or the shared
    # blob's output alone; the C export of one output works either way.
    device_mean = np.column_stack([est.to_model(name).predict(X)[0] for name in "yz"])
    assert est.to_bytes(1) == est.to_bytes("z")
    if kept == "separate":
        assert est.to_bytes(1) == est.blobs_[1]
        assert est.to_bytes(1) in est.to_bytes()
        # One model either way: the container predicts (n, 2), each column
        # its member's own prediction bit for bit; it writes itself back
        # verbatim and exports for the C library's sgp_artefact_load.
        whole = est.to_model()
        assert whole.is_container and whole.n_outputs == 2
        container_mean, container_variance = whole.predict(X)
        assert container_mean.shape == container_variance.shape == (len(X), 2)
        assert np.array_equal(container_mean, device_mean)
        assert whole.to_bytes() == est.to_bytes()
        assert len(whole.inspect()["members"]) == 2
        assert "sgp_artefact_load(&artefact" in est.export_c("arm")
        with pytest.raises(ValueError, match="CRC"):
            damaged = bytearray(est.to_bytes())
            damaged[20] ^= 1
            sgp.Model.from_bytes(bytes(damaged))
    else:
        shared_mean, _ = est.to_model().predict(X)
        # The one-output blob of output 1 in f32: within 0.1% of a standard deviation.
        assert np.max(np.abs(shared_mean - device_mean)) <= 1e-3 * np.max(std)
    assert "z" in est.export_c("arm", output=1)
    assert "Artefact" in est.export_rust("arm") or kept == "shared"
    assert np.max(np.abs(device_mean - mean)) <= 0.05 * np.max(std)
    with pytest.raises(ValueError, match="no output"):
        est.to_bytes(2)


def test_odd_target_names_write_the_clis_one_file(tmp_path):
    # The names no longer name files: one container, the CLI's, and each
    # output's blob by its name.
    X, y, z = frame()
    targets = pd.concat([y.rename("a/b"), z.rename("speed m.s")], axis=1)
    given = settings("spgp", {})
    est = sgp.SparseGPRegressor(model="spgp", **given).fit(X, targets)
    assert est.basis_["kept"] == "separate", est.basis_["reason"]
    folder = tmp_path / "py"
    folder.mkdir()
    est.save(folder / "out.sgp")
    ours = {p.name: p.read_bytes() for p in folder.iterdir()}
    table = pd.concat([X, targets], axis=1)
    args = flags("spgp", given) + ["--target", "a/b,speed m.s"]
    assert ours == cli_files(tmp_path, table, args)
    assert est.to_bytes("speed m.s") == est.blobs_[1]


def test_three_classes_write_the_clis_blob(tmp_path):
    X, y, _ = frame()
    classes = pd.Series(np.digitize(y, [-0.5, 0.5]), name="kind")
    clf = sgp.SparseGPClassifier(m=8, max_iter=40, random_state=3)
    blob = clf.fit(X, classes).to_bytes()
    table = pd.concat([X, classes], axis=1)
    args = flags("svgp", settings("svgp", {})) + ["--task", "classification"]
    assert blob == cli_blob(tmp_path, table, args)
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 3)
    device = sgp.Model.from_bytes(blob).predict_proba(X)
    assert np.max(np.abs(device - proba)) <= 1e-3


@pytest.mark.parametrize("model", ["spgp", "svgp"])
def test_updatable_blobs_are_the_clis(tmp_path, model):
    X, y, _ = frame()
    given = settings(model, {})
    if model == "svgp":
        target = pd.Series((y > 0).astype(int), name="label")
        est = sgp.SparseGPClassifier(model=model, updatable=True, **given)
    else:
        target = y
        est = sgp.SparseGPRegressor(model=model, updatable=True, **given)
    blob = est.fit(X, target).to_bytes()
    assert sgp.Model.from_bytes(blob).is_updatable
    table = pd.concat([X, target], axis=1)
    assert blob == cli_blob(tmp_path, table, flags(model, given) + ["--updatable"])


@pytest.mark.parametrize("model, target", [("exact", "y"), ("svgp", "kind")])
def test_updatable_is_refused_alike_where_the_blob_cannot_learn(tmp_path, model, target):
    X, y, _ = frame()
    table = pd.concat([X, y, pd.Series(np.digitize(y, [-0.5, 0.5]), name="kind")], axis=1)
    data = tmp_path / "train.csv"
    table.drop(columns=["kind" if target == "y" else "y"]).to_csv(data, index=False)
    args = [CLI, "-q", "fit", "--data", str(data), "--out", str(tmp_path / "o.sgp")]
    args += ["--model", model, "--updatable"]
    if target == "kind":
        args += ["--task", "classification"]
        est = sgp.SparseGPClassifier(model=model, updatable=True, m=8)
    else:
        est = sgp.SparseGPRegressor(model=model, updatable=True)
    cli = subprocess.run(args, capture_output=True, text=True)
    assert cli.returncode != 0
    with pytest.raises(ValueError) as python:
        est.fit(X, table[target])
    expected = "does not apply to exact" if model == "exact" else "classification of 3 classes"
    assert expected in cli.stderr, cli.stderr
    assert expected in str(python.value), python.value
    assert not (tmp_path / "o.sgp").exists()


def test_a_text_labelled_classifier_writes_the_clis_blob(tmp_path):
    """The positive class of two text labels is the one sgp fit takes (the
    rarer), so the blobs are the same."""
    X, y, _ = frame()
    labels = pd.Series(np.where(y > 0.8, "alarm", "ok"), name="state")
    given = settings("svgp", {})
    blob = sgp.SparseGPClassifier(**given).fit(X, labels).to_bytes()
    table = pd.concat([X, labels], axis=1)
    assert blob == cli_blob(tmp_path, table, flags("svgp", given))
