"""A stand-in for the Hugging Face hub on 127.0.0.1 (a random port): the part of its HTTP
API that ``huggingface_hub`` calls for ``create_repo``, ``create_branch``, ``upload_folder``
(preupload + commit, every file "regular": no LFS, no Xet), ``snapshot_download`` /
``hf_hub_download`` (repo info, the file tree, HEAD and GET of ``resolve`` with ``ETag`` and
``X-Repo-Commit``, range requests), ``list_repo_files``, for models and datasets alike.

The ``stand_in_hub`` fixture starts it and points ``huggingface_hub`` at it for one test
(``HF_ENDPOINT``, and the constants huggingface_hub read at import: its endpoint, offline
switch and cache folder, a fresh cache under the test's tmp_path). ``hub.files(...)``
writes a repo directly (a dataset, a tampered file); ``hub.requests`` logs what was asked.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import threading
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

NOT_FOUND = {"repo": "RepoNotFound", "revision": "RevisionNotFound", "entry": "EntryNotFound"}


@dataclass
class Repo:
    branches: dict[str, str] = field(default_factory=dict)  # name -> commit
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # commit -> files
    private: bool = False

    def commit(
        self, branch: str, files: dict[str, bytes], replace: bool = False, sha: str | None = None
    ) -> str:
        base = {} if replace else dict(self.commits.get(self.branches.get(branch, ""), {}))
        base.update(files)
        sha = (
            sha
            or hashlib.sha1(repr((branch, len(self.commits), sorted(base))).encode()).hexdigest()
        )
        self.commits[sha] = base
        self.branches[branch] = sha
        return sha


class StandInHub(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.repos: dict[tuple[str, str], Repo] = {}
        self.requests: list[str] = []
        self.trickle_s: float = 0.0  # > 0: file bodies sent one byte at a time, this far apart

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def files(
        self,
        repo_id: str,
        files: dict[str, bytes],
        kind: str = "model",
        branch: str = "main",
        sha: str | None = None,
    ) -> str:
        """Commit ``files`` to ``repo_id`` (made where missing) on ``branch`` (as commit
        ``sha`` where given: a pinned revision); the commit."""
        return self.repos.setdefault((kind, repo_id), Repo()).commit(branch, files, sha=sha)

    def stored(self, repo_id: str, kind: str = "model", branch: str = "main") -> dict[str, bytes]:
        repo = self.repos[(kind, repo_id)]
        return repo.commits[repo.branches[branch]]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: StandInHub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    # -- answers ------------------------------------------------------------------------
    def _json(self, value, status: int = 200) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _missing(self, what: str, status: int = 404) -> None:
        body = json.dumps({"error": f"{what} not found"}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", NOT_FOUND.get(what, what))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _find(self, kind: str, repo_id: str, revision: str):
        """(repo, commit, files) or None after answering 404."""
        repo = self.server.repos.get((kind, repo_id))
        if repo is None:
            return self._missing("repo")
        commit = repo.branches.get(revision, revision if revision in repo.commits else None)
        if commit is None:
            return self._missing("revision")
        return repo, commit, repo.commits[commit]

    # -- routes -------------------------------------------------------------------------
    def do_HEAD(self):
        self._route("HEAD")

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        self.server.requests.append(f"{method} {url.path}")
        if parts[:3] == ["api", "repos", "create"] and method == "POST":
            return self._create(json.loads(self._body() or b"{}"))
        if parts[0] == "api" and len(parts) >= 6 and parts[1] in ("models", "datasets"):
            kind, repo_id, action, rest = parts[1][:-1], "/".join(parts[2:4]), parts[4], parts[5:]
            query = parse_qs(url.query)
            return self._api(method, kind, repo_id, action, rest, query)
        kind = "dataset" if parts[0] == "datasets" else "model"
        parts = parts[1:] if kind == "dataset" else parts
        if len(parts) >= 5 and parts[2] == "resolve" and method in ("GET", "HEAD"):
            return self._resolve(method, kind, "/".join(parts[:2]), parts[3], "/".join(parts[4:]))
        self._missing("route", 404)

    def _create(self, payload: dict) -> None:
        repo_id = f"{payload.get('organization')}/{payload['name']}"
        key = (payload.get("type") or "model", repo_id)
        url = f"{self.server.endpoint}/{'' if key[0] == 'model' else 'datasets/'}{repo_id}"
        if key in self.server.repos:
            return self._json({"error": "You already created this repo", "url": url}, 409)
        repo = self.server.repos[key] = Repo(private=payload.get("visibility") == "private")
        repo.commit("main", {".gitattributes": b"*.safetensors filter=lfs\n"})
        self._json({"url": url})

    def _api(self, method, kind, repo_id, action, rest, query) -> None:
        revision = rest[0]
        if action == "branch" and method == "POST":
            repo = self.server.repos.get((kind, repo_id))
            if repo is None:
                return self._missing("repo")
            self._body()
            if revision in repo.branches:
                return self._json({"error": "branch exists"}, 409)
            repo.branches[revision] = repo.branches["main"]
            return self._json({})
        found = self._find(kind, repo_id, revision)
        if found is None:
            return
        repo, commit, files = found
        if action == "revision":
            siblings = [{"rfilename": p} for p in sorted(files)]
            return self._json(
                {"id": repo_id, "sha": commit, "siblings": siblings, "private": repo.private}
            )
        if action == "tree":
            under = "/".join(rest[1:])
            return self._json(
                [
                    {"type": "file", "path": p, "size": len(b), "oid": hashlib.sha1(b).hexdigest()}
                    for p, b in sorted(files.items())
                    if p.startswith(under)
                ]
            )
        if action == "preupload" and method == "POST":
            asked = json.loads(self._body())["files"]
            return self._json(
                {
                    "files": [
                        {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                        for f in asked
                    ]
                }
            )
        if action == "commit" and method == "POST":
            return self._commit(repo, repo_id, revision, self._body())
        self._missing("route")

    def _commit(self, repo: Repo, repo_id: str, branch: str, body: bytes) -> None:
        added, deleted = {}, set()
        for line in body.splitlines():
            item = json.loads(line)
            value = item["value"]
            if item["key"] == "file":
                added[value["path"]] = base64.b64decode(value["content"])
            elif item["key"] in ("deletedFile", "deletedFolder"):
                deleted.add(value["path"])
        files = {
            p: b
            for p, b in repo.commits[repo.branches[branch]].items()
            if not any(p == d or p.startswith(d.rstrip("/") + "/") for d in deleted)
        }
        sha = repo.commit(branch, {**files, **added}, replace=True)
        url = f"{self.server.endpoint}/{repo_id}/commit/{sha}"
        self._json({"commitUrl": url, "commitOid": sha})

    def _resolve(self, method, kind, repo_id, revision, path) -> None:
        found = self._find(kind, repo_id, revision)
        if found is None:
            return
        _, commit, files = found
        if path not in files:
            return self._missing("entry")
        data = files[path]
        start = 0
        if self.headers.get("Range", "").startswith("bytes="):
            start = int(self.headers["Range"][6:].split("-")[0] or 0)
        body = data[start:]
        self.send_response(206 if start else 200)
        self.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
        self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method == "GET":
            self._send(body)

    def _send(self, body: bytes) -> None:
        if not self.server.trickle_s:
            self.wfile.write(body)
            return
        import time

        for i in range(len(body)):
            try:
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
            except OSError:  # the client gave up
                return
            time.sleep(self.server.trickle_s)


def point_hub_at(monkeypatch, endpoint: str, cache, offline: bool = False) -> None:
    """Point huggingface_hub (its constants, read at import) and lttw at ``endpoint``,
    with ``cache`` as its cache folder, online or offline, for one test."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    template = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
    monkeypatch.setattr(constants, "HF_URL_HOSTS", constants.HF_URL_HOSTS | {"127.0.0.1"})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    set_offline(monkeypatch, offline)
    monkeypatch.setenv("HF_TOKEN", "stand-in-token")
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)  # the loopback hub directly, never a proxy


def set_offline(monkeypatch, offline: bool) -> None:
    from huggingface_hub import constants

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)


@pytest.fixture
def stand_in_hub(monkeypatch, tmp_path):
    server = StandInHub()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    point_hub_at(monkeypatch, server.endpoint, tmp_path / "hf-cache")
    yield server
    server.shutdown()
    server.server_close()
