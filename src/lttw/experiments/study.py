"""The paired study (``experiments/study.yaml``): which cells it has, and which have been
collected into ``evidence/runs/<cell>/`` (``lttw exp run study`` runs them).

A *cell* is one dataset and one variant (``ev-ag_news-lttw``), or one point of the learning
curve (``ev-ag_news-n500-lttw``: 500 training texts per fold). Every cell runs the study's
folds on params.yaml's profile plus the assignments the study gives its dataset and variant;
cells of one dataset therefore share samples and folds, so their per-fold metrics and
held-out predictions pair up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from lttw.errors import UserError
from lttw.io import read_yaml_or_fail

PREFIX = "ev-"


def train_share(n_folds: int) -> float:
    """The share of data.train_size a fold trains on: all but its validation and test
    folds (8:1:1, 0.8, with the paper's ten)."""
    return (n_folds - 2) / n_folds


@dataclass(frozen=True)
class Cell:
    name: str  # the DVC experiment's and the run folder's name
    dataset: str
    variant: str  # the study's name: lttw, lttw-m, encoder, ...
    train_texts: int | None  # learning-curve cells only
    params: dict[str, Any]  # dotted params.yaml name -> value


@dataclass(frozen=True)
class Study:
    folds: list[int]
    common: dict[str, Any]
    datasets: dict[str, dict[str, Any]]
    variants: dict[str, dict[str, Any]]
    reference: str
    curve_dataset: str | None = None
    curve_variants: list[str] = field(default_factory=list)
    curve_texts: list[int] = field(default_factory=list)

    def cells(self, n_folds: int = 10) -> list[Cell]:
        """Every cell, in the order they are queued: the datasets' cells, then the curve's
        (``n_folds``: params.yaml's folds.n_folds, unless the study's ``common`` sets it)."""
        base = {"folds.run": list(self.folds), **self.common}
        share = train_share(int(base.get("folds.n_folds", n_folds)))
        out = [
            Cell(
                f"{PREFIX}{d}-{v}",
                d,
                v,
                None,
                {**base, "data.dataset": d, **self.datasets[d], **self.variants[v]},
            )
            for d in self.datasets
            for v in self.variants
        ]
        for texts in self.curve_texts:
            for v in self.curve_variants:
                d = cast(str, self.curve_dataset)  # a study's learning curve names its dataset
                size = round(texts / share)
                out.append(
                    Cell(
                        f"{PREFIX}{d}-n{texts}-{v}",
                        d,
                        v,
                        texts,
                        {
                            **base,
                            "data.dataset": d,
                            **self.datasets.get(d, {}),
                            **self.variants[v],
                            "data.train_size": size,
                        },
                    )
                )
        return out


def _mapping(raw: dict, key: str, path: Path) -> dict:
    value = raw.get(key) or {}
    if not isinstance(value, dict):
        raise UserError(f"{path}: {key} must be a mapping, got {type(value).__name__}")
    return value


def read_study(path: str | Path) -> Study:
    """The study file, checked: a clear one-line error names what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no study file (see experiments/study.yaml)")
    raw = read_yaml_or_fail(path) or {}
    if not isinstance(raw, dict):
        raise UserError(f"{path}: a mapping of folds, datasets, variants, ... expected")
    folds = raw.get("folds") or [0]
    if not (isinstance(folds, list) and all(isinstance(f, int) and f >= 0 for f in folds)):
        raise UserError(f"{path}: folds must be a list of fold numbers, got {folds!r}")
    datasets = {d: dict(v or {}) for d, v in _mapping(raw, "datasets", path).items()}
    variants = {v: dict(a or {}) for v, a in _mapping(raw, "variants", path).items()}
    if not datasets or not variants:
        raise UserError(f"{path}: needs at least one dataset and one variant")
    reference = raw.get("reference", "encoder")
    if reference not in variants:
        raise UserError(
            f"{path}: reference {reference!r} is not one of the variants ({', '.join(variants)})"
        )
    curve = _mapping(raw, "learning_curve", path)
    unknown = [v for v in curve.get("variants") or [] if v not in variants]
    if unknown:
        raise UserError(f"{path}: learning_curve.variants {unknown} are not study variants")
    return Study(
        list(folds),
        dict(_mapping(raw, "set", path) or _mapping(raw, "common", path)),
        datasets,
        variants,
        reference,
        curve.get("dataset"),
        list(curve.get("variants") or []),
        [int(n) for n in curve.get("train_texts") or []],
    )


def collected(runs_dir: str | Path) -> set[str]:
    """Names of the cells whose results are in ``runs_dir`` (a folder with summary.json)."""
    runs_dir = Path(runs_dir)
    return {p.parent.name for p in runs_dir.glob("*/summary.json")} if runs_dir.is_dir() else set()
