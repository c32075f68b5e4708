"""``lttw data check`` (``lttw.checks.dataset``) over the same bad-input matrix as the sample
stage: the same verdicts, one line per problem, nothing written."""

from __future__ import annotations

import logging
import re

import pytest
from support.stage_cases import DATA_CASES, make_data_case

# ------------------------------------------------------------------ `lttw data check`


def _cli_app():
    try:
        from lttw.cli import app
    except ImportError as err:  # the CLI is optional for this module
        pytest.skip(f"lttw.cli not importable: {err}")
    return app


def _invoke_cli(app, args: list[str]):
    from typer.testing import CliRunner

    root = logging.getLogger()
    saved = root.handlers[:]
    for handler in saved:  # the CLI configures logging on the runner's (temporary) stderr
        root.removeHandler(handler)
    try:
        return CliRunner().invoke(app, args)
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
        for handler in saved:
            root.addHandler(handler)


#: the sample stage fails for these because a size cannot be drawn, which `data check`
#: reports in its own words (a "problem"), not with the loader's message
SIZE_CASES = {"class too small", "1,000 classes, too few rows"}
#: data the sample stage uses after dropping rows, which `data check` reports as a problem
DROPPING_CASES = {"integer labels with gaps (NaN -> float)": "1 rows without a label"}


#: `lttw data check` names its --text-column / --label-column options (and the params)
CHECK_ERRORS = {
    "CSV with ; delimiter": r"d\.csv: no text column 'text' and no label column 'label' "
    r"\(columns: text;label\); pass --text-column and --label-column "
    r"\(for the pipeline: set data\.text_column and data\.label_column\); "
    r".*semicolon-separated",
    "missing text column": r"d\.csv: no text column 'text' \(columns: body, label\); pass "
    r"--text-column \(for the pipeline: set data\.text_column\)$",
    "missing label column": r"d\.csv: no label column 'label' \(columns: text, y\); pass "
    r"--label-column \(for the pipeline: set data\.label_column\)$",
}


@pytest.mark.parametrize("name", list(DATA_CASES))
def test_data_check_cli_matrix(tmp_path, name):
    app = _cli_app()
    case = DATA_CASES[name]
    folder = make_data_case(tmp_path, case)
    root = folder / "in"
    target = root / ("split" if case.dataset == "split" else case.dataset)
    args = ["data", "check", str(target), "--params", str(folder / "params.yaml")]
    for option in ("text_column", "label_column"):
        if case.data.get(option):
            args += [f"--{option.replace('_', '-')}", case.data[option]]
    result = _invoke_cli(app, args)
    stderr = result.stderr
    assert (
        "Traceback" not in stderr
        and result.exception is None
        or isinstance(result.exception, SystemExit)
    ), (result.exception, stderr[-2000:])
    if case.error or name in DROPPING_CASES:
        assert result.exit_code == 2, (result.exit_code, result.stdout[-2000:], stderr)
        errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and errors[0] == stderr.strip().splitlines()[-1], stderr
        if name in DROPPING_CASES:
            assert DROPPING_CASES[name] in errors[0], errors[0]
        elif name in SIZE_CASES:
            assert re.search(r"data\.(train|test|predict)_size", errors[0]), errors[0]
        elif name != "missing file":  # data check is given the path itself: its own message
            expected = CHECK_ERRORS.get(name, case.error)  # its own column options
            assert re.search(expected, errors[0].removeprefix("error: ")), errors[0]
        else:
            assert "missing.csv" in errors[0]
    else:
        assert result.exit_code == 0, (result.stdout[-2000:], stderr)
        if name == "duplicate rows":  # the quality table counts them
            assert re.search(r"(duplicate|repeat)[^│\n]*│\s*6\b", result.stdout), result.stdout
        if name == "test rows duplicated in train":
            assert re.search(r"test[^│\n]*train[^│\n]*│\s*4\b", result.stdout), result.stdout
