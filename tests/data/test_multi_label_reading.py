"""Reading multi-label data (issue 42): a parquet list column with a manifest, JSON Lines arrays,
a delimited CSV column; data.multi_label; one-line errors naming file, column and row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.multi_label_data import CLASSES, label_rows, write_multi_label_folder

from lttw.data.datasets import load_dataset
from lttw.data.tables import read_table
from lttw.errors import DataError
from lttw.settings import DataSettings


def load(root: Path, name: str, **update):
    return load_dataset(DataSettings(dataset=name, root=str(root), **update))


def expected_matrix(lists: list[list[str]], classes: list[str]) -> np.ndarray:
    out = np.zeros((len(lists), len(classes)), np.uint8)
    for i, row in enumerate(lists):
        out[i, [classes.index(c) for c in row]] = 1
    return out


def test_a_parquet_list_column_with_a_manifest_is_multi_label(tmp_path):
    write_multi_label_folder(tmp_path, "emo")
    dataset = load(tmp_path, "emo")
    assert dataset.multi_label
    assert dataset.classes == CLASSES  # the manifest's order
    assert dataset.labels.dtype == np.uint8 and dataset.labels.shape == (420, len(CLASSES))
    wanted = expected_matrix(label_rows(300, 0) + label_rows(120, 1), CLASSES)
    np.testing.assert_array_equal(dataset.labels, wanted)
    assert dataset.rows_of("test").size == 120


def test_json_lines_arrays_are_read_and_the_classes_are_their_union(tmp_path):
    write_multi_label_folder(tmp_path, "emo", fmt="jsonl")
    dataset = load(tmp_path, "emo")
    assert dataset.multi_label
    assert dataset.classes == sorted(CLASSES)  # no manifest: the union, sorted
    # no manifest: the files in name order (test, then train)
    wanted = expected_matrix(label_rows(120, 1) + label_rows(300, 0), sorted(CLASSES))
    np.testing.assert_array_equal(dataset.labels, wanted)


def test_a_delimited_csv_column_needs_the_delimiter(tmp_path):
    write_multi_label_folder(tmp_path, "emo", fmt="csv")
    combined = load(tmp_path, "emo")  # no delimiter: "anger|joy" is a class of its own
    assert not combined.multi_label and "anger|joy" in combined.classes
    dataset = load(tmp_path, "emo", label_delimiter="|")
    assert dataset.multi_label and dataset.classes == sorted(CLASSES)
    # no manifest: the files in name order (test, then train)
    wanted = expected_matrix(label_rows(120, 1) + label_rows(300, 0), sorted(CLASSES))
    np.testing.assert_array_equal(dataset.labels, wanted)


def test_integer_ids_in_delimited_cells_are_numbered_like_single_labels(tmp_path):
    frame = pd.DataFrame({"text": ["a", "b", "c", "d"], "label": ["3, 10", "10", "3", " 7 ,3"]})
    frame.to_csv(tmp_path / "ids.csv", index=False)
    dataset = load(tmp_path, "ids.csv", label_delimiter=",")
    assert dataset.classes == ["3", "7", "10"] and dataset.label_values == [3, 7, 10]
    np.testing.assert_array_equal(dataset.labels, [[1, 0, 1], [0, 0, 1], [1, 0, 0], [1, 1, 0]])


def test_multi_label_true_reads_plain_cells_as_one_label_each(tmp_path):
    frame = pd.DataFrame({"text": ["a", "b", "c"], "label": ["x", "y", "x"]})
    frame.to_csv(tmp_path / "plain.csv", index=False)
    dataset = load(tmp_path, "plain.csv", multi_label=True)
    assert dataset.multi_label
    np.testing.assert_array_equal(dataset.labels, [[1, 0], [0, 1], [1, 0]])


def test_read_table_reads_json_lines_and_names_a_bad_line(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text('{"text": "a", "label": ["x", "y"]}\n\n{"text": "b", "label": ["y"]}\n')
    frame = read_table(good)
    assert frame["label"].tolist() == [["x", "y"], ["y"]]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a", "label": ["x"]}\n{"text": "b", "label": \n')
    with pytest.raises(DataError, match=r"bad.jsonl: line 2 is not valid JSON"):
        read_table(bad)


@pytest.mark.parametrize(
    "labels,update,message",
    [
        ([["x"], []], {}, r"train.jsonl, column label: row 1 has an empty label list"),
        ([["x"], [1.5]], {}, r"train.jsonl, column label: row 1 has the label 1.5"),
        ([["x"], ["y"]], {"multi_label": False}, r"holds lists but data.multi_label is false"),
    ],
)
def test_bad_label_lists_are_one_line_errors_naming_file_column_row(
    tmp_path, labels, update, message
):
    folder = tmp_path / "bad"
    folder.mkdir()
    lines = [json.dumps({"text": f"t{i}", "label": row}) for i, row in enumerate(labels)]
    (folder / "train.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=message) as err:
        load(tmp_path, "bad", **update)
    assert "\n" not in str(err.value)


def test_an_unknown_class_where_the_manifest_lists_classes_names_the_row(tmp_path):
    folder = write_multi_label_folder(tmp_path, "emo", n_train=30, n_test=10)
    frame = pd.read_parquet(folder / "test.parquet")
    frame.at[4, "labels"] = ["joy", "boredom"]
    frame.to_parquet(folder / "test.parquet")
    with pytest.raises(
        DataError,
        match=r"test.parquet, column labels: row 4 has the label "
        r"'boredom', which is not one of the manifest's 5 classes",
    ):
        load(tmp_path, "emo")


def test_a_delimiter_with_multi_label_false_is_refused(tmp_path):
    pd.DataFrame({"text": ["a", "b"], "label": ["x|y", "y"]}).to_csv(tmp_path / "d.csv")
    with pytest.raises(DataError, match="data.label_delimiter is '|' but data.multi_label"):
        load(tmp_path, "d.csv", label_delimiter="|", multi_label=False)


def test_single_label_data_stays_single_label(tmp_path):
    pd.DataFrame({"text": ["a", "b", "c"], "label": ["x", "y", "x"]}).to_csv(
        tmp_path / "s.csv", index=False
    )
    dataset = load(tmp_path, "s.csv")
    assert not dataset.multi_label and dataset.labels.dtype == np.int64
    assert dataset.labels.tolist() == [0, 1, 0]


def test_the_same_label_set_in_another_order_is_not_a_conflict(tmp_path):
    frame = pd.DataFrame({"text": ["same", "same", "other"], "label": ["b|a", "a|b", "a"]})
    frame.to_csv(tmp_path / "order.csv", index=False)
    dataset = load(tmp_path, "order.csv", label_delimiter="|")
    assert dataset.duplicate_texts == 1 and dataset.conflicting_texts == 0
