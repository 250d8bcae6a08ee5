"""Type stubs of the compiled module ``sgp._native`` (Rust, PyO3).

Arrays cross as C-ordered little-endian float64 ``bytes`` plus their shape;
the Python package (``sgp._arrays``) converts numpy arrays both ways.
"""

from typing import Any, Callable, Dict, List, Optional, Tuple

class SgpError(RuntimeError):
    """Base of the errors sgp raises beyond bad input (``ValueError``)."""

class ExportError(SgpError):
    """The f32 blob does not reproduce the f64 model within tolerance."""

class NumericalError(SgpError):
    """A numerical procedure failed beyond recovery."""

class Model:
    """A decoded blob, evaluated by the f32 ``sgp-runtime``."""

    @staticmethod
    def from_bytes(blob: bytes) -> Model: ...
    def to_bytes(self) -> bytes: ...
    @property
    def input_names(self) -> List[str]: ...
    @property
    def target_name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def is_classifier(self) -> bool: ...
    @property
    def positive_class(self) -> float: ...
    @property
    def n_outputs(self) -> int: ...
    @property
    def class_labels(self) -> List[str]: ...
    @property
    def n_basis(self) -> int: ...
    @property
    def n_inputs(self) -> int: ...
    def inspect_json(self) -> str: ...
    def predict(self, x: bytes, n: int, d: int) -> Tuple[bytes, bytes, Optional[bytes]]: ...
    def predict_uncertain(self, mean: bytes, cov: bytes, derivatives: bool) -> List[bytes]: ...
    @property
    def is_updatable(self) -> bool: ...
    def predict_one(self, x: bytes, single: bool) -> Tuple[float, float]: ...
    def mean_one(self, x: bytes, single: bool) -> float: ...
    def mean(self, x: bytes, n: int, d: int) -> bytes: ...
    def update_one(
        self,
        x: bytes,
        single: bool,
        y: float,
        forgetting: Optional[float] = None,
        gate: Optional[float] = None,
        gate_run: Optional[int] = None,
        noise_forgetting: Optional[float] = None,
    ) -> Tuple[float, float, bool]: ...
    def update_rows(
        self,
        x: bytes,
        n: int,
        d: int,
        y: bytes,
        p: int,
        forgetting: Optional[float] = None,
        gate: Optional[float] = None,
        gate_run: Optional[int] = None,
        noise_forgetting: Optional[float] = None,
    ) -> Tuple[bytes, bytes, List[bool]]: ...

def fit(
    x: bytes,
    n: int,
    d: int,
    y: bytes,
    p: int,
    input_names: List[str],
    target_names: List[str],
    settings: Dict[str, Any],
    classes: int = 0,
    text_labels: List[str] = ...,
    force: bool = False,
    progress: Optional[Callable[[int, int, float], None]] = None,
) -> Tuple[List[bytes], bytes, str]:
    """Fits and exports as ``sgp fit`` does: (blobs: one, or one per output
    where each output got its own model; fitted f64 state; JSON summary
    with the basis choice and each blob's report)."""

def defaults() -> Dict[str, str]:
    """The default of each setting not given, in words, by keyword name
    (``max_iter``): what ``sgp fit --help`` states."""

def settings() -> List[Tuple[str, str, str, str]]:
    """The estimators' settings as the trainer's table declares them, in
    Python's words: keyword, type, default and help."""

def spoken(message: str) -> str:
    """A trainer message in the estimators' words (``--m 0``: ``m=0``)."""

def predict_state(state: bytes, x: bytes, n: int, d: int) -> Tuple[bytes, bytes, Optional[bytes]]:
    """The fitted f64 models' (means, variances, probabilities), row by row."""

def predict_cov(state: bytes, x: bytes, n: int, d: int) -> bytes:
    """Each regression output's joint covariance of ``y`` between the rows
    (n x n, row-major, outputs one after another)."""

def export_source(blob: bytes, format: str, name: str, source: str) -> str: ...
def write_file(path: str, data: bytes) -> None: ...
def artefact(blobs: List[bytes]) -> bytes: ...
def output_blob(blob: bytes, p: int) -> Optional[bytes]: ...
def inspect_container_json(blob: bytes) -> str: ...
def exact_blob(
    fitted: Dict[str, Any], alpha: bytes, factor: bytes, y_mean: float, y_scale: float
) -> bytes: ...
def inducing_blob(
    fitted: Dict[str, Any], z: bytes, m: int, objective: str, jitter: float
) -> bytes: ...
def variational_blob(
    fitted: Dict[str, Any],
    z: bytes,
    m: int,
    q_mu: bytes,
    q_sqrt: bytes,
    whiten: bool,
    jitter: float,
    probit: bool,
) -> bytes: ...

class StreamedFit:
    """A streamed fit after its subset fit (``sgp._streamed``)."""

    @property
    def input_names(self) -> List[str]: ...
    @property
    def target_names(self) -> List[str]: ...
    @property
    def class_labels(self) -> List[str]: ...
    @property
    def rounds(self) -> int: ...
    @property
    def round(self) -> int: ...
    def basis(self) -> bytes: ...
    def advance(self, sums: bytes, parts: Optional[int] = None) -> None: ...
    def finish(
        self,
        sums: bytes,
        pass_seconds: float,
        force: bool = False,
        parts: Optional[int] = None,
    ) -> Tuple[List[bytes], bytes, str]: ...

def fit_file(
    path: str,
    target: Optional[str],
    settings: Dict[str, Any],
    task: Optional[str] = None,
    inputs: Optional[List[str]] = None,
    force: bool = False,
    progress: Optional[Callable[[str, int, int], None]] = None,
) -> Tuple[List[bytes], bytes, str]:
    """``sgp fit``'s streamed fit of a file, exported: (blobs, state, JSON)."""

def start_file(
    path: str,
    target: Optional[str],
    settings: Dict[str, Any],
    task: Optional[str] = None,
    inputs: Optional[List[str]] = None,
    progress: Optional[Callable[[str, int, int], None]] = None,
) -> StreamedFit: ...
def basis_sums(
    basis: bytes,
    x: bytes,
    n: int,
    d: int,
    y: bytes,
    part: Optional[int] = None,
    p: int = 1,
) -> bytes: ...
def merge_sums(a: bytes, b: bytes) -> bytes: ...
def sums_rows(sums: bytes) -> int: ...
def sums_of_part(sums: bytes, part: int) -> bytes: ...
