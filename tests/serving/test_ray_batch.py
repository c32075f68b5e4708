"""Batch prediction on Ray Data, with Ray on this machine (2 CPUs, no dashboard): the output
equals `lttw predict --file` row by row, keeps every input column with a row id, holds texts
to the same cap, and leaves nothing behind when a row is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.cli_runner import invoke
from support.serving_models import labelled_texts, shared_lttw_folder

ray = pytest.importorskip("ray", reason="Ray Data is an optional extra: pip install 'lttw[ray]'")

from lttw.errors import DataError, UserError  # noqa: E402
from lttw.serving.ray_batch import (  # noqa: E402
    RayBatchSettings,
    predict_shards,
    read_shard,
    shard_paths,
)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, tiny_encoder_dir):
    return shared_lttw_folder(tmp_path_factory, tiny_encoder_dir)


@pytest.fixture
def shards(tmp_path):
    texts, _ = labelled_texts(6)
    folder = tmp_path / "in"
    folder.mkdir()
    half = len(texts) // 2
    pd.DataFrame({"id": range(half), "body": texts[:half]}).to_parquet(folder / "a.parquet")
    pd.DataFrame({"id": range(half, len(texts)), "body": texts[half:]}).to_parquet(
        folder / "b.parquet"
    )
    return folder


def _cli_predictions(model_dir, shard, tmp_path):
    out = tmp_path / f"{shard.stem}-cli.parquet"
    result = invoke(
        "predict", "--file", shard, "--text-column", "body", "--model", model_dir,
        "--out", out, "--no-text", "--device", "cpu",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return pd.read_parquet(out)


def test_ray_output_equals_predict_file_row_by_row(local_ray, model_dir, shards, tmp_path):
    """The settings ``lttw predict --engine ray --no-text --actors 2`` passes (its test
    below); the text column kept by default: the next test's run."""
    out = tmp_path / "out"
    settings = RayBatchSettings(
        actors=2, batch_size=5, block_rows=7, text_column="body", with_text=False
    )
    rows = predict_shards(model_dir, shards, out, settings)
    got = pd.read_parquet(out).sort_values(["shard", "row"]).reset_index(drop=True)
    assert rows == len(got) == 24
    assert list(got.columns[:3]) == ["shard", "row", "id"]  # the input's other columns kept
    assert "body" not in got.columns  # with_text=False: the text dropped
    for shard in sorted(shards.iterdir()):
        mine = got[got["shard"] == shard.name].reset_index(drop=True)
        cli = _cli_predictions(model_dir, shard, tmp_path)
        assert mine["row"].tolist() == list(range(1, len(cli) + 1))
        assert mine["label"].tolist() == cli["label"].tolist()
        prob_columns = [c for c in cli.columns if c.startswith("prob")]
        np.testing.assert_allclose(mine[prob_columns], cli[prob_columns], rtol=1e-5, atol=1e-5)
    assert not list(tmp_path.glob(".out.*"))


def test_a_text_over_the_cap_is_refused_naming_its_row(tmp_path):
    """A shard read as a Ray read task reads it (``read_shard``, here in this process: how a
    read task's error reaches the user, one line and nothing written, is the damaged page's
    test through Ray)."""
    shard = tmp_path / "c.csv"
    pd.DataFrame({"body": ["short", "x" * 50, "tiny"]}).to_csv(shard, index=False)
    with pytest.raises(DataError, match=r"c\.csv row 2: longer than --max-chars 20"):
        list(read_shard(shard, RayBatchSettings(max_chars=20)))
    (rows,) = read_shard(shard, RayBatchSettings(max_chars=20, truncate=True))
    assert rows["row"].tolist() == [1, 2, 3] and rows["body"].str.len().tolist() == [5, 20, 4]


def test_a_truncated_text_is_kept_cut(local_ray, model_dir, tmp_path):
    """CSV shards, the text column kept (the default), texts over the cap cut."""
    folder = tmp_path / "csv"
    folder.mkdir()
    pd.DataFrame({"body": ["short", "x" * 50]}).to_csv(folder / "c.csv", index=False)
    pd.DataFrame({"body": ["tiny"]}).to_csv(folder / "d.csv", index=False)
    out = tmp_path / "out"
    settings = RayBatchSettings(max_chars=20, truncate=True)
    assert predict_shards(model_dir, folder, out, settings) == 3
    assert pd.read_parquet(out)["body"].str.len().max() == 20  # the text kept, cut


