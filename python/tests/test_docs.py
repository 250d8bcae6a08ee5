import pathlib
import re

import numpy as np

CHAPTER = pathlib.Path(__file__).resolve().parents[2] / "docs" / "src" / "python.md"


def test_the_chapters_example_runs_and_keeps_its_promises(tmp_path, monkeypatch):
    example = re.search(r"```python\n(.*?)```", CHAPTER.read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(example, str(CHAPTER), "exec"), scope)
    assert np.max(np.abs(scope["device_mean"] - scope["mean"]) / scope["sd"]) <= 1e-2
    assert (tmp_path / "heater.sgp").read_bytes() == scope["est"].to_bytes()
    assert "HEATER_BLOB_LEN" in (tmp_path / "heater.h").read_text()
    assert scope["est"].score(scope["test"][scope["inputs"]], scope["test"]["power"]) > 0.99
