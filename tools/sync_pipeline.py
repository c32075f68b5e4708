"""Copy this repository's pipeline definition into the package, where ``lttw init`` reads it:
``dvc.yaml``, ``params.yaml`` and ``experiments/search-*.yaml`` into
``src/lttw/project/pipeline/``, byte for byte (stale search spaces removed)::

    python tools/sync_pipeline.py          # refresh the package's copies
    python tools/sync_pipeline.py --check  # exit 1 and name the files where they differ

``tests/project/test_pipeline_copy.py`` runs the check.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the package's copy (``lttw.project.files.pipeline_root``)
TARGET = ROOT / "src" / "lttw" / "project" / "pipeline"
COMMAND = "python tools/sync_pipeline.py"


def sources(root: Path = ROOT) -> list[Path]:
    """The pipeline files of ``root``, relative to it."""
    spaces = sorted(p.relative_to(root) for p in root.glob("experiments/search-*.yaml"))
    return [Path("dvc.yaml"), Path("params.yaml"), *spaces]


def differing(root: Path = ROOT, target: Path = TARGET) -> list[str]:
    """The copies in ``target`` that differ from ``root``'s files, are missing or are stale."""
    wanted = sources(root)
    found = sorted(p.relative_to(target) for p in target.rglob("*") if p.is_file())
    bad = [str(p) for p in found if p not in wanted]
    for rel in wanted:
        copy = target / rel
        if not copy.is_file() or copy.read_bytes() != (root / rel).read_bytes():
            bad.append(str(rel))
    return sorted(bad)


def sync(root: Path = ROOT, target: Path = TARGET) -> None:
    """Make ``target`` hold exactly ``root``'s pipeline files."""
    wanted = sources(root)
    for path in sorted(target.rglob("*"), reverse=True):
        if path.is_file() and path.relative_to(target) not in wanted:
            path.unlink()
    for rel in wanted:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, target / rel)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("::")[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = parser.parse_args(argv)
    if args.check:
        bad = differing()
        if bad:
            print(f"{TARGET.relative_to(ROOT)}: stale {bad}: run `{COMMAND}`", file=sys.stderr)
        return 1 if bad else 0
    sync()
    return 0


if __name__ == "__main__":
    sys.exit(main())
