import numpy as np
import pytest
from scipy.linalg import cholesky, solve_triangular
from scipy.stats import norm
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel as C,
    DotProduct,
    RationalQuadratic,
    Matern,
    WhiteKernel,
)

import sgp


def data(n=120, d=2, seed=0, offset=20.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 5.0, (n, d)) + 100.0 * np.arange(d)
    y = offset + 3.0 * np.sin(X[:, 0]) + 0.2 * rng.standard_normal(n)
    test = np.vstack([X[:30], rng.uniform(-2.0, 7.0, (150, d)) + 100.0 * np.arange(d)])
    return X, y, test


def assert_within_a_percent_of_the_sd(model, mean, sd, test):
    """The issue's bar: mean within 1% of the reference sd, sd within 1%."""
    device_mean, device_var = model.predict(test)
    assert np.max(np.abs(device_mean - mean) / sd) <= 1e-2
    assert np.max(np.abs(np.sqrt(device_var) - sd) / sd) <= 1e-2


@pytest.mark.parametrize(
    "kernel, normalize_y, alpha",
    [
        (C(1.0) * RBF([1.0, 1.0]) + WhiteKernel(0.1), True, 1e-10),
        (C(1.0) * RBF([1.0, 1.0]) + WhiteKernel(0.1), False, 1e-10),
        (RBF(1.0) * C(2.0) + WhiteKernel(0.1), True, 1e-10),
        (WhiteKernel(0.1) + C(5.0) * RBF(1.0), False, 1e-6),
        (RBF([1.0, 1.0]), True, 0.05),
        (C(1.0) * RBF(1.0), False, 0.05),
        (C(1.0) * Matern([1.0, 1.0], nu=1.5) + WhiteKernel(0.1), True, 1e-10),
        (Matern(1.0, nu=0.5) + WhiteKernel(0.1, noise_level_bounds=(1e-2, 1.0)), True, 1e-10),
        (WhiteKernel(0.1) + C(2.0) * Matern([1.0, 2.0], nu=2.5), False, 1e-6),
    ],
    ids=str,
)
def test_from_sklearn_matches_its_mean_and_sd(kernel, normalize_y, alpha):
    # Without normalize_y the GP's prior mean is zero: a target far from
    # zero is a model of another kind (see the next test).
    X, y, test = data(offset=20.0 if normalize_y else 0.0)
    gpr = GaussianProcessRegressor(kernel, normalize_y=normalize_y, alpha=alpha).fit(X, y)
    model = sgp.from_sklearn(gpr)
    assert model.kind == "exact" and model.n_basis == len(X)
    mean, sd = gpr.predict(test, return_std=True)
    assert_within_a_percent_of_the_sd(model, mean, sd, test)


def test_from_sklearn_says_why_f32_cannot_reproduce_a_model():
    X, y, test = data()
    # No noise: the GP interpolates with weights of alternating sign.
    gpr = GaussianProcessRegressor(C(1.0) * RBF([1.0, 1.0]), normalize_y=True).fit(X, y)
    with pytest.raises(sgp.ExportError, match="add a WhiteKernel") as refused:
        sgp.from_sklearn(gpr)
    assert "force=True" in str(refused.value)
    forced = sgp.from_sklearn(gpr, force=True)
    assert forced.n_basis == len(X)


def test_from_sklearn_takes_a_dataframes_column_names():
    pd = pytest.importorskip("pandas")
    X, y, test = data()
    frame = pd.DataFrame(X, columns=["a", "b"])
    gpr = GaussianProcessRegressor(RBF([1.0, 1.0]) + WhiteKernel(0.1)).fit(frame, y)
    model = sgp.from_sklearn(gpr, target_name="power")
    assert model.input_names == ["a", "b"] and model.target_name == "power"
    assert sgp.from_sklearn(gpr, input_names=["u", "v"]).input_names == ["u", "v"]


@pytest.mark.parametrize(
    "kernel",
    [
        Matern(1.0, nu=1.0),
        RBF(1.0) + Matern(3.0, nu=1.5),
        RBF(1.0) + RBF(3.0),
        C(1.0) + RBF(1.0),
        DotProduct() * RBF(1.0),
        RationalQuadratic(),
        WhiteKernel(0.1),
    ],
    ids=str,
)
def test_from_sklearn_refuses_kernels_it_cannot_represent(kernel):
    X, y, _ = data(n=30)
    gpr = GaussianProcessRegressor(kernel, optimizer=None, alpha=0.1).fit(X, y)
    with pytest.raises(ValueError, match="cannot represent the kernel .* supported is an RBF"):
        sgp.from_sklearn(gpr)


