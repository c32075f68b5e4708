"""Hardening (issue 7): a bad-input matrix through the real ``sample`` stage (and through
``lttw data check``), bad parameters rejected at load, and static security checks.

Every stage run here is a separate process executing the real ``stages/<name>.py`` as
``__main__`` with ``--params P`` in its own temporary directory. A bad input must end it with
exit code 2 and exactly one line on stderr, ``error: ...``, naming the file / column / row /
parameter (log lines may precede it), with no traceback and no output left behind.

To stay fast on two cores, the ~30 runs of the ``sample`` stage are forked from one
interpreter that has imported pandas / pyarrow once (``FORK_RUNNER``: a fresh process per run,
the stage script run by ``runpy`` as ``__main__``, its own stdout / stderr / exit code); the
other stages, and two of the data cases as a cross-check, run as plain
``python stages/<name>.py --params params.yaml`` subprocesses.

Decisions recorded here:
* non-integral float labels (1.5) are an error, not strings: they are almost always a
  regression target or a corrupted column, and silently making each value a class would train
  a nonsense classifier;
* mixed labels (a CSV column with ``1``, ``pos``, ``2.0``) are strings, taken verbatim;
* duplicate texts are kept, counted (``duplicate_texts``, ``conflicting_texts``) and warned
  about; test / predict texts that also occur in the train sample are counted
  (``duplicates_test_in_train``) and warned about;
* ``train.batch_size`` larger than the fold's train part is an error (``check_batch_size``),
  not a silent clamp: the batch size defines the experiment.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import os
import re
import subprocess
import sys
import types
import typing
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest
import yaml

from lttw import layout
from lttw.settings import (BaseModel, SettingsError, Settings, check_batch_size, read_settings,
                           settings_from_dict)

REPO = Path(__file__).resolve().parents[1]
OUTPUT_ROOTS = ("data", "metrics", "models", "dvclive")
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d lttw[\w.]*: ")  # stage.py's logging format


# ------------------------------------------------------------------ the bad-data matrix

def frame(per_class=(10, 10), names=None, prefix="row") -> pd.DataFrame:
    """Unique texts, ``per_class[i]`` rows of label ``names[i]`` (default: 0, 1, ...)."""
    names = list(range(len(per_class))) if names is None else list(names)
    labels = [names[c] for c, n in enumerate(per_class) for _ in range(n)]
    return pd.DataFrame({"text": [f"{prefix} {i} word{i % 7} news" for i in range(len(labels))],
                         "label": labels})


def csv_bytes(data: pd.DataFrame, **kw) -> bytes:
    return data.to_csv(index=False, **kw).encode("utf-8")


@dataclass(frozen=True)
class DataCase:
    """One dataset: ``files`` name -> writer(path); ``error`` a regex the one error line must
    match (None: the stage must succeed, then ``check(labels_json, samples, stderr)``)."""

    files: dict[str, Callable[[Path], object]]
    dataset: str
    error: str | None = None
    sizes: dict = field(default_factory=lambda: {"train_size": 8, "test_size": 2,
                                                 "predict_size": 2})
    check: Callable | None = None
    data: dict = field(default_factory=dict)  # other data.* parameters


def _parquet(data_fn):
    return lambda p: data_fn().to_parquet(p, index=False)


def _csv(data_fn, **kw):
    return lambda p: p.write_bytes(csv_bytes(data_fn(), **kw))


def _check_classes(classes, values=None):
    def check(info, samples, stderr):
        assert info["classes"] == classes
        if values is not None:
            assert info["label_values"] == values
        for split, sample in samples.items():
            assert sample["label"].between(0, len(classes) - 1).all(), split
    return check


def _check_1000_classes(info, samples, stderr):
    assert len(info["classes"]) == 1000
    assert info["sizes"] == {"train": 2000, "test": 1000, "predict": 1000}
    assert samples["train"]["label"].value_counts().eq(2).all()


def _check_big_texts(info, samples, stderr):
    lengths = pd.concat(samples.values())["text"].str.len()
    assert lengths.max() >= 1_000_000  # kept whole: truncation is the tokens stage's job


def _check_symbols(info, samples, stderr):
    texts = set(pd.concat(samples.values())["text"])
    assert texts <= {"!!! ???", "😀😀🎉", "...", "—–", "🙂 👍"}  # kept verbatim, not dropped
    assert any(ord(c) > 0xFFFF for t in texts for c in t)  # emoji survive the parquet round trip


def _check_duplicates(info, samples, stderr):
    assert info["duplicate_texts"] == 6 and info["conflicting_texts"] == 1
    assert "6 rows repeat the text of an earlier row" in stderr
    assert "1 texts occur with different labels" in stderr


def _check_test_in_train(info, samples, stderr):
    assert info["duplicates_in_train"] == {"test": 2, "predict": 2}
    assert info["duplicates_test_in_train"] == 4
    assert "2 of the 2 test texts also occur verbatim in the train sample" in stderr


def _latin1(p):
    text = frame().to_csv(index=False).replace("row 3 ", "caf\xe9 ")
    p.write_bytes(text.encode("latin-1"))


def _binary_parquet(p):
    pd.DataFrame({"text": [b"caf\xe9 %d" % i for i in range(20)],
                  "label": [0, 1] * 10}).to_parquet(p, index=False)


def _big_texts():
    data = frame((6, 6))
    data.loc[[0, 7], "text"] = ["alpha " * 200_000, "beta! " * 200_000]  # 1.2 MB each
    return data


def _duplicates():
    data = frame((10, 10))
    repeated = data.iloc[[0, 1, 2, 11, 12]]  # 5 exact duplicate rows
    conflict = pd.DataFrame({"text": [data.loc[3, "text"]], "label": [1]})  # same text, label 1
    return pd.concat([data, repeated, conflict], ignore_index=True)


def _test_split_copies_train():
    """A folder with train.csv and test.csv whose every test text is also a train text."""
    train = frame((4, 4), prefix="train")
    test = frame((2, 2), prefix="train")  # the texts of train rows 0..3 again
    return {"train.csv": _csv(lambda: train), "test.csv": _csv(lambda: test)}


def _ragged(p):
    p.write_text("text,label\nfine text,0\nan, unquoted comma,1\nmore,0\n", encoding="utf-8")


DATA_CASES: dict[str, DataCase] = {
    "missing file": DataCase(
        {"other.csv": _csv(frame)}, "missing.csv",
        r"data\.dataset 'missing\.csv': \S*missing\.csv not found \(data\.root \S+ has other\.csv\)"),
    "unreadable parquet": DataCase(
        {"d.parquet": lambda p: p.write_bytes(np.random.default_rng(0).bytes(512))}, "d.parquet",
        r"d\.parquet: not a readable parquet file \(.*magic bytes"),
    "CSV with ; delimiter": DataCase(
        {"d.csv": _csv(frame, sep=";")}, "d.csv",
        r"d\.csv: no text column 'text' and no label column 'label' \(columns: text;label\); "
        r"set data\.text_column and data\.label_column; .*semicolon-separated"),
    "CSV without header": DataCase(
        {"d.csv": _csv(frame, header=False)}, "d.csv",
        r"d\.csv: no text column 'text' and no label column 'label' \(columns: row 0 word0 news, "
        r"0\).*no header line"),
    "missing text column": DataCase(
        {"d.csv": _csv(lambda: frame().rename(columns={"text": "body"}))}, "d.csv",
        r"d\.csv: no text column 'text' \(columns: body, label\); set data\.text_column$"),
    "missing label column": DataCase(
        {"d.csv": _csv(lambda: frame().rename(columns={"label": "y"}))}, "d.csv",
        r"d\.csv: no label column 'label' \(columns: text, y\); set data\.label_column$"),
    "configured column missing": DataCase(
        {"d.csv": _csv(frame)}, "d.csv", r"d\.csv: no text column 'body' .*data\.text_column",
        data={"text_column": "body"}),
    "empty file": DataCase({"d.csv": lambda p: p.write_bytes(b"")}, "d.csv",
                           r"d\.csv: the file is empty"),
    "header only": DataCase({"d.csv": lambda p: p.write_text("text,label\n")}, "d.csv",
                            r"d\.csv: the dataset has no rows"),
    "parquet without rows": DataCase({"d.parquet": _parquet(lambda: frame().iloc[:0])},
                                     "d.parquet", r"d\.parquet: the dataset has no rows"),
    "all texts NaN": DataCase(
        {"d.parquet": _parquet(lambda: frame().assign(text=None))}, "d.parquet",
        r"d\.parquet: all 20 texts \(column text\) are missing, empty or whitespace-only"),
    "all labels NaN": DataCase(
        {"d.parquet": _parquet(lambda: frame().assign(label=np.nan))}, "d.parquet",
        r"d\.parquet: every label \(column label\) is missing"),
    "ragged CSV": DataCase({"d.csv": _ragged}, "d.csv",
                           r"d\.csv: not a readable CSV file \(.*line 3"),
    "class too small": DataCase(
        {"d.parquet": _parquet(lambda: frame((10, 3), names=["a", "b"]))}, "d.parquet",
        r"data\.train_size \+ data\.test_size \+ data\.predict_size = 8 \+ 2 \+ 2 need 4 \+ 1 \+ 1 "
        r"= 6 rows per class from all rows \(pooled\), whose rarest class b has 3 \(the classes "
        r"have a 10, b 3\) .*Sizes that fit together: data\.train_size=2, data\.test_size=2, "
        r"data\.predict_size=2; or data\.sampling=stratified"),
    "single class": DataCase({"d.parquet": _parquet(lambda: frame((20,), names=["only"]))},
                             "d.parquet", r"d\.parquet: only one class \('only'\) in column label"),
    "1,000 classes, sizes fit": DataCase(
        {"d.parquet": _parquet(lambda: frame((4,) * 1000))}, "d.parquet",
        sizes={"train_size": 2000, "test_size": 1000, "predict_size": 1000},
        check=_check_1000_classes),
    "1,000 classes, too few rows": DataCase(
        {"d.parquet": _parquet(lambda: frame((4,) * 1000))}, "d.parquet",
        r"data\.train_size=500 is smaller than the number of classes \(1000\)",
        sizes={"train_size": 500, "test_size": 0, "predict_size": 0}),
    "string labels": DataCase(
        {"d.csv": _csv(lambda: frame(names=["pos", "neg"]))}, "d.csv",
        check=_check_classes(["neg", "pos"])),
    "integral float labels": DataCase(
        {"d.parquet": _parquet(lambda: frame(names=[1.0, 2.0]))}, "d.parquet",
        check=_check_classes(["1", "2"], [1, 2])),
    "integer labels with gaps (NaN -> float)": DataCase(
        {"d.csv": _csv(lambda: pd.concat([frame(names=[3, 7]), pd.DataFrame(
            {"text": ["no label here"], "label": [None]})]))}, "d.csv",
        check=_check_classes(["3", "7"], [3, 7])),
    "mixed labels (strings verbatim)": DataCase(
        {"d.csv": _csv(lambda: frame((6, 6, 6), names=["1", "pos", "2.0"]))}, "d.csv",
        check=_check_classes(["1", "2.0", "pos"]),
        sizes={"train_size": 6, "test_size": 3, "predict_size": 3}),
    "non-integral float labels (error)": DataCase(
        {"d.parquet": _parquet(lambda: frame(names=[0.5, 1.5]))}, "d.parquet",
        r"d\.parquet, column label: label 0\.5 \(row 0\) is not an integer; labels must be "
        r"integers, integral floats or strings"),
    "non-UTF-8 CSV": DataCase({"d.csv": _latin1}, "d.csv",
                              r"d\.csv: not valid UTF-8 at byte \d+ \(line 5, about data row 4\)"),
    "non-UTF-8 bytes in parquet": DataCase(
        {"d.parquet": _binary_parquet}, "d.parquet",
        r"d\.parquet, column text: row 0 is not valid UTF-8 at byte 3"),
    "1 MB texts": DataCase({"d.parquet": _parquet(_big_texts)}, "d.parquet",
                           check=_check_big_texts),
    "only punctuation or emoji": DataCase(
        {"d.parquet": _parquet(lambda: frame().assign(
            text=["!!! ???", "😀😀🎉", "...", "—–", "🙂 👍"] * 4))}, "d.parquet",
        check=_check_symbols, sizes={"train_size": 4, "test_size": 2, "predict_size": 2}),
    "duplicate rows": DataCase({"d.parquet": _parquet(_duplicates)}, "d.parquet",
                               check=_check_duplicates),
    "test rows duplicated in train": DataCase(
        _test_split_copies_train(), "split", check=_check_test_in_train,
        sizes={"train_size": 8, "test_size": 2, "predict_size": 2}),
}


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str
    cwd: Path

    def error_line(self) -> str:
        """The single ``error:`` line; fails unless the stage failed cleanly."""
        assert self.returncode == 2, f"exit {self.returncode}\n{self.stderr[-3000:]}"
        assert "Traceback" not in self.stderr, self.stderr[-3000:]
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        other = [line for line in lines if not LOG_LINE.match(line)]
        assert len(other) == 1 and other[0].startswith("error: "), self.stderr[-3000:]
        assert lines[-1] == other[0], "the error line must be the last line"
        return other[0].removeprefix("error: ")


def write_params(folder: Path, params: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False),
                                        encoding="utf-8")
    return folder / "params.yaml"


def make_data_case(folder: Path, case: DataCase) -> Path:
    """``folder``/in holds the dataset (a file, or ``split/`` for multi-file cases)."""
    root = folder / "in"
    target = root / "split" if case.dataset == "split" else root
    target.mkdir(parents=True)
    for name, write in case.files.items():
        write(target / name)
    write_params(folder, {"seed": 0, "data": {"dataset": case.dataset, "root": str(root),
                                              **case.sizes, **case.data}})
    return folder


def stage_cmd(stage: str, *extra: str) -> list[str]:
    return [sys.executable, str(REPO / "stages" / f"{stage}.py"), "--params", "params.yaml",
            *extra]


def _env() -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}


def _run(cmd: list[str], cwd: Path) -> Ran:
    done = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)
    return Ran(done.returncode, done.stdout, done.stderr, cwd)


#: runs ``stages/<script>`` once per job, each in a forked child of one interpreter that has
#: imported the stage's libraries: argv[1] = JSON [{"script", "args", "cwd"}], at most two
#: children at a time; prints JSON {cwd: exit code}; each child's output goes to
#: cwd/.stdout and cwd/.stderr
FORK_RUNNER = r"""
import json, os, runpy, sys, traceback
import numpy, pandas, pyarrow.parquet, yaml, pydantic  # noqa: F401  (imported once)
import lttw.data.datasets, lttw.data.tables, lttw.io, lttw.layout, lttw.data.sampling, lttw.settings, lttw.stage  # noqa: F401

