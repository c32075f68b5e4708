"""``lttw report`` (and ``lttw exp report``): the whole report from what exists. In order:

- the workspace's run (``metrics/``), the DVC experiments of the current commit and extra
  run folders, a table per dataset next to the paper's numbers (the grid files' ``paper``
  block, ``paper_numbers``), with paired tests (``report``);
- the paired study (``experiments/study.yaml``) from its cells (``study_report``);
- every other grid of ``experiments/`` that has cells in ``evidence/runs``, a section each
  with the same per-dataset tables and paired tests;
- the sweep grids (Tables 6-8) as the paper's tables, from cells or experiments
  (``sweep_report``).
"""

from __future__ import annotations

import logging
from pathlib import Path

from lttw.errors import UserError
from lttw.experiments.cell_folder import REFERENCE, Run
from lttw.experiments.cells import RUNS_DIR, read_grid_cell
from lttw.experiments.grids import GRIDS_DIR, Grid, grid_paths, load_grid
from lttw.experiments.paper_numbers import PaperTables, merge_tables
from lttw.reporting.report import PAPER_TABLES, dataset_tables, paired_tests, render
from lttw.reporting.runs import collect_runs
from lttw.reporting.sweep_report import sweep_sections

log = logging.getLogger(__name__)


def load_grids(
    folder: Path = GRIDS_DIR, n_folds: int = 10, skip_broken: bool = False
) -> list[Grid]:
    """Every grid of ``folder`` (none where it does not exist); ``skip_broken``: a grid file
    that cannot be read is left out with a warning (a report of the others), else its error
    is raised."""
    grids = []
    for path in grid_paths(folder):
        try:
            grids.append(load_grid(path, n_folds))
        except UserError as err:
            if not skip_broken:
                raise
            log.warning("left out of the report: %s", err)
    return grids


def cell_runs(grid: Grid, runs_dir: Path, partial: bool = False) -> list[Run]:
    """The grid's written cells as runs named after their cells (``partial``: also the
    finished folds of cells still running)."""
    runs: list[Run] = []
    for cell in [*grid.cells, *(grid.frozen().cells if grid.is_sweep else ())]:
        run = read_grid_cell(runs_dir, cell.name)
        if run is None or (run.partial and not partial):
            continue
        run.name = cell.name
        folds = cell.params.get("folds.run")
        run.planned = len(folds) if isinstance(folds, list) else None
        runs.append(run)
    return runs


def _pairs(grid: Grid, runs: list[Run]) -> list[str]:
    """The paired tests between the cells of each of the grid's ``pairs``, on every dataset
    both ran."""
    lines: list[str] = []
    for a, b in grid.pairs:
        names = (grid.cell(a).name, grid.cell(b).name)
        first, second = ([r for r in runs if r.name == n] for n in names)
        for ra in first:
            for rb in (r for r in second if r.dataset == ra.dataset):
                pair = {(ra.dataset, ra.variant): ra, (rb.dataset, rb.variant): rb}
                lines += ["", f"Between `{a}` and `{b}`:"]
                lines += paired_tests(pair, ra.dataset, ra.variant)
    return lines


def grid_sections(grids: list[Grid], runs_dir: Path, paper: PaperTables | None = None) -> list[str]:
    """A section per plain grid (neither the study nor a sweep) that has cells."""
    lines: list[str] = []
    for grid in grids:
        if grid.study is not None or grid.is_sweep:
            continue
        runs = cell_runs(grid, runs_dir, partial=True)
        if not runs:
            continue
        keys = {c.name: c.key for c in grid.cells}
        for i, run in enumerate(runs):  # another setting of one model: variant [cell key]
            if any((r.dataset, r.variant) == (run.dataset, run.variant) for r in runs[:i]):
                run.variant = f"{run.variant} [{keys.get(run.name or '', run.name)}]"
        first = grid.description.split(". ")[0].rstrip(".")
        written = sum(not r.partial for r in runs)
        running = len(runs) - written
        lines += [
            "",
            f"## Grid `{grid.name}` ({written} of {len(grid.cells)} cells)",
            "",
            f"{first}. From `{runs_dir}/<cell>/` (`lttw exp run {grid.name}`)"
            + (
                f"; {running} cell(s) still running: their finished folds "
                f"(`{runs_dir}/.partial/`), marked (running)."
                if running
                else "."
            ),
        ]
        ref_cell = grid.cell(grid.reference).name if grid.reference else None
        reference = next((r.variant for r in runs if r.name == ref_cell), None)
        lines += dataset_tables(
            runs,
            level="###",
            paper=paper,
            reference=reference or REFERENCE,
            tables=PAPER_TABLES if grid.paper else None,
        )
        lines += _pairs(grid, runs)
    return lines


def _deployed(workspace: Path) -> dict | None:
    """The workspace's deployed model (``reporting.deployed``): beside ``workspace``, the
    metrics folder, its ``models/final``."""
    from lttw.io import read_json
    from lttw.reporting.deployed import deployed_doc

    summary = Path(workspace) / "summary.json"
    final = read_json(summary).get("final") if summary.is_file() else None
    return deployed_doc(Path(workspace).parent, final if isinstance(final, dict) else None)


def build_report(
    workspace: Path,
    params: Path,
    extra: list[Path],
    experiments: list[Run],
    grids_dir: Path = GRIDS_DIR,
    runs_dir: Path = RUNS_DIR,
    n_folds: int = 10,
) -> tuple[str, list[Path]]:
    """The report's markdown and the files it wrote beside it (the learning curve)."""
    grids = load_grids(grids_dir, n_folds, skip_broken=True) if Path(grids_dir).is_dir() else []
    cells = {g.name: cell_runs(g, runs_dir) for g in grids}
    paper = merge_tables([g.paper for g in grids])  # the paper's numbers (experiments/paper.yaml)
    try:
        text = render(
            collect_runs(workspace, params, extra, experiments), paper, _deployed(workspace)
        )
    except UserError:
        if not any(cells.values()):
            raise
        text = render([], paper)  # only cells: the title and introduction
    written: list[Path] = []
    study = next((g for g in grids if g.study is not None), None)
    if study is not None:
        from lttw.reporting.study_report import with_study

        text, written = with_study(text, study.path, runs_dir)
    text += "".join(f"{line}\n" for line in grid_sections(grids, runs_dir, paper))
    sweep_runs = [*(run for g in grids if g.is_sweep for run in cells[g.name]), *experiments]
    text += "".join(f"{line}\n" for line in sweep_sections(grids, sweep_runs))
    return text, written