def test_bad_sources_and_targets_fail_before_ray_starts(tmp_path, shards):
    with pytest.raises(UserError, match="no such file or folder"):
        shard_paths(tmp_path / "missing")
    with pytest.raises(UserError, match="matches no file"):
        shard_paths(str(tmp_path / "*.parquet"))
    (tmp_path / "exists").mkdir()
    with pytest.raises(UserError, match="exists; --out names a new folder"):
        predict_shards(tmp_path, shards, tmp_path / "exists", RayBatchSettings())
    (shards / "c.csv").write_text("body\nx\n")
    with pytest.raises(UserError, match="mixes parquet and CSV shards"):
        shard_paths(shards)
    with pytest.raises(UserError, match="--actors must be at least 1"):
        RayBatchSettings(actors=0)


def test_lttw_predict_engine_ray(model_dir, shards, tmp_path, monkeypatch):
    """The command hands its options to ``predict_shards`` (whose run with these settings is
    the first test's) and says what it wrote; options with no meaning there are refused."""
    from lttw.serving import ray_batch

    calls = []

    def fake_predict_shards(model, source, out, settings):
        calls.append((Path(model), Path(source), Path(out), settings))
        return 24

    monkeypatch.setattr(ray_batch, "predict_shards", fake_predict_shards)
    out = tmp_path / "cli-out"
    args = ["predict", "--engine", "ray", "--file", shards, "--out", out, "--model", model_dir]
    result = invoke(*args, "--text-column", "body", "--no-text", "--actors", "2")
    assert result.exit_code == 0, result.output
    assert "wrote 24 predictions" in result.stderr
    ((model, source, target, settings),) = calls
    assert (model, source, target) == (Path(model_dir), shards, out)
    assert (settings.actors, settings.text_column, settings.with_text) == (2, "body", False)
    refused = invoke(*args[:-2], "--model", model_dir, "--json")
    assert refused.exit_code == 2 and "--engine ray takes --file and --out only" in refused.stderr


def test_shards_with_other_columns_and_too_many_actors_fail_before_ray_starts(
    model_dir, shards, tmp_path
):
    from support.cli_runner import assert_user_error

    from lttw.serving.ray_batch import local_cpus

    args = ["predict", "--engine", "ray", "--file", shards, "--model", model_dir, "--no-text"]
    too_many = invoke(*args, "--out", tmp_path / "o1", "--actors", str(local_cpus() + 1))
    assert_user_error(too_many, f"--actors {local_cpus() + 1}", "CPUs", code=2)
    texts, _ = labelled_texts(2)
    pd.DataFrame({"body": texts, "lang": "en"}).to_parquet(shards / "c.parquet")
    other = invoke(*args, "--out", tmp_path / "o2", "--text-column", "body")
    assert_user_error(other, "c.parquet", "not the columns of a.parquet", "'lang'", code=3)
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_a_damaged_page_is_one_line_naming_the_shard(local_ray, model_dir, tmp_path, capfd):
    """Through the command: exit 3, one line, and no traceback of Ray's on the process's
    stderr (Ray Data's console handler writes there, past the CLI runner)."""
    from support.cli_runner import assert_user_error

    texts, _ = labelled_texts(40)
    folder = tmp_path / "in"
    folder.mkdir()
    pd.DataFrame({"body": texts[:10]}).to_parquet(folder / "a.parquet")
    damaged = folder / "b.parquet"
    pd.DataFrame({"body": texts * 20}).to_parquet(damaged, compression="snappy")
    data = bytearray(damaged.read_bytes())
    data[100:1100] = b"\xff" * 1000  # inside the first data page; the footer kept
    damaged.write_bytes(bytes(data))
    out = tmp_path / "out"
    args = ["predict", "--engine", "ray", "--file", folder, "--out", out, "--model", model_dir]
    result = invoke(*args, "--actors", "1", "--text-column", "body")
    assert_user_error(result, "b.parquet: not a readable parquet file", code=3)
    assert "Traceback" not in capfd.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".out.*"))
