"""Every repository path that the docs name exists: the pages (docs/**/*.md), README.md, and
the docstrings and comments of src/, stages/, tests/, bench/ and tools/. A file moved or
removed without its mentions fails here, naming the stale path and where it is named.

A path is a token that starts with a top-level folder of the repository (``src/``,
``tests/``, ``evidence/``...) or is a top-level file (``params.yaml``, ``dvc.yaml``...),
delimited by backticks, quotes or spaces. Allowed without existing, by one rule each:

- what a run or the user creates: a path that ``.gitignore`` ignores (``data/...``,
  ``models/...``, ``bench/results/...``, ``site/``, ``.venv``);
- a placeholder: ``<cell>``, ``NAME``, ``KEY``, ``fold_N``, ``fold_i``; ``{a,b}`` and ``*``
  are expanded, and every alternative / at least one match must exist;
- a path in a past revision, ``REV:path`` (``git show 1ead148:tools/sweeps.py``).

Links between pages (``](page.md)``) are relative to the page; ``mkdocs build --strict``
checks those (tests/e2e/test_docs_site.py).
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: top-level folders that a run creates, whether or not this checkout has them yet
CREATED = {"data", "models", "metrics", "dvclive"}
PLACEHOLDER = re.compile(r"<|\.\.\.|(?<=[/_-])(?:N|NAME|KEY|i)(?=[./_-]|$)")
LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
TRAILING = ".,:;)]'\"`"


def path_pattern(root: Path) -> re.Pattern[str]:
    """Tokens that start with a top-level folder of ``root`` or are a top-level file."""
    entries = [p for p in root.iterdir() if not p.name.startswith(".")]
    folders = sorted({p.name for p in entries if p.is_dir()} | CREATED)
    files = sorted(p.name for p in entries if p.is_file())
    alternatives = [re.escape(f) + "/" + r"[\w./<>{},*@+-]*" for f in folders]
    alternatives += [re.escape(f) + r"(?![\w.-])" for f in files]
    return re.compile(r"(?<![\w./~$@:-])(?:" + "|".join(alternatives) + ")")


def commented_text(source: str) -> str:
    """The comments and docstrings of a Python source."""
    parts = [
        token.string
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            parts.append(ast.get_docstring(node, clean=False) or "")
    return "\n".join(parts)


def named_texts(root: Path) -> list[tuple[Path, str]]:
    """(file, the text of it that may name paths) for every file the check reads."""
    pages = [*sorted(root.glob("docs/**/*.md")), root / "README.md"]
    texts = [(p, LINK_TARGET.sub("]", p.read_text(encoding="utf-8"))) for p in pages]
    sources = ("src/**/*.py", "stages/*.py", "tests/**/*.py", "bench/*.py", "tools/*.py")
    for pattern in sources:
        texts += [(p, commented_text(p.read_text(encoding="utf-8"))) for p in root.glob(pattern)]
    return texts


def expand(path: str) -> list[str]:
    """``a/{b,c}.json`` -> ``a/b.json``, ``a/c.json``."""
    brace = re.search(r"\{([^{}]*)\}", path)
    if not brace:
        return [path]
    head, tail = path[: brace.start()], path[brace.end() :]
    return [p for alt in brace.group(1).split(",") for p in expand(head + alt + tail)]


def ignored(root: Path, paths: list[str]) -> set[str]:
    """The paths that .gitignore ignores (whether or not they exist)."""
    try:
        proc = subprocess.run(
            ["git", "check-ignore", "--no-index", "--stdin"],
            cwd=root,
            input="\n".join(paths),
            capture_output=True,
            text=True,
        )
    except FileNotFoundError:
        pytest.skip("git is not installed")
    if proc.returncode > 1:
        pytest.skip(f"not a git checkout: {proc.stderr.strip()}")
    return set(proc.stdout.split("\n"))


def stale_paths(root: Path) -> dict[str, list[str]]:
    """Each named path that does not exist (and is not allowed) -> where it is named."""
    pattern = path_pattern(root)
    named: dict[str, set[str]] = {}
    for file, text in named_texts(root):
        for match in pattern.finditer(text):
            path = match.group(0).rstrip(TRAILING)
            named.setdefault(path, set()).add(str(file.relative_to(root)))
    missing = {}
    for path, where in named.items():
        if PLACEHOLDER.search(path):
            continue
        for alternative in expand(path):
            exists = (
                any(root.glob(alternative)) if "*" in alternative else (root / alternative).exists()
            )
            if not exists:
                missing[alternative] = sorted(where)
    for path in ignored(root, [p.rstrip("*") for p in missing]):
        missing.pop(path, None)
        missing.pop(path + "*", None)
    return missing


def test_every_path_the_docs_name_exists():
    stale = stale_paths(REPO)
    assert not stale, "stale paths (name -> named in):\n" + "\n".join(
        f"  {path} -> {', '.join(where)}" for path, where in sorted(stale.items())
    )


def test_the_check_sees_a_stale_path(tmp_path):
    """The rule is live: a moved test named in a page and in a docstring is reported, the
    run's outputs, placeholders and past revisions are not."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("/models/\n")
    (tmp_path / "params.yaml").write_text("")
    (tmp_path / "tests" / "project").mkdir(parents=True)
    (tmp_path / "tests" / "project" / "test_layering.py").write_text(
        '"""Checked against `tests/test_layering.py`."""\n'
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(
        "See `tests/test_layering.py`, tests/project/test_layering.py, `params.yaml`,\n"
        "`models/fold_0/`, `metrics/folds/fold_N.json`, `evidence/runs/<cell>/`,\n"
        "[a page](index.md), `tests/project/{test_layering,test_gone}.py` and\n"
        "`git show 1ead148:tools/sweeps.py`.\n"
    )
    (tmp_path / "README.md").write_text("# x\n")
    assert stale_paths(tmp_path) == {
        "tests/test_layering.py": ["docs/index.md", "tests/project/test_layering.py"],
        "tests/project/test_gone.py": ["docs/index.md"],
    }
