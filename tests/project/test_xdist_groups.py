"""`make test` runs `pytest -n 2 --dist loadgroup`: tests that share a costly session or
module fixture (conftest's groups) must run on one worker, or the fixture is built twice.
A pytest/xdist pairing that silently drops the groups (pytest 9.2 with xdist 3.8: a worker's
rename of a test's node id no longer takes, pytest-xdist#1386) fails here.

In this process: conftest collects two files as a worker collects them (with xdist's own
worker hook, which appends the group to each node id), then xdist's own ``loadgroup``
scheduler hands those node ids to two stand-in workers, each finishing its tests in turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdist.remote import WorkerInteractor
from xdist.scheduler import LoadGroupScheduling

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
TESTS = "import pytest\n\n@pytest.mark.parametrize('i', range(6))\ndef test_it(i):\n    pass\n"


class Worker:
    """What a worker adds to a collection: xdist's hook (the group appended to the node id
    under ``--dist loadgroup``), then the node ids it would send to the controller."""

    pytest_collection_modifyitems = WorkerInteractor.pytest_collection_modifyitems

    def __init__(self) -> None:
        self.config: pytest.Config | None = None
        self.nodeids: list[str] = []

    def pytest_configure(self, config: pytest.Config) -> None:
        config.option.loadgroup = config.getvalue("dist") == "loadgroup"  # xdist's setup_config
        self.config = config

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.nodeids = [item.nodeid for item in session.items]


class StandIn:
    """A worker as the scheduler sees it: the test indices it was sent, and whether it was
    told to shut down (after its last test)."""

    def __init__(self, name: str) -> None:
        self.gateway = type("Gateway", (), {"id": name})()
        self.pending: list[int] = []
        self.ran: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.pending += indices

    def shutdown(self) -> None:
        self.shutting_down = True


def schedule(config: pytest.Config, nodeids: list[str]) -> dict[str, set[str]]:
    """The workers (gw0, gw1) that xdist's loadgroup scheduler gives each test file, every
    worker finishing one test in turn."""
    scheduler = LoadGroupScheduling(config)
    workers = [StandIn(f"gw{i}") for i in range(2)]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, nodeids)
    scheduler.schedule()
    while any(worker.pending for worker in workers):
        for worker in (w for w in workers if w.pending):
            index = worker.pending.pop(0)
            worker.ran.append(index)
            scheduler.mark_test_complete(worker, index)
    files: dict[str, set[str]] = {}
    for worker in workers:
        for index in worker.ran:
            files.setdefault(nodeids[index].split("::")[0], set()).add(worker.gateway.id)
    assert sorted(i for w in workers for i in w.ran) == list(range(len(nodeids)))
    return files


def test_each_file_stays_on_one_worker(pytester):
    """conftest's groups (one per file here; a shared run's name is the same marker) hold."""
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_one=TESTS, test_two=TESTS)
    worker = Worker()
    args = ["--collect-only", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"]
    pytester.inline_run(*args, plugins=[worker]).assertoutcome()
    assert worker.config is not None and len(worker.nodeids) == 12
    files = schedule(worker.config, worker.nodeids)
    assert set(files) == {"test_one.py", "test_two.py"}, worker.nodeids
    assert all(len(names) == 1 for names in files.values()), (files, worker.nodeids)
