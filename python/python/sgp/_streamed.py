"""Data too large for memory: ``sgp fit``'s streamed fit of a file, and its
pass over every row as a statistic any engine can map and reduce.

A streamed fit is a subset fit (a first pass over the file samples rows
and standardises; the model is fitted on a subset of the sample), then
passes over every row that sum statistics on the fitted basis: one for a
regression (of one target or several), ``rounds`` for a classifier (each
a natural-gradient step of ``q(u)`` from the last round's sums). A pass
splits: ``ChunkBasis.sums`` on any block of rows, ``ChunkSums.merge``,
then ``StreamedFit.advance`` (a classifier's rounds but the last) or
``StreamedFit.finish``; ``StreamedFit.run`` drives the rounds. Bases and
sums are bytes inside, so they pickle.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Iterable, List, Optional, Sequence, Union

import numpy as np

from . import _native
from ._arrays import to_native


def print_progress(phase: str, done: int, total: int) -> None:
    """``verbose``'s progress line for a streamed fit, on standard error."""
    unit = "iterations" if phase == "fit" else "bytes"
    print(f"\rsgp fit: {phase} {done}/{total} {unit}   ", end="", file=sys.stderr, flush=True)


class ChunkSums:
    """The sums of a set of rows on one basis (a regression's posterior
    sums, each output's for several targets, or a classifier round's site
    sums). ``a.merge(b)``: the sums of both sets (a new object; bit for bit
    the same for the same merge order)."""

    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)

    @property
    def rows(self) -> int:
        """Rows summed."""
        return int(_native.sums_rows(self.data))

    def merge(self, other: "ChunkSums") -> "ChunkSums":
        """The sums of these rows and ``other``'s (disjoint) rows; refused
        where both hold the same numbered part (``as_part``)."""
        return ChunkSums(_native.merge_sums(self.data, other.data))

    def as_part(self, part: int) -> "ChunkSums":
        """These sums, numbered as partition ``part`` of the rows (0, 1,
        ...): a merge then refuses it twice, and ``StreamedFit.finish(sums,
        parts=N)`` names it if it is lost."""
        return ChunkSums(_native.sums_of_part(self.data, part))

    def __reduce__(self) -> Any:
        return (ChunkSums, (self.data,))


def merge_tree(sums: Sequence[ChunkSums]) -> ChunkSums:
    """``sums`` merged pairwise in a fixed binary tree over their order
    ((0, 1), (2, 3), ... then again): the shape ``sgp.cluster`` reduces in,
    so an engine and one process give the same bits."""
    level = list(sums)
    if not level:
        raise ValueError("no sums to merge")
    while len(level) > 1:
        pairs = [level[k].merge(level[k + 1]) for k in range(0, len(level) - 1, 2)]
        level = pairs + level[len(level) - len(level) % 2:]
    return level[0]


class ChunkBasis:
    """The fitted basis of one pass of a streamed fit: all a worker needs
    to sum its rows (bytes inside; pickles)."""

    def __init__(
        self, data: bytes, input_names: Sequence[str], target_names: Union[str, Sequence[str]],
        class_labels: Sequence[str] = (),
    ) -> None:
        self.data = bytes(data)
        self.input_names = list(input_names)
        self.target_names = [target_names] if isinstance(target_names, str) else list(target_names)
        # A classifier of text labels: sorted, a label's class is its index.
        self.class_labels = list(class_labels)

    @property
    def target_name(self) -> str:
        """The (first) target column."""
        return self.target_names[0]

    def sums(self, X: Any, y: Any = None, part: Optional[int] = None) -> ChunkSums:
        """The sums of the raw rows ``X`` (n x inputs, the file's input
        columns in order; a DataFrame's columns are picked by name) and
        targets ``y`` (n, or n x targets for several; a classifier's class
        values as numbers, or its text labels where the file's are text;
        None: a DataFrame ``X``'s target columns).
        ``part``: the number of this partition of the rows (0, 1, ...), so
        that a merge refuses it twice and ``StreamedFit.finish(sums,
        parts=N)`` names it if it is lost."""
        columns = getattr(X, "columns", None)
        if y is None:
            if columns is None:
                raise ValueError("y is needed unless X is a DataFrame holding the target column")
            y = X[self.target_names]
        if columns is not None:
            X = X[self.input_names]
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        n, d = X.shape
        if self.class_labels:
            y = self._label_codes(np.asarray(y).reshape(-1))
        y = np.ascontiguousarray(y, dtype=np.float64).reshape(n, -1)
        return ChunkSums(
            _native.basis_sums(
                self.data, to_native(X), n, d, to_native(y), part, p=y.shape[1]
            )
        )

    def _label_codes(self, y: np.ndarray) -> np.ndarray:
        """Each text label's class index; a label the file's first pass did
        not find is refused, naming its row of the block and the column."""
        index = {label: k for k, label in enumerate(self.class_labels)}
        codes = np.empty(len(y), dtype=np.float64)
        for i, label in enumerate(y):
            k = index.get(str(label))
            if k is None:
                shown = ", ".join(self.class_labels[:12])
                raise ValueError(
                    f"row {i + 1} of this block, column '{self.target_name}': label "
                    f"{str(label)!r} is none of the {len(self.class_labels)} the first pass "
                    f"found ({shown}); the rows changed since?"
                )
            codes[i] = k
        return codes

    def __reduce__(self) -> Any:
        return (ChunkBasis, (self.data, self.input_names, self.target_names, self.class_labels))