def test_from_sklearn_refuses_unfitted_and_multi_output_models():
    with pytest.raises(ValueError, match="fitted"):
        sgp.from_sklearn(GaussianProcessRegressor())
    X, y, _ = data(n=30)
    gpr = GaussianProcessRegressor(RBF(1.0)).fit(X, np.column_stack([y, -y]))
    with pytest.raises(ValueError, match="one output"):
        sgp.from_sklearn(gpr)


# GPflow stand-ins: objects with GPflow's class names and attributes, holding
# the parameters GPflow's documentation describes. The reference predictions
# below follow GPflow's documented predictive equations, written
# independently of sgp. The peer benchmark checks real GPflow models
# (python/bench/check_from_gpflow.py).


class Param:
    def __init__(self, value):
        self.value = np.asarray(value, dtype=np.float64)

    def numpy(self):
        return self.value


def stand_in(name, **attributes):
    return type(name, (), {})() if not attributes else type(name, (), attributes)()


def se(A, B, lengthscales, variance, name="SquaredExponential"):
    d = (A[:, None, :] - B[None, :, :]) / lengthscales
    r = np.sqrt(np.sum(d**2, axis=-1))
    if name == "Matern12":
        return variance * np.exp(-r)
    if name == "Matern32":
        return variance * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
    if name == "Matern52":
        u = np.sqrt(5) * r
        return variance * (1 + u + u**2 / 3) * np.exp(-u)
    return variance * np.exp(-0.5 * r**2)


def kernel(lengthscales, variance, name="SquaredExponential"):
    return stand_in(name, lengthscales=Param(lengthscales), variance=Param(variance))


def sparse_model(kind, X, Y, Z, lengthscales, variance, noise, name="SquaredExponential"):
    return stand_in(
        kind,
        kernel=kernel(lengthscales, variance, name),
        likelihood=stand_in("Gaussian", variance=Param(noise)),
        mean_function=stand_in("Zero"),
        inducing_variable=stand_in("InducingPoints", Z=Param(Z)),
        data=(X, Y),
    )


def sparse_reference(kind, X, y, Z, ls, s2, noise, test, jitter=1e-6, name="SquaredExponential"):
    """GPflow's SGPR (VFE/DTC) or GPRFITC predict_y."""
    Kuu = se(Z, Z, ls, s2, name) + jitter * np.eye(len(Z))
    Kuf = se(Z, X, ls, s2, name)
    Kus = se(Z, test, ls, s2, name)
    L = cholesky(Kuu, lower=True)
    V = solve_triangular(L, Kuf, lower=True)
    if kind == "SGPR":
        gamma = np.full(len(X), noise)
    else:
        gamma = s2 - np.sum(V**2, axis=0) + noise
    Sigma = Kuu + (Kuf / gamma) @ Kuf.T
    mean = Kus.T @ np.linalg.solve(Sigma, Kuf @ (y / gamma))
    Ws = solve_triangular(L, Kus, lower=True)
    var = s2 - np.sum(Ws**2, axis=0) + np.sum(Kus * np.linalg.solve(Sigma, Kus), axis=0)
    return mean, np.sqrt(var + noise)


@pytest.mark.parametrize("name", ["SquaredExponential", "Matern12", "Matern32", "Matern52"])
@pytest.mark.parametrize("kind", ["SGPR", "GPRFITC"])
def test_from_gpflow_sparse_regressions_match_gpflows_predictive(kind, name):
    X, y, test = data()
    rng = np.random.default_rng(1)
    Z = X[rng.choice(len(X), 15, replace=False)] + 0.1
    ls, s2, noise = np.array([1.3, 2.0]), 9.0, 0.04
    Y = y[:, None] - 20.0  # GPflow models have a zero mean
    model = sgp.from_gpflow(sparse_model(kind, X, Y, Z, ls, s2, noise, name))
    mean, sd = sparse_reference(kind, X, Y[:, 0], Z, ls, s2, noise, test, name=name)
    assert_within_a_percent_of_the_sd(model, mean, sd, test)


