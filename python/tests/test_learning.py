"""Learning on the device from Python: ``sgp.Model.update`` runs the
runtime's own f32 update, as ``sgp replay`` and a device do."""

import subprocess

import numpy as np
import pytest

import sgp


def _fitted(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1]) + 0.05 * rng.standard_normal(n)
    return sgp.SparseGPRegressor(m=12, updatable=True, restarts=1).fit(X, y), X, y


def test_updates_pull_the_model_to_the_data_and_persist_in_the_blob():
    est, X, _ = _fitted()
    model = est.to_model()
    assert model.is_updatable
    x = np.array([[0.5, -1.0]])
    before_mean, before_var = model.predict(x)
    mean, variance, learned = model.update(x, [before_mean[0] + 1.0])
    assert learned.all() and mean[0] == pytest.approx(before_mean[0], rel=1e-6)
    after_mean, after_var = model.predict(x)
    assert after_mean[0] > before_mean[0] and after_var[0] < before_var[0]
    again = sgp.Model.from_bytes(model.to_bytes())
    np.testing.assert_array_equal(again.predict(x)[0], after_mean)


def test_a_replay_is_the_cli_replay(tmp_path):
    est, X, y = _fitted()
    blob = tmp_path / "m.sgp"
    est.save(blob)
    rng = np.random.default_rng(3)
    log_x = rng.uniform(-3, 3, size=(50, 2))
    log_y = np.sin(log_x[:, 0]) + 1.0
    log = tmp_path / "log.csv"
    rows = "\n".join(f"{a},{b},{t}" for (a, b), t in zip(log_x, log_y))
    log.write_text("x0,x1,y\n" + rows + "\n")
    model = sgp.Model.load(blob)
    model.update(log_x, log_y, forgetting=0.99)
    out = tmp_path / "after.sgp"
    cli = pytest.importorskip("os").environ.get("SGP_CLI")
    if cli is None:
        pytest.skip("SGP_CLI not set")
    subprocess.run(
        [cli, "replay", "--model", str(blob), "--data", str(log), "--forgetting", "0.99",
         "--out", str(out)],
        check=True, capture_output=True,
    )
    assert out.read_bytes() == model.to_bytes()


def test_a_container_learns_per_member_as_the_cli_replay(tmp_path):
    # One model per output (a container): member k learns column k, as it
    # would alone; the blob written back is sgp replay's of the container.
    est, X, y = _fitted()
    one = est.to_bytes()
    both = sgp.Model.from_bytes(sgp._native.artefact([one, one]))
    alone = sgp.Model.from_bytes(one)
    rng = np.random.default_rng(4)
    log_x = rng.uniform(-3, 3, size=(30, 2))
    log_y = np.sin(log_x[:, 0]) + 1.0
    log_y[3] = 1e6  # refused by the gate, by each member
    mean, variance, learned = both.update(log_x, np.column_stack([log_y, log_y]), gate=4.0)
    m1, v1, l1 = alone.update(log_x, log_y, gate=4.0)
    np.testing.assert_array_equal(mean, m1)
    np.testing.assert_array_equal(learned, l1)
    assert not learned[3]
    after = both.predict(log_x)[0]
    assert after.shape == (30, 2)
    np.testing.assert_array_equal(after[:, 1], alone.predict(log_x)[0])
    assert both.to_bytes() == sgp._native.artefact([alone.to_bytes(), alone.to_bytes()])
    # All or nothing: a bad target in the second column changes no member.
    before = both.to_bytes()
    bad = np.column_stack([log_y[:2], [1.0, float("nan")]])
    with pytest.raises(ValueError):
        both.update(log_x[:2], bad)
    assert both.to_bytes() == before
    cli = pytest.importorskip("os").environ.get("SGP_CLI")
    if cli is None:
        pytest.skip("SGP_CLI not set")
    (tmp_path / "c.sgp").write_bytes(sgp._native.artefact([one, one]))
    rows = "\n".join(f"{a},{b},{t}" for (a, b), t in zip(log_x, log_y))
    (tmp_path / "log.csv").write_text("x0,x1,y\n" + rows + "\n")
    subprocess.run(
        [cli, "replay", "--model", str(tmp_path / "c.sgp"), "--data", str(tmp_path / "log.csv"),
         "--gate", "4", "--out", str(tmp_path / "after.sgp")],
        check=True, capture_output=True,
    )
    assert (tmp_path / "after.sgp").read_bytes() == before


