"""A hyperparameter search space, ``experiments/search-<name>.yaml`` (beside the grids, which
``grids.grid_paths`` leaves it out of): the parameters ``lttw tune`` samples, each a range or
a list of choices of a real parameter, checked against ``lttw.settings`` before any trial::

    description: the learning rates and dropout of LTTW
    fold: 0                  # the objective: this fold's validation macro F1
    set: {train.epochs: 2}   # every trial's fixed parameters
    pruner: median           # median: stop a trial whose epoch scores trail; none
    space:
      train.lr: {low: 1.0e-5, high: 1.0e-3, log: true}
      model.dropout: {low: 0.0, high: 0.3}
      model.depth: {low: 1, high: 3}            # two ints: an int range
      train.batch_size: {choices: [16, 32]}
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lttw.errors import UserError
from lttw.experiments.grids import (
    GRIDS_DIR,
    SEARCH_PREFIX,
    check_cell_name,
    param_value,
    set_param,
)
from lttw.io import load_yaml, read_yaml_or_fail

MAX_DIMENSIONS = 32
MAX_CHOICES = 64
PRUNERS = ("median", "none")
_KEYS = {"description", "fold", "set", "pruner", "space"}


@dataclass(frozen=True)
class Dimension:
    """One sampled parameter: a range (``low``..``high``, ints where both are ints, on a log
    scale with ``log``) or ``choices``."""

    name: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    choices: tuple | None = None

    def suggest(self, trial: Any) -> Any:
        """This dimension's value for an Optuna ``trial``."""
        if self.choices is not None:
            return trial.suggest_categorical(self.name, list(self.choices))
        if isinstance(self.low, int) and isinstance(self.high, int):
            return trial.suggest_int(self.name, self.low, self.high, log=self.log)
        return trial.suggest_float(self.name, float(self.low), float(self.high), log=self.log)  # type: ignore[arg-type]

    def extremes(self) -> list:
        """The values every trial's value lies among or between (what is validated)."""
        return list(self.choices) if self.choices is not None else [self.low, self.high]


@dataclass(frozen=True)
class SearchSpace:
    name: str
    path: Path
    description: str
    fold: int
    fixed: dict[str, Any]
    dimensions: tuple[Dimension, ...]
    pruner: str = "median"

    def trial_params(self, values: dict[str, Any]) -> dict[str, Any]:
        """A trial's parameters (dotted names): the fixed ones, its ``values``, its fold."""
        return {**self.fixed, **values, "folds.run": [self.fold]}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _dimension(name: str, spec: Any, where: str) -> Dimension:
    if not isinstance(spec, dict) or not spec:
        raise UserError(f"{where}: {name}: a mapping expected ({{low: .., high: ..}} or choices)")
    unknown = set(spec) - {"low", "high", "log", "choices"}
    if unknown:
        raise UserError(f"{where}: {name}: unknown key(s) {', '.join(sorted(unknown))}")
    if "choices" in spec:
        choices = spec["choices"]
        if set(spec) != {"choices"}:
            raise UserError(f"{where}: {name}: choices or low/high, not both")
        if not isinstance(choices, list) or not 1 <= len(choices) <= MAX_CHOICES:
            raise UserError(f"{where}: {name}: choices: a list of 1..{MAX_CHOICES} values")
        if not all(c is None or isinstance(c, (bool, int, float, str)) for c in choices):
            raise UserError(f"{where}: {name}: choices: plain values (numbers, text, true/false)")
        return Dimension(name, choices=tuple(choices))
    low: Any = spec.get("low")
    high: Any = spec.get("high")
    log = spec.get("log", False)
    for key, value in (("low", low), ("high", high)):
        if isinstance(value, str):  # YAML reads 1e-5 (no dot) as text
            raise UserError(
                f"{where}: {name}: {key}: {value!r} is text, not a number "
                "(YAML reads 1e-5 as text: write 1.0e-5)"
            )
    if not (_number(low) and _number(high)) or not low < high:
        raise UserError(f"{where}: {name}: low and high: two numbers, low < high")
    if not isinstance(log, bool) or (log and low <= 0):
        raise UserError(f"{where}: {name}: log: true or false, and true only where low > 0")
    return Dimension(name, low, high, log)


def load_space(path: str | Path, base: dict) -> SearchSpace:
    """The search space in ``path``, every value it can take checked against ``base`` (the
    full parameters, ``grids.full_params``): a one-line ``UserError`` otherwise."""
    path = Path(path)
    where = str(path)
    raw = read_yaml_or_fail(path)
    if not isinstance(raw, dict) or not isinstance(raw.get("space"), dict) or not raw["space"]:
        raise UserError(f"{where}: a mapping with a non-empty `space:` expected")
    unknown = set(raw) - _KEYS
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    if len(raw["space"]) > MAX_DIMENSIONS:
        raise UserError(f"{where}: at most {MAX_DIMENSIONS} parameters in `space:`")
    fold = raw.get("fold", 0)
    fixed = raw.get("set") or {}
    pruner = raw.get("pruner", "median")
    if not isinstance(fold, int) or isinstance(fold, bool) or fold < 0:
        raise UserError(f"{where}: fold: a fold number >= 0")
    if not isinstance(fixed, dict):
        raise UserError(f"{where}: set: a mapping of parameter: value")
    if pruner not in PRUNERS:
        raise UserError(f"{where}: pruner: one of {', '.join(PRUNERS)}")
    dims = tuple(_dimension(str(k), v, where) for k, v in raw["space"].items())
    space = SearchSpace(
        name=path.stem.removeprefix(SEARCH_PREFIX),
        path=path,
        description=str(raw.get("description") or ""),
        fold=fold,
        fixed=dict(fixed),
        dimensions=dims,
        pruner=pruner,
    )
    _validate(space, base)
    return space


def _validate(space: SearchSpace, base: dict) -> None:
    """Each dimension's extremes (the others at their first) are valid parameters."""
    from lttw.settings import settings_from_dict

    first = {d.name: d.extremes()[0] for d in space.dimensions}
    for dim in space.dimensions:
        for value in dim.extremes():
            params = copy.deepcopy(base)
            where = f"{space.path}:"
            for key, val in space.trial_params({**first, dim.name: value}).items():
                set_param(params, key, load_yaml(param_value(val)), where=where)
            # the fold too: folds.run must be in 0..folds.n_folds - 1
            settings_from_dict(params, source=f"{space.path} ({dim.name}={value})")


def find_space(name: str, folder: str | Path = GRIDS_DIR) -> Path:
    """``experiments/search-<name>.yaml`` (or ``name`` itself, a path to a space file)."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return path
    check_cell_name(name, "search space")  # its study's trials are folders named by it
    path = Path(folder) / f"{SEARCH_PREFIX}{name}.yaml"
    if not path.is_file():
        known = ", ".join(p.stem.removeprefix(SEARCH_PREFIX) for p in space_paths(folder))
        raise UserError(f"unknown search space {name!r}; in {folder}/: {known or 'none'}")
    return path


def space_paths(folder: str | Path = GRIDS_DIR) -> list[Path]:
    return sorted(Path(folder).glob(f"{SEARCH_PREFIX}*.yaml"))
