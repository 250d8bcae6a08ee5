"""Model.predict_uncertain: shapes, the certain-input limit, Monte Carlo
through the same device predictions, and derivatives against central
differences."""

from pathlib import Path

import numpy as np
import pytest

import sgp

# The runtime's fitted two-output SPGP (M = 32, D = 4; the guide's
# "Prediction at an uncertain input"): inputs in [-2, 2].
PLANT = Path(__file__).parents[2] / "runtime" / "tests" / "data" / "uncertain-plant.sgp"


@pytest.fixture(scope="module")
def model() -> sgp.Model:
    return sgp.Model.from_bytes(PLANT.read_bytes())


MU = np.array([0.3, -0.5, 0.2, 0.1])
L = np.array([[0.3, 0, 0, 0], [0.1, 0.2, 0, 0], [0, 0.05, 0.25, 0], [0.05, 0, 0.1, 0.2]])
COV = L @ L.T


def test_shapes_and_certain_limit(model: sgp.Model) -> None:
    y = model.predict_uncertain(MU, COV)
    assert y.mean.shape == (2,) and y.covariance.shape == (2, 2)
    assert y.input_output.shape == (4, 2) and y.dmean_dmu is None
    certain = model.predict_uncertain(MU, np.zeros((4, 4)))
    mean, variance = model.predict(MU[None, :])
    np.testing.assert_allclose(certain.mean, mean[0], atol=1e-4)
    np.testing.assert_allclose(np.diag(certain.covariance), variance[0], rtol=1e-3)
    d = model.predict_uncertain(MU, COV, derivatives=True)
    shapes = [(2, 4), (2, 4, 4), (2, 2, 4), (2, 2, 4, 4), (4, 2, 4), (4, 2, 4, 4)]
    assert [a.shape for a in d[3:]] == shapes


def test_moments_match_monte_carlo(model: sgp.Model) -> None:
    rng = np.random.default_rng(7)
    x = rng.multivariate_normal(MU, COV, size=40_000)
    mean, variance = model.predict(x)
    y = model.predict_uncertain(MU, COV)
    sd = np.sqrt(np.diag(y.covariance))
    mc_cov = np.cov(mean.T) + np.diag(variance.mean(axis=0))
    mc_io = (x - MU).T @ (mean - mean.mean(axis=0)) / len(x)
    assert np.all(np.abs(y.mean - mean.mean(axis=0)) < 0.02 * sd)
    assert np.all(np.abs(y.covariance - mc_cov) < 0.04 * np.outer(sd, sd))
    assert np.all(np.abs(y.input_output - mc_io) < 0.04 * np.outer(np.sqrt(np.diag(COV)), sd))


def test_derivatives_match_central_differences(model: sgp.Model) -> None:
    d = model.predict_uncertain(MU, COV, derivatives=True)
    h = 1e-3
    for e in range(4):
        step = np.eye(4)[e] * h
        up = model.predict_uncertain(MU + step, COV, derivatives=True)
        down = model.predict_uncertain(MU - step, COV, derivatives=True)
        fd = (up.mean - down.mean) / (2 * h)
        np.testing.assert_allclose(d.dmean_dmu[:, e], fd, rtol=0.02, atol=1e-3)
        fd = (up.covariance - down.covariance) / (2 * h)
        np.testing.assert_allclose(d.dcov_dmu[:, :, e], fd, rtol=0.02, atol=1e-3)
    dS = np.zeros((4, 4))
    dS[0, 0] = h
    up = model.predict_uncertain(MU, COV + dS, derivatives=True)
    down = model.predict_uncertain(MU, COV - dS, derivatives=True)
    np.testing.assert_allclose(
        d.dmean_dcov[:, 0, 0], (up.mean - down.mean) / (2 * h), rtol=0.02, atol=1e-3
    )


def test_bad_shapes_are_value_errors(model: sgp.Model) -> None:
    with pytest.raises(ValueError):
        model.predict_uncertain([0.0], COV)
    with pytest.raises(ValueError):
        model.predict_uncertain(MU, np.eye(3))
    with pytest.raises(ValueError):
        model.predict_uncertain(MU, -np.eye(4))


def test_a_matern_model_gets_the_unscented_moments() -> None:
    """No closed form for Matérn: the unscented transform's moments, near
    Monte Carlo through the same device predictions; no derivatives."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(300, 2))
    y = np.sin(2 * X[:, 0]) + 0.5 * np.abs(X[:, 1]) + 0.05 * rng.standard_normal(300)
    est = sgp.SparseGPRegressor(m=16, kernel="matern32", max_iter=60).fit(X, y)
    model = sgp.Model.from_bytes(est.to_bytes())
    mu, cov = np.array([0.4, -0.3]), np.array([[0.04, 0.01], [0.01, 0.02]])
    got = model.predict_uncertain(mu, cov)
    draws = rng.multivariate_normal(mu, cov, size=20_000)
    mean, variance = model.predict(draws)
    sd = np.sqrt(mean.var() + variance.mean())
    assert abs(got.mean[0] - mean.mean()) < 0.02 * sd
    assert abs(got.covariance[0, 0] - sd**2) < 0.05 * sd**2
    cross = ((draws - mu) * (mean - mean.mean())[:, None]).mean(axis=0)
    np.testing.assert_allclose(got.input_output[:, 0], cross, atol=0.05 * np.abs(cross).max())
    with pytest.raises(ValueError, match="closed-form"):
        model.predict_uncertain(mu, cov, derivatives=True)
