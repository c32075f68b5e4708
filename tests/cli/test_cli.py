"""The `lttw` CLI: help, one-line user errors, data check / list, streaming predict, explain,
export. Fast tests use typer's CliRunner with a stand-in predictor or small files; the slow
ones read the session's one real tiny project (`dvc repro` once) and its trained model."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from support.cli_runner import assert_user_error, invoke  # noqa: F401
from typer.testing import CliRunner

from lttw import cli
from lttw.inference import text_sources
from lttw.inference.predict import Predictor

COMMANDS = [
    ["predict"],
    ["explain"],
    ["export"],
    ["serve"],
    ["report"],
    ["data", "check"],
    ["data", "list"],
    ["init"],
]


# ------------------------------------------------------------------ help and errors


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0 and "Examples" in result.stdout
    assert f"lttw {' '.join(command)}" in result.stdout


def test_user_errors_are_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no models/final of the checkout's own pipeline run
    assert_user_error(invoke("predict"), "either TEXT arguments or --file")
    assert_user_error(invoke("predict", "--file", tmp_path / "a.txt"), "--file needs --out")
    assert_user_error(
        invoke("predict", "--file", tmp_path / "none.txt", "--out", "x.csv"), "none.txt", code=3
    )
    assert_user_error(invoke("predict", "hi", "--out", tmp_path / "x.json"), "unsupported")
    assert_user_error(invoke("predict", "hi", "--model", tmp_path), "not a trained model", code=3)
    assert_user_error(invoke("explain", "hi", "--params", tmp_path / "no.yaml"), "no.yaml")
    (tmp_path / "bad.yaml").write_text("model:\n  k: -1\n  s: lots\n")
    line = assert_user_error(invoke("explain", "hi", "--params", tmp_path / "bad.yaml"))
    assert "model.k" in line and "model.s" in line  # two settings errors, still one line


# ------------------------------------------------------------------ data check / list


@pytest.fixture
def data_dir(tmp_path) -> Path:
    words = "good bad movie film great awful fun boring".split()
    rng = np.random.default_rng(0)

    def frame(n):
        return pd.DataFrame(
            {
                "review": [" ".join(rng.choice(words, 6)) for _ in range(n)],
                "stars": [("pos", "neg")[i % 2] for i in range(n)],
            }
        )

    frame(80).to_csv(tmp_path / "good.csv", index=False)
    nan = frame(80)
    nan.loc[[3, 7], "review"] = np.nan
    nan.to_csv(tmp_path / "nan.csv", index=False)
    small = frame(80)
    small.loc[:70, "stars"] = "pos"
    small.to_csv(tmp_path / "small.csv", index=False)
    (tmp_path / "latin1.csv").write_bytes(
        "review,stars\ncafé good,pos\nbad,neg\n".encode("latin-1")
    )
    (tmp_path / "params.yaml").write_text(
        yaml.safe_dump(
            {"data": {"root": str(tmp_path), "train_size": 40, "test_size": 4, "predict_size": 4}}
        )
    )
    return tmp_path


def check(data_dir: Path, name: str, *extra: str):
    return invoke(
        "data",
        "check",
        data_dir / name,
        "--text-column",
        "review",
        "--label-column",
        "stars",
        "--params",
        data_dir / "params.yaml",
        *extra,
    )


def test_data_check_good_file(data_dir):
    result = check(data_dir, "good.csv")
    assert result.exit_code == 0, result.output
    assert "Class balance" in result.stdout and "ok: the sample stage" in result.stdout


@pytest.mark.parametrize(
    "name,needles",
    [
        ("nan.csv", ["2 rows with an empty or missing text"]),
        ("latin1.csv", ["not valid UTF-8", "line 2"]),
        (
            "small.csv",
            [
                "data.train_size + data.test_size + data.predict_size = 40 + 4 + 4 need",
                "Sizes that fit together: data.train_size=6, data.test_size=2, data.predict_size=2",
            ],
        ),
        ("missing.csv", ["missing.csv", "no such file"]),
    ],
)
def test_data_check_bad_inputs(data_dir, name, needles):
    assert_user_error(check(data_dir, name), *needles, code=3)


def test_data_check_missing_column(data_dir):
    result = invoke("data", "check", data_dir / "good.csv", "--params", data_dir / "params.yaml")
    assert_user_error(result, "no text column 'text'", "review, stars", code=3)


def test_data_check_notes_and_dataset_name(data_dir):
    params = yaml.safe_load((data_dir / "params.yaml").read_text())
    params["data"].update(train_size=41, text_column="review", label_column="stars")
    (data_dir / "params.yaml").write_text(yaml.safe_dump(params))
    result = invoke("data", "check", "good.csv", "--params", data_dir / "params.yaml")
    assert result.exit_code == 0, result.output  # found as a name under data.root
    assert "not divisible by 2 classes" in result.stdout


def test_data_list(tmp_path):
    folder = tmp_path / "ag_news"
    folder.mkdir()
    pd.DataFrame({"text": ["a", "b"], "label": [0, 1]}).to_parquet(folder / "train.parquet")
    (folder / "manifest.json").write_text(
        json.dumps(
            {"splits": {"train": "train.parquet", "test": "test.parquet"}, "complete": False}
        )
    )
    (tmp_path / "mine").mkdir()
    pd.DataFrame({"text": ["x"], "label": [1]}).to_csv(tmp_path / "mine" / "all.csv")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"data": {"root": str(tmp_path)}}))
    result = invoke("data", "list", "--json", "--params", tmp_path / "params.yaml")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["ag_news"]["status"] == "partial" and rows["ag_news"]["rows"]["train"] == 2
    assert rows["ag_news"]["hub"] == "hf://datasets/fancyzhx/ag_news"
    assert rows["sst2"]["status"] == "missing" and rows["sst2"]["hub"].endswith("stanfordnlp/sst2")
    assert rows["mine"]["status"] == "present (no manifest)"
    table = invoke("data", "list", "--params", tmp_path / "params.yaml")
    assert table.exit_code == 0 and "yahoo_answers" in table.stdout


# ------------------------------------------------------------------ streaming predict


class CountingPredictor:
    """Stands in for ``Predictor``: records how many texts each call received."""

    classes = ["neg", "pos"]

    def __init__(self):
        self.calls: list[int] = []

    def predict_proba(self, texts, batch_size=64):
        self.calls.append(len(texts))
        return np.array(
            [[0.2, 0.8] if "good" in t else [0.7, 0.3] for t in texts], np.float32
        ).reshape(len(texts), 2)


def lines(n: int) -> list[str]:
    return [f"line {i} is {'good' if i % 3 else 'bad'}" for i in range(n)]


@pytest.mark.parametrize("suffix", [".txt", ".csv", ".parquet"])
@pytest.mark.parametrize("out_suffix", [".csv", ".parquet"])
def test_predict_file_streams_in_chunks(tmp_path, monkeypatch, suffix, out_suffix):
    fake = CountingPredictor()
    monkeypatch.setattr(cli.predict, "open_model", lambda *a, **k: fake)
    monkeypatch.setattr(text_sources, "CHUNK_ROWS", 100)
    texts, src = lines(1050), tmp_path / f"in{suffix}"
    if suffix == ".txt":
        src.write_text("\n".join(texts) + "\n")
    else:
        frame = pd.DataFrame({"id": range(len(texts)), "body": texts})
        frame.to_csv(src, index=False) if suffix == ".csv" else frame.to_parquet(src)
    column = [] if suffix == ".txt" else ["--text-column", "body"]
    out = tmp_path / f"out{out_suffix}"
    result = invoke("predict", "--file", src, *column, "--out", out)
    assert result.exit_code == 0, result.output
    assert max(fake.calls) <= 100 and sum(fake.calls) == len(texts)
    got = pd.read_csv(out) if out_suffix == ".csv" else pd.read_parquet(out)
    kept = [] if suffix == ".txt" else ["id"]  # the file's other columns come along
    assert list(got.columns) == [*kept, "text", "label", "prob", "prob_neg", "prob_pos"]
    assert got["text"].tolist() == texts
    assert got["label"].tolist() == ["pos" if "good" in t else "neg" for t in texts]
    assert not list(tmp_path.glob(".out*"))  # the temporary file was renamed away


def test_predict_stdout_and_no_text(tmp_path, monkeypatch):
    monkeypatch.setattr(cli.predict, "open_model", lambda *a, **k: CountingPredictor())
    (tmp_path / "in.txt").write_text("good one\nbad one\n\n")
    result = invoke("predict", "--file", tmp_path / "in.txt", "--out", "-", "--no-text")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "label,prob,prob_neg,prob_pos",
        "pos,0.8,0.2,0.8",
        "neg,0.7,0.7,0.3",
        "neg,0.7,0.7,0.3",
    ]


class LongLabelPredictor(CountingPredictor):
    classes = ["neg", "Society_and_Culture_and_Everything_Else"]


def test_predict_table_shows_label_and_probability_in_full_at_80_columns(monkeypatch):
    """Issue 13.8: the text is cut (…) to the room left; label and probability never are."""
    monkeypatch.setattr(cli.predict, "open_model", lambda *a, **k: LongLabelPredictor())
    long_text = "a good and very long text that goes on " * 6
    result = CliRunner().invoke(cli.app, ["predict", long_text, "bad"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    rows = result.stdout.splitlines()
    assert all(len(row) <= 80 for row in rows), result.stdout
    first = next(row for row in rows if "a good and" in row)
    assert "Society_and_Culture_and_Everything_Else" in first and "0.8000" in first
    assert "…" in first and long_text.strip() not in result.stdout
    assert any("neg" in row and "0.7000" in row and "bad" in row for row in rows)


# ------------------------------------------------------------------ on a real tiny model


@pytest.fixture(scope="module")
def project(tiny_repro) -> Path:
    """The session's tiny pipeline run, its trained model and samples: read only (a test
    that changes a model folder works in a copy of it, ``model_with``)."""
    return tiny_repro.root


def model_with(project: Path, tmp: Path, **changes) -> Path:
    """A copy of the trained model folder whose classifier is rebuilt (random head) with
    changed LTTW config values, e.g. attention='mha'."""
    from lttw.models import registry
    from lttw.models.folder_files import record_checksums
    from lttw.models.lttw import LTTWClassifier, LTTWConfig

    folder = tmp / "_".join(f"{k}-{v}" for k, v in changes.items())
    shutil.copytree(project / "models" / "fold_0", folder)
    _, config = registry.read_model_config(folder)
    torch.manual_seed(0)
    registry.save_model(LTTWClassifier(LTTWConfig(**{**config, **changes})), folder)
    record_checksums(folder)  # a model folder written anew, as training writes one
    return folder


def explain_json(project: Path, text: str, *extra) -> dict:
    result = invoke("explain", text, "--json", "--params", project / "params.yaml", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


TEXT = "Stocks rally as oil prices fall and the bank shares profit, oil oil"


@pytest.mark.slow
def test_predict_texts_with_the_default_model(project, monkeypatch):
    monkeypatch.chdir(project)
    result = invoke("predict", "Stocks rally as oil prices fall", "The team won the game")
    assert result.exit_code == 0, result.output
    assert "Stocks rally as oil prices fall" in result.stdout and "prob" in result.stdout


@pytest.mark.slow
def test_predict_a_long_file_streams_in_chunks(project, tmp_path, monkeypatch):
    seen: list[int] = []
    original = Predictor.predict_proba

    def recording(self, texts, batch_size=64):
        seen.append(len(texts))
        return original(self, texts, batch_size)

    monkeypatch.setattr(Predictor, "predict_proba", recording)
    monkeypatch.setattr(text_sources, "CHUNK_ROWS", 128)  # 1,000 lines: 8 chunks
    texts = [
        f"{w} prices and the team game {i}"
        for i, w in zip(range(1000), ["oil", "stocks", "match", "world"] * 250)
    ]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n")
    model = project / "models" / "fold_0"
    for out in (tmp_path / "p.parquet", tmp_path / "p.csv"):
        seen.clear()
        result = invoke("predict", "--file", tmp_path / "in.txt", "--model", model, "--out", out)
        assert result.exit_code == 0, result.output
        assert max(seen) <= 128 and sum(seen) == 1000 and len(seen) >= 8
        got = pd.read_parquet(out) if out.suffix == ".parquet" else pd.read_csv(out)
        assert len(got) == 1000 and got["text"].tolist() == texts
    classes = Predictor.load(model).classes
    probs = got[[f"prob_{c}" for c in classes]].to_numpy()
    assert np.allclose(probs.sum(axis=1), 1, atol=1e-4)
    assert np.allclose(probs[:5], original(Predictor.load(model), texts[:5]), atol=1e-5)


def check_common(doc: dict, predictor: Predictor) -> None:
    probs = np.array([doc["prediction"]["probabilities"][c] for c in doc["classes"]])
    assert np.allclose(probs, predictor.predict_proba([TEXT])[0], atol=1e-5)
    f = doc["factors"]
    tensor = predictor.factors([TEXT])[0]  # what the model was fed: (k+s, rank)
    H = np.array(f["factor_label"])
    assert H.shape == (f["rank"], len(doc["classes"])) and f["top"]
    for entry in f["top"] + f["bottom"]:
        assert np.allclose(tensor[entry["slot"]], entry["factor"])
        affinity = [entry["class_affinity"][c] for c in doc["classes"]]
        assert np.allclose(np.array(entry["factor"]) @ H, affinity, atol=1e-6)
    assert [e["word"] for e in f["top"]][0] == "oil"  # three times in the text


@pytest.mark.slow
def test_explain_json_linformer(project):
    doc = explain_json(project, TEXT, "--model", project / "models" / "fold_0")
    check_common(doc, Predictor.load(project / "models" / "fold_0"))
    att = doc["attention"]
    assert att["kind"] == "linformer" and len(att["slots"]) == 8  # tiny profile: K=8
    assert math.isclose(sum(att["slots"]), 1, rel_tol=1e-5)
    assert att["positions"][0]["token"] == "[CLS]" and "approximate" in att["note"]


@pytest.mark.slow
def test_explain_json_mha_and_sequence(project, tmp_path):
    mha = model_with(project, tmp_path, attention="mha")
    doc = explain_json(project, TEXT, "--model", mha)
    check_common(doc, Predictor.load(mha))
    att = doc["attention"]
    assert att["kind"] == "mha" and att["slots"] is None
    assert math.isclose(sum(p["weight"] for p in att["positions"]), 1, rel_tol=1e-5)
    seq = explain_json(project, TEXT, "--model", model_with(project, tmp_path, fusion="sequence"))
    tokens = [p["token"] for p in seq["attention"]["positions"]]
    assert tokens[0] == "[CLS]" and tokens[1] == "<factor 0: oil>"


@pytest.mark.slow
def test_explain_without_attention_and_rich_output(project, tmp_path):
    folder = model_with(project, tmp_path, attention="none")
    doc = explain_json(project, TEXT, "--model", folder)
    assert doc["attention"]["kind"] == "none" and doc["attention"]["positions"] == []
    result = invoke("explain", TEXT, "--model", folder)
    assert result.exit_code == 0, result.output
    assert "Factor-label matrix" in result.stdout and "attention: none" in result.stdout


@pytest.mark.slow
def test_explain_a_baseline_without_factors_or_attention(project, tmp_path):
    from lttw.models import registry
    from lttw.models.encoder_head import EncoderClassifier, EncoderHeadConfig
    from lttw.models.folder_files import record_checksums

    folder = tmp_path / "encoder"
    shutil.copytree(project / "models" / "fold_0", folder)
    shutil.rmtree(folder / "factors")
    meta = json.loads((folder / "lttw.json").read_text())
    (folder / "lttw.json").write_text(
        json.dumps({**meta, "variant": "encoder", "with_factors": False})
    )
    _, config = registry.read_model_config(folder)
    registry.save_model(
        EncoderClassifier(
            EncoderHeadConfig(n_labels=config["n_labels"], encoder_config=config["encoder_config"])
        ),
        folder,
    )
    record_checksums(folder)  # a model folder written anew, as training writes one
    doc = explain_json(project, TEXT, "--model", folder)
    assert doc["variant"] == "encoder" and doc["factors"] is None
    assert doc["attention"]["kind"] == "unavailable" and "encoder" in doc["attention"]["note"]


@pytest.mark.slow
def test_export(project, tmp_path):
    model, out = project / "models" / "fold_0", tmp_path / "exported" / "lttw"
    result = invoke("export", "--model", model, "--out", out)
    assert result.exit_code == 0, result.output
    for name in (
        "config.json",
        "model.safetensors",
        "labels.json",
        "lttw.json",
        "tokenizer",
        "factors/latent_factors.safetensors",
    ):
        assert (out / name).exists(), name
    texts = ["oil prices", "the team won"]
    assert np.allclose(
        Predictor.load(out).predict_proba(texts), Predictor.load(model).predict_proba(texts)
    )
    assert [p.name for p in out.parent.iterdir()] == ["lttw"]  # no temporary folder left
    assert_user_error(invoke("export", "--model", model, "--out", out), "--force")
    assert invoke("export", "--model", model, "--out", out, "--force").exit_code == 0
    assert_user_error(invoke("export", "--model", model, "--out", model.parent), "model folder")
    precious = tmp_path / "precious"  # --force replaces a model folder, nothing else
    precious.mkdir()
    (precious / "notes.txt").write_text("keep\n")
    refused = invoke("export", "--model", model, "--out", precious, "--force")
    assert_user_error(refused, "not a model folder")
    assert (precious / "notes.txt").read_text() == "keep\n"


@pytest.mark.slow
def test_data_check_on_the_project_dataset(project, monkeypatch):
    monkeypatch.chdir(project)
    result = invoke("data", "check", "ag_news")
    assert result.exit_code == 0, result.output
    assert "World" in result.stdout and "the train split" in result.stdout


def test_invalid_utf8_is_one_line_exit_3(tmp_path):
    """Bytes that are not UTF-8, as an argument or on stdin: one error line naming where,
    exit 3 (bad input), before any model is loaded; no traceback. The argument through a
    process of its own (Python keeps its bytes as lone surrogates); the same argument to
    `explain`, and stdin, in-process."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "lttw.cli", "predict", b"caf\xe9"], capture_output=True, cwd=tmp_path
    )
    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
    assert done.returncode == 3, err
    assert len(err) == 1 and err[0].startswith("error: ") and "not valid UTF-8" in err[0], err
    assert "TEXT" in err[0]
    surrogate = b"caf\xe9".decode("utf-8", "surrogateescape")  # as the process holds it
    line = assert_user_error(invoke("explain", surrogate), "not valid UTF-8", code=3)
    assert "TEXT" in line
    stdin = CliRunner().invoke(cli.app, ["predict", "-"], input=b"fine\ncaf\xe9\n")
    assert_user_error(stdin, "not valid UTF-8", "stdin: line 2", code=3)


