"""``bilstm_attention`` on the counts stage's Chinese words with pretrained vectors, through the
real `dvc repro` (issue 12, item 3): the coverage is recorded, the model folder keeps its
vocabulary, `lttw predict` from the saved and the exported folder agree, and a malformed
vectors file stops the train stage with one line naming file and line, leaving no model."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from support.chinese_data import TOPICS, write_dataset
from support.tiny_project import git_commit, lttw, make_tiny_project, ran, run, set_params

pytestmark = pytest.mark.slow  # the real `dvc repro` on a project of its own

#: 4-d vectors: whole words, and characters from which other words are composed
VECTORS = {
    "比赛": [1, 0, 0, 0],
    "股票": [0, 1, 0, 0],
    "手机": [0, 0, 1, 0],
    "电影": [0, 0, 0, 1],
    "球": [1, 1, 0, 0],
    "队": [1, 0, 1, 0],
    "the": [5, 5, 5, 5],
}


def write_vec(path: Path, rows: dict) -> Path:
    lines = [f"{len(rows)} 4"] + [f"{w} " + " ".join(map(str, v)) for w, v in rows.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_encoder_dir) -> Path:
    root = make_tiny_project(tmp_path_factory.mktemp("zh_vectors"), tiny_encoder_dir)
    datasets = tmp_path_factory.mktemp("datasets")
    write_dataset(datasets)
    vectors = write_vec(tmp_path_factory.mktemp("vectors") / "zh.vec", VECTORS)
    set_params(
        root,
        data={"dataset": "tiny_zh", "root": str(datasets)},
        words={"splitter": "jieba"},
        nmf={"rank": 4},
        model={
            "variant": "bilstm_attention",
            "vocab": "words",
            "word_vectors": str(vectors),
            "hidden": 16,
            "layers": 1,
            # the tiny encoder reads none of these characters, and auto would grow it in the
            # tokens stage (transformers' model code: seconds); this model reads words only
            "extend_vocab": False,
        },
    )
    git_commit(root, "tiny Chinese profile, word vectors")
    return root


def test_bilstm_on_words_with_vectors(project):
    out = run(["dvc", "repro", "evaluate@0"], project)  # the final model, summary: unread
    assert {"train@0", "evaluate@0"} <= ran(out)
    record = json.loads((project / "metrics/train/fold_0.json").read_text())["word_vectors"]
    vocabulary = json.loads((project / "data/counts/fold_0/vocabulary.json").read_text())
    assert record["vocabulary"] == len(vocabulary) and record["dim"] == 4
    assert record["found"] == 4 and record["composed"] >= 1  # 球队 from 球 and 队
    assert 0 < record["token_share"] < record["token_share_composed"] < 1
    assert "of training tokens covered" in out
    folder = project / "models/fold_0"
    assert json.loads((folder / "words/vocabulary.json").read_text()) == vocabulary
    assert json.loads((folder / "words/words.json").read_text())["splitter"] == "jieba"
    assert not (folder / "tokenizer").exists()
    scores = json.loads((project / "metrics/folds/fold_0.json").read_text())
    assert scores  # the evaluate stage read word ids over the folder's vocabulary

    texts = ["球队赢得联赛冠军", "股票市场上涨"]
    lttw(["predict", "--model", "models/fold_0", "--out", "saved.csv", *texts], project)
    lttw(["export", "--out", "exported", "--model", "models/fold_0"], project)
    lttw(["predict", "--model", "exported", "--out", "exported.csv", *texts], project)
    saved, exported = (pd.read_csv(project / name) for name in ("saved.csv", "exported.csv"))
    assert saved["text"].tolist() == texts and set(saved["label"]) <= set(TOPICS)
    assert any(column not in ("text", "label") for column in saved.columns)  # probabilities
    pd.testing.assert_frame_equal(saved, exported)
    git_commit(project, "vectors run")


def test_malformed_vectors_fail_train_in_one_line(project, tmp_path):
    bad = tmp_path / "bad.vec"
    bad.write_text("2 4\n比赛 1 0 0 0\n股票 1 0 0\n", encoding="utf-8")
    set_params(project, model={"word_vectors": str(bad)})
    out = run(["dvc", "repro"], project, check=False)
    named = [line for line in out.splitlines() if f"{bad}: line 3:" in line]
    assert len(named) == 1 and "expected a word and 4 values" in named[0], out[-3000:]
    assert "Traceback" not in out
    assert not (project / "models/fold_0").exists()
