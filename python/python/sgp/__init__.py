"""sgp: sparse Gaussian processes, fitted in Python, run on a microcontroller.

- ``SparseGPRegressor`` and ``SparseGPClassifier``: scikit-learn estimators
  over the sgp trainer, each exporting a blob (``to_bytes``, ``save``,
  ``export_c``, ``export_rust``);
- ``Model``: a blob evaluated by the f32 ``no_std`` runtime, exactly what the
  device computes;
- ``from_sklearn`` and ``from_gpflow``: blobs from models fitted elsewhere.
"""

from importlib.metadata import PackageNotFoundError, version

from ._native import ExportError, NumericalError, SgpError
from ._convert import from_gpflow, from_sklearn
from ._device import Model, UncertainPrediction
from ._estimators import SparseGPClassifier, SparseGPRegressor

try:
    __version__ = version("sgp")
except PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "unknown"

__all__ = [
    "ExportError",
    "Model",
    "NumericalError",
    "SgpError",
    "SparseGPClassifier",
    "SparseGPRegressor",
    "UncertainPrediction",
    "from_gpflow",
    "from_sklearn",
]
