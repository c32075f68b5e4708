"""Check the package build: ``python -m build`` (sdist, then the wheel from the sdist) and
``pip wheel`` (straight from the tree) print no warning, and both wheels hold the same files
with the same bytes (the sdist rebuilds the wheel the tree builds). Builds a clean copy of the
tracked files in a temporary folder, so the checkout gets no build/ or *.egg-info::

    python tools/check_build.py                 # isolated builds (setuptools from the index)
    python tools/check_build.py --no-isolation  # this environment's setuptools, offline

Prints the warning lines and the differing files, and exits 1 where there are any.
``PYTHONDONTWRITEBYTECODE`` is unset for the builds: with it set, setuptools warns that it
skips byte-compiling, whatever the project.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARNING = re.compile(r"warn|deprecat", re.IGNORECASE)


def tracked_copy(dest: Path) -> Path:
    """The tracked files of the checkout (as a fresh clone has them) in ``dest``."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file():
            (dest / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            (dest / name.decode()).write_bytes(source.read_bytes())
    return dest


def run(args: list[str], cwd: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    output = done.stdout + done.stderr
    if done.returncode:
        sys.exit(f"{' '.join(args)} failed:\n{output[-3000:]}")
    return [line for line in output.splitlines() if WARNING.search(line)]


def contents(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as z:
        return {n: hashlib.sha256(z.read(n)).hexdigest() for n in z.namelist()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-isolation", action="store_true", help="no isolated build env")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        source = tracked_copy(tmp_path / "source")
        isolation = ["--no-isolation"] if args.no_isolation else []
        warnings = run(
            [sys.executable, "-m", "build", *isolation, "-o", str(tmp_path / "build"), "."],
            source,
        )
        pip_isolation = ["--no-build-isolation"] if args.no_isolation else []
        warnings += run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", *pip_isolation]
            + ["-w", str(tmp_path / "pip"), "."],
            source,
        )
        (from_sdist,) = (tmp_path / "build").glob("*.whl")
        (from_tree,) = (tmp_path / "pip").glob("*.whl")
        a, b = contents(from_sdist), contents(from_tree)
        differ = sorted(n for n in a.keys() | b.keys() if a.get(n) != b.get(n))
    for line in warnings:
        print(f"warning line: {line}")
    for name in differ:
        print(f"differs between the wheel from the sdist and the wheel from the tree: {name}")
    print(
        f"{len(warnings)} warning line(s); the wheels from the sdist and the tree: "
        + (f"{len(differ)} file(s) differ" if differ else f"the same {len(a)} files")
    )
    return 1 if warnings or differ else 0


if __name__ == "__main__":
    sys.exit(main())
