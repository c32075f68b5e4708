"""Named experiment grids, one YAML file each under ``experiments/`` (``lttw exp list``).

A grid file holds a ``description``, the ``-S`` assignments every cell shares (``set``), the
folds every cell runs (``folds``: ``folds.run``; default params.yaml's) and its named cells,
each with its own ``set`` and, where the paper reports one, its P / R / F1 in % (``paper``)::

    description: Table 7 (paper section 4.3): top k and bottom s latent factors.
    title: "Table 7: top k + bottom s latent factors"   # a sweep: rendered as the paper's table
    column: "k + s"                                      # ... its first column
    reference: k10s10                                    # paired tests against this cell
    pairs: [[k5s5, k15s15]]                              # and between these cells
    cells:
      k15s15: {set: {model.k: 15, model.s: 15}, label: "15 + 15", paper: [93.08, 93.06, 93.03]}

A cell's experiment (and result folder) is named ``<prefix><key>`` (``prefix`` defaults to
``<grid>-``; a cell's ``name`` overrides it). The paired study (``experiments/study.yaml``) is
a grid in its own form, datasets x variants plus a learning curve (``experiments.study``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lttw.errors import UserError
from lttw.experiments.assignments import apply_assignment, param_value, set_param
from lttw.experiments.paper_numbers import PaperTables, paper_tables
from lttw.experiments.study import PREFIX as STUDY_PREFIX
from lttw.experiments.study import Study, read_study
from lttw.io import read_yaml_or_fail

GRIDS_DIR = Path("experiments")
FROZEN_SUFFIX = "-frozen"
_GRID_KEYS = {
    *("description", "prefix", "reference", "pairs", "folds", "set", "cells", "title", "column"),
    "paper",  # the paper's numbers per dataset and model (``paper_numbers``)
}
_CELL_KEYS = {"set", "label", "paper", "name"}
MAX_CELLS = 500  # a grid larger than this is a typo, not a plan
#: a cell's name is a folder's (evidence/runs/<name>, data/grid/cells/<name>) and a DVC
#: experiment's: one path component of these characters, never starting with "." or "-"
CELL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def check_cell_name(name: str, where: str) -> str:
    """``name`` where it is a safe cell name (``CELL_NAME``), else a ``UserError``."""
    if not CELL_NAME.fullmatch(name):
        raise UserError(
            f"{where}: cell name {name!r} must be one folder name of letters, digits, '_', "
            "'.' and '-' (at most 100, not starting with '.' or '-')"
        )
    return name


@dataclass(frozen=True)
class GridCell:
    """One run of a grid: its experiment / result folder name and its parameters."""

    name: str  # the DVC experiment's and the result folder's name
    key: str  # the grid's name for it (``--only``)
    label: str  # in the report
    params: dict[str, Any]  # dotted params.yaml name -> value (folds.run, shared, own)
    paper: tuple[float, float, float] | None = None  # the paper's P / R / F1 (%)


@dataclass(frozen=True)
class Grid:
    """A named grid of cells (``experiments/<name>.yaml``)."""

    name: str
    path: Path
    description: str
    cells: tuple[GridCell, ...]
    reference: str | None = None  # a cell's key
    title: str | None = None  # sweeps: the paper table's title
    column: str | None = None  # sweeps: the table's first column
    study: Study | None = None  # the paired study's own form
    #: the paper's reported rows per dataset and model (Tables 4, 5; ``paper_numbers``)
    paper: PaperTables = field(default_factory=dict)
    pairs: tuple[tuple[str, str], ...] = ()  # cell keys tested against each other

    @property
    def is_sweep(self) -> bool:
        return self.column is not None

    def cell(self, key: str) -> GridCell:
        return next(c for c in self.cells if c.key == key)

    def select(self, only: list[str] | None) -> list[GridCell]:
        """The cells named in ``only`` (keys or full names; none: all), in grid order."""
        if not only:
            return list(self.cells)
        known = {c.key for c in self.cells} | {c.name for c in self.cells}
        unknown = [o for o in only if o not in known]
        if unknown:
            raise UserError(
                f"{self.name} has no cell {', '.join(unknown)}; its cells: "
                + ", ".join(c.key for c in self.cells)
            )
        return [c for c in self.cells if c.key in only or c.name in only]

    def frozen(self) -> Grid:
        """The same grid on a frozen encoder (``train.freeze_encoder``): cells NAME-frozen."""
        cells = tuple(
            replace(
                c,
                name=c.name + FROZEN_SUFFIX,
                params={**c.params, "train.freeze_encoder": True},
            )
            for c in self.cells
        )
        return replace(self, cells=cells)


def _mapping(value: Any, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UserError(f"{where} must be a mapping, got {type(value).__name__}")
    return dict(value)


def _paper(value: Any, where: str) -> tuple[float, float, float] | None:
    if value is None:
        return None
    if not (
        isinstance(value, list)
        and len(value) == 3
        and all(isinstance(v, (int, float)) and 0 <= v <= 100 for v in value)
    ):
        raise UserError(f"{where}.paper must be [P, R, F1] in %, got {value!r}")
    return (float(value[0]), float(value[1]), float(value[2]))


def _folds(value: Any, where: str) -> list[int] | None:
    if value is None:
        return None
    if not (
        isinstance(value, list) and value and all(isinstance(f, int) and f >= 0 for f in value)
    ):
        raise UserError(f"{where}: folds must be a list of fold numbers, got {value!r}")
    return list(value)


def _study_grid(name: str, path: Path, raw: dict, n_folds: int) -> Grid:
    study = read_study(path)
    cells = tuple(
        GridCell(
            check_cell_name(c.name, str(path)),
            c.name.removeprefix(STUDY_PREFIX),
            c.name,
            dict(c.params),
        )
        for c in study.cells(n_folds)
    )
    if len(cells) > MAX_CELLS:
        raise UserError(f"{path}: needs 1 to {MAX_CELLS} cells, has {len(cells)}")
    return Grid(name, path, str(raw.get("description") or ""), cells, study=study)


def load_grid(path: str | Path, n_folds: int = 10) -> Grid:
    """One grid file, checked for its form (``validate_grid`` checks the parameters);
    ``n_folds``: params.yaml's folds.n_folds (the study's learning curve sizes use it)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no grid file")
    name = path.stem
    raw = read_yaml_or_fail(path)
    if not isinstance(raw, dict):
        raise UserError(f"{path}: a mapping of description, set, cells, ... expected")
    if "datasets" in raw or "variants" in raw:
        return _study_grid(name, path, raw, n_folds)
    unknown = sorted(set(raw) - _GRID_KEYS)
    if unknown:
        raise UserError(f"{path}: unknown key(s) {', '.join(unknown)}; known: {sorted(_GRID_KEYS)}")
    if not isinstance(raw.get("description"), str) or not raw["description"].strip():
        raise UserError(f"{path}: needs a description (what the grid measures)")
    prefix = raw.get("prefix", f"{name}-")
    shared = _mapping(raw.get("set"), f"{path}: set")
    folds = _folds(raw.get("folds"), str(path))
    specs = _mapping(raw.get("cells"), f"{path}: cells")
    if not specs or len(specs) > MAX_CELLS:
        raise UserError(f"{path}: needs 1 to {MAX_CELLS} cells, has {len(specs)}")
    cells = []
    for key, spec in specs.items():
        where = f"{path}: cells.{key}"
        spec = _mapping(spec, where)
        bad = sorted(set(spec) - _CELL_KEYS)
        if bad:
            raise UserError(
                f"{where}: unknown key(s) {', '.join(bad)}; known: {sorted(_CELL_KEYS)}"
            )
        params = {**({"folds.run": folds} if folds else {}), **shared}
        params.update(_mapping(spec.get("set"), f"{where}.set"))
        cell_name = check_cell_name(str(spec.get("name") or f"{prefix}{key}"), where)
        label = str(spec.get("label") or key)
        cells.append(GridCell(cell_name, str(key), label, params, _paper(spec.get("paper"), where)))
    names = [c.name for c in cells]
    if len(set(names)) != len(names):
        raise UserError(f"{path}: two cells share a name")
    reference = raw.get("reference")
    if reference is not None and reference not in specs:
        raise UserError(f"{path}: reference {reference!r} is not one of its cells")
    pairs = raw.get("pairs") or []
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(str(c) in specs for c in p) for p in pairs
    ):
        raise UserError(f"{path}: pairs must be a list of [cell, cell] of its cells' keys")
    title, column = raw.get("title"), raw.get("column")
    if column is not None and reference is None:
        raise UserError(f"{path}: a sweep (column) needs a reference cell")
    return Grid(
        name,
        path,
        raw["description"].strip(),
        tuple(cells),
        reference,
        str(title) if title else None,
        str(column) if column is not None else None,
        paper=paper_tables(raw.get("paper"), f"{path}: paper"),
        pairs=tuple((str(a), str(b)) for a, b in pairs),
    )


