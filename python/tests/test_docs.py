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


def test_the_chapters_table_states_the_libraries_defaults():
    from sgp import _native

    defaults = _native.defaults()
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", CHAPTER.read_text(), re.M))
    checked = 0
    for name, value in defaults.items():
        if name in rows:
            stated = rows[name].strip()
            assert stated == f"None ({value})" or stated.startswith(f"None ({value}, "), name
            checked += 1
    assert checked >= 8
    assert rows["random_state"].strip() == defaults["seed"]
    assert f"below {defaults['held_out_rows']} rows" in rows["objective"]
