"""data.sampling (balanced / stratified / all) on an unbalanced dataset, every unmet size in one
message with sizes that fit together (sample stage and `lttw data check`), the column options of
`lttw data check`, and the weak-factor warnings of the nmf / features stages."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from support.cli_runner import assert_user_error, invoke
from support.datasets import full_dataset
from support.stage_scripts import Ran, run_stage_script

from lttw import layout
from lttw.data.datasets import load_dataset
from lttw.data.sample_sizes import apportion
from lttw.data.sampling import draw_samples
from lttw.errors import DataError
from lttw.io import read_arrays, read_json
from lttw.settings import DataSettings

REPO = Path(__file__).resolve().parents[2]
CLASSES = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
#: a real 6-class question dataset's class counts: the rarest class has 86 train / 9 test rows
TRAIN = [86, 1162, 1250, 1223, 835, 896]
TEST = [9, 138, 94, 65, 81, 113]
DEFAULT_SIZES = {"train_size": 5000, "test_size": 1000, "predict_size": 1000}


@pytest.fixture(scope="module")
def questions(tmp_path_factory) -> Path:
    """data.root holding ``questions/``: manifest + train/test parquet, short string-labelled
    one-line texts: a row id (``test17``: never in the train vocabulary) and 6 other words."""
    root = tmp_path_factory.mktemp("root")
    folder = root / "questions"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for split, counts in (("train", TRAIN), ("test", TEST)):
        labels = np.repeat(CLASSES, counts)
        texts = [
            f"{split}{i} what is the {label.lower()} of w{rng.integers(0, 5)}"
            for i, label in enumerate(labels)
        ]
        pd.DataFrame({"text": texts, "label": labels}).to_parquet(folder / f"{split}.parquet")
    (folder / "manifest.json").write_text(
        json.dumps(
            {
                "text_column": "text",
                "label_column": "label",
                "splits": {"train": "train.parquet", "test": "test.parquet"},
            }
        )
    )
    return root


def settings(root: Path, **kw) -> DataSettings:
    return DataSettings(dataset="questions", root=str(root), **{**DEFAULT_SIZES, **kw})


def per_class(frame: pd.DataFrame) -> list[int]:
    return np.bincount(frame["label"], minlength=len(CLASSES)).tolist()


# ---- apportionment ---------------------------------------------------------------------


def test_apportion_is_proportional_capped_and_keeps_a_minimum():
    assert apportion(10, [1, 1], [100, 100]).tolist() == [5, 5]
    assert apportion(7, [1, 1], [100, 100]).tolist() == [4, 3]  # ties to the lower index
    assert apportion(100, [1, 99], [100, 100], minimum=1).tolist() == [1, 99]
    assert apportion(10, [1, 1000], [100, 100]).tolist() == [0, 10]
    assert apportion(10, [1, 1000], [100, 100], minimum=1).tolist() == [1, 9]
    assert apportion(50, [1, 1], [5, 100]).tolist() == [5, 45]  # capped, the rest moves on
    assert apportion(500, [1, 1], [5, 100]).tolist() == [5, 100]  # no more than the room
    assert apportion(1, [3, 2, 1], [9, 9, 9], minimum=1).tolist() == [1, 0, 0]


# ---- balanced: every unmet size in one message --------------------------------------------


def test_balanced_default_sizes_name_every_unmet_size_and_sizes_that_fit(questions):
    data = settings(questions)
    with pytest.raises(DataError) as err:
        draw_samples(load_dataset(data), data, seed=0)
    message = str(err.value)
    assert (
        "data.train_size=5000 needs 833 rows per class from the train split, whose rarest "
        "class ABBR has 86" in message
    )
    assert (
        "data.test_size + data.predict_size = 1000 + 1000 need 166 + 166 = 332 rows per "
        "class from the test split, whose rarest class ABBR has 9" in message
    )
    assert (
        "Sizes that fit together: data.train_size=516, data.test_size=30, "
        "data.predict_size=24" in message
    )
    assert "data.sampling=stratified" in message and "data.sampling=all" in message
    fitted = settings(questions, train_size=516, test_size=30, predict_size=24)
    frames, info = draw_samples(load_dataset(fitted), fitted, seed=0)
    assert info["sizes"] == {"train": 516, "test": 30, "predict": 24}
    assert "sampling" not in info  # balanced: labels.json as before


def test_balanced_one_pool_short_keeps_the_other_sizes(questions):
    data = settings(questions, train_size=300, test_size=60, predict_size=60)
    with pytest.raises(DataError) as err:
        draw_samples(load_dataset(data), data, seed=0)
    message = str(err.value)
    assert "data.train_size" not in message.split("Sizes that fit")[0]  # train fits
    assert "data.train_size=300, data.test_size=30, data.predict_size=24" in message


# ---- stratified ----------------------------------------------------------------------------


def test_stratified_keeps_class_proportions_disjoint_and_seeded(questions):
    data = settings(
        questions, train_size=600, test_size=100, predict_size=100, sampling="stratified"
    )
    dataset = load_dataset(data)
    frames, info = draw_samples(dataset, data, seed=0)
    assert info["sizes"] == {"train": 600, "test": 100, "predict": 100}
    assert info["sampling"] == "stratified"
    for split, pool in (("train", TRAIN), ("test", TEST), ("predict", TEST)):
        counts = np.array(per_class(frames[split]))
        expected = np.array(pool) * len(frames[split]) / sum(pool)
        assert np.all(np.abs(counts - expected) <= 1.0), (split, counts, expected)
        assert counts.min() >= 1  # the rarest class keeps a row
        assert info["per_class"][split] == counts.tolist()
    rows = [set(f["source_row"]) for f in frames.values()]
    assert not (rows[0] & rows[1] or rows[0] & rows[2] or rows[1] & rows[2])

    def parquet_bytes(seed):
        out = []
        for frame in draw_samples(dataset, data, seed)[0].values():
            buffer = io.BytesIO()
            frame.to_parquet(buffer, index=False)
            out.append(buffer.getvalue())
        return out

    assert parquet_bytes(3) == parquet_bytes(3) != parquet_bytes(4)


def test_stratified_too_large_suggests_sizes_that_fit(questions):
    data = settings(questions, sampling="stratified")
    with pytest.raises(DataError) as err:
        draw_samples(load_dataset(data), data, seed=0)
    message = str(err.value)
    assert (
        "data.test_size + data.predict_size = 1000 + 1000 need 2000 rows from the test "
        "split, which has 500" in message
    )
    assert "data.train_size=5000, data.test_size=250, data.predict_size=250" in message
    assert "data.sampling=all" in message
    fitted = settings(questions, test_size=250, predict_size=250, sampling="stratified")
    assert draw_samples(load_dataset(fitted), fitted, 0)[1]["sizes"]["test"] == 250


# ---- all ---------------------------------------------------------------------------------


def test_all_takes_every_row_and_says_sizes_are_ignored(questions, caplog):
    data = settings(questions, sampling="all")
    with caplog.at_level("INFO", logger="lttw.data"):
        frames, info = draw_samples(load_dataset(data), data, seed=0)
    assert per_class(frames["train"]) == TRAIN
    together = np.add(per_class(frames["test"]), per_class(frames["predict"])).tolist()
    assert together == TEST
    assert abs(len(frames["test"]) - len(frames["predict"])) <= len(CLASSES)  # 1000 : 1000
    assert set(frames["test"]["source_row"]).isdisjoint(frames["predict"]["source_row"])
    assert info["sampling"] == "all" and "ignored" in info["sizes_ignored"]
    assert "sizes' values are ignored" in caplog.text


def test_all_without_splits_divides_every_row_in_the_size_ratio(questions):
    data = settings(
        questions, sampling="all", use_splits=False, train_size=8, test_size=1, predict_size=1
    )
    frames, _ = draw_samples(load_dataset(data), data, seed=0)
    assert sum(len(f) for f in frames.values()) == sum(TRAIN) + sum(TEST)
    assert len(frames["train"]) == pytest.approx(0.8 * (sum(TRAIN) + sum(TEST)), abs=6)


# ---- the sample stage and `lttw data check` --------------------------------------------


def _stage(stage: str, cwd: Path, *args: str) -> Ran:
    """``python stages/<stage>.py ARGS`` in ``cwd``, in this process."""
    return run_stage_script(stage, cwd, *args)


def _params(folder: Path, root: Path, data: dict, **groups) -> Path:
    params = {"seed": 0, "data": {"dataset": "questions", "root": str(root), **data}, **groups}
    (folder / "params.yaml").write_text(yaml.safe_dump(params))
    return folder / "params.yaml"


def test_sample_stage_reports_every_unmet_size_at_once(questions, tmp_path):
    _params(tmp_path, questions, DEFAULT_SIZES)
    done = _stage("sample", tmp_path)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ") and "data.train_size=5000 needs" in line
    assert "data.test_size + data.predict_size = 1000 + 1000 need" in line
    assert "data.train_size=516, data.test_size=30, data.predict_size=24" in line
    assert not (tmp_path / "data").exists()


def test_data_check_one_problem_with_sizes_that_fit_and_rank_note(questions, tmp_path):
    params = _params(tmp_path, questions, DEFAULT_SIZES, nmf={"rank": 5})
    result = invoke("data", "check", "questions", "--params", params)
    line = assert_user_error(result, code=3)
    assert line.startswith("error: 1 problem(s): ")
    assert "data.train_size=5000 needs" in line and "1000 + 1000 need" in line
    assert "data.train_size=516, data.test_size=30, data.predict_size=24" in line
    assert "that fits is 0" not in line and "data.sampling=stratified" in line
    assert "nmf.rank=5 is below the number of classes (6)" in result.stdout


def test_data_check_fitting_sizes_pass_and_folds_are_checked(questions, tmp_path):
    fitting = {"train_size": 516, "test_size": 30, "predict_size": 24}
    params = _params(tmp_path, questions, fitting)  # nmf.rank: auto -> 6 for 6 classes
    result = invoke("data", "check", "questions", "--params", params)
    assert result.exit_code == 0, result.output
    assert "ok: the sample stage" in result.stdout and "nmf.rank" not in result.stdout
    params = _params(tmp_path, questions, {**fitting, "train_size": 300, "sampling": "stratified"})
    result = invoke("data", "check", "questions", "--params", params)
    assert (
        "folds.n_folds=10 needs at least 10 train-sample rows per class, but class ABBR "
        "would get 5" in " ".join(result.stdout.split())
    )


def test_data_check_sampling_option_overrides_params(questions, tmp_path):
    params = _params(tmp_path, questions, DEFAULT_SIZES)
    result = invoke("data", "check", "questions", "--sampling", "all", "--params", params)
    assert result.exit_code == 0, result.output
    assert "data.sampling=all" in result.stdout and "5452" in result.stdout


def test_data_check_names_its_column_options(tmp_path):
    pd.DataFrame({"review": ["good", "bad"] * 10, "stars": ["p", "n"] * 10}).to_csv(
        tmp_path / "r.csv", index=False
    )
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"data": {"root": str(tmp_path)}}))
    line = assert_user_error(
        invoke("data", "check", tmp_path / "r.csv", "--params", tmp_path / "params.yaml"),
        code=3,
    )
    assert "no text column 'text' and no label column 'label'" in line
    assert (
        "pass --text-column and --label-column (for the pipeline: set data.text_column "
        "and data.label_column)" in line
    )
    line = assert_user_error(
        invoke(
            "data",
            "check",
            tmp_path / "r.csv",
            "--text-column",
            "review",
            "--params",
            tmp_path / "params.yaml",
        ),
        code=3,
    )
    assert "pass --label-column (for the pipeline: set data.label_column)" in line


# ---- weak factors: the nmf warning and the slot figures, through the stage scripts --------


@pytest.mark.slow
def test_stratified_pipeline_warns_about_rank_and_short_texts(questions, tmp_path):
    _params(
        tmp_path,
        questions,
        {"train_size": 800, "test_size": 60, "predict_size": 60, "sampling": "stratified"},
        model={"k": 10, "s": 10},
        nmf={"rank": 5},
    )
    logs = {}
    for stage, args in [
        ("sample", ()),
        ("folds", ()),
        ("counts", ("--fold", "0")),
        ("nmf", ("--fold", "0")),
        ("features", ("--fold", "0")),
    ]:
        done = _stage(stage, tmp_path, *args)
        assert done.returncode == 0, f"{stage}: {done.stderr[-3000:]}"
        logs[stage] = done.stderr
    assert read_json(tmp_path / layout.LABELS_JSON)["sampling"] == "stratified"
    assert "nmf.rank=5 is below the number of classes (6)" in logs["nmf"]
    # a test text has 6 distinct words in the vocabulary: 6 of 10 top slots, no bottom one
    assert (
        "test: 6.0 of k=10 top and 0.0 of s=10 bottom slots filled on average" in logs["features"]
    )
    assert "the texts are short for model.k=10 / model.s=10" in logs["features"]
    assert read_arrays(tmp_path / layout.features_file(0))["test"].shape == (60, 20, 5)


# ---- the default (balanced) sample is unchanged -------------------------------------------


def test_default_params_give_the_locked_samples_byte_for_byte(tmp_path):
    """data.sampling=balanced (the default) draws exactly the samples recorded in dvc.lock,
    from the dataset folder the lock names: the embedded sample inside the repository, or a
    full copy (then under LTTW_DATA_ROOT)."""
    import hashlib

    from lttw.settings import read_settings

    lock = yaml.safe_load((REPO / "dvc.lock").read_text())
    locked = {
        dep["path"]: dep["md5"]
        for stage in lock["stages"].values()
        for dep in stage.get("deps", [])
        if dep["path"].startswith("data/sample/") and dep["path"].endswith(".parquet")
    }
    assert "data/sample/train.parquet" in locked
    settings = read_settings(REPO / "params.yaml")
    assert settings.data.sampling == "balanced"
    (folder,) = [
        dep["path"] for dep in lock["stages"]["sample"]["deps"] if dep["path"].endswith("ag_news")
    ]
    inside = (REPO / folder).resolve().is_relative_to(REPO)
    root = REPO / Path(folder).parent if inside else full_dataset("ag_news").parent
    data = settings.data.model_copy(update={"root": str(root)})
    frames, info = draw_samples(load_dataset(data), data, settings.seed)
    assert "sampling" not in info
    for path, md5 in locked.items():
        split = Path(path).stem
        frames[split].to_parquet(tmp_path / f"{split}.parquet", index=False)
        assert hashlib.md5((tmp_path / f"{split}.parquet").read_bytes()).hexdigest() == md5, path
