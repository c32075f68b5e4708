"""``lttw data check`` on multi-label data (issue 42): label columns that look delimited or
like lists written as text get the setting to use; multi-label data gets its labels per text,
per-class counts and a plan; ``lttw init --label-delimiter`` writes the parameter."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from support.multi_label_data import CLASSES, label_rows, texts_for, write_multi_label_folder

from lttw.checks.dataset import check_dataset
from lttw.project.files import project_params
from lttw.settings import Settings


def settings(**data) -> Settings:
    defaults = Settings()
    sizes = {"train_size": 200, "test_size": 50, "predict_size": 0, "sampling": "stratified"}
    return defaults.model_copy(update={"data": defaults.data.model_copy(update={**sizes, **data})})


def joined_csv(tmp_path, join) -> str:
    labels = label_rows(400)
    frame = pd.DataFrame({"text": texts_for(labels, "t"), "label": [join(r) for r in labels]})
    frame.to_csv(tmp_path / "joined.csv", index=False)
    return str(tmp_path / "joined.csv")


def test_a_delimited_label_column_gets_the_delimiter_to_set(tmp_path):
    path = joined_csv(tmp_path, ", ".join)
    check = check_dataset(settings(), path)
    advice = check.problems[0]
    assert "look like several labels joined by ', '" in advice
    assert f"split they are {len(CLASSES)}" in advice
    assert "data.label_delimiter: ', '" in advice and "\n" not in advice


def test_with_the_delimiter_the_check_reports_labels_per_text(tmp_path):
    path = joined_csv(tmp_path, "|".join)
    check = check_dataset(settings(), path, label_delimiter="|")
    assert check.dataset.multi_label and not check.problems
    per_text = check.dataset.labels.sum(axis=1)
    assert check.cardinality.mean == pytest.approx(per_text.mean())
    assert check.cardinality.share_several == pytest.approx((per_text > 1).mean())
    assert check.class_table["total"].tolist() == check.dataset.labels.sum(axis=0).tolist()
    assert check.plan.loc["train", "rows"] == 200 and bool(check.plan["fits"].all())


def test_multi_label_false_keeps_combined_classes_without_advice(tmp_path):
    path = joined_csv(tmp_path, "|".join)
    check = check_dataset(settings(multi_label=False), path)
    assert not check.problems


def test_lists_written_as_text_are_named(tmp_path):
    path = joined_csv(tmp_path, lambda r: str(list(r)))
    advice = check_dataset(settings(), path).problems[0]
    assert "look like lists written as text" in advice and "JSON Lines" in advice


def test_plain_single_label_classes_get_no_advice(tmp_path):
    frame = pd.DataFrame(
        {"text": [f"t{i}" for i in range(300)], "label": ["Sci/Tech", "World", "A & B"] * 100}
    )
    frame.to_csv(tmp_path / "plain.csv", index=False)
    assert not check_dataset(settings(), str(tmp_path / "plain.csv")).problems


def test_balanced_sampling_of_multi_label_data_is_a_problem_not_a_crash(tmp_path):
    write_multi_label_folder(tmp_path, "emo")
    check = check_dataset(settings(root=str(tmp_path), sampling="balanced"), "emo")
    assert any("cannot balance multi-label data" in p for p in check.problems)
    assert check.cardinality is not None


def test_init_writes_the_label_delimiter_into_params():
    params = yaml.safe_load(project_params("emotions.csv", None, None, "|"))
    assert params["data"]["label_delimiter"] == "|"
    assert yaml.safe_load(project_params("x.csv"))["data"]["label_delimiter"] is None
