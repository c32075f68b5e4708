"""Nothing in the repository's README, docs, code (its messages and comments), tests, tools,
benchmarks or build files names a folder outside the repository (the development machine's
dataset folder beside the checkout, or an absolute workplace path). The one allowed mention:
a line that sets the documented, optional ``LTTW_DATA_ROOT`` (the full datasets' folder for
the tests, ``tests/support/datasets.py``). Recorded measurements (``bench/measured/``,
``evidence/``) and DVC's lock file keep the paths they were made with."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: a sibling folder of the checkout, the dataset folder's name, an absolute workplace path
OUTSIDE = re.compile(r"\.\./shared\b|\bshared/datasets\b|/work/(?:shared|main|wt)\b|SPEC\.md")
SCANNED = re.compile(
    r"^(README\.md|Makefile|params\.yaml|dvc\.yaml|mkdocs\.yml|pyproject\.toml|setup\.py|"
    r"MANIFEST\.in|\.ci/.*|docs/.*\.md|src/.*\.py|stages/.*\.py|tools/.*\.py|tests/.*\.py|"
    r"bench/[^/]*\.(?:py|md|sh)|bench/steps/.*\.py|experiments/.*\.ya?ml|datasets/.*\.(?:md|json))$"
)
ALLOWED = "LTTW_DATA_ROOT"


def scanned_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    own = str(Path(__file__).relative_to(REPO))
    return sorted(p for p in listed if SCANNED.match(p) and p != own and (REPO / p).is_file())


def test_the_scan_covers_the_docs_code_and_tests():
    files = scanned_files()
    for expected in ("README.md", "docs/index.md", "src/lttw/settings/data.py", ".ci/run"):
        assert expected in files
    assert any(f.startswith("tests/support/") for f in files)


def test_nothing_names_a_folder_outside_the_repository():
    found = []
    for name in scanned_files():
        text = (REPO / name).read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line) and ALLOWED not in line:
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    assert not found, "paths outside the repository:\n" + "\n".join(found)
