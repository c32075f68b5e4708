"""Dataset resolution and validation, label encoding, balanced sampling, the sample stage."""

from __future__ import annotations

import io
import json
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from support.datasets import EMBEDDED, full_root, needs_full
from support.stage_scripts import run_stage_script

from lttw.data.datasets import load_dataset
from lttw.data.hub_fetch import hub_split_files
from lttw.data.sampling import draw_samples
from lttw.data.tables import encode_labels
from lttw.errors import DataError
from lttw.settings import DataSettings

REPO = Path(__file__).resolve().parents[2]
DATASETS = full_root()  # the full datasets (LTTW_DATA_ROOT), where set


def tiny_frame(n_per_class=(30, 20, 25), seed=0):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(len(n_per_class)), n_per_class)
    texts = [f"text {i} word{rng.integers(0, 50)} class{lab}" for i, lab in enumerate(labels)]
    return pd.DataFrame({"text": texts, "label": labels})


def write_manifest_dataset(
    root: Path,
    train: pd.DataFrame,
    test: pd.DataFrame | None = None,
    classes=("x", "y", "z"),
    name="tiny",
) -> DataSettings:
    folder = root / name
    folder.mkdir(parents=True)
    splits = {"train": "train.parquet"}
    train.to_parquet(folder / "train.parquet")
    if test is not None:
        test.to_parquet(folder / "test.parquet")
        splits["test"] = "test.parquet"
    manifest = {
        "text_column": "text",
        "label_column": "label",
        "classes": list(classes),
        "splits": splits,
        "hub_dataset": "someone/tiny",
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return DataSettings(dataset=name, root=str(root))


def data(root, dataset, **kw):
    return DataSettings(dataset=dataset, root=str(root), **kw)


# ---- resolution and validation -------------------------------------------------------------


def test_manifest_dataset_uses_class_names(tmp_path):
    ds = load_dataset(write_manifest_dataset(tmp_path, tiny_frame(), tiny_frame((3, 3, 3))))
    assert ds.classes == ["x", "y", "z"] and ds.label_values == [0, 1, 2]
    assert ds.labels.dtype == np.int64 and len(ds.labels) == 84
    assert set(ds.splits) == {"train", "test"}
    np.testing.assert_array_equal(ds.source_rows, np.arange(84))


def test_folder_of_files_without_manifest(tmp_path):
    (tmp_path / "mine").mkdir()
    tiny_frame().to_csv(tmp_path / "mine" / "train.csv", index=False)
    tiny_frame((5, 5, 5)).to_csv(tmp_path / "mine" / "test_all.tsv", sep="\t", index=False)
    ds = load_dataset(data(tmp_path, "mine"))
    assert ds.classes == ["0", "1", "2"] and ds.label_values == [0, 1, 2]
    assert (ds.splits == "train").sum() == 75 and (ds.splits == "test").sum() == 15


@needs_full("yahoo_answers")
def test_shared_yahoo_loads_with_manifest_classes():
    ds = load_dataset(DataSettings(dataset="yahoo_answers", root=str(DATASETS)))
    assert len(ds.classes) == 10 and ds.classes[9] == "Politics & Government"
    assert len(ds.labels) == 5991 + 1518


def test_missing_dataset_lists_root(tmp_path):
    (tmp_path / "other.csv").write_text("text,label\na,1\n")
    with pytest.raises(DataError, match=r"'nope'.*not found.*other.csv"):
        load_dataset(data(tmp_path, "nope"))


def test_manifest_file_missing(tmp_path):
    settings = write_manifest_dataset(tmp_path, tiny_frame(), tiny_frame())
    (tmp_path / "tiny" / "test.parquet").unlink()
    with pytest.raises(DataError, match=r"test.parquet: file not found"):
        load_dataset(settings)


def test_unreadable_parquet(tmp_path):
    (tmp_path / "bad.parquet").write_bytes(b"this is not parquet")
    with pytest.raises(DataError, match=r"bad.parquet: not a readable parquet file"):
        load_dataset(data(tmp_path, "bad.parquet"))


def test_missing_column_names_file_and_columns(tmp_path):
    tiny_frame().rename(columns={"text": "body"}).to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(DataError, match=r"d.csv: no text column 'text' \(columns: body, label\)"):
        load_dataset(data(tmp_path, "d.csv"))
    ds = load_dataset(data(tmp_path, "d.csv", text_column="body"))  # the override
    assert len(ds.texts) == 75
    with pytest.raises(DataError, match=r"no label column 'target'"):
        load_dataset(data(tmp_path, "d.csv", text_column="body", label_column="target"))


def test_empty_dataset(tmp_path):
    (tmp_path / "empty.csv").write_text("text,label\n")
    with pytest.raises(DataError, match="empty.csv: the dataset has no rows"):
        load_dataset(data(tmp_path, "empty.csv"))
    (tmp_path / "zero.csv").write_text("")
    with pytest.raises(DataError, match="zero.csv: the file is empty"):
        load_dataset(data(tmp_path, "zero.csv"))


def test_blank_texts_dropped_with_count(tmp_path, caplog):
    frame = tiny_frame()
    frame.loc[[0, 5, 9], "text"] = [None, "", "   \t"]
    frame.to_parquet(tmp_path / "d.parquet")
    with caplog.at_level(logging.WARNING):
        ds = load_dataset(data(tmp_path, "d.parquet"))
    assert ds.dropped_empty == 3 and len(ds.texts) == 72 and 0 not in ds.source_rows
    assert "dropped 3 rows" in caplog.text
    frame["text"] = None
    frame.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(DataError, match="all 75 texts"):
        load_dataset(data(tmp_path, "d.parquet"))


def test_non_utf8_csv_names_file_and_line(tmp_path):
    (tmp_path / "latin.csv").write_bytes(b"text,label\nfine,0\ncaf\xe9 au lait,1\n")
    with pytest.raises(DataError, match=r"latin.csv: not valid UTF-8 at byte 21 \(line 3"):
        load_dataset(data(tmp_path, "latin.csv"))


def test_string_and_float_labels(tmp_path):
    pd.DataFrame({"text": list("abcd"), "label": ["pos", "neg", "pos", "neu"]}).to_csv(
        tmp_path / "s.csv", index=False
    )
    ds = load_dataset(data(tmp_path, "s.csv"))
    assert ds.classes == ["neg", "neu", "pos"] and ds.labels.tolist() == [2, 0, 2, 1]
    pd.DataFrame({"text": list("abc"), "label": [2.0, 5.0, 2.0]}).to_parquet(tmp_path / "f.pq")
    ds = load_dataset(data(tmp_path, "f.pq"))
    assert ds.classes == ["2", "5"] and ds.label_values == [2, 5]
    assert ds.labels.tolist() == [0, 1, 0]
    pd.DataFrame({"text": list("ab"), "label": [1.0, 1.5]}).to_parquet(tmp_path / "g.pq")
    with pytest.raises(DataError, match=r"g.pq, column label: label 1.5 \(row 1\) is not an"):
        load_dataset(data(tmp_path, "g.pq"))


def test_encode_labels_against_manifest():
    ids, classes, values = encode_labels(pd.Series(["b", "a", "b"]), ["b", "a", "c"], "x")
    assert ids.tolist() == [0, 1, 0] and classes == ["b", "a", "c"]
    ids, classes, values = encode_labels(pd.Series([1, 7]), ["b", "a"], "x")  # not manifest ids
    assert classes == ["1", "7"] and values == [1, 7]


def test_offline_hub_fails_fast(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    with pytest.raises(DataError) as err:
        load_dataset(data(tmp_path, "ag_news"))
    assert time.monotonic() - start < 2
    message = str(err.value)
    assert "\n" not in message
    assert str(tmp_path / "ag_news") in message and "fancyzhx/ag_news" in message
    # a manifest whose files are missing points at its own hub dataset
    settings = write_manifest_dataset(tmp_path, tiny_frame())
    (tmp_path / "tiny" / "train.parquet").unlink()
    with pytest.raises(DataError, match=r"tiny.*someone/tiny"):
        load_dataset(settings)


def test_hub_split_files():
    paths = [
        "datasets/o/n/data/train-00000-of-00002.parquet",
        "datasets/o/n/data/test-0.parquet",
        "datasets/o/n/data/train-00001-of-00002.parquet",
        "datasets/o/n/cfg/validation/0.parquet",
    ]
    assert hub_split_files(paths, "train") == [paths[0], paths[2]]
    assert hub_split_files(paths, "validation") == [paths[3]]


# ---- sampling ------------------------------------------------------------------------------


def test_samples_disjoint_balanced_seeded(tmp_path):
    settings = write_manifest_dataset(
        tmp_path, tiny_frame((40, 40, 40)), tiny_frame((20, 20, 20), 1)
    )
    settings = settings.model_copy(update={"train_size": 31, "test_size": 15, "predict_size": 12})
    ds = load_dataset(settings)
    frames, info = draw_samples(ds, settings, seed=3)
    assert info["sizes"] == {"train": 30, "test": 15, "predict": 12}
    for split, frame in frames.items():
        assert list(frame.columns) == ["text", "label", "source_row"]
        assert frame["label"].dtype == np.int64 and frame["source_row"].dtype == np.int64
        assert len(set(np.bincount(frame["label"]))) == 1  # balanced
    rows = [set(f["source_row"]) for f in frames.values()]
    assert not (rows[0] & rows[1] or rows[0] & rows[2] or rows[1] & rows[2])
    assert max(rows[0]) < 120 <= min(rows[1] | rows[2])  # train split vs test split
    assert set(frames["train"]["label"][:10]) != {0}  # shuffled, not grouped by class

    def parquet_bytes(seed):
        out = {}
        for split, frame in draw_samples(ds, settings, seed)[0].items():
            buffer = io.BytesIO()
            frame.to_parquet(buffer, index=False)
            out[split] = buffer.getvalue()
        return out

    assert parquet_bytes(3) == parquet_bytes(3)
    assert parquet_bytes(3) != parquet_bytes(4)


def test_pooled_when_use_splits_is_off(tmp_path):
    settings = write_manifest_dataset(tmp_path, tiny_frame((10, 10, 10)), tiny_frame((10, 10, 10)))
    settings = settings.model_copy(
        update={"train_size": 30, "test_size": 15, "predict_size": 15, "use_splits": False}
    )
    frames, info = draw_samples(load_dataset(settings), settings, seed=0)
    assert info["pools"]["train"] is None
    assert len(set().union(*(set(f["source_row"]) for f in frames.values()))) == 60


def test_duplicates_counted(tmp_path):
    train = pd.DataFrame({"text": ["same", "u1", "u2", "u3"], "label": [0, 1, 0, 1]})
    test = pd.DataFrame({"text": ["same", "v1"], "label": [0, 1]})
    settings = write_manifest_dataset(tmp_path, train, test, classes=("a", "b"))
    settings = settings.model_copy(update={"train_size": 4, "test_size": 2, "predict_size": 0})
    _, info = draw_samples(load_dataset(settings), settings, seed=0)
    assert info["duplicates_test_in_train"] == 1


@needs_full("ag_news")
def test_class_too_small_lists_counts_and_sizes_that_fit():
    settings = DataSettings(
        dataset="ag_news", root=str(DATASETS), train_size=8, test_size=4000, predict_size=4000
    )
    with pytest.raises(DataError) as err:
        draw_samples(load_dataset(settings), settings, seed=0)
    message = str(err.value)
    assert "World 1900, Sports 1900, Business 1900, Sci/Tech 1900" in message
    assert (
        "data.test_size + data.predict_size = 4000 + 4000 need 1000 + 1000 = 2000 rows per "
        "class from the test split" in message
    )
    assert "data.train_size=8, data.test_size=3800, data.predict_size=3800" in message
    settings = settings.model_copy(update={"train_size": 200000, "test_size": 0, "predict_size": 0})
    dataset = load_dataset(settings)
    counts = np.bincount(dataset.labels[dataset.splits == "train"], minlength=4)
    with pytest.raises(
        DataError,
        match=rf"Sports {counts[1]}.*Sizes that fit together: "
        rf"data.train_size={4 * counts.min()}, data.test_size=0",
    ):
        draw_samples(dataset, settings, seed=0)


def test_failing_sample_stage_leaves_no_output(tmp_path):
    params = {"data": {"dataset": "ag_news", "root": str(EMBEDDED), "train_size": 100000}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    done = run_stage_script("sample", tmp_path)  # python stages/sample.py, in this process
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: data.train_size")
    assert not (tmp_path / "data").exists()


def test_sample_is_the_same_whatever_the_spelling_of_data_root(tmp_path, monkeypatch):
    """A queued experiment passes data.root as an absolute path; the sample (labels.json
    included) must be byte-identical so that DVC reruns nothing after `sample`."""
    monkeypatch.chdir(tmp_path)
    relative = Path(__import__("os").path.relpath(EMBEDDED, tmp_path))
    infos = []
    for root in (relative, EMBEDDED.resolve()):
        settings = DataSettings(
            dataset="ag_news", root=str(root), train_size=40, test_size=8, predict_size=8
        )
        frames, info = draw_samples(load_dataset(settings), settings, seed=1)
        infos.append(info)
    assert infos[0] == infos[1] and infos[0]["source"] == "ag_news"


def test_a_csv_read_in_chunks_types_its_columns_as_one_reading_does(tmp_path, monkeypatch):
    """Chunks of two rows: integer labels with a gap in one chunk (float there, int in the
    others) are read again whole; a file whose chunks agree is their concatenation."""
    from lttw.data import tables

    monkeypatch.setattr(tables, "CSV_CHUNK_ROWS", 2)
    for body in ("a,1\nb,2\nc,\nd,3\ne,4\n", "a,x\nb,y\nc,z\nd,x\ne,y\n"):
        path = tmp_path / "t.csv"
        path.write_text("text,label\n" + body)
        got, want = tables.read_table(path), pd.read_csv(path)
        pd.testing.assert_frame_equal(got, want)
