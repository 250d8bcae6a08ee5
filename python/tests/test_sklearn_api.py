"""What a scikit-learn GaussianProcessRegressor user reaches for: the joint
covariance and draws from it, the fitted objective, the fitted kernel's
hyperparameters, and weights refused rather than ignored."""

import numpy as np
import pytest

import sgp


@pytest.mark.parametrize("model", ["spgp", "exact", "gplasso"])
def test_the_covariance_is_the_variance_on_its_diagonal_and_positive(ridge, model):
    X, y = ridge
    m = {} if model == "exact" else {"m": 10}
    est = sgp.SparseGPRegressor(model=model, max_iter=60, **m).fit(X, y)
    test = X.iloc[::12]
    mean, cov = est.predict(test, return_cov=True)
    same_mean, sd = est.predict(test, return_std=True)
    np.testing.assert_array_equal(mean, same_mean)
    assert cov.shape == (len(test), len(test))
    np.testing.assert_allclose(np.diag(cov), sd**2, rtol=1e-9)
    np.testing.assert_allclose(cov, cov.T, rtol=1e-9, atol=1e-12 * sd.max() ** 2)
    assert np.linalg.eigvalsh(cov).min() > -1e-9 * sd.max() ** 2
    # Nearby rows covary: the kernel is not the noise alone.
    assert np.max(np.abs(cov - np.diag(np.diag(cov)))) > 1e-3 * sd.min() ** 2
    with pytest.raises(RuntimeError, match="at most one"):
        est.predict(test, return_std=True, return_cov=True)


def test_draws_have_the_predicted_mean_and_covariance(ridge):
    X, y = ridge
    est = sgp.SparseGPRegressor(m=10, max_iter=60).fit(X, y)
    test = X.iloc[:6]
    mean, cov = est.predict(test, return_cov=True)
    draws = est.sample_y(test, n_samples=4000, random_state=1)
    assert draws.shape == (6, 4000)
    np.testing.assert_array_equal(draws, est.sample_y(test, 4000, random_state=1))
    sd = np.sqrt(np.diag(cov))
    # Margins of about five standard errors of 4000 draws.
    assert np.all(np.abs(draws.mean(axis=1) - mean) <= 5 * sd / np.sqrt(4000))
    assert np.max(np.abs(np.cov(draws) - cov) / np.outer(sd, sd)) <= 0.1


def test_several_outputs_have_a_covariance_each(ridge):
    X, y = ridge
    Y = np.column_stack([y, 2 * y + 1])
    est = sgp.SparseGPRegressor(m=8, max_iter=40, held_out_choice=False).fit(X, Y)
    mean, cov = est.predict(X.iloc[:5], return_cov=True)
    assert mean.shape == (5, 2) and cov.shape == (5, 5, 2)
    _, sd = est.predict(X.iloc[:5], return_std=True)
    np.testing.assert_allclose(np.diagonal(cov, axis1=0, axis2=1).T, sd**2, rtol=1e-9)
    assert est.sample_y(X.iloc[:5], 3).shape == (5, 2, 3)


def test_a_basis_that_is_not_the_kernel_refuses_the_covariance(ridge):
    X, y = ridge
    est = sgp.SparseGPRegressor(model="vsgp", m=8, max_iter=30).fit(X, y)
    with pytest.raises(ValueError, match="return_cov: this vsgp model's basis"):
        est.predict(X.iloc[:3], return_cov=True)
    assert est.predict(X.iloc[:3], return_std=True)[1].shape == (3,)


@pytest.mark.parametrize("objective, words", [("fitc", "FITC log marginal likelihood"),
                                              ("vfe", "VFE evidence lower bound")])
def test_the_log_marginal_likelihood_is_the_fitted_objective_named(ridge, objective, words):
    X, y = ridge
    est = sgp.SparseGPRegressor(model="spgp", m=8, max_iter=40, objective=objective).fit(X, y)
    assert est.objective_ == words
    assert est.log_marginal_likelihood() == -est.report_["nlml"]
    with pytest.raises(ValueError, match="only the fitted"):
        est.log_marginal_likelihood(theta=[0.0, 0.0])
    exact = sgp.SparseGPRegressor(model="exact").fit(X, y)
    assert exact.objective_ == "exact GP log marginal likelihood"
    # The bound is below the likelihood it bounds, and the exact GP's the
    # highest of the three on these 240 rows.
    if objective == "vfe":
        assert est.log_marginal_likelihood() < exact.log_marginal_likelihood()


def test_the_fitted_hyperparameters_are_named_by_input(ridge):
    X, y = ridge
    est = sgp.SparseGPRegressor(m=10, max_iter=60).fit(X, y)
    hyper = est.hyperparameters_
    assert hyper["kernel"] == "se"
    assert set(hyper["length_scales"]) == {"temperature", "humidity"}
    # humidity enters linearly over its range (0.3 x): a longer scale than
    # temperature's sine.
    assert hyper["length_scales"]["humidity"] > hyper["length_scales"]["temperature"]
    assert 0 < hyper["noise_variance"] < 0.1 < hyper["signal_variance"]


def test_weights_are_refused_not_ignored(ridge):
    X, y = ridge
    ones = np.ones(len(y))
    a = sgp.SparseGPRegressor(m=8, max_iter=30).fit(X, y, sample_weight=ones).to_bytes()
    assert a == sgp.SparseGPRegressor(m=8, max_iter=30).fit(X, y).to_bytes()
    with pytest.raises(ValueError, match="sample_weight: the sgp trainer cannot weight rows"):
        sgp.SparseGPRegressor(m=8).fit(X, y, sample_weight=np.arange(len(y)) + 1.0)
    labels = (X["temperature"] > 3).to_numpy()
    with pytest.raises(ValueError, match="class_weight: the sgp classifier cannot weight"):
        sgp.SparseGPClassifier(m=8, class_weight="balanced").fit(X, labels)
    clf = sgp.SparseGPClassifier(m=8, class_weight=None, max_iter=30)
    assert clf.get_params()["class_weight"] is None and clf.get_params()["m"] == 8
    assert clf.fit(X, labels).predict_proba(X).shape == (len(X), 2)


def test_the_devices_probabilities_have_scikit_learns_shape(ridge):
    X, _ = ridge
    clf = sgp.SparseGPClassifier(m=8, max_iter=30).fit(X, (X["temperature"] > 3).to_numpy())
    proba = clf.to_model().predict_proba(X)
    assert proba.shape == (len(X), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(proba, clf.predict_proba(X), atol=1e-3)