def child(job):
    code = 1
    try:
        os.chdir(job["cwd"])
        for fd, name in ((1, ".stdout"), (2, ".stderr")):
            os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        sys.argv = [job["script"], *job["args"]]
        try:
            runpy.run_path(job["script"], run_name="__main__")
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

jobs, running, codes = json.loads(sys.argv[1]), {}, {}
while jobs or running:
    while jobs and len(running) < 2:
        job = jobs.pop(0)
        pid = os.fork()
        if pid == 0:
            child(job)
        running[pid] = job["cwd"]
    pid, status = os.wait()
    codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
print(json.dumps(codes))
"""


def _run_forked(stage: str, folders: list[Path]) -> dict[Path, Ran]:
    jobs = [{"script": str(REPO / "stages" / f"{stage}.py"), "args": ["--params", "params.yaml"],
             "cwd": str(folder)} for folder in folders]
    done = subprocess.run([sys.executable, "-c", FORK_RUNNER, json.dumps(jobs)], env=_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    codes = json.loads(done.stdout.strip().splitlines()[-1])
    out = {}
    for folder in folders:
        read = lambda name: (folder / name).read_text(encoding="utf-8", errors="replace")
        out[folder] = Ran(codes[str(folder)], read(".stdout"), read(".stderr"), folder)
    return out


# ----------------------------------------------------------- cases that run other stages

def _nmf_rank_case(folder: Path) -> list[str]:
    """Counts of a 3-word vocabulary and nmf.rank 5: the nmf stage must refuse it."""
    import scipy.sparse as sp

    from lttw.factors.counts import save_counts

    directory = folder / layout.counts_dir(0)
    directory.mkdir(parents=True)
    save_counts(directory, sp.csr_matrix(np.array([[3, 0], [1, 2], [0, 4]])), ["a", "b", "c"])
    write_params(folder, {"folds": {"n_folds": 4, "run": [0]}, "nmf": {"rank": 5}})
    return stage_cmd("nmf", "--fold", "0")


def _bad_params_case(folder: Path) -> list[str]:
    """Two bad values at once, through the sample stage: one line naming both, no work done."""
    case = make_data_case(folder, DATA_CASES["string labels"])
    params = yaml.safe_load((case / "params.yaml").read_text())
    params["model"] = {"depth": 0}
    params["train"] = {"bogus": 1}
    write_params(folder, params)
    return stage_cmd("sample")


def _bad_fold_case(folder: Path) -> list[str]:
    write_params(folder, {"folds": {"n_folds": 4, "run": [0]}})
    return stage_cmd("counts", "--fold", "4")


def _max_len_case(encoder_dir: Path) -> Callable[[Path], list[str]]:
    def make(folder: Path) -> list[str]:
        write_params(folder, {"model": {"encoder": str(encoder_dir), "max_len": 129}})
        return stage_cmd("tokens")
    return make


#: data cases also run as plain ``python stages/sample.py`` subprocesses (a cross-check of
#: the forked runs)
PLAIN_DATA_CASES = ("unreadable parquet", "duplicate rows")


@pytest.fixture(scope="module")
def stage_runs(tmp_path_factory, tiny_encoder_dir) -> dict[str, Ran]:
    """Every stage run of this module: case name -> result (``plain: <case>`` for the plain
    subprocess twins of PLAIN_DATA_CASES)."""
    base = tmp_path_factory.mktemp("hardening")
    folders = {name: make_data_case(base / f"data{i}", case)
               for i, (name, case) in enumerate(DATA_CASES.items())}
    plain: dict[str, tuple[list[str], Path]] = {}
    for name, make in {"model.max_len > encoder positions": _max_len_case(tiny_encoder_dir),
                       "nmf.rank > vocabulary": _nmf_rank_case,
                       "bad params through a stage": _bad_params_case,
                       "--fold outside folds.n_folds": _bad_fold_case}.items():
        folder = base / re.sub(r"\W+", "_", name)
        folder.mkdir()
        plain[name] = (make(folder), folder)
    for i, name in enumerate(PLAIN_DATA_CASES):
        plain[f"plain: {name}"] = (stage_cmd("sample"),
                                   make_data_case(base / f"plain{i}", DATA_CASES[name]))
    with ThreadPoolExecutor(max_workers=2) as pool:
        forked = pool.submit(_run_forked, "sample", list(folders.values()))
        serial = pool.submit(lambda: {name: _run(*job) for name, job in plain.items()})
        by_folder = forked.result()
        return {**{name: by_folder[folder] for name, folder in folders.items()},
                **serial.result()}


@pytest.mark.parametrize("name", PLAIN_DATA_CASES)
def test_forked_stage_runs_match_plain_subprocess(stage_runs, name):
    forked, plain = stage_runs[name], stage_runs[f"plain: {name}"]
    assert forked.returncode == plain.returncode
    strip = lambda text: [re.sub(r"^\d\d:\d\d:\d\d |/\S+/(data|plain)\d+/", "", line)
                          for line in text.splitlines()]
    assert strip(forked.stderr) == strip(plain.stderr)


def _outputs_left(cwd: Path) -> list[str]:
    data = cwd / "data"
    return sorted(str(p.relative_to(cwd)) for p in data.rglob("*")) if data.exists() else []


@pytest.mark.parametrize("name", [n for n, c in DATA_CASES.items() if c.error])
def test_bad_data_fails_cleanly_in_sample_stage(stage_runs, name):
    ran = stage_runs[name]
    line = ran.error_line()
    assert re.search(DATA_CASES[name].error, line), line
    assert _outputs_left(ran.cwd) == []  # no data/sample, no temporary folder


@pytest.mark.parametrize("name", [n for n, c in DATA_CASES.items() if not c.error])
def test_unusual_data_works_in_sample_stage(stage_runs, name):
    ran = stage_runs[name]
    assert ran.returncode == 0, ran.stderr[-3000:]
    info = json.loads((ran.cwd / layout.LABELS_JSON).read_text(encoding="utf-8"))
    samples = {split: pd.read_parquet(ran.cwd / layout.sample_parquet(split))
               for split in layout.SPLITS}
    for split, sample in samples.items():
        assert len(sample) == info["sizes"][split]
        assert sample["text"].str.len().min() > 0
    DATA_CASES[name].check(info, samples, ran.stderr)
    leftovers = [p.name for p in (ran.cwd / "data").iterdir() if p.name != "sample"]
    assert leftovers == []  # no temporary folder beside data/sample


def test_symbol_only_texts_get_zero_factor_rows():
    """Texts without a single word (punctuation, emoji) give all-zero H_tw blocks."""
    from lttw.factors.counts import corpus_counts, word_label_counts
    from lttw.factors.features import latent_factor_tensor
    from lttw.settings import CountSettings
    from lttw.text.words import WordSplitter

    counts, vocabulary = word_label_counts(["cat sat", "dog ran fast"], np.array([0, 1]), 2,
                                           CountSettings())
    factors = np.arange(len(vocabulary) * 2, dtype=np.float32).reshape(-1, 2) + 1
    out = latent_factor_tensor(["!!! ???", "😀😀🎉", "—–", "cat 🙂"], vocabulary,
                               corpus_counts(counts), factors, 2, 2, "count_then_corpus",
                               WordSplitter())
    assert out.shape == (4, 4, 2)
    assert not out[:3].any() and out[3, 0].any() and not out[3, 1:].any()


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
    assert "Traceback" not in stderr and result.exception is None or \
        isinstance(result.exception, SystemExit), (result.exception, stderr[-2000:])
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


# ------------------------------------------------------------------ bad parameters

def _groups() -> dict[str, type[BaseModel] | None]:
    """Top-level parameter name -> its group model (None: a plain top-level value)."""
    out = {}
    for name, info in Settings.model_fields.items():
        ann = info.annotation
        out[name] = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return out


def _bounds(metadata) -> dict[str, float]:
    out = {}
    for item in metadata:
        for attr in ("ge", "gt", "le", "lt", "min_length"):
            if getattr(item, attr, None) is not None:
                out[attr] = getattr(item, attr)
    return out


def _is_float(annotation) -> bool:
    return annotation is float or float in typing.get_args(annotation)


def out_of_range_cases() -> list[tuple[str, object, str]]:
    """(dotted name, bad value, expected valid-range text), generated from the field
    constraints of ``Settings``: a new constrained parameter is covered automatically."""
    cases = []
    fields = [(None, name, info) for name, info in Settings.model_fields.items()
              if _groups()[name] is None]
    fields += [(group, name, info) for group, model in _groups().items() if model
               for name, info in model.model_fields.items()]
    for group, name, info in fields:
        dotted = f"{group}.{name}" if group else name
        union = typing.get_origin(info.annotation) in (typing.Union, types.UnionType)
        members = [c for a in typing.get_args(info.annotation) if union
                   for m in getattr(a, "__metadata__", ()) for c in getattr(m, "metadata", [m])]
        bounds = _bounds(list(info.metadata) + members)  # nmf.rank: int in range | "auto"
        is_float = _is_float(info.annotation)
        step = 0.5 if is_float else 1
        if "ge" in bounds:
            cases.append((dotted, bounds["ge"] - step, f"{bounds['ge']} <= {dotted}"))
        if "gt" in bounds:
            cases.append((dotted, bounds["gt"], f"{bounds['gt']} < {dotted}"))
        if "le" in bounds:
            cases.append((dotted, bounds["le"] + step, f"{dotted} <= {bounds['le']}"))
        if "lt" in bounds:
            cases.append((dotted, bounds["lt"], f"{dotted} < {bounds['lt']}"))
        if bounds.get("min_length"):
            cases.append((dotted, [], "at least 1 item"))
        if is_float and bounds:
            cases += [(dotted, math.nan, "finite number"), (dotted, math.inf, "finite number")]
        for item in () if union else typing.get_args(info.annotation):  # list[Annotated[...]]
            item_bounds = _bounds(c for m in getattr(item, "__metadata__", ())
                                  for c in getattr(m, "metadata", [m]))
            if "ge" in item_bounds:
                cases.append((dotted, [item_bounds["ge"] - 1], f"{item_bounds['ge']} <= "
                                                              f"{dotted}[0]"))
    return cases


def literal_cases() -> list[str]:
    """Every parameter whose value is one of a fixed set of names."""
    out = []
    for group, model in _groups().items():
        for name, info in (model.model_fields.items() if model else []):
            if typing.get_origin(info.annotation) is typing.Literal:
                out.append(f"{group}.{name}")
    return out


def base_params() -> dict:
    return yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))


def with_value(params: dict, dotted: str, value) -> dict:
    params = json.loads(json.dumps(params))  # deep copy
    *groups, name = dotted.split(".")
    target = params
    for group in groups:
        target = target.setdefault(group, {})
    target[name] = value
    return params


def load_yaml(tmp_path: Path, params: dict):
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return read_settings(path)


def test_repo_params_are_valid():
    read_settings(REPO / "params.yaml")


def test_out_of_range_cases_cover_every_constrained_number():
    names = {dotted for dotted, _, _ in out_of_range_cases()}
    assert {"seed", "data.train_size", "nmf.rank", "model.max_len", "model.dropout", "train.lr",
            "train.head_lr", "train.batch_size", "folds.n_folds", "folds.run"} <= names
    assert len(names) >= 30


@pytest.mark.parametrize("dotted,value,valid", out_of_range_cases(),
                         ids=[f"{d}={v!r}" for d, v, _ in out_of_range_cases()])
def test_out_of_range_parameter_rejected_at_load(tmp_path, dotted, value, valid):
    with pytest.raises(SettingsError) as err:
        load_yaml(tmp_path, with_value(base_params(), dotted, value))
    message = str(err.value)
    assert message.count("\n") == 0, message  # one problem, one line
    assert f"params.yaml: {dotted}" in message, message
    assert valid in message, message


def inclusive_bounds() -> list[tuple[str, object]]:
    """(dotted name, value) of every inclusive bound (ge / le): the bound itself is valid."""
    out = []
    for dotted, value, valid in out_of_range_cases():
        if isinstance(value, list) or (isinstance(value, float) and not math.isfinite(value)):
            continue
        step = 0.5 if isinstance(value, float) else 1
        if valid.endswith(f"<= {dotted}"):
            out.append((dotted, value + step))
        elif valid.startswith(f"{dotted} <="):
            out.append((dotted, value - step))
    return out


@pytest.mark.parametrize("dotted,value", inclusive_bounds(),
                         ids=[f"{d}={v!r}" for d, v in inclusive_bounds()])
def test_inclusive_bounds_accepted(tmp_path, dotted, value):
    settings = load_yaml(tmp_path, with_value(base_params(), dotted, value))
    assert settings.model_dump()[dotted.split(".")[0]] is not None


@pytest.mark.parametrize("dotted", literal_cases())
def test_unknown_name_of_a_choice_rejected(tmp_path, dotted):
    with pytest.raises(SettingsError, match=rf"{re.escape(dotted)}: Input should be '.*' "
                                            r"\(got 'bogus'\)"):
        load_yaml(tmp_path, with_value(base_params(), dotted, "bogus"))


@pytest.mark.parametrize("group", [g for g, model in _groups().items() if model] + [None])
def test_unknown_parameter_names_rejected(tmp_path, group):
    dotted = f"{group}.bogus_param" if group else "bogus_group"
    with pytest.raises(SettingsError) as err:
        load_yaml(tmp_path, with_value(base_params(), dotted, 1))
    message = str(err.value)
    assert f"{dotted}: unknown parameter; known names: " in message, message
    known = _groups()[group].model_fields if group else Settings.model_fields
    assert all(name in message for name in known)


@pytest.mark.parametrize("changes,ok", [
    ({"model.k": 0, "model.s": 0}, False),
    ({"model.k": 0, "model.s": 0, "model.fusion": "none"}, True),
    ({"model.k": 0, "model.s": 0, "model.variant": "encoder"}, True),
    ({"model.k": 0, "model.s": 1}, True),
])
def test_no_factor_slots_with_concat_fusion(tmp_path, changes, ok):
    params = base_params()
    for dotted, value in changes.items():
        params = with_value(params, dotted, value)
    if ok:
        load_yaml(tmp_path, params)
    else:
        with pytest.raises(SettingsError, match=r"model\.k \+ model\.s must be >= 1"):
            load_yaml(tmp_path, params)


@pytest.mark.parametrize("run,match", [
    ([10], r"folds\.run has \[10\]: each fold must be in 0\.\.9"),
    ([0, -1], r"folds\.run has \[-1\]"),
    ([1, 1], r"folds\.run \[1, 1\] repeats a fold"),
])
def test_folds_run_outside_n_folds(tmp_path, run, match):
    with pytest.raises(SettingsError, match=match):
        load_yaml(tmp_path, with_value(base_params(), "folds.run", run))


@pytest.mark.parametrize("dotted,value,match", [
    ("train.epochs", "two", r"train\.epochs: Input should be a valid integer.*valid: 1 <= "),
    ("model.k", 2.5, r"model\.k: Input should be a valid integer"),
    ("model", None, r"model: Input should be a valid dictionary"),
])
def test_wrong_types_rejected(tmp_path, dotted, value, match):
    with pytest.raises(SettingsError, match=match):
        load_yaml(tmp_path, with_value(base_params(), dotted, value))


def test_unreadable_params_files(tmp_path):
    with pytest.raises(SettingsError, match="parameters file not found"):
        read_settings(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("model: [unclosed\n")
    with pytest.raises(SettingsError, match="not valid YAML"):
        read_settings(tmp_path / "bad.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(SettingsError, match="expected a mapping"):
        read_settings(tmp_path / "list.yaml")


def test_several_problems_are_all_named():
    with pytest.raises(SettingsError) as err:
        settings_from_dict({"model": {"depth": 0, "dropout": 2}, "nmf": {"rank": 0}})
    message = str(err.value)
    assert all(name in message for name in ("model.depth", "model.dropout", "nmf.rank"))


def test_check_batch_size():
    check_batch_size(80, 80)
    check_batch_size(80, 1)
    with pytest.raises(SettingsError, match=r"train\.batch_size=81 is larger than fold 0's train "
                                            r"part \(80 rows\); valid: 1 <= train\.batch_size "
                                            r"<= 80"):
        check_batch_size(80, 81, fold=0)
    with pytest.raises(SettingsError, match="train part is empty"):
        check_batch_size(0, 1)


def test_bad_params_stop_a_stage_before_any_work(stage_runs):
    ran = stage_runs["bad params through a stage"]
    line = ran.error_line()
    assert "model.depth: Input should be greater than or equal to 1 (got 0); valid: 1 <= " \
           "model.depth <= 24" in line, line
    assert "train.bogus: unknown parameter" in line, line
    assert not (ran.cwd / "data").exists()


def test_fold_outside_n_folds_stops_a_stage(stage_runs):
    line = stage_runs["--fold outside folds.n_folds"].error_line()
    assert line == "--fold 4: must be in 0..3", line


def test_nmf_rank_larger_than_vocabulary(stage_runs):
    ran = stage_runs["nmf.rank > vocabulary"]
    line = ran.error_line()
    assert line == "nmf.rank=5 exceeds the vocabulary size (3 words); use nmf.rank <= 3", line
    assert not (ran.cwd / layout.nmf_dir(0)).exists()
    assert not (ran.cwd / layout.nmf_metrics(0)).exists()


def test_max_len_beyond_encoder_positions(stage_runs, tiny_encoder_dir):
    from lttw.encoder.pretrained import check_max_len

    ran = stage_runs["model.max_len > encoder positions"]
    line = ran.error_line()
    assert "model.max_len is 129, but the encoder accepts at most 128 positions" in line, line
    assert not (ran.cwd / "data").exists()
    check_max_len(str(tiny_encoder_dir), 128)  # the limit itself is fine


# ------------------------------------------------------------------ security

UNSAFE = [
    (re.compile(r"^\s*(import|from)\s+(c?pickle|dill|cloudpickle|joblib)\b"), "imports a pickle "
                                                                               "module"),
    (re.compile(r"\b(c?pickle|dill|cloudpickle)\.loads?\("), "unpickles"),
    (re.compile(r"\bjoblib\b"), "uses joblib"),
    (re.compile(r"\btrust_remote_code\s*=\s*True"), "runs remote code"),
    (re.compile(r"\ballow_pickle\s*=\s*True"), "allows pickle in numpy"),
    (re.compile(r"\b(pd|pandas)\.read_pickle\(|\.to_pickle\("), "uses pandas pickle"),
    (re.compile(r"\btorch\.save\("), "writes a pickle (torch.save)"),
    (re.compile(r"\byaml\.(unsafe_)?load\((?![^)]*SafeLoader)"), "unsafe YAML load"),
]


def _calls(source: str, name: str) -> list[tuple[int, str]]:
    """(line number, full call text) of every ``name(`` call in ``source``."""
    out = []
    for match in re.finditer(re.escape(name) + r"\(", source):
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(source)):
            depth += {"(": 1, ")": -1}.get(source[end], 0)
            if depth == 0:
                break
        out.append((source.count("\n", 0, match.start()) + 1, source[match.start():end + 1]))
    return out


def unsafe_code(paths: list[Path], base: Path = REPO) -> list[str]:
    """``file:line: what: code`` for every unsafe (de)serialisation in ``paths``."""
    offenders = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(base)
        for number, line in enumerate(source.splitlines(), 1):
            code = line.split("#", 1)[0]
            for pattern, what in UNSAFE:
                if pattern.search(code):
                    offenders.append(f"{where}:{number}: {what}: {line.strip()}")
        for number, call in _calls(source, "torch.load"):
            if not re.search(r"weights_only\s*=\s*True", call):
                offenders.append(f"{where}:{number}: torch.load without weights_only=True: "
                                 f"{call.splitlines()[0]}")
    return offenders


def test_no_unsafe_deserialisation_in_code():
    paths = sorted((REPO / "src").rglob("*.py")) + sorted((REPO / "stages").glob("*.py"))
    assert len(paths) > 20
    offenders = unsafe_code(paths)
    assert not offenders, "unsafe code:\n" + "\n".join(offenders)


def test_unsafe_code_detector_finds_offenders(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text("import pickle\nx = torch.load(\n    f, map_location='cpu')\n"
                   "y = torch.load(f, weights_only=True)\nm(trust_remote_code=True)\n"
                   "np.load(f, allow_pickle=True)\nimport joblib\nyaml.load(s)\n"
                   "ok = yaml.load(s, Loader=yaml.SafeLoader)\n# import pickle\n")
    found = unsafe_code([bad], base=tmp_path)
    assert [f.split(":")[1] for f in found] == ["1", "5", "6", "7", "7", "8", "2"], found


def _dvc_outputs() -> list[str]:
    spec = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    outs = []
    for stage in spec["stages"].values():
        body = stage.get("do", stage)
        for key in ("outs", "metrics", "plots"):
            for entry in body.get(key, []):
                outs.append(next(iter(entry)) if isinstance(entry, dict) else entry)
    return outs


def test_outputs_only_under_output_folders():
    """Outputs come from layout.py / dvc.yaml, never from a parameter: no ``${param}`` in any
    output path (only the foreach ``${item}``), and every path lies under data/, metrics/,
    models/ or dvclive/."""
    outs = _dvc_outputs()
    assert len(outs) >= 12
    for out in outs:
        assert Path(out).parts[0] in OUTPUT_ROOTS, out
        assert set(re.findall(r"\$\{([^}]*)\}", out)) <= {"item"}, out
    checked = 0
    for name in dir(layout):
        value = getattr(layout, name)
        if isinstance(value, Path):
            path = value
        elif inspect.isfunction(value) and value.__module__ == layout.__name__ \
                and name != "fold_dir":
            path = value(*[0] * len(inspect.signature(value).parameters))
        else:
            continue
        assert isinstance(path, Path) and path.parts[0] in OUTPUT_ROOTS, (name, path)
        assert ".." not in path.parts and not path.is_absolute(), (name, path)
        checked += 1
    assert checked >= 20


def test_no_parameter_names_an_output_path():
    """The only path-valued parameters are inputs (data.root, data.dataset, model.encoder)."""
    path_like = {"root", "dataset", "encoder"}
    flat = []
    for group, values in base_params().items():
        for name in (values if isinstance(values, dict) else {group: values}):
            flat.append(name)
            assert not re.search(r"(^|_)(out|output|outdir|save|dest|dir|path|file)s?($|_)",
                                 name), f"{group}.{name} looks like an output path"
    assert path_like <= set(flat)
    stages_src = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "stages").glob("*.py"))
    for name in path_like:  # inputs are read, never written to
        assert not re.search(rf"(atomic_dir|atomic_path|write_\w+|to_parquet)\([^)]*\.{name}\b",
                             stages_src), name


# ------------------------------------------------------------------ safe, stable artifacts

def test_atomic_writers_leave_nothing_on_failure_and_clean_stale_temporaries(tmp_path):
    import tempfile

    from lttw.io import atomic_dir, write_json

    target = tmp_path / "fold_0"
    with pytest.raises(RuntimeError):
        with atomic_dir(target) as tmp:
            (tmp / "half.json").write_text("{")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
    # what a kill -9 leaves (no cleanup ran): removed by the next write of the same target
    stale_dir = tempfile.mkdtemp(prefix=".fold_0.", suffix=".tmp", dir=tmp_path)
    stale_file = tempfile.mkstemp(prefix=".fold_0.json.", suffix=".tmp", dir=tmp_path)[1]
    other = tempfile.mkstemp(prefix=".fold_1.", suffix=".tmp", dir=tmp_path)[1]
    with atomic_dir(target) as tmp:
        (tmp / "a.json").write_text("{}")
    assert not Path(stale_dir).exists() and Path(stale_file).exists()
    write_json(tmp_path / "fold_0.json", {"a": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == [Path(other).name, "fold_0",
                                                            "fold_0.json"]


def test_safetensors_with_metadata_are_byte_identical(tmp_path):
    """safetensors keeps metadata in a hash map: write_arrays sorts it, so identical inputs
    give identical bytes (and DVC hashes) in every process."""
    from safetensors import safe_open

    from lttw.io import read_arrays, write_arrays

    metadata = {name: str(i) for i, name in enumerate("zyxwvutsrq")}
    arrays = {"train": np.arange(12, dtype=np.float32).reshape(3, 4), "ids": np.arange(3)}
    blobs = set()
    for i in range(6):
        write_arrays(tmp_path / f"{i}.safetensors", metadata=metadata, **arrays)
        blobs.add((tmp_path / f"{i}.safetensors").read_bytes())
    assert len(blobs) == 1
    path = tmp_path / "0.safetensors"
    with safe_open(str(path), "np") as f:
        assert f.metadata() == metadata
    assert all(np.array_equal(read_arrays(path)[k], v) for k, v in arrays.items())
    header = path.read_bytes()[8:200].decode("utf-8", errors="replace")
    assert header.startswith('{"__metadata__":{"q":"9","r":"8"')


def test_evaluation_of_an_empty_part():
    """data.test_size / predict_size 0 are valid: evaluate must score the other parts and
    record n = 0 for the empty one, not crash on argmax of nothing."""
    from lttw.evaluation.metrics import (classification_metrics, confusion_counts, confusion_long,
                                 per_class_report, predicted_labels, summarize_folds,
                                 top_probability)

    probs = np.zeros((0, 0), np.float32)  # what predict_proba gives for no rows
    pred, y = predicted_labels(probs), np.zeros(0, np.int64)
    assert pred.shape == (0,) and top_probability(probs).shape == (0,)
    assert classification_metrics(y, pred, 3) == {"n": 0}
    assert per_class_report(y, pred, ["a", "b", "c"])["b"] == {"support": 0}
    assert confusion_counts(y, pred, 2) == [[0, 0], [0, 0]]
    assert len(confusion_long(y, pred, ["a", "b"])) == 0
    scored = classification_metrics(np.array([0, 1]), predicted_labels(np.eye(2)), 2)
    summary = summarize_folds({0: {"test": {"n": 0}, "fold_test": scored}})
    assert summary["test/n"]["mean"] == 0 and summary["fold_test/f1_macro"]["mean"] == 1.0
