"""`lttw predict --file` keeps the file's other columns (all, or those --keep names) and reads
the project's text column; texts longer than the model reads are counted in a warning, or
with --chunk read whole in sliding windows (predict, and a server given the same predictor);
`predict("one text")` is one text; outside a project the command says what to do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from support.cli_runner import assert_user_error, invoke
from support.live_server import serving
from support.serving_models import CLASSES, labelled_texts, shared_lttw_folder

from lttw.inference.long_texts import WindowedPredictor, spans, windows
from lttw.inference.predict import Predictor

LONG = "team game match player season score " * 30  # ~180 tokens; the model reads 30


@pytest.fixture(scope="module")
def model(tmp_path_factory, tiny_encoder_dir):
    return shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)


def frame() -> pd.DataFrame:
    texts, labels = labelled_texts(2)
    ids = [f"{i:03d}" for i in range(len(texts))]  # leading zeros: kept as written
    return pd.DataFrame({"id": ids, "body": texts, "label": [CLASSES[i] for i in labels]})


def test_file_keeps_its_columns_and_reads_the_projects_text_column(model, tmp_path, monkeypatch):
    frame().to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"data": {"text_column": "body"}}))
    monkeypatch.chdir(tmp_path)
    result = invoke("predict", "--file", "in.csv", "--model", model, "--out", "out.csv")
    assert result.exit_code == 0, result.output
    out = pd.read_csv("out.csv", dtype=str, keep_default_na=False)
    assert list(out.columns[:5]) == ["id", "input_label", "text", "label", "prob"]
    assert out["id"].tolist() == frame()["id"].tolist()  # "000", not 0
    assert out["text"].tolist() == frame()["body"].tolist()
    assert (out["input_label"] == out["label"]).mean() > 0.7  # the model's answers


@pytest.mark.parametrize(
    ("keep", "columns"), [("id", ["id"]), ("", []), ("label,id", ["input_label", "id"])]
)
def test_keep_names_the_columns(model, tmp_path, keep, columns):
    frame().to_parquet(tmp_path / "in.parquet")
    args = ["predict", "--file", tmp_path / "in.parquet", "--model", model, "--no-text"]
    result = invoke(*args, "--text-column", "body", "--keep", keep, "--out", tmp_path / "o.pq")
    assert result.exit_code == 0, result.output
    out = pd.read_parquet(tmp_path / "o.pq")
    assert list(out.columns[: len(columns) + 1]) == [*columns, "label"]


def test_keep_of_a_missing_column_is_one_line(model, tmp_path):
    frame().to_csv(tmp_path / "in.csv", index=False)
    args = ["predict", "--file", tmp_path / "in.csv", "--text-column", "body", "--model", model]
    result = invoke(*args, "--keep", "id,ref", "--out", tmp_path / "o.csv")
    assert_user_error(result, "no column 'ref' to --keep", code=3)
    assert not (tmp_path / "o.csv").exists()


def test_long_texts_are_counted_or_read_in_windows(model, tmp_path):
    pd.DataFrame({"text": [LONG, "oil bank"]}).to_csv(tmp_path / "long.csv", index=False)
    args = ["predict", "--file", tmp_path / "long.csv", "--model", model, "--out"]
    cut = invoke(*args, tmp_path / "cut.csv")
    assert cut.exit_code == 0, cut.output
    assert "warning: 1 texts longer than the model's 30 tokens were cut" in cut.stderr
    whole = invoke(*args, tmp_path / "whole.csv", "--chunk")
    assert "read in sliding windows" in whole.stderr
    got = pd.read_csv(tmp_path / "whole.csv")[[f"prob_{c}" for c in CLASSES]].to_numpy()
    predictor = Predictor.load(model)
    pieces = windows(LONG, spans(predictor, [LONG])[0], 30)
    assert len(pieces) > 5 and all(len(spans(predictor, [p])[0]) <= 30 for p in pieces)
    np.testing.assert_allclose(got[0], predictor.predict_proba(pieces).mean(axis=0), atol=1e-5)
    np.testing.assert_allclose(got[1], predictor.predict_proba("oil bank")[0], atol=1e-5)


def test_a_server_reads_long_texts_in_windows(model):
    from lttw.serving.server import create_app

    plain, windowed = Predictor.load(model), WindowedPredictor(Predictor.load(model), True)
    with serving(create_app(windowed)) as (client, _, _):
        answer = client.post("/predict", json={"texts": [LONG], "top_k": 4}).json()
    assert windowed.long == 1
    served = {item["label"]: item["prob"] for item in answer["predictions"][0]["top"]}
    expected = windowed.predict_proba([LONG])[0]
    assert not np.allclose(expected, plain.predict_proba([LONG])[0], atol=1e-6)
    np.testing.assert_allclose([served[c] for c in CLASSES], expected, atol=1e-5)
    assert "--chunk" in invoke("serve", "--help").stdout


def test_one_string_is_one_text(model):
    import lttw

    predictor = lttw.load_model(model, device="cpu")
    assert predictor.predict("team game match") == ["Sports"]
    assert predictor.predict_proba("team game match").shape == (1, len(CLASSES))


def test_outside_a_project_the_error_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("predict", "a text")
    assert_user_error(result, "not an lttw project", "--model DIR", "lttw init")
    assert "parameters file not found" not in result.stderr
