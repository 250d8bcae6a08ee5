"""One home for every default and every message: the estimators' keywords,
their docstrings, ``sgp fit --help`` and the trainer's options builder
agree, and a bad setting is refused in the command line's words."""

import inspect
import os
import re
import subprocess

import numpy as np
import pandas as pd
import pytest

import sgp
from sgp import _native
from sgp._estimators import _DEFAULT_SEED

CLI = os.environ.get("SGP_CLI")
needs_cli = pytest.mark.skipif(
    not CLI, reason="SGP_CLI (the path of the sgp binary) is not set; python/ci.sh sets it"
)

# The keywords that are sgp fit's flags; the rest are Python's own.
OWN = {"force", "verbose"}


@pytest.mark.parametrize("estimator", [sgp.SparseGPRegressor, sgp.SparseGPClassifier])
def test_the_keyword_defaults_leave_the_trainers_defaults(estimator):
    """A keyword's default is "not given" (None, or False for a flag), so
    the trainer's default applies; the seed is the trainer's."""
    defaults = _native.defaults()
    for name, parameter in inspect.signature(estimator.__init__).parameters.items():
        if name == "self" or name in OWN:
            continue
        if name == "random_state":
            assert parameter.default == int(defaults["seed"])
        elif name == "held_out_choice":
            # --no-held-out-choice, not given.
            assert parameter.default is True
        else:
            assert parameter.default in (None, False), name


@pytest.mark.parametrize("estimator", [sgp.SparseGPRegressor, sgp.SparseGPClassifier])
def test_the_docstrings_and_signatures_are_the_settings_table(estimator):
    """Every setting of the trainer's table is a keyword of the estimator,
    of the default the table gives, documented with the table's help and
    default (``sgp fit --help`` states the same: cli/tests/cli.rs)."""
    words = " ".join(estimator.__doc__.split())
    parameters = inspect.signature(estimator.__init__).parameters
    settings = _native.settings()
    assert len(settings) >= 19, settings
    for keyword, kind, default, text in settings:
        assert f"{keyword} : {kind}, default={default}" in estimator.__doc__, keyword
        assert " ".join(text.split()) in words, keyword
        assert repr(parameters[keyword].default) == default, keyword
    for name in ["m", "restarts", "max_iter", "tol", "init", "init_hyper", "max_points",
                 "ivm_posterior"]:
        assert f"(None: {_native.defaults()[name]})" in words, name
    assert f"random_state : int, RandomState or None, default={_DEFAULT_SEED}" in words


@needs_cli
def test_the_clis_help_states_the_same_defaults():
    help = subprocess.run([CLI, "fit", "--help"], check=True, capture_output=True, text=True)
    stated = dict(re.findall(r"\n      --([a-z-]+) <[A-Z_]+>\n[^\n]*\[default: ([^\]]+)\]",
                             help.stdout))
    defaults = _native.defaults()
    assert len(stated) >= 10, help.stdout
    for flag, value in stated.items():
        assert defaults[flag.replace("-", "_")] == value, flag


def pythonic(message):
    """The CLI's message in the Python API's words (``--max-iter 0`` is
    ``max_iter=0``, ``--updatable`` is ``updatable=True``), as sgp's errors
    translate it."""
    return _native.spoken(message)


