"""`make test` runs `pytest -n 2 --dist loadgroup`: tests that share a costly session or
module fixture (conftest's groups) must run on one worker, or the fixture is built twice.
A pytest/xdist pairing that silently drops the groups (pytest 9.2 with xdist 3.8) fails here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


@pytest.mark.slow  # a pytest run of its own, on two workers: scheduled early, not last
def test_each_file_stays_on_one_worker(tmp_path):
    """conftest's groups (one per file here; a shared run's name is the same marker) hold."""
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    for name in ("test_one.py", "test_two.py"):
        (tmp_path / name).write_text(
            "import pytest\n\n@pytest.mark.parametrize('i', range(6))\ndef test_it(i):\n    pass\n"
        )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-v",
            "-p",
            "no:cacheprovider",
            str(tmp_path),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(CONFTEST.parent)},
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    workers: dict[str, set[str]] = {}
    for worker, file in re.findall(r"\[(gw\d)\].*PASSED \S*?(test_\w+\.py)::", proc.stdout):
        workers.setdefault(file, set()).add(worker)
    assert set(workers) == {"test_one.py", "test_two.py"}, proc.stdout[-2000:]
    assert all(len(w) == 1 for w in workers.values()), workers