def svgp(X, Z, q_mu, q_sqrt, whiten, likelihood):
    return stand_in(
        "SVGP",
        kernel=kernel([1.3, 2.0], 2.0),
        likelihood=likelihood,
        mean_function=stand_in("Zero"),
        inducing_variable=stand_in("InducingPoints", Z=Param(Z)),
        q_mu=Param(q_mu[:, None]),
        q_sqrt=Param(q_sqrt[None]),
        whiten=whiten,
        q_diag=False,
    )


def svgp_reference(Z, q_mu, q_sqrt, whiten, test, jitter=1e-6):
    """GPflow's SVGP predict_f: latent mean and variance."""
    ls, s2 = np.array([1.3, 2.0]), 2.0
    Kuu = se(Z, Z, ls, s2) + jitter * np.eye(len(Z))
    Kus = se(Z, test, ls, s2)
    L = cholesky(Kuu, lower=True)
    A = solve_triangular(L, Kus, lower=True)
    S = q_sqrt @ q_sqrt.T
    if whiten:
        B = A
    else:
        B = solve_triangular(L.T, A, lower=False)
    mean = B.T @ q_mu
    var = s2 - np.sum(A**2, axis=0) + np.sum(B * (S @ B), axis=0)
    return mean, var


@pytest.mark.parametrize("whiten", [True, False])
def test_from_gpflow_svgp_regression_matches_gpflows_predictive(whiten):
    X, y, test = data()
    rng = np.random.default_rng(2)
    Z = X[rng.choice(len(X), 12, replace=False)]
    q_mu = rng.standard_normal(12)
    q_sqrt = np.tril(0.3 * rng.standard_normal((12, 12)), -1) + np.diag(rng.uniform(0.2, 0.6, 12))
    model = sgp.from_gpflow(
        svgp(X, Z, q_mu, q_sqrt, whiten, stand_in("Gaussian", variance=Param(0.05))),
        data=(X, y[:, None]),
    )
    mean, var = svgp_reference(Z, q_mu, q_sqrt, whiten, test)
    assert_within_a_percent_of_the_sd(model, mean, np.sqrt(var + 0.05), test)


def test_from_gpflow_svgp_bernoulli_matches_gpflows_probability():
    X, y, test = data()
    rng = np.random.default_rng(4)
    Z = X[rng.choice(len(X), 10, replace=False)]
    q_mu = 2.0 * rng.standard_normal(10)
    q_sqrt = np.diag(rng.uniform(0.2, 0.6, 10))
    inv_probit = lambda f: f  # noqa: E731  (only its name is read)
    inv_probit.__name__ = "inv_probit"
    likelihood = stand_in("Bernoulli", invlink=staticmethod(inv_probit))
    labels = (y > 20.0).astype(float)[:, None]
    model = sgp.from_gpflow(svgp(X, Z, q_mu, q_sqrt, True, likelihood), data=(X, labels))
    assert model.is_classifier
    mean, var = svgp_reference(Z, q_mu, q_sqrt, True, test)
    assert np.max(np.abs(model.predict_proba(test)[:, 1] - norm.cdf(mean / np.sqrt(1 + var)))) <= 1e-3


def test_from_gpflow_refuses_what_it_cannot_represent():
    X, y, _ = data(n=30)
    Z = X[:5]
    good = sparse_model("SGPR", X, y[:, None], Z, [1.0, 1.0], 1.0, 0.1)
    with pytest.raises(ValueError, match="SGPR, GPRFITC and SVGP"):
        sgp.from_gpflow(stand_in("VGP"))
    good.kernel = stand_in("ArcCosine", lengthscales=Param(1.0), variance=Param(1.0))
    with pytest.raises(ValueError, match="SquaredExponential, Matern12"):
        sgp.from_gpflow(good)
    good = sparse_model("SGPR", X, y[:, None], Z, [1.0, 1.0], 1.0, 0.1)
    good.mean_function = stand_in("Constant")
    with pytest.raises(ValueError, match="zero mean"):
        sgp.from_gpflow(good)
    model = svgp(X, Z, np.zeros(5), np.eye(5), True, stand_in("Gaussian", variance=Param(0.1)))
    with pytest.raises(ValueError, match="data=.X, Y."):
        sgp.from_gpflow(model)