def test_bad_targets_and_settings_are_errors_that_change_nothing():
    est, X, _ = _fitted()
    model = est.to_model()
    blob = model.to_bytes()
    with pytest.raises(ValueError):
        model.update([[0.0, 0.0]], [float("nan")])
    with pytest.raises(ValueError):
        model.update([[0.0, 0.0]], [1.0], forgetting=1.5)
    assert model.to_bytes() == blob
    mean, _, learned = model.update([[0.0, 0.0]], [1e6], gate=3.0)
    assert not learned[0] and model.to_bytes() == blob
    fixed = sgp.SparseGPRegressor(m=8, restarts=1).fit(X, X[:, 0]).to_model()
    assert not fixed.is_updatable
    with pytest.raises(ValueError, match="learn on the device"):
        fixed.update([[0.0, 0.0]], [1.0])


def test_one_row_calls_are_the_batched_calls_and_the_replay_bit_for_bit():
    est, X, y = _fitted()
    rng = np.random.default_rng(5)
    log_x = rng.uniform(-3, 3, size=(40, 2))
    log_y = np.sin(log_x[:, 0]) + 0.5 + 0.05 * rng.standard_normal(40)
    log_y[7] = 1e6  # refused by the gate
    one, batched = est.to_model(), est.to_model()
    # Predictions: a 1-D row (float64 and float32) gives the batched call's f32 numbers.
    means, variances = one.predict(log_x)
    for i, x in enumerate(log_x):
        m, v = one.predict(x)
        assert (m[0], v[0]) == (means[i], variances[i])
        assert one.mean(x)[0] == one.mean(log_x[i : i + 1])[0]
        single = x.astype(np.float32)
        assert one.predict(single)[0][0] == one.predict(single[None, :].astype(np.float64))[0][0]
    # Updates: row by row on the kept model, as one batched call, as sgp replay.
    steps = [one.update(x, t, forgetting=0.995, gate=6.0) for x, t in zip(log_x, log_y)]
    mean, variance, learned = batched.update(log_x, log_y, forgetting=0.995, gate=6.0)
    np.testing.assert_array_equal(np.concatenate([s[0] for s in steps]), mean)
    np.testing.assert_array_equal(np.concatenate([s[1] for s in steps]), variance)
    np.testing.assert_array_equal(np.concatenate([s[2] for s in steps]), learned)
    # The outlier is refused; the gate lets the plant's rows through (one
    # near its threshold may fall either side with the form's last bits).
    assert not learned[7] and learned.sum() >= 36
    assert one.to_bytes() == batched.to_bytes()
    np.testing.assert_array_equal(one.predict(log_x)[0], batched.predict(log_x)[0])


def test_a_run_beyond_the_gate_opens_it():
    est, _, _ = _fitted()
    model = est.to_model()
    rng = np.random.default_rng(9)
    log_x = rng.uniform(-3, 3, size=(60, 2))
    plant = np.sin(log_x[:, 0]) + 0.5 * np.cos(log_x[:, 1])
    log_y = plant + 0.05 * rng.standard_normal(60)
    spikes = [5, 12, 19, 26]
    log_y[spikes] = 1e3  # isolated spikes: each refused
    log_y[40:] += 5.0  # the plant steps: refused twice, then learned
    _, _, learned = model.update(log_x, log_y, gate=4.0, gate_run=3)
    assert not learned[spikes].any()
    assert not learned[40:42].any() and learned[42:].all()
    with pytest.raises(ValueError, match="gate_run needs a gate"):
        model.update(log_x[:1], log_y[:1], gate_run=3)


