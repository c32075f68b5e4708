"""`lttw data fetch` and `lttw data list`, offline: the hub is a loopback HTTP mirror (HF_ENDPOINT)
that serves tiny copies of the pinned files the way the Hugging Face hub does (a redirect that
states the file's sha256 and the commit, then the bytes, with range requests), and can break a
transfer off half-way or serve bytes that do not match. No test reaches the internet."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest
from support.cli_runner import assert_user_error, invoke

from lttw.data.datasets import load_dataset
from lttw.data.fetch_sources import SOURCES
from lttw.settings import DataSettings

AG = SOURCES["ag_news"]
REPO = Path(__file__).resolve().parents[2]


class Mirror(http.server.ThreadingHTTPServer):
    """Files by hub path; ``break_next``: that many transfers stop half-way; ``corrupt``:
    paths whose bytes differ from the sha256 stated for them."""

    def __init__(self, files: dict[str, bytes]):
        super().__init__(("127.0.0.1", 0), Handler)
        self.files = files
        self.break_next = 0
        self.corrupt: set[str] = set()
        self.ranges: list[str] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    server: Mirror

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        path = unquote(self.path)
        if path.startswith("/cdn/"):
            return self._bytes(path[len("/cdn/") :])
        # /datasets/<owner>/<name>/resolve/<revision>/<file path>
        parts = path.split("/")
        if len(parts) < 7 or parts[1] != "datasets" or parts[4] != "resolve":
            return self.send_error(404)
        repo, revision, file = "/".join(parts[2:4]), parts[5], "/".join(parts[6:])
        key = f"{repo}/{file}"
        if key not in self.server.files or revision != SOURCES_BY_REPO[repo].revision:
            return self.send_error(404)
        self.send_response(302)
        self.send_header("Location", f"/cdn/{key}")
        self.send_header("X-Linked-Etag", f'"{hashlib.sha256(self.server.files[key]).hexdigest()}"')
        self.send_header("X-Repo-Commit", revision)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _bytes(self, key: str):
        data = self.server.files[key]
        if key in self.server.corrupt:
            data = data[::-1]
        start = 0
        if "Range" in self.headers:
            self.server.ranges.append(self.headers["Range"])
            start = int(self.headers["Range"].removeprefix("bytes=").split("-")[0])
        body = data[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.server.break_next:
            self.server.break_next -= 1
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(body)


SOURCES_BY_REPO = {spec.hub: spec for spec in SOURCES.values() if spec.hub}


def _parquet(frame: pd.DataFrame) -> bytes:
    import io

    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def tiny_ag_news(per_class: int = 30) -> dict[str, bytes]:
    """The pinned AG News files as the hub holds them (columns text, label), tiny."""
    files = {}
    for split, paths in AG.files.items():
        rows = [(f"{split} news {i} about {c}", c) for c in range(4) for i in range(per_class)]
        frame = pd.DataFrame(rows, columns=["text", "label"])
        files[f"{AG.hub}/{paths[0]}"] = _parquet(frame)
    return files


@pytest.fixture
def mirror(monkeypatch):
    server = Mirror(tiny_ag_news())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_TOKEN_PATH", "/nonexistent/token")  # anonymous, whoever runs it
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)  # the loopback mirror directly, never a proxy
    yield server
    server.shutdown()
    server.server_close()


def test_fetch_writes_the_project_format_from_the_pinned_revision(mirror, tmp_path):
    done = invoke("data", "fetch", "ag_news", "--to", tmp_path)
    assert done.exit_code == 0, done.output
    assert "train 120, test 120" in done.stdout
    folder = tmp_path / "ag_news"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ag_news"]  # no download leftovers
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
    dataset = load_dataset(DataSettings(dataset="ag_news", root=str(tmp_path)))
    assert dataset.classes == list(AG.classes) and len(dataset.texts) == 240
    again = invoke("data", "fetch", "ag_news", "--to", tmp_path)
    assert again.exit_code == 0 and "already there" in again.stdout


def test_a_broken_download_leaves_nothing_half_written_and_a_rerun_resumes(mirror, tmp_path):
    mirror.break_next = 1
    broken = invoke("data", "fetch", "ag_news", "--to", tmp_path)
    assert_user_error(broken, "broke off", "rerun", code=3)
    assert not (tmp_path / "ag_news").exists()
    (part,) = (tmp_path / ".ag_news.download").glob("*.part")
    size = part.stat().st_size
    assert 0 < size
    done = invoke("data", "fetch", "ag_news", "--to", tmp_path)
    assert done.exit_code == 0, done.output
    assert mirror.ranges == [f"bytes={size}-"]  # continued, not started again
    assert not (tmp_path / ".ag_news.download").exists()
    assert len(pd.read_parquet(tmp_path / "ag_news" / "train.parquet")) == 120


def test_bytes_that_differ_from_the_stated_sha256_are_refused(mirror, tmp_path):
    mirror.corrupt.add(f"{AG.hub}/{AG.files['train'][0]}")
    result = invoke("data", "fetch", "ag_news", "--to", tmp_path)
    assert_user_error(result, "sha256", code=3)
    assert not (tmp_path / "ag_news").exists()
    assert not list((tmp_path / ".ag_news.download").glob("train*"))


def test_offline_fails_in_one_line_naming_the_dataset_and_the_manual_way(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = invoke("data", "fetch", "sst2", "--to", tmp_path)
    line = assert_user_error(
        result, "lttw data fetch sst2", "HF_HUB_OFFLINE", "--from-files", code=3
    )
    assert SOURCES["sst2"].revision in line
    assert list(tmp_path.iterdir()) == []


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
    assert_user_error(invoke("data", "fetch", "imdb"), "unknown dataset 'imdb'", "ag_news, sst2")


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
