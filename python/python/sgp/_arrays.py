"""Arrays to and from the native module: C-ordered float64 bytes."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np


def to_native(a: Any) -> bytes:
    """``a`` as C-ordered little-endian float64 bytes."""
    return np.ascontiguousarray(a, dtype="<f8").tobytes()


def from_native(data: bytes) -> np.ndarray:
    """Float64 bytes from the native module as a (writable) array."""
    return np.frombuffer(data, dtype="<f8").astype(np.float64)


def column_names(X: Any, n_features: int) -> List[str]:
    """The input names a blob records: a DataFrame's string column names,
    else ``x0``, ``x1``, ..."""
    columns = getattr(X, "columns", None)
    if columns is not None and all(isinstance(c, str) for c in columns):
        return [str(c) for c in columns]
    return [f"x{j}" for j in range(n_features)]


def by_name(X: Any, names: Sequence[str]) -> Tuple[Any, Optional[List[str]]]:
    """A DataFrame's columns picked and ordered by ``names`` (as ``sgp
    predict`` picks a CSV's); other inputs as they are. Raises ``ValueError``
    naming the missing columns."""
    columns = getattr(X, "columns", None)
    if columns is None or not all(isinstance(c, str) for c in columns):
        return X, None
    missing = [n for n in names if n not in set(columns)]
    if missing:
        raise ValueError(
            f"the data lacks the model's input column(s) {missing}; it has {list(columns)}"
        )
    return X[list(names)], list(names)