def test_the_noise_follows_a_louder_plant():
    est, _, _ = _fitted()
    rng = np.random.default_rng(11)
    log_x = rng.uniform(-3, 3, size=(1500, 2))
    plant = np.sin(log_x[:, 0]) + 0.5 * np.cos(log_x[:, 1])
    log_y = plant + 0.3 * rng.standard_normal(1500)  # six times the fitted noise
    probe = rng.uniform(-3, 3, size=(200, 2))
    following, fitted = est.to_model(), est.to_model()
    following.update(log_x, log_y, noise_forgetting=0.99)
    fitted.update(log_x, log_y)
    # The kept model predicts with the learned noise, one row or many.
    wide = following.predict(probe)[1]
    assert np.median(wide / fitted.predict(probe)[1]) > 10
    assert following.predict(probe[0])[1][0] == pytest.approx(wide[0], rel=1e-6)
    # The blob keeps the fitted noise: far from the data, prior + noise.
    far = np.array([[1e3, 1e3]])
    reloaded = sgp.Model.from_bytes(following.to_bytes())
    assert reloaded.predict(far)[1][0] == pytest.approx(fitted.predict(far)[1][0], rel=1e-6)
    # ... and the kept one prior + learned noise (0.3^2 against 0.05^2).
    assert following.predict(far)[1][0] - fitted.predict(far)[1][0] > 0.05
    with pytest.raises(ValueError, match="noise_forgetting must be in"):
        following.update(log_x[:1], log_y[:1], noise_forgetting=0.0)


def test_a_failed_update_leaves_the_kept_model_as_it_was():
    est, X, _ = _fitted()
    model = est.to_model()
    model.update(X[0], 0.5)
    blob = model.to_bytes()
    targets = np.array([0.1, 0.2, float("nan"), 0.4])
    with pytest.raises(ValueError, match="data row 3"):
        model.update(X[:4], targets)
    assert model.to_bytes() == blob
    with pytest.raises(ValueError, match="data row 1"):
        model.update(X[0], float("nan"))
    assert model.to_bytes() == blob
    fixed = sgp.SparseGPRegressor(m=8, restarts=1).fit(X, X[:, 0]).to_model()
    with pytest.raises(ValueError, match="learn on the device"):
        fixed.update(X[0], 1.0)


def test_partial_fit_is_the_device_update_and_is_refused_where_the_model_does_not_learn():
    est, X, y = _fitted()
    model = est.to_model()
    rng = np.random.default_rng(8)
    new_x = rng.uniform(-3, 3, size=(30, 2))
    new_y = np.sin(new_x[:, 0]) + 1.0
    model.update(new_x, new_y, forgetting=0.99)
    assert est.partial_fit(new_x, new_y, forgetting=0.99) is est
    assert est.to_bytes() == model.to_bytes() == est.blob_
    mean, std = est.predict(new_x, return_std=True)
    np.testing.assert_array_equal(mean, model.predict(new_x)[0])
    np.testing.assert_array_equal(std, np.sqrt(model.predict(new_x)[1]))
    with pytest.raises(ValueError, match="return_cov"):
        est.predict(new_x, return_cov=True)
    est.fit(X, y)  # a new fit forgets the updates
    assert est.to_bytes() != model.to_bytes()
    fixed = sgp.SparseGPRegressor(m=8, restarts=1).fit(X, y)
    assert not hasattr(fixed, "partial_fit")
    with pytest.raises(AttributeError) as refused:
        fixed.partial_fit(new_x, new_y)
    assert "updatable=True" in str(refused.value.__cause__)
    fresh = sgp.SparseGPRegressor(m=12, updatable=True, restarts=1).partial_fit(X, y)
    assert fresh.to_bytes() == est.to_bytes()
