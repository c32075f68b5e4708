"""`lttw evaluate` on hostile input through the real command: class names that look like
matplotlib mathtext, a parquet file that decodes to far more than it weighs (a dictionary
page repeated), a categorical label column, and a file holding one class."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli_runner import assert_user_error, invoke
from support.serving_models import CLASSES, labelled_texts, shared_lttw_folder

MAX_TEXT_BYTES = 256 << 20  # lttw.data.labelled_file.MAX_TEXT_BYTES

#: mathtext that matplotlib cannot parse (and would treat as math, not text)
MATH_NAMES = ["$\\foo{$", "a_$b^$", "$x$", "plain"]


@pytest.fixture(scope="module")
def model(tmp_path_factory, tiny_encoder_dir):
    return shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)


def renamed(model, dest, names):
    """A copy of ``model`` whose classes are ``names`` (checksums recorded again)."""
    import shutil

    from lttw.io import write_json
    from lttw.models.bundle import LABELS
    from lttw.models.folder_files import record_checksums

    shutil.copytree(model, dest)
    write_json(dest / LABELS, {"classes": names})
    record_checksums(dest)
    return dest


def test_class_names_are_text_not_mathtext(model, tmp_path):
    folder = renamed(model, tmp_path / "math", MATH_NAMES)
    texts, labels = labelled_texts(3)
    frame = pd.DataFrame({"text": texts, "label": [MATH_NAMES[i] for i in labels]})
    frame.to_csv(tmp_path / "math.csv", index=False)
    out = tmp_path / "eval"
    result = invoke("evaluate", tmp_path / "math.csv", "--model", folder, "--out", out,
                    "--bootstrap", "0")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (out / "confusion.png").stat().st_size > 1000
    assert "$\\foo{$" in (out / "report.html").read_text()


def test_a_parquet_bomb_is_refused_before_it_is_decoded(model, tmp_path):
    """50,000 rows of one 20,000-character text, dictionary encoded: a small file that
    decodes to 1 GB; refused from the dictionary's sizes, in one line, exit 3."""
    big = "x" * 20_000
    text = pa.DictionaryArray.from_arrays(pa.array(np.zeros(50_000, np.int32)), pa.array([big]))
    label = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(50_000, np.int32)), pa.array([CLASSES[0]])
    )
    bomb = tmp_path / "bomb.parquet"
    pq.write_table(pa.table({"text": text, "label": label}), bomb, compression="zstd")
    assert bomb.stat().st_size < 100_000 and 50_000 * 20_000 > MAX_TEXT_BYTES
    result = invoke("evaluate", bomb, "--model", model, "--out", tmp_path / "o")
    assert_user_error(result, str(bomb), "MiB of text", code=3)
    assert not (tmp_path / "o").exists()


def test_a_categorical_label_column_of_one_class(model, tmp_path):
    texts, labels = labelled_texts(3)
    keep = labels == 1
    frame = pd.DataFrame({"text": np.asarray(texts)[keep], "label": CLASSES[1]})
    frame["label"] = frame["label"].astype("category")
    frame.to_parquet(tmp_path / "one.parquet")
    out = tmp_path / "eval"
    result = invoke("evaluate", tmp_path / "one.parquet", "--model", model, "--out", out,
                    "--bootstrap", "0")  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "metrics.json").read_text())
    assert report["n"] == int(keep.sum())
    # classes absent from the file are left out of the macro averages, and it says so
    absent = report["absent_classes"]
    assert "absent" in result.stderr and absent and CLASSES[1] not in absent
    scored = [report["per_class"][c]["recall"] for c in CLASSES if c not in absent]
    assert report["metrics"]["recall_macro"] == pytest.approx(np.mean(scored))
