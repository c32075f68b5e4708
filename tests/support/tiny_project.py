"""A temporary copy of the repository with a tiny profile (a few hundred AG News rows, the
tiny random encoder, one epoch), for tests that run the real pipeline and CLI."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from support.datasets import EMBEDDED

REPO = Path(__file__).resolve().parents[2]
DATASETS = EMBEDDED  # the repository's own datasets folder (the embedded AG News sample)
TRACER = Path(__file__).resolve().parent / "param_trace"
COPY = [
    "dvc.yaml",
    "params.yaml",
    "stages",
    "src",
    ".dvc/config",
    ".dvcignore",
    ".gitignore",
    "README.md",
]


def tiny_params(encoder_dir: Path, root: Path) -> dict:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["data"].update(
        dataset="ag_news", root=str(root), train_size=160, test_size=40, predict_size=40
    )
    params["folds"].update(n_folds=4, run=[0])
    params["nmf"].update(rank=3, max_iter=50)
    params["model"].update(encoder=str(encoder_dir), max_len=32, k=4, s=4, heads=2, linformer_k=8)
    params["train"].update(
        epochs=1,
        min_steps=0,
        batch_size=16,
        eval_batch_size=64,
        lr=1e-3,
        log_every=2,
        patience=0,
        bf16=False,
    )
    return params


def env() -> dict:
    """The test's environment, with this interpreter's folder (its ``python``, ``dvc``,
    ``lttw``) first on PATH: the ``python`` of dvc.yaml's commands is the tests' own."""
    return {
        **os.environ,
        "DVC_NO_ANALYTICS": "1",
        "HF_HUB_OFFLINE": "1",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    }


def run(
    args: list[str] | str,
    cwd: Path,
    check: bool = True,
    extra_env: dict | None = None,
    timeout: float | None = None,
) -> str:
    """Run ``args`` in ``cwd`` and return stdout + stderr; ``check``: assert it succeeded.
    ``timeout``: stop it (and what it started) after that many seconds, raising
    ``subprocess.TimeoutExpired`` with the output so far."""
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env={**env(), **(extra_env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        shell=isinstance(args, str),
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as err:
        os.killpg(proc.pid, signal.SIGKILL)  # the command and its children
        stdout, stderr = proc.communicate()
        raise subprocess.TimeoutExpired(args, timeout, stdout, stderr) from err
    out = stdout + stderr
    if check:
        shown = args if isinstance(args, str) else " ".join(args)
        assert proc.returncode == 0, f"{shown} failed:\n{out[-4000:]}"
    return out


def lttw(args: list[str], cwd: Path, check: bool = True):
    """``lttw ARGS`` run from ``cwd`` inside this process, through the command line's own app:
    the same arguments and code as the installed command, without an interpreter and torch
    start-up per call (2 to 4 s; ``test_cli_startup`` and ``test_model_folder`` run the
    installed ``lttw`` itself). Returns click's ``Result`` (``.stdout``, ``.output``: stdout
    and stderr); ``check``: assert it exited 0."""
    import traceback

    from typer.testing import CliRunner

    from lttw.cli import app

    before = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, [str(arg) for arg in args])
    finally:
        os.chdir(before)
    if check:
        error = (
            ""
            if result.exception is None or isinstance(result.exception, SystemExit)
            else "".join(traceback.format_exception(result.exception))
        )
        assert result.exit_code == 0, (
            f"lttw {' '.join(map(str, args))} failed:\n{result.output[-4000:]}{error[-4000:]}"
        )
    return result


#: seconds a command that runs DVC's experiment queue may take before it counts as stuck
#: (the tests' queues take 30 to 120 s on 2 cores)
QUEUE_TIMEOUT = 420


def run_queue(args: list[str], cwd: Path, timeout: float = QUEUE_TIMEOUT) -> str:
    """Run a command that runs DVC's experiment queue (``dvc exp run --run-all``, ``lttw
    sweep``), bounded. DVC's queue worker can die on a broker message that it reads while
    another process writes it (kombu's filesystem transport; celery/kombu#1551,
    treeverse/dvc#8570), and the command then waits forever on a queue no worker serves.
    After ``timeout`` it is stopped and ``dvc exp run --run-all`` runs what is still queued
    (finished experiments are not rerun). Returns the output of both."""
    try:
        return run(args, cwd, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        first = (err.stdout or "") + (err.stderr or "")
    again = [sys.executable, "-m", "dvc", "exp", "run", "--run-all"]
    return first + run(again, cwd, timeout=timeout)


def ran(output: str) -> set[str]:
    """Stages DVC ran (not the ones it skipped or restored from its cache)."""
    return set(re.findall(r"Running stage '([^']+)'", output))


def git_commit(root: Path, message: str) -> None:
    run(["git", "add", "-A"], root)
    run(
        [
            "git",
            "-c",
            "user.email=t@t",
            "-c",
            "user.name=t",
            "commit",
            "-qm",
            message,
            "--allow-empty",
        ],
        root,
    )


def set_params(project: Path, **groups) -> None:
    params = yaml.safe_load((project / "params.yaml").read_text())
    for group, values in groups.items():
        params.setdefault(group, {}).update(values)
    (project / "params.yaml").write_text(
        yaml.safe_dump(params, sort_keys=False, allow_unicode=True)
    )


def dvc_status(project: Path, *stages: str) -> dict:
    """What `dvc status --json` (of ``stages``, or all) prints: the stale stages and why; {}
    when none. Through DVC's Python API in this process (the command's own call: the repo's
    lock, then ``Repo.status``), without a dvc start-up (about 1 CPU-s) per check."""
    import contextlib
    import json

    from dvc.repo import Repo, lock_repo

    with contextlib.chdir(project), Repo() as repo, lock_repo(repo):
        return json.loads(json.dumps(repo.status(targets=list(stages))))


def make_tiny_project(root: Path, encoder_dir: Path) -> Path:
    """Copy the repo's pipeline files into ``root``, write the tiny params, git-commit."""
    for name in COPY:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / name)
    (root / "params.yaml").write_text(
        yaml.safe_dump(tiny_params(encoder_dir, DATASETS), sort_keys=False)
    )
    run(["git", "init", "-q"], root)
    git_commit(root, "tiny profile")
    return root


