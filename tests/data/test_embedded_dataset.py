"""The embedded AG News sample (datasets/ag_news): its files are the ones its manifest names,
with their sha256, a source and licence terms; it is small; the default profile draws its
samples from it unchanged; and tools/build_embedded_dataset.py builds it deterministically,
holding every row a sample of its ``DRAW`` sizes (the default profile's or larger) draws from
the full data."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pandas as pd
from support.datasets import EMBEDDED, full_dataset

from lttw.data.datasets import load_dataset
from lttw.data.sampling import draw_samples
from lttw.settings import read_settings

REPO = Path(__file__).resolve().parents[2]
FOLDER = EMBEDDED / "ag_news"
sys.path.insert(0, str(REPO / "tools"))
import build_embedded_dataset  # noqa: E402  (tools/build_embedded_dataset.py)


def test_the_manifest_names_the_files_their_checksums_source_and_licence():
    manifest = json.loads((FOLDER / "manifest.json").read_text(encoding="utf-8"))
    assert sorted(p.name for p in FOLDER.iterdir()) == sorted(
        ["manifest.json", *manifest["splits"].values()]
    )
    for name, sha in manifest["sha256"].items():
        assert hashlib.sha256((FOLDER / name).read_bytes()).hexdigest() == sha, name
    for split, name in manifest["splits"].items():
        assert len(pd.read_parquet(FOLDER / name)) == manifest["rows"][split]
    assert manifest["hub_dataset"] == "fancyzhx/ag_news" and manifest["complete"] is False
    assert "non-commercial" in manifest["licence"] and "AG News" in manifest["source"]
    assert sum(p.stat().st_size for p in FOLDER.iterdir()) < 3_000_000  # a few MB at most


def test_the_default_profile_draws_from_it_unchanged():
    settings = read_settings(REPO / "params.yaml")
    assert (REPO / settings.data.root / settings.data.dataset).resolve() == FOLDER.resolve()
    data = settings.data.model_copy(update={"root": str(EMBEDDED)})
    dataset = load_dataset(data)
    frames, info = draw_samples(dataset, data, settings.seed)
    assert info["sizes"] == {"train": 2500, "test": 1000, "predict": 500}
    # a margin: the sample stage draws, rather than taking every row of a split
    assert len(dataset.texts) > sum(info["sizes"].values())


def test_the_build_is_deterministic_and_keeps_the_full_datas_draw(tmp_path):
    full = full_dataset("ag_news")
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    built = build_embedded_dataset.build(full, first)
    build_embedded_dataset.build(full, second)
    for name in ["manifest.json", *built["splits"].values()]:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    settings = read_settings(REPO / "params.yaml")
    update = {"root": str(full.parent), "dataset": full.name, **build_embedded_dataset.DRAW}
    data = settings.data.model_copy(update=update)
    frames, _ = draw_samples(load_dataset(data), data, settings.seed)
    kept = set(pd.read_parquet(first / "train.parquet")["text"]) | set(
        pd.read_parquet(first / "test.parquet")["text"]
    )
    for split, frame in frames.items():
        assert set(frame["text"]) <= kept, split