class StreamedFit:
    """A streamed fit stopped after its subset fit (see
    ``SparseGPRegressor.start_file``): ``basis`` for each pass, wherever it
    runs; ``advance`` with the merged sums of every row for each of a
    classifier's ``rounds`` but the last, ``finish`` with the last's."""

    def __init__(self, native: Any, estimator: Any) -> None:
        self._native = native
        self._estimator = estimator
        self.started = time.perf_counter()
        self.basis = self._basis()

    def _basis(self) -> ChunkBasis:
        return ChunkBasis(self._native.basis(), self._native.input_names,
                          self._native.target_names, self._native.class_labels)

    @property
    def rounds(self) -> int:
        """Passes over every row the fit takes: 1 for a regression, a
        classifier's rounds."""
        return int(self._native.rounds)

    @property
    def round(self) -> int:
        """The number of the next pass (from 0), whose basis is ``basis``."""
        return int(self._native.round)

    def advance(self, sums: ChunkSums, parts: Optional[int] = None) -> "StreamedFit":
        """A classifier's round that is not its last: ``sums`` of every row
        on this round's ``basis`` (checked as ``finish`` checks them) make
        ``basis`` the next round's."""
        self._native.advance(sums.data, parts=parts)
        self.basis = self._basis()
        return self

    def finish(self, sums: ChunkSums, parts: Optional[int] = None) -> Any:
        """The estimator, fitted: conditioned on the rows of ``sums`` (the
        last pass's; every row of the file, each once: other sums are
        refused, naming the rows missing or in excess) and exported.
        ``parts``: the number of partitions summed with
        ``ChunkBasis.sums(..., part=k)``; every one of ``0..parts`` must be
        in ``sums`` (a lost one is named)."""
        seconds = time.perf_counter() - self.started
        blobs, state, summary = self._native.finish(
            sums.data, seconds, force=self._estimator.force, parts=parts
        )
        self._estimator._take_streamed(blobs, state, summary, len(self.basis.target_names))
        return self._estimator

    def run(self, pass_sums: Callable[[ChunkBasis], ChunkSums],
            parts: Optional[int] = None) -> Any:
        """Every pass left: ``pass_sums(basis)`` is the merged sums of every
        row on ``basis`` (an engine's map and reduce); returns ``finish``'s
        estimator."""
        while self.round + 1 < self.rounds:
            self.advance(pass_sums(self.basis), parts=parts)
        return self.finish(pass_sums(self.basis), parts=parts)


def write_chunks(chunks: Iterable[Any], path: str, names: Optional[List[str]] = None) -> List[str]:
    """Writes an iterator of ``(X, y)`` chunks as one CSV file (shortest
    round-trip digits: the values read back are the values written),
    holding one chunk at a time. Its header is ``names``, else the first
    chunk's DataFrame column names and Series name, else x0, x1, ..., y;
    a later DataFrame chunk must have the same columns. Returns the
    header."""
    with open(path, "w") as out:
        width = None
        header: List[str] = []
        for X, y in chunks:
            columns = getattr(X, "columns", None)
            columns = None if columns is None else [str(c) for c in columns]
            if width is not None and columns is not None and names is None \
                    and columns != header[:-1]:
                raise ValueError(f"a chunk of columns {columns} after chunks of {header[:-1]}")
            X = np.asarray(X, dtype=np.float64)
            target = getattr(y, "name", None)
            y = np.asarray(y, dtype=np.float64).reshape(-1, 1)
            if X.ndim != 2 or X.shape[0] != y.shape[0]:
                raise ValueError(f"a chunk of X {X.shape} and y {y.shape[0]} rows")
            if width is None:
                width = X.shape[1]
                if names is not None:
                    header = list(names)
                elif columns is not None:
                    header = columns + [target if isinstance(target, str) else "y"]
                else:
                    header = [f"x{j}" for j in range(width)] + ["y"]
                if len(header) != width + 1:
                    raise ValueError(f"{len(header)} names for {width} inputs and a target")
                out.write(",".join(header) + "\n")
            elif X.shape[1] != width:
                raise ValueError(f"a chunk of {X.shape[1]} inputs after chunks of {width}")
            np.savetxt(out, np.hstack([X, y]), delimiter=",", fmt="%.17g")
        if width is None:
            raise ValueError("no chunks")
    return header