@dataclass(frozen=True)
class TinyRepro:
    """The tiny profile's pipeline, run once for the whole test session (``tiny_repro``):
    ``root`` after ``dvc repro`` and a commit of its lock; ``output`` what that first run
    printed; ``trace`` the parameters each stage read (``param_trace/sitecustomize.py``).
    Tests never change ``root``: they read it, or work in a ``copy``."""

    root: Path
    output: str
    trace: Path

    def copy(self, dest: Path) -> Path:
        """An independent copy (git history, DVC cache and outputs): dvc runs in it as in the
        original, without rerunning anything."""
        shutil.copytree(self.root, dest, symlinks=True)
        return dest


def tiny_repro_once(base: Path, encoder_dir: Path) -> TinyRepro:
    """Build the run in ``base`` unless an earlier caller has: with pytest-xdist ``base`` is
    shared by the workers, so the first one runs ``dvc repro`` while the others wait on a file
    lock, then read what it wrote (``output.txt`` is written last, as the mark of a whole
    run). The tests that use the run are then free to spread over both workers."""
    from filelock import FileLock

    base.mkdir(parents=True, exist_ok=True)
    root, trace, done = base / "project", base / "param_trace", base / "output.txt"
    with FileLock(base / "build.lock"):
        if not done.is_file():
            shutil.rmtree(root, ignore_errors=True)  # what a failed build left, if any
            make_tiny_project(root, encoder_dir)
            path = os.pathsep.join(filter(None, [str(TRACER), os.environ.get("PYTHONPATH")]))
            output = run(
                ["dvc", "repro"],
                root,
                extra_env={"PYTHONPATH": path, "LTTW_PARAM_TRACE": str(trace)},
            )
            git_commit(root, "lock")
            done.write_text(output)
    return TinyRepro(root, done.read_text(), trace)
