"""Chinese text end to end (issue 12): a tiny Chinese dataset built here goes through the
pipeline; `auto` resolves to jieba from the manifest's language, the rule is recorded beside
the vocabulary and in the model folder, `lttw predict` / `lttw explain` work on Chinese text
from the saved and an exported folder; the char rule reruns counts and what follows only (and
going back to jieba restores its outputs from DVC's run cache), and the (degenerate) regex
rule's splitting is loud. Then, in the same project, ``bilstm_attention`` on the counts
stage's Chinese words with pretrained vectors (issue 12, item 3): the coverage is recorded,
the model folder keeps its vocabulary, `lttw predict` from the saved and the exported folder
agree, and a malformed vectors file stops the train stage with one line naming file and line,
leaving no model.

Engines: what the stages compute (the jieba run, the regex warnings, bilstm, the malformed
vectors) runs in this process (``in_process_pipeline``); what DVC reruns on a rule change and
restores from its run cache is the real ``dvc repro`` (the char rule's test, on the lock that
``dvc commit`` writes of the in-process run; its stages in processes of their own, the
``dvc commit``, which runs none, in this process: ``support.dvc_runner``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from support.chinese_data import COMMON, TOPICS, chinese_titles, write_dataset  # noqa: F401
from support.dvc_runner import dvc
from support.in_process_pipeline import PipelineRun, StageFailed, run_pipeline
from support.tiny_project import (
    dvc_status,
    git_commit,
    lttw,
    make_tiny_project,
    ran,
    run,
    set_params,
)

pytestmark = pytest.mark.slow  # a pipeline of its own, and the real `dvc repro`


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_encoder_dir) -> Path:
    root = make_tiny_project(tmp_path_factory.mktemp("zh"), tiny_encoder_dir)
    datasets = tmp_path_factory.mktemp("datasets")
    write_dataset(datasets)
    set_params(
        root,
        data={"dataset": "tiny_zh", "root": str(datasets)},
        words={"splitter": "auto"},
        nmf={"rank": 4},
    )
    git_commit(root, "tiny Chinese profile")
    # the first run belongs to the fixture, so that each test below starts from a run project
    # whichever worker and order it runs in (up to train@0: the fold's model folder is what
    # the first test reads; evaluate@0 runs in the bilstm test, final and summary read no
    # words)
    FIRST_RUN[root] = run_pipeline(root, "train@0")
    return root


FIRST_RUN: dict[Path, PipelineRun] = {}  # project -> its first run
STAGES = ("counts", "nmf", "features")  # what a words.splitter change reruns (per fold)


def words_json(project: Path) -> dict:
    return json.loads((project / "data/counts/fold_0/words.json").read_text())


def test_auto_resolves_to_jieba_and_predicts_chinese(project):
    out = FIRST_RUN[project].output
    assert "train@0" in FIRST_RUN[project].ran and "degenerate word splitting" not in out
    # the tiny encoder has no CJK character: the tokens stage says so, naming model.encoder
    assert "encoder coverage: 100% of the tokens are [UNK] with model.encoder=" in out
    # ... and model.extend_vocab (auto) adds the CJK characters to it, for every later stage
    extension = json.loads((project / "data/tokens/encoder/vocab_extension.json").read_text())
    assert extension["added"] > 20 and extension["unk_share_after"] < 0.05
    assert f"{extension['added']} pieces added to the encoder's vocabulary" in out
    encoder_config = json.loads((project / "models/fold_0/config.json").read_text())
    assert encoder_config["config"]["encoder_config"]["vocab_size"] == extension["vocab_after"]
    rule = words_json(project)
    assert rule["splitter"] == "jieba" and "language 'zh'" in rule["reason"]
    vocabulary = json.loads((project / "data/counts/fold_0/vocabulary.json").read_text())
    assert {"比赛", "股票", "手机", "电影"} <= set(vocabulary)
    meta = json.loads((project / "models/fold_0/lttw.json").read_text())
    assert meta["words"]["splitter"] == "jieba"
    assert (
        json.loads((project / "models/fold_0/factors/words.json").read_text())["splitter"]
        == "jieba"
    )

    text = "球队赢得联赛冠军"
    lttw(["predict", "--model", "models/fold_0", "--out", "saved.csv", text], project)
    lttw(["export", "--out", "exported", "--model", "models/fold_0"], project)
    assert json.loads((project / "exported/lttw.json").read_text())["words"] == meta["words"]
    lttw(["predict", "--model", "exported", "--out", "exported.csv", text], project)
    saved, exported = (pd.read_csv(project / name) for name in ("saved.csv", "exported.csv"))
    assert saved["text"].tolist() == [text] and saved["label"].iloc[0] in TOPICS
    pd.testing.assert_frame_equal(saved, exported)  # same weights, same batch: exact
    explained = json.loads(lttw(["explain", "--model", "exported", "--json", text], project).stdout)
    assert explained["factors"]["words"] == ["球队", "赢得", "联赛", "冠军"]
    shown = lttw(["explain", "--model", "exported", text], project).stdout
    assert "球队 赢得 联赛 冠军" in shown


def test_char_rule_reruns_counts_and_after_only(project):
    # DVC's record of the in-process run (dvc.lock, its cache and run cache), as `dvc repro`
    # would have left it
    dvc(["commit", "-f", "--with-deps", "train@0"], project)  # in this process: runs no stage
    set_params(project, words={"splitter": "char"})
    # up to features@0: what a rule change reruns; train@0 and after are stale (`dvc status`),
    # training them again would check nothing more about the rule
    out = run(["dvc", "repro", "features@0"], project)
    assert ran(out) == {"counts@0", "nmf@0", "features@0"}
    assert "train@0" in dvc_status(project, "train@0")
    assert words_json(project)["splitter"] == "char"
    vocabulary = json.loads((project / "data/counts/fold_0/vocabulary.json").read_text())
    assert all(len(word) == 1 for word in vocabulary)
    # back to the rule the model was trained with: its outputs restored from DVC's run cache,
    # and train@0 up to date again, nothing reruns
    set_params(project, words={"splitter": "auto"})
    out = run(["dvc", "repro", "train@0"], project)
    assert ran(out) == set() and words_json(project)["splitter"] == "jieba", out
    assert "Stage 'counts@0' is cached - skipping run, checking out outputs" in out


def test_regex_rule_on_chinese_is_loud(project):
    """The warnings are the counts and features stages' own (what a rule change reruns
    through DVC: the char rule's test)."""
    set_params(project, words={"splitter": "regex"})
    out = run_pipeline(project, *(f"{stage}@0" for stage in STAGES), only=True).output
    assert "degenerate word splitting with words.splitter=regex" in out
    assert "the median text has 1 word(s)" in out  # counts
    assert "get all-zero factor rows (more than 30%)" in out  # features: titles are unique


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


