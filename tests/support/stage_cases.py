"""Stage runs on bad and unusual inputs, shared by the hardening tests: datasets written in
many broken and odd shapes (``DATA_CASES``), each run through the real ``stages/<name>.py``
as ``__main__`` with ``--params P`` in its own temporary directory, and the session fixture
``stage_runs`` holding every result. The scripts run in the test's process
(``stage_scripts.run_script``: as ``__main__``, with their argv, folder, stdout, stderr and
log lines), without an interpreter and torch start-up per run; two data cases also run as
plain subprocesses, a cross-check of exit code and stderr. A bad input must end a stage with
exit code 2 and exactly one line on stderr, ``error: ...``, naming the file / column / row /
parameter, with no traceback and no output left behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from lttw import layout
from support import stage_scripts

REPO = Path(__file__).resolve().parents[2]
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d lttw[\w.]*: ")  # stage.py's logging format


# ------------------------------------------------------------------ the bad-data matrix


def frame(per_class=(10, 10), names=None, prefix="row") -> pd.DataFrame:
    """Unique texts, ``per_class[i]`` rows of label ``names[i]`` (default: 0, 1, ...)."""
    names = list(range(len(per_class))) if names is None else list(names)
    labels = [names[c] for c, n in enumerate(per_class) for _ in range(n)]
    return pd.DataFrame(
        {"text": [f"{prefix} {i} word{i % 7} news" for i in range(len(labels))], "label": labels}
    )


def csv_bytes(data: pd.DataFrame, **kw) -> bytes:
    return data.to_csv(index=False, **kw).encode("utf-8")


@dataclass(frozen=True)
class DataCase:
    """One dataset: ``files`` name -> writer(path); ``error`` a regex the one error line must
    match (None: the stage must succeed, then ``check(labels_json, samples, stderr)``)."""

    files: dict[str, Callable[[Path], object]]
    dataset: str
    error: str | None = None
    sizes: dict = field(
        default_factory=lambda: {"train_size": 8, "test_size": 2, "predict_size": 2}
    )
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
    pd.DataFrame({"text": [b"caf\xe9 %d" % i for i in range(20)], "label": [0, 1] * 10}).to_parquet(
        p, index=False
    )


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
        {"other.csv": _csv(frame)},
        "missing.csv",
        r"data\.dataset 'missing\.csv': \S*missing\.csv not found \(data\.root \S+ has other\.csv\)",
    ),
    "unreadable parquet": DataCase(
        {"d.parquet": lambda p: p.write_bytes(np.random.default_rng(0).bytes(512))},
        "d.parquet",
        r"d\.parquet: not a readable parquet file \(.*magic bytes",
    ),
    "CSV with ; delimiter": DataCase(
        {"d.csv": _csv(frame, sep=";")},
        "d.csv",
        r"d\.csv: no text column 'text' and no label column 'label' \(columns: text;label\); "
        r"set data\.text_column and data\.label_column; .*semicolon-separated",
    ),
    "CSV without header": DataCase(
        {"d.csv": _csv(frame, header=False)},
        "d.csv",
        r"d\.csv: no text column 'text' and no label column 'label' \(columns: row 0 word0 news, "
        r"0\).*no header line",
    ),
    "missing text column": DataCase(
        {"d.csv": _csv(lambda: frame().rename(columns={"text": "body"}))},
        "d.csv",
        r"d\.csv: no text column 'text' \(columns: body, label\); set data\.text_column$",
    ),
    "missing label column": DataCase(
        {"d.csv": _csv(lambda: frame().rename(columns={"label": "y"}))},
        "d.csv",
        r"d\.csv: no label column 'label' \(columns: text, y\); set data\.label_column$",
    ),
    "configured column missing": DataCase(
        {"d.csv": _csv(frame)},
        "d.csv",
        r"d\.csv: no text column 'body' .*data\.text_column",
        data={"text_column": "body"},
    ),
    "empty file": DataCase(
        {"d.csv": lambda p: p.write_bytes(b"")}, "d.csv", r"d\.csv: the file is empty"
    ),
    "header only": DataCase(
        {"d.csv": lambda p: p.write_text("text,label\n")},
        "d.csv",
        r"d\.csv: the dataset has no rows",
    ),
    "parquet without rows": DataCase(
        {"d.parquet": _parquet(lambda: frame().iloc[:0])},
        "d.parquet",
        r"d\.parquet: the dataset has no rows",
    ),
    "all texts NaN": DataCase(
        {"d.parquet": _parquet(lambda: frame().assign(text=None))},
        "d.parquet",
        r"d\.parquet: all 20 texts \(column text\) are missing, empty or whitespace-only",
    ),
    "all labels NaN": DataCase(
        {"d.parquet": _parquet(lambda: frame().assign(label=np.nan))},
        "d.parquet",
        r"d\.parquet: every label \(column label\) is missing",
    ),
    "ragged CSV": DataCase(
        {"d.csv": _ragged}, "d.csv", r"d\.csv: not a readable CSV file \(.*line 3"
    ),
    "class too small": DataCase(
        {"d.parquet": _parquet(lambda: frame((10, 3), names=["a", "b"]))},
        "d.parquet",
        r"data\.train_size \+ data\.test_size \+ data\.predict_size = 8 \+ 2 \+ 2 need 4 \+ 1 \+ 1 "
        r"= 6 rows per class from all rows \(pooled\), whose rarest class b has 3 \(the classes "
        r"have a 10, b 3\) .*Sizes that fit together: data\.train_size=2, data\.test_size=2, "
        r"data\.predict_size=2; or data\.sampling=stratified",
    ),
    "single class": DataCase(
        {"d.parquet": _parquet(lambda: frame((20,), names=["only"]))},
        "d.parquet",
        r"d\.parquet: only one class \('only'\) in column label",
    ),
    "1,000 classes, sizes fit": DataCase(
        {"d.parquet": _parquet(lambda: frame((4,) * 1000))},
        "d.parquet",
        sizes={"train_size": 2000, "test_size": 1000, "predict_size": 1000},
        check=_check_1000_classes,
    ),
    "1,000 classes, too few rows": DataCase(
        {"d.parquet": _parquet(lambda: frame((4,) * 1000))},
        "d.parquet",
        r"data\.train_size=500 is smaller than the number of classes \(1000\)",
        sizes={"train_size": 500, "test_size": 0, "predict_size": 0},
    ),
    "string labels": DataCase(
        {"d.csv": _csv(lambda: frame(names=["pos", "neg"]))},
        "d.csv",
        check=_check_classes(["neg", "pos"]),
    ),
    "integral float labels": DataCase(
        {"d.parquet": _parquet(lambda: frame(names=[1.0, 2.0]))},
        "d.parquet",
        check=_check_classes(["1", "2"], [1, 2]),
    ),
    "integer labels with gaps (NaN -> float)": DataCase(
        {
            "d.csv": _csv(
                lambda: pd.concat(
                    [
                        frame(names=[3, 7]),
                        pd.DataFrame({"text": ["no label here"], "label": [None]}),
                    ]
                )
            )
        },
        "d.csv",
        check=_check_classes(["3", "7"], [3, 7]),
    ),
    "mixed labels (strings verbatim)": DataCase(
        {"d.csv": _csv(lambda: frame((6, 6, 6), names=["1", "pos", "2.0"]))},
        "d.csv",
        check=_check_classes(["1", "2.0", "pos"]),
        sizes={"train_size": 6, "test_size": 3, "predict_size": 3},
    ),
    "non-integral float labels (error)": DataCase(
        {"d.parquet": _parquet(lambda: frame(names=[0.5, 1.5]))},
        "d.parquet",
        r"d\.parquet, column label: label 0\.5 \(row 0\) is not an integer; labels must be "
        r"integers, integral floats or strings",
    ),
    "non-UTF-8 CSV": DataCase(
        {"d.csv": _latin1},
        "d.csv",
        r"d\.csv: not valid UTF-8 at byte \d+ \(line 5, about data row 4\)",
    ),
    "non-UTF-8 bytes in parquet": DataCase(
        {"d.parquet": _binary_parquet},
        "d.parquet",
        r"d\.parquet, column text: row 0 is not valid UTF-8 at byte 3",
    ),
    "1 MB texts": DataCase(
        {"d.parquet": _parquet(_big_texts)}, "d.parquet", check=_check_big_texts
    ),
    "only punctuation or emoji": DataCase(
        {
            "d.parquet": _parquet(
                lambda: frame().assign(text=["!!! ???", "😀😀🎉", "...", "—–", "🙂 👍"] * 4)
            )
        },
        "d.parquet",
        check=_check_symbols,
        sizes={"train_size": 4, "test_size": 2, "predict_size": 2},
    ),
    "duplicate rows": DataCase(
        {"d.parquet": _parquet(_duplicates)}, "d.parquet", check=_check_duplicates
    ),
    "test rows duplicated in train": DataCase(
        _test_split_copies_train(),
        "split",
        check=_check_test_in_train,
        sizes={"train_size": 8, "test_size": 2, "predict_size": 2},
    ),
}


@dataclass
class Ran(stage_scripts.Ran):
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
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return folder / "params.yaml"


def make_data_case(folder: Path, case: DataCase) -> Path:
    """``folder``/in holds the dataset (a file, or ``split/`` for multi-file cases)."""
    root = folder / "in"
    target = root / "split" if case.dataset == "split" else root
    target.mkdir(parents=True)
    for name, write in case.files.items():
        write(target / name)
    write_params(
        folder,
        {
            "seed": 0,
            "data": {"dataset": case.dataset, "root": str(root), **case.sizes, **case.data},
        },
    )
    return folder


def stage_cmd(stage: str, *extra: str) -> list[str]:
    return [sys.executable, str(REPO / "stages" / f"{stage}.py"), "--params", "params.yaml", *extra]


def _env() -> dict:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
    }


def _run(cmd: list[str], cwd: Path) -> Ran:
    done = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)
    return Ran(done.returncode, done.stdout, done.stderr, cwd)


def run_in_process(cmd: list[str], cwd: Path) -> Ran:
    """``cmd`` (``stage_cmd``'s ``[python, script, args...]``) run in this process
    (``stage_scripts.run_script``)."""
    done = stage_scripts.run_script(cmd[1], cwd, *cmd[2:])
    return Ran(done.returncode, done.stdout, done.stderr, done.cwd)


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
#: the in-process runs)
PLAIN_DATA_CASES = ("unreadable parquet", "duplicate rows")


@pytest.fixture(scope="session")
def stage_runs(tmp_path_factory, tiny_encoder_dir) -> dict[str, Ran]:
    """Every stage run of this module, in this process: case name -> result (``plain:
    <case>`` for the plain subprocess twins of PLAIN_DATA_CASES)."""
    base = tmp_path_factory.mktemp("hardening")
    jobs: dict[str, tuple[list[str], Path]] = {
        name: (stage_cmd("sample"), make_data_case(base / f"data{i}", case))
        for i, (name, case) in enumerate(DATA_CASES.items())
    }
    for name, make in {
        "model.max_len > encoder positions": _max_len_case(tiny_encoder_dir),
        "nmf.rank > vocabulary": _nmf_rank_case,
        "bad params through a stage": _bad_params_case,
        "--fold outside folds.n_folds": _bad_fold_case,
    }.items():
        folder = base / re.sub(r"\W+", "_", name)
        folder.mkdir()
        jobs[name] = (make(folder), folder)
    runs = {name: run_in_process(*job) for name, job in jobs.items()}
    for i, name in enumerate(PLAIN_DATA_CASES):
        folder = make_data_case(base / f"plain{i}", DATA_CASES[name])
        runs[f"plain: {name}"] = _run(stage_cmd("sample"), folder)
    return runs
