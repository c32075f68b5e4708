"""``lttw init``: a DVC project of the user's own, outside this repository.

``init_project`` writes, into a new folder (all or nothing: built beside it, then renamed):
the user's data under ``data/raw/`` tracked by ``dvc add`` (an edit shows in ``dvc status``
and reruns ``sample`` and what follows), ``dvc.yaml`` and ``params.yaml`` derived from the
installed lttw's pipeline (``lttw.project.files``), ``lttw-version.json``, ``.gitignore``
(every pipeline output, ``project.files.pipeline_ignores``, and ``lttw tune``'s
``data/tune/``), the search spaces of ``lttw tune`` (``experiments/search-*.yaml``) and a
README stub; it runs ``git init`` and ``dvc init`` and commits the lot where git knows who
the user is. ``upgrade_project`` rewrites ``dvc.yaml`` and the stamp for the installed lttw.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lttw.errors import UserError
from lttw.io import atomic_dir
from lttw.project.files import (
    DATA_ROOT,
    pipeline_ignores,
    project_dvc_yaml,
    project_params,
    search_spaces,
)
from lttw.project.stamp import STAMP, stamp

GITIGNORE = """\
__pycache__/
*.py[cod]
/data/checkpoints/
/evaluation/
# lttw tune's studies (Optuna's database) and trial folders
/data/tune/
# every pipeline output (lttw init writes them; DVC adds its own entries beside each, but
# drops them after a failed run): `git add -A` commits none of them
{outputs}
"""

README = """\
# {name}

A text classifier trained on `{data}` with lttw's DVC pipeline (made by `lttw init`).
Parameters: `params.yaml`; the data: `{data}` (tracked by `dvc add`).

    dvc repro                         # train and evaluate: metrics/summary.json, models/
    git add -A && git commit -m run   # dvc.lock and metrics/ (what `dvc metrics diff` reads)
    dvc exp run -S model.k=32         # an experiment with one parameter changed
    lttw exp compare -p model.k       # the experiments' figures side by side
    dvc checkout                      # back to the committed model after an experiment
    lttw tune lr                      # a search of experiments/search-lr.yaml (Optuna)
    lttw predict "a text to classify" # the trained model's label and probability

After an edit of the data, `dvc status` shows it and `dvc repro` reruns what depends on it.
After `pip install -U lttw`, run `lttw init --upgrade .` (then `dvc repro`).
"""


@dataclass(frozen=True)
class Project:
    """What ``init_project`` made: the folder, the data as the project names it
    (``data/raw/NAME``) and whether the first commit was made."""

    root: Path
    data: Path
    committed: bool


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise UserError(f"`{' '.join(args[:4])}` failed in {cwd}: {(detail or ['?'])[-1]}")
    return done


def _track_data(root: Path, data: str) -> None:
    """``dvc init``, ``dvc config core.autostage true`` (``dvc add`` and ``dvc repro`` stage
    their files for git) and ``dvc add DATA`` in the git repository ``root``: DVC's Python
    API in this process, where three ``dvc`` commands would start three interpreters."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    dvc_log = logging.getLogger("dvc")
    level = dvc_log.level
    dvc_log.setLevel(logging.WARNING)  # quiet, as `dvc init -q`: its warnings and errors only
    try:
        with Repo.init(str(root)) as repo:
            with repo.config.edit() as config:
                config["core"]["autostage"] = "true"  # as `dvc config` writes it
        with Repo(str(root)) as repo:  # opened again: the config as written
            repo.add(str(root / data))
    except DvcException as err:
        raise UserError(f"dvc failed in {root}: {err}") from err
    finally:
        dvc_log.setLevel(level)


def write_pipeline(root: Path) -> None:
    """``dvc.yaml`` and ``lttw-version.json`` of the installed lttw, into ``root``."""
    (root / "dvc.yaml").write_text(project_dvc_yaml(), encoding="utf-8")
    (root / STAMP).write_text(json.dumps(stamp(), indent=2) + "\n", encoding="utf-8")


def init_project(
    dest: Path,
    data: Path,
    text_column: str | None = None,
    label_column: str | None = None,
    label_delimiter: str | None = None,
    profile: str = "default",
    values: Sequence[tuple[str, object, str]] = (),
) -> Project:
    """Create the project in ``dest`` (new, or an empty folder) from ``data`` (a CSV / TSV /
    parquet / JSON Lines file or a folder of them, copied in); ``label_delimiter`` (multi-label
    data) goes into params.yaml as ``data.label_delimiter``; ``profile``: the parameters'
    profile (``lttw.profiles``); ``values``: more parameters, (dotted name, value, comment),
    validated by the caller (``lttw.project.files.project_params``)."""
    dest, data = Path(dest), Path(data)
    if not data.exists():
        raise FileNotFoundError(2, "no such file or folder (--data)", str(data))
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UserError(f"{dest}: exists and is not an empty folder; pick a new one")
    if dest.resolve() in data.resolve().parents or dest.resolve() == data.resolve():
        raise UserError(f"{dest}: must not contain --data {data} (it is copied in)")
    if shutil.which("git") is None:
        raise UserError("git is not installed: lttw init makes a git + DVC project")
    if importlib.util.find_spec("dvc") is None:
        raise UserError(
            "dvc is not installed (pip install 'lttw[train]'): lttw init makes a git + DVC project"
        )
    name = data.resolve().name
    with atomic_dir(dest) as tmp:
        raw = tmp / DATA_ROOT
        raw.mkdir(parents=True)
        if data.is_dir():
            shutil.copytree(data, raw / name, ignore=shutil.ignore_patterns(".*"))
        else:
            shutil.copy2(data, raw / name)
        (tmp / "params.yaml").write_text(
            project_params(name, text_column, label_column, label_delimiter, profile, values),
            encoding="utf-8",
        )
        write_pipeline(tmp)
        for space in search_spaces():  # `lttw tune NAME` reads experiments/search-NAME.yaml
            (tmp / "experiments").mkdir(exist_ok=True)
            shutil.copy2(space, tmp / "experiments" / space.name)
        ignores = GITIGNORE.format(outputs="\n".join(pipeline_ignores()))
        (tmp / ".gitignore").write_text(ignores, encoding="utf-8")
        (tmp / "README.md").write_text(
            README.format(name=dest.name, data=f"{DATA_ROOT}/{name}"), encoding="utf-8"
        )
        _run(["git", "init", "-q"], tmp)
        _track_data(tmp, f"{DATA_ROOT}/{name}")
        _run(["git", "add", "-A"], tmp)
        committed = (
            subprocess.run(
                ["git", "commit", "-qm", f"lttw init: {name}, lttw's pipeline"],
                cwd=tmp,
                capture_output=True,
            ).returncode
            == 0
        )  # fails only where git has no user.name / user.email: then the user commits
    return Project(dest, Path(DATA_ROOT) / name, committed)


def upgrade_project(root: Path) -> dict:
    """Rewrite ``root``'s ``dvc.yaml`` and ``lttw-version.json`` for the installed lttw
    (``params.yaml``'s values and the data stay); returns the new stamp."""
    root = Path(root)
    if not (root / STAMP).is_file() or not (root / "dvc.yaml").is_file():
        raise UserError(f"{root}: not a project made by `lttw init` (no {STAMP} / dvc.yaml)")
    write_pipeline(root)
    return stamp()
