"""Where the tests find datasets: the repository's embedded AG News sample (``datasets/``,
always there), and the full datasets in the folder named by the optional ``LTTW_DATA_ROOT``
environment variable (e.g. one written by ``lttw data fetch NAME --to DIR``). A test that
needs a full dataset skips, saying which one and how to get it, where that folder lacks it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: the embedded datasets folder (params.yaml's data.root)
EMBEDDED = REPO / "datasets"
#: the variable naming a folder of full datasets (optional)
DATA_ROOT_VAR = "LTTW_DATA_ROOT"


def full_root() -> Path | None:
    """The folder of full datasets, where ``LTTW_DATA_ROOT`` names one."""
    value = os.environ.get(DATA_ROOT_VAR, "").strip()
    return Path(value).resolve() if value else None


def _reason(name: str) -> str:
    return (
        f"needs the full {name} dataset: set {DATA_ROOT_VAR} to a folder holding {name}/ "
        f"(lttw data fetch {name} --to DIR)"
    )


def has_full(name: str) -> bool:
    root = full_root()
    return root is not None and (root / name).is_dir()


def needs_full(name: str) -> pytest.MarkDecorator:
    """Skip the test unless the full dataset ``name`` is under ``LTTW_DATA_ROOT``."""
    return pytest.mark.skipif(not has_full(name), reason=_reason(name))


def full_dataset(name: str) -> Path:
    """``LTTW_DATA_ROOT/name``, or skip the calling test with the reason."""
    if not has_full(name):
        pytest.skip(_reason(name))
    root = full_root()
    assert root is not None
    return root / name
