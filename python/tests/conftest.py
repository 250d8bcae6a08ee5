import numpy as np
import pandas as pd
import pytest


@pytest.fixture
def ridge():
    """A smooth 2-D regression with noise, as a DataFrame and a Series."""
    rng = np.random.default_rng(3)
    X = rng.uniform(0.0, 6.0, (240, 2))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(240)
    return pd.DataFrame(X, columns=["temperature", "humidity"]), pd.Series(y, name="power")


def mean_tolerance(sd, y_scale):
    """The export check's mean tolerance (trainer/src/export.rs)."""
    return np.maximum(1e-2 * sd, 1e-4 * y_scale)