def test_an_unwritable_place_is_one_line_exit_2(tmp_path):
    """lttw init into a place that cannot be written (a kernel file system, a path under a
    regular file): one error line naming the path and the reason, no traceback."""
    data = tmp_path / "t.csv"  # enough rows a class for the default 10 folds
    data.write_text("text,label\n" + "".join(f"text {i},{'ab'[i % 2]}\n" for i in range(40)))
    (tmp_path / "afile").write_text("")
    for dest, reason in (("/sys/lttw-test", "not permitted"), (tmp_path / "afile" / "p", "exists")):
        result = invoke("init", dest, "--data", data, "--text-column", "text")
        assert_user_error(result, reason, code=2)


def test_a_closed_pipe_is_a_normal_end_and_a_full_device_one_line():
    """``lttw ... | head``: the reader going away ends the command quietly, exit 0;
    ``> /dev/full``: one error line on stderr, exit 2; neither a traceback."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "lttw.cli", "data", "list"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=repo)
    proc.stdout.close()  # before the command writes: its first write meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and err == "", err
    with open("/dev/full", "wb") as full:
        done = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, cwd=repo)
    assert done.returncode == 2
    assert done.stderr.decode().strip() == "error: stdout: No space left on device"


def test_init_refuses_an_empty_delimiter_and_one_column_for_both(tmp_path):
    """Refused before anything is written, instead of params that dvc repro then rejects."""
    data = tmp_path / "t.csv"
    data.write_text("text,label\nhello world,a\nbye world,b\n")
    result = invoke("init", tmp_path / "p", "--data", data, "--label-delimiter", "")
    assert_user_error(result, "--label-delimiter")
    result = invoke("init", tmp_path / "p", "--data", data, "--text-column", "label")
    assert_user_error(result, "the same column 'label'")
    assert not (tmp_path / "p").exists()
