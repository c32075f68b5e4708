"""The direct runner's work folder (``data/grid/``): the shared stages' outputs
(``shared/<stage>-<key>/``, built once per key in a temporary folder of this process and
renamed when the stage finished, so that jobs on several machines may share the folder) and
the links that put them, and the checkout's stage scripts, into a folder where a stage runs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from lttw.experiments.stage_plan import Stage
from lttw.io import remove_inside
from lttw.project.stamp import STAMP

#: the stages that cells share (keyed by what they read, ``stage_plan.stage_keys``)
SHARED = frozenset({"sample", "folds", "tokens", "encode", "counts", "nmf"})


def checkout_rev(repo: Path) -> str | None:
    """The checkout's Git revision; None outside Git."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True
        )
    except OSError:
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def link_project_files(repo: Path, folder: Path) -> None:
    """What a stage reads from the checkout besides its parameters and inputs: this
    repository's ``stages/``, or a project's ``lttw-version.json`` (``lttw init``: its
    stages are the installed lttw's and check that stamp)."""
    for name in ("stages", STAMP):
        link = folder / name
        if (repo / name).exists() and not link.is_symlink():
            link.symlink_to(repo / name)


def shared_dir(work: Path, stage: Stage, key: str) -> Path:
    return work / "shared" / f"{stage.name.replace('@', '-')}-{key}"


def link_outputs(work: Path, folder: Path, stage: Stage, key: str) -> None:
    """Links in ``folder`` to the outputs of the shared ``stage`` built for ``key``."""
    source = shared_dir(work, stage, key)
    for out in stage.outs:
        target, origin = folder / out, source / out
        if target.is_symlink() or not origin.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(origin.resolve())


def shared_tmp(work: Path, target: Path) -> Path:
    """A fresh temporary folder of this process (host and pid) beside ``target``."""
    tmp = target.with_name(f".{target.name}.{os.uname().nodename}-{os.getpid()}.tmp")
    remove_inside(tmp, work)
    tmp.mkdir(parents=True)
    return tmp


def publish(work: Path, tmp: Path, target: Path) -> None:
    """``tmp`` renamed to ``target``; where another job built ``target`` meanwhile (the
    same outputs: the same key), ``tmp`` is dropped instead."""
    try:
        os.replace(tmp, target)
    except OSError:
        if not target.is_dir():
            raise
        remove_inside(tmp, work)