def test_bilstm_on_words_with_vectors(project, tmp_path_factory):
    vectors = write_vec(tmp_path_factory.mktemp("vectors") / "zh.vec", VECTORS)
    set_params(
        project,
        words={"splitter": "auto"},  # jieba, as the first run: its counts and NMF are reused
        model={
            "variant": "bilstm_attention",
            "vocab": "words",
            "word_vectors": str(vectors),
            "hidden": 16,
            "layers": 1,
        },
    )
    # the jieba rule's counts again (the regex test's are on disk), then the model; the final
    # model and summary read no words
    stages = [*(f"{stage}@0" for stage in STAGES), "train@0", "evaluate@0"]
    out = run_pipeline(project, *stages, only=True).output
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
    model = ["--model", "models/fold_0"]
    lttw(["predict", *model, "--out", "vectors_saved.csv", *texts], project)
    lttw(["export", "--out", "vectors_exported", *model], project)
    lttw(
        ["predict", "--model", "vectors_exported", "--out", "vectors_exported.csv", *texts], project
    )
    saved, exported = (
        pd.read_csv(project / name) for name in ("vectors_saved.csv", "vectors_exported.csv")
    )
    assert saved["text"].tolist() == texts and set(saved["label"]) <= set(TOPICS)
    assert any(column not in ("text", "label") for column in saved.columns)  # probabilities
    pd.testing.assert_frame_equal(saved, exported)  # same weights, same batch: exact


def test_malformed_vectors_fail_train_in_one_line(project, tmp_path):
    bad = tmp_path / "bad.vec"
    bad.write_text("2 4\n比赛 1 0 0 0\n股票 1 0 0\n", encoding="utf-8")
    set_params(
        project,
        words={"splitter": "auto"},
        model={"variant": "bilstm_attention", "vocab": "words", "word_vectors": str(bad)},
    )
    with pytest.raises(StageFailed) as failed:
        run_pipeline(project, "train@0", only=True)
    out = failed.value.ran.stdout + failed.value.ran.stderr
    named = [line for line in out.splitlines() if f"{bad}: line 3:" in line]
    assert len(named) == 1 and "expected a word and 4 values" in named[0], out[-3000:]
    assert "Traceback" not in out
    assert not (project / "models/fold_0").exists()
