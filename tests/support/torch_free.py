"""Python processes in which the slim install's left-out packages cannot be imported: a
meta-path guard, installed before anything else runs, makes ``import torch`` (and the other
names of ``LEFT_OUT``) raise ModuleNotFoundError as if they were not installed. What the
slim install (``pip install lttw``) answers with must run there; deploy/serve_check.py
checks the same in a real environment without them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: what ``pip install lttw`` leaves out (top-level import names): the ``train``, ``jieba``
#: and ``parquet`` extras of pyproject.toml
LEFT_OUT = (
    "torch",
    "transformers",
    "dvc",
    "dvclive",
    "matplotlib",
    "jieba",
    "sklearn",
    "scipy",
    "onnx",
    "iterstrat",
    "ruamel",
    "pyarrow",
)

GUARD = f"""
import importlib.abc, sys

class _LeftOut(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {LEFT_OUT!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _LeftOut())
"""


def _argv(code: str, args: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-c", GUARD + code, *args]


def run_without(code: str, *args: str, cwd: Path | None = None, timeout: float = 120):
    """``python -c GUARD + code ARGS`` (``sys.argv[1:]`` = ``args``), output captured."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        _argv(code, args), capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout
    )


def start_without(code: str, *args: str, log: Path) -> subprocess.Popen:
    """``run_without`` in the background, stdout and stderr to the file ``log``."""
    with open(log, "w") as out:
        return subprocess.Popen(_argv(code, args), stdout=out, stderr=subprocess.STDOUT)


#: ``lttw ARGS`` in a guarded process (the CLI's entry point, as the ``lttw`` script runs it)
CLI = "from lttw.cli import app\napp(prog_name='lttw')\n"
