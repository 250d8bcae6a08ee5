import pathlib
import re

import numpy as np

CHAPTER = pathlib.Path(__file__).resolve().parents[2] / "docs" / "src" / "python.md"


def words(text):
    """The text's lines with every number standing for any number and
    blanks collapsed: what must not drift (as cli/tests/docs.rs)."""
    number = r"(?<![A-Za-z0-9])[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|\d+(?:\.\d+)?"
    lines = (" ".join(re.sub(number, "#", line).split()) for line in text.splitlines())
    return [line for line in lines if line]


def test_words_keep_the_wording_and_drop_the_figures():
    assert words("spgp   8  -0.4125  1,022 B  (2.6e-3 x sd)\n\n") == ["spgp # # # B (# x sd)"]
    assert words("blob 437 bytes") != words("blob 437 B")


def test_the_chapters_example_runs_and_keeps_its_promises(tmp_path, monkeypatch, capsys):
    text = CHAPTER.read_text()
    example = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    shown = re.search(r"<!-- output: checked -->\n```text\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(example, str(CHAPTER), "exec"), scope)
    assert words(capsys.readouterr().out) == words(shown)
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
    assert f"on at most {defaults['held_out_rows']} rows" in rows["objective"]
