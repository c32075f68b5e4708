"""Write deploy/constraints.txt: the installed version of every package that ``lttw`` with
the extras train, cluster, parquet and jieba requires (its whole dependency tree, as this
environment resolved it), one ``name==version`` a line, so that the image and the cluster
jobs install the versions the tests ran with. Run it with the development environment's
Python after upgrading it::

    .venv/bin/python tools/pin_constraints.py
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

OUT = Path(__file__).resolve().parents[1] / "deploy" / "constraints.txt"
EXTRAS = {"train", "cluster", "parquet", "jieba"}


def _wanted(req: Requirement, extras: set[str]) -> bool:
    if req.marker is None:
        return True
    return any(req.marker.evaluate({"extra": extra}) for extra in extras | {""})


def pinned(name: str = "lttw", extras: set[str] = EXTRAS) -> dict[str, str]:
    """Every installed package ``name[extras]`` requires, directly or not: name -> version."""
    found: dict[str, str] = {}
    todo = [(name, extras)]
    while todo:
        current, wanted = todo.pop()
        for line in distribution(current).requires or []:
            req = Requirement(line)
            key = canonicalize_name(req.name)
            if not _wanted(req, wanted):
                continue
            if key == canonicalize_name(name):  # lttw[jieba,parquet] inside lttw[train]
                todo.append((name, set(req.extras)))
                continue
            if key in found:
                continue
            try:
                found[key] = distribution(req.name).version
            except PackageNotFoundError:  # an optional package this environment lacks
                continue
            todo.append((req.name, set(req.extras)))
    return found


def main() -> None:
    header = [line for line in OUT.read_text().splitlines() if line.startswith("#")]
    # a local build label (torch's +cpu) names one index's build: the version alone
    lines = [f"{k}=={re.sub(r'[+].*', '', v)}" for k, v in sorted(pinned().items())]
    OUT.write_text("\n".join([*header, *lines]) + "\n")
    print(f"{OUT}: {len(lines)} packages")


if __name__ == "__main__":
    main()