def cli_error(args):
    """The message of `sgp` refusing `args` (exit status 2)."""
    run = subprocess.run([CLI, "-q"] + args, capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    return re.sub(r"^(sgp: )?error: ", "", run.stderr.strip())


@needs_cli
@pytest.mark.parametrize(
    "given",
    [
        {"m": 0},
        {"model": "ivm", "m": 0},
        {"restarts": 0},
        {"model": "spgp-dr"},
        {"model": "spgp", "dim": 1},
        {"model": "vsgp", "kernel": "matern32"},
        {"model": "gplasso", "fixed_hyperparameters": True, "fixed_basis": True},
        {"model": "svgp", "objective": "vfe"},
        {"max_iter": 0},
        {"model": "spgq"},
        {"objective": "elbo"},
        {"kernel": "rbf"},
        {"init": "grid"},
    ],
    ids=lambda given: "-".join(f"{k}={v}" for k, v in given.items()),
)
def test_bad_settings_are_refused_in_the_clis_words(tmp_path, ridge, given):
    X, y = ridge
    data = tmp_path / "train.csv"
    pd.concat([X, y], axis=1).to_csv(data, index=False)
    flags = []
    for key, value in given.items():
        flags += [f"--{key.replace('_', '-')}"] + ([] if value is True else [str(value)])
    expected = cli_error(["fit", "--data", str(data), "--out", str(tmp_path / "o.sgp")] + flags)
    with pytest.raises(ValueError) as python:
        sgp.SparseGPRegressor(**given).fit(X, y)
    assert str(python.value) == pythonic(expected)


@needs_cli
@pytest.mark.parametrize("setting", [("forgetting", 2.0), ("forgetting", 0.0), ("gate", -1.0)])
def test_update_settings_are_refused_in_replays_words(tmp_path, ridge, setting):
    X, y = ridge
    est = sgp.SparseGPRegressor(m=8, updatable=True).fit(X, y)
    blob, data = tmp_path / "u.sgp", tmp_path / "rows.csv"
    est.save(blob)
    pd.concat([X, y], axis=1).to_csv(data, index=False)
    name, value = setting
    expected = cli_error(["replay", "--model", str(blob), "--data", str(data),
                          f"--{name}={value:g}"])
    with pytest.raises(ValueError) as python:
        est.to_model().update(X[:3], y[:3], **{name: value})
    assert str(python.value) == pythonic(expected)


def test_a_rarer_first_text_label_is_the_positive_class_as_in_sgp_fit():
    """Without --positive, sgp fit takes the rarer text label as positive;
    so does the estimator, whose probabilities still follow classes_."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-2.0, 2.0, (150, 2))
    labels = np.where(X[:, 0] + 0.5 * X[:, 1] > 1.0, "alarm", "ok")
    assert (labels == "alarm").sum() < (labels == "ok").sum()
    clf = sgp.SparseGPClassifier(m=8, max_iter=40).fit(X, labels)
    assert list(clf.classes_) == ["alarm", "ok"]
    assert clf.to_model().class_labels == ["ok", "alarm"]
    proba = clf.predict_proba(X)
    device = clf.to_model().predict_proba(X)
    assert device.shape == (len(X), 2)
    assert np.max(np.abs(proba[:, 0] - device[:, 1])) <= 1e-3
    assert np.mean(clf.predict(X) == labels) > 0.9
    # The score is classes_[1]'s ("ok"): positive where "ok" is likelier.
    assert np.all((clf.decision_function(X) > 0) == (proba[:, 1] > 0.5))


@pytest.mark.parametrize(
    "message, spoken",
    [
        ("--m must be at least 1", "m must be at least 1"),
        ("--m 0 is too few", "m=0 is too few"),
        ("--model spgp-dr needs --dim G, the projected dimension",
         "model='spgp-dr' needs dim=G, the projected dimension"),
        ("fit one of those with --updatable", "fit one of those with updatable=True"),
        ("held-out choices are off (--no-held-out-choice)",
         "held-out choices are off (held_out_choice=False)"),
        ("--seed 3 and --max-iter 40.", "random_state=3 and max_iter=40."),
        ("fit the file in memory (--in-memory) for a Matérn kernel",
         "fit the file in memory (the estimator's fit(X, y) on the rows read into memory) "
         "for a Matérn kernel"),
        ("--link probit needs class labels", "task='classification' needs class labels"),
        ("(--task regression fits the column as numbers)",
         "(task='regression' fits the column as numbers)"),
        ("(--positive LABEL fits that class against the rest)",
         "(a target of y == LABEL fits that class against the rest)"),
        ("--kernel matern32: no", "kernel='matern32': no"),
        ("pass --force to export anyway", "pass force=True to export anyway"),
        ("--init-hyper='x' is not one of: scales, exact",
         "init_hyper='x' is not one of: scales, exact"),
        ("a -- b", "a -- b"),
    ],
)
def test_library_messages_are_said_in_the_estimators_words(message, spoken):
    assert _native.spoken(message) == spoken


@needs_cli
def test_every_setting_a_message_names_is_a_keyword_python_has():
    """Each flag of ``sgp fit`` that the library's messages may name is
    said as a parameter the estimators (or ``fit_file``) take."""
    help = subprocess.run([CLI, "fit", "--help"], check=True, capture_output=True, text=True)
    flags = set(re.findall(r"\n\s+(--[a-z-]+)", help.stdout)) - {"--help"}
    assert len(flags) > 15, help.stdout
    keywords = set(inspect.signature(sgp.SparseGPRegressor.__init__).parameters)
    keywords |= set(inspect.signature(sgp.SparseGPRegressor.fit_file).parameters)
    # The command line's own: where to write, what to print.
    cli_only = {"--out", "--json", "--golden", "--path"}
    for flag in sorted(flags - cli_only):
        words = _native.spoken(flag)
        keyword = re.match(r"[a-z_]+", words).group(0)
        assert keyword in keywords or words.startswith(("the estimator's", "a target of y")), \
            (flag, words)
    for name, parameter in inspect.signature(sgp.SparseGPRegressor.__init__).parameters.items():
        if parameter.default is False and name not in OWN - {"force"}:
            assert _native.spoken(f"--{name.replace('_', '-')}") == f"{name}=True", name


def test_a_blob_that_cannot_learn_says_how_in_python(ridge):
    X, y = ridge
    model = sgp.SparseGPRegressor(m=8, max_iter=30).fit(X, y).to_model()
    with pytest.raises(ValueError) as refused:
        model.update(X[:3], y[:3])
    message = str(refused.value)
    assert "updatable=True" in message and "sgp fit" not in message, message


def test_a_family_that_cannot_learn_says_updatable_true(ridge):
    X, y = ridge
    with pytest.raises(ValueError) as refused:
        sgp.SparseGPRegressor(model="exact", updatable=True).fit(X, y)
    assert "updatable=True" in str(refused.value), str(refused.value)
    with pytest.raises(ValueError, match=r"model='spgp-dr' needs dim=G"):
        sgp.SparseGPRegressor(model="spgp-dr").fit(X, y)


def test_a_classifier_of_several_classes_names_the_model_keyword(ridge):
    X, _ = ridge
    y = np.array(["cold", "mild", "hot"])[np.digitize(X["temperature"], [2.0, 4.0])]
    with pytest.raises(ValueError) as refused:
        sgp.SparseGPClassifier(model="ivm", m=8).fit(X, y)
    message = str(refused.value)
    assert "model='svgp', not model='ivm'" in message, message
    assert "a target of y == LABEL fits that class against the rest" in message, message