#: the name of a search space's file (``experiments.search_space``) begins with it
SEARCH_PREFIX = "search-"


def grid_paths(folder: str | Path = GRIDS_DIR) -> list[Path]:
    """The grid files of ``folder``, by name (not the search spaces, ``search-*.yaml``)."""
    return sorted(p for p in Path(folder).glob("*.yaml") if not p.name.startswith(SEARCH_PREFIX))


def find_grid(name: str, folder: str | Path = GRIDS_DIR, n_folds: int = 10) -> Grid:
    """The grid ``name`` (a file of ``folder``, or a path to one)."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return load_grid(path, n_folds)
    path = Path(folder) / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(p.stem for p in grid_paths(folder)) or "none"
        raise UserError(f"unknown grid {name!r}; the grids in {folder}/: {known}")
    return load_grid(path, n_folds)


def cell_params(base: dict, cell: GridCell, extra: Sequence[str] = ()) -> dict:
    """params.yaml's ``base`` with the cell's parameters, then ``extra`` (``key=value``)."""
    params = copy.deepcopy(base)
    for key, value in cell.params.items():
        set_param(params, key, value, where=f"cell {cell.name}:")
    for assignment in extra:
        apply_assignment(params, assignment)
    return params


def full_params(path: str | Path) -> dict:
    """A parameters file with every parameter (the defaults where the file has none), as
    ``lttw.settings`` reads it; the base ``validate_grid`` checks cells against."""
    from lttw.settings import read_settings

    return read_settings(path).model_dump(mode="json")


def validate_grid(grid: Grid, base: dict, extra: Sequence[str] = ()) -> None:
    """Every cell's parameters are real parameters with valid values (``lttw.settings``);
    a clear one-line error names the grid, the cell and the parameter. ``base``: the
    parameters the cells change (``full_params``)."""
    from lttw.settings import settings_from_dict

    for cell in grid.cells:
        try:
            params = cell_params(base, cell, extra)
            # the values as dvc writes them into params.yaml and the stages read them back
            for key, value in cell.params.items():
                apply_assignment(params, f"{key}={param_value(value)}")
            settings = settings_from_dict(params, source=f"{grid.path} (cell {cell.key})")
            _check_dataset(settings.data.root, settings.data.dataset, cell.key)
        except UserError as err:
            raise UserError(f"{grid.path}: {err}") from None


def _check_dataset(root: str, dataset: str, cell: str) -> None:
    """Where the datasets' folder ``root`` exists, ``dataset`` is one of its folders."""
    folder = Path(root)
    if folder.is_dir() and not (folder / dataset).is_dir():
        known = sorted(p.name for p in folder.iterdir() if p.is_dir())
        raise UserError(
            f"cell {cell}: data.dataset {dataset!r} is not a folder of {root} "
            f"(there: {', '.join(known[:20]) or 'none'})"
        )
