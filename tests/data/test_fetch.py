"""`lttw data fetch` and `lttw data list`, offline: the hub is the stand-in hub
(tests/support/stand_in_hub.py, HF_ENDPOINT) holding tiny copies of the pinned files, or of a
hub dataset of any id; THUCNews's published files come from the same server by URL. Bad
downloads (an HTML body, label ids out of range, a trickling server) and a hand-written
manifest are refused in one line. No test reaches the internet."""

from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from support.cli_runner import assert_user_error, invoke
from support.stand_in_hub import set_offline

from lttw.data import download
from lttw.data.datasets import load_dataset
from lttw.data.fetch_sources import SOURCES
from lttw.errors import DataError
from lttw.settings import DataSettings

AG = SOURCES["ag_news"]
REPO = Path(__file__).resolve().parents[2]


def _parquet(frame: pd.DataFrame, class_names: dict | None = None) -> bytes:
    """A parquet file; ``class_names``: column -> names, as the datasets library stores
    ClassLabel names in the schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    if class_names:
        features = {c: {"names": n, "_type": "ClassLabel"} for c, n in class_names.items()}
        meta = json.dumps({"info": {"features": features}}).encode()
        table = table.replace_schema_metadata(
            {**(table.schema.metadata or {}), b"huggingface": meta}
        )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def tiny_ag_news(per_class: int = 30, label_shift: int = 0) -> dict[str, bytes]:
    """The pinned AG News files as the hub holds them (columns text, label), tiny."""
    files = {}
    for split, paths in AG.files.items():
        rows = [
            (f"{split} news {i} about {c}", c + label_shift)
            for c in range(4)
            for i in range(per_class)
        ]
        files[paths[0]] = _parquet(pd.DataFrame(rows, columns=["text", "label"]))
    return files


@pytest.fixture
def mirror(stand_in_hub):
    """The stand-in hub holding the pinned AG News files at their pinned commit."""
    stand_in_hub.files(AG.hub, tiny_ag_news(), kind="dataset", sha=AG.revision)
    return stand_in_hub


def test_fetch_writes_the_project_format_from_the_pinned_revision(mirror, tmp_path):
    done = invoke("data", "fetch", "ag_news", "--to", tmp_path / "sets")
    assert done.exit_code == 0, done.output
    assert "train 120, test 120" in done.stdout
    folder = tmp_path / "sets" / "ag_news"
    assert sorted(p.name for p in folder.parent.iterdir()) == ["ag_news"]  # no leftovers
    assert sorted(p.name for p in folder.iterdir()) == [
        "manifest.json",
        "test.parquet",
        "train.parquet",
    ]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["revision"] == AG.revision and manifest["hub_dataset"] == AG.hub
    assert manifest["rows"] == {"train": 120, "test": 120} and manifest["complete"] is True
    assert "licence" in manifest
    for name, sha in manifest["sha256"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha
    dataset = load_dataset(DataSettings(dataset="ag_news", root=str(folder.parent)))
    assert dataset.classes == list(AG.classes) and len(dataset.texts) == 240
    again = invoke("data", "fetch", "ag_news", "--to", folder.parent)
    assert again.exit_code == 0 and "already there" in again.stdout


def test_an_html_body_is_removed_and_reported_and_a_rerun_fetches_again(mirror, tmp_path):
    """A 200 answer holding an HTML page instead of the parquet file."""
    train = AG.files["train"][0]
    good = mirror.stored(AG.hub, "dataset")[train]
    mirror.repos[("dataset", AG.hub)].commits[AG.revision][train] = b"<html>rate limited</html>"
    result = invoke("data", "fetch", "ag_news", "--to", tmp_path / "sets")
    assert_user_error(result, "not the expected parquet file", "removed", "rerun", code=3)
    assert not (tmp_path / "sets" / "ag_news").exists()
    cached = list((tmp_path / "hf-cache").rglob("train-00000-of-00001.parquet"))
    assert not [p for p in cached if p.exists()]  # not kept for the next run
    mirror.repos[("dataset", AG.hub)].commits[AG.revision][train] = good
    done = invoke("data", "fetch", "ag_news", "--to", tmp_path / "sets")
    assert done.exit_code == 0, done.output


def test_label_ids_out_of_range_are_removed_and_reported(stand_in_hub, tmp_path):
    stand_in_hub.files(AG.hub, tiny_ag_news(label_shift=3), kind="dataset", sha=AG.revision)
    result = invoke("data", "fetch", "ag_news", "--to", tmp_path / "sets")
    assert_user_error(result, "a label outside the 4 classes", "removed", code=3)
    assert not (tmp_path / "sets" / "ag_news").exists()
    assert not [p for p in (tmp_path / "hf-cache").rglob("*.parquet") if p.exists()]


def test_a_hand_written_complete_manifest_is_refused(mirror, tmp_path):
    root = tmp_path / "sets"
    done = invoke("data", "fetch", "ag_news", "--to", root)
    assert done.exit_code == 0, done.output
    fake = root / "fake"
    fake.mkdir()
    pd.DataFrame({"text": ["a", "b"], "label": [0, 1]}).to_parquet(fake / "train.parquet")
    manifest = {"complete": True, "splits": {"train": "train.parquet"}, "classes": ["x", "y"]}
    (fake / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match="complete but records neither a sha256 nor the rows"):
        load_dataset(DataSettings(dataset="fake", root=str(root)))
    manifest["rows"] = {"train": 1000}  # rows claimed that the file does not hold
    (fake / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match="train.parquet: 2 rows, .* says 1,000"):
        load_dataset(DataSettings(dataset="fake", root=str(root)))
    (root / "ag_news" / "test.parquet").write_bytes((fake / "train.parquet").read_bytes())
    with pytest.raises(DataError, match="test.parquet: changed since it was fetched"):
        load_dataset(DataSettings(dataset="ag_news", root=str(root)))
    again = invoke("data", "fetch", "ag_news", "--to", root)
    assert_user_error(again, "test.parquet: changed since it was fetched", "--force", code=3)


def test_any_hub_dataset_id_becomes_a_dataset_folder_that_data_check_accepts(
    stand_in_hub, tmp_path
):
    texts = [f"review number {i} says {w}" for i in range(40) for w in ("good", "poor")]
    frame = pd.DataFrame({"review": texts, "stars": [w[-4:] for w in texts], "id": range(80)})
    stand_in_hub.files(
        "org/reviews",
        {
            "README.md": b"---\nlicense: cc-by-4.0\n---\n# reviews\n",
            "data/train-00000-of-00001.parquet": _parquet(frame.iloc[:60]),
            "data/test-00000-of-00001.parquet": _parquet(frame.iloc[60:]),
            "other/unrelated.parquet": b"not fetched",
        },
        kind="dataset",
    )
    to = tmp_path / "sets"
    args = ["data", "fetch", "org/reviews", "--to", to, "--text-column", "review"]
    missing = invoke(*args)
    assert_user_error(missing, "org/reviews", "--label-column", code=3)
    done = invoke(*args, "--label-column", "stars")
    assert done.exit_code == 0, done.output
    assert "train 60, test 20" in done.stdout and "data.dataset=reviews" in done.stdout
    manifest = json.loads((to / "reviews" / "manifest.json").read_text())
    assert manifest["hub_dataset"] == "org/reviews" and manifest["licence"] == "cc-by-4.0"
    assert manifest["classes"] == ["good", "poor"]
    check = invoke("data", "check", to / "reviews", "--sampling", "all")
    assert check.exit_code == 0, check.output
    gone = invoke("data", "fetch", "org/nothing", "--to", to)
    assert_user_error(gone, "dataset org/nothing", "no such dataset", code=3)
    bad_rev = invoke("data", "fetch", "org/reviews", "--revision", "v9", "--to", to, "--force")
    assert_user_error(bad_rev, "revision v9", code=3)


def test_class_label_names_of_a_hub_dataset_are_its_classes(stand_in_hub, tmp_path):
    frame = pd.DataFrame({"text": [f"t {i}" for i in range(12)], "label": [0, 1, 2] * 4})
    names = {"label": ["neg", "neu", "pos"]}
    stand_in_hub.files("org/senti", {"train.parquet": _parquet(frame, names)}, kind="dataset")
    done = invoke("data", "fetch", "org/senti", "--split", "train", "--to", tmp_path / "s")
    assert done.exit_code == 0, done.output
    manifest = json.loads((tmp_path / "s" / "senti" / "manifest.json").read_text())
    assert manifest["classes"] == ["neg", "neu", "pos"] and manifest["rows"] == {"train": 12}


def test_a_trickling_server_is_dropped_at_the_download_bound(stand_in_hub, tmp_path, monkeypatch):
    """THUCNews's published files from a server that sends one byte at a time: dropped once
    a window of TIMEOUT_S brings under MIN_BYTES (60 s and 64 KiB; here 0.5 s and 1 KB)."""
    stand_in_hub.files("x/thuc", {"train.txt": "标题\t1\n".encode() * 4000}, kind="dataset")
    url = f"{stand_in_hub.endpoint}/datasets/x/thuc/resolve/main/train.txt"
    monkeypatch.setitem(SOURCES, "thucnews", replace(SOURCES["thucnews"], files={"train": (url,)}))
    monkeypatch.setattr(download, "TIMEOUT_S", 0.5)
    monkeypatch.setattr(download, "MIN_BYTES", 1000)
    stand_in_hub.trickle_s = 0.02
    start = time.monotonic()
    result = invoke("data", "fetch", "thucnews", "--to", tmp_path)
    assert_user_error(result, "train.txt", "under 1,000 bytes in 0.5 s", "rerun", code=3)
    assert time.monotonic() - start < 5
    assert not (tmp_path / "thucnews").exists()


def test_offline_fails_in_one_line_naming_the_dataset_and_the_manual_way(
    stand_in_hub, tmp_path, monkeypatch
):
    set_offline(monkeypatch, True)
    result = invoke("data", "fetch", "sst2", "--to", tmp_path / "sets")
    line = assert_user_error(
        result, "lttw data fetch sst2", "HF_HUB_OFFLINE", "--from-files", code=3
    )
    assert SOURCES["sst2"].revision in line
    assert not (tmp_path / "sets").exists() and not stand_in_hub.requests


def test_from_files_reads_a_manual_download_without_network(tmp_path, monkeypatch):
    """THUCNews's published text files (title<TAB>label-id), downloaded by hand."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = tmp_path / "downloaded"
    source.mkdir()
    for split in ("train", "dev", "test"):
        lines = [f"{split}标题{i}第{c}类\t{c}" for c in range(10) for i in range(3)]
        (source / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = invoke("data", "fetch", "thucnews", "--to", tmp_path / "sets", "--from-files", source)
    assert done.exit_code == 0, done.output
    manifest = json.loads((tmp_path / "sets" / "thucnews" / "manifest.json").read_text())
    assert manifest["language"] == "zh" and manifest["rows"]["dev"] == 30
    dataset = load_dataset(DataSettings(dataset="thucnews", root=str(tmp_path / "sets")))
    assert dataset.language == "zh" and len(dataset.classes) == 10
    (source / "dev.txt").write_text("a title without its label\n", encoding="utf-8")
    bad = invoke("data", "fetch", "thucnews", "--to", tmp_path / "b", "--from-files", source)
    assert_user_error(bad, "dev.txt line 1", code=3)
    assert not (tmp_path / "b" / "thucnews").exists()


def test_fetch_refuses_to_replace_the_embedded_sample_without_force(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedded = tmp_path / "ag_news"
    embedded.mkdir()
    (embedded / "manifest.json").write_text(json.dumps({"complete": False, "splits": {}}))
    result = invoke("data", "fetch", "ag_news", "--to", tmp_path)
    assert_user_error(result, "--to another folder", "--force")
    unknown = invoke("data", "fetch", "not a name")
    assert_user_error(unknown, "unknown dataset 'not a name'", "ag_news, sst2", "org/name")


def test_list_says_what_is_present_and_how_to_get_the_rest(tmp_path):
    (tmp_path / "params.yaml").write_text(f"data:\n  root: {tmp_path / 'sets'}\n")
    result = invoke("data", "list", "--json", "--params", tmp_path / "params.yaml")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert set(SOURCES) <= set(rows)
    assert rows["sst2"]["status"] == "missing" and rows["sst2"]["get"] == "lttw data fetch sst2"
    # the repository's params.yaml, from anywhere: data.root is relative to its folder
    embedded = invoke("data", "list", "--json", "--params", REPO / "params.yaml")
    (ag,) = [r for r in json.loads(embedded.stdout) if r["name"] == "ag_news"]
    assert ag["status"] == "present" and ag["complete"] is False
    assert ag["get"].startswith("lttw data fetch ag_news --to DIR")


def test_force_replaces_a_folder_that_is_not_a_complete_copy(mirror, tmp_path):
    old = tmp_path / "ag_news"
    old.mkdir()
    (old / "manifest.json").write_text(json.dumps({"complete": False, "splits": {}}))
    (old / "stale.parquet").write_bytes(b"x")
    done = invoke("data", "fetch", "ag_news", "--to", tmp_path, "--force")
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in old.iterdir()) == [
        "manifest.json",
        "test.parquet",
        "train.parquet",
    ]
