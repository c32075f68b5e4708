"""The README is a short front door and the docs build: `mkdocs build --strict` fails on a
broken link, a missing anchor or a page left out of the nav."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def _sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
        sections.setdefault(current, []).append(line)
    return sections


def test_the_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move details to docs/"
    first_block = next(n for n, line in enumerate(lines, 1) if line.startswith("```"))
    assert first_block <= 30, f"README.md's first command is on line {first_block + 1}"
    sections = _sections("\n".join(lines))
    order = list(sections)
    assert order.index("Your own data") < order.index("The pipeline")
    assert len(sections["Your own data"]) <= 15
    for name in ("Set-up: two commands", "Changing a parameter and comparing", "Development"):
        assert name in sections, f"README.md has no '## {name}'"


def test_the_readmes_links_resolve():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert any(t.startswith("docs/") for t in local)
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_docs_build_strictly(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "parameters" / "index.html").is_file()
