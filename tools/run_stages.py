"""Run the pipeline's stages without dvc, in dvc.yaml's order, on a machine that lacks dvc (the
GPU runner): every stage once, the per-fold stages for each fold of ``folds.run``, with
``-S key=value`` overrides as ``dvc exp run -S`` takes them. Nothing is cached: each stage
runs. Prints each stage's wall time and writes them to bench/results/run_stages.json.

    python tools/run_stages.py                                   # params.yaml as it is
    python tools/run_stages.py -S data.root=.carry/datasets -S model.max_len=128 \\
        -S train.batch_size=128 -S 'folds.run=[0,1]'             # e.g. part of the paper profile
    python tools/run_stages.py --only train,evaluate,summary     # stages whose inputs exist

It is the direct runner (``lttw.experiments.direct_runner``) run on one setting in the
checkout itself: the same stage commands, environment and interpreter as a grid's cells.
With dvc installed, use ``dvc repro`` / ``dvc exp run``: they cache and track what ran. A
whole grid of runs, several at a time, within a time budget: ``lttw exp run NAME --runner
direct``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # lttw from this checkout when it is not installed

from lttw.errors import UserError  # noqa: E402
from lttw.experiments.cells import RUNS_DIR  # noqa: E402
from lttw.experiments.direct_runner import WORK_DIR, DirectRunner  # noqa: E402
from lttw.experiments.grids import apply_assignment  # noqa: E402
from lttw.experiments.stage_plan import expand_stages  # noqa: E402
from lttw.io import read_yaml, write_json  # noqa: E402


def apply_override(params: dict, assignment: str) -> None:
    """``a.b.c=value`` (value parsed as YAML, as dvc does) into the nested ``params``."""
    try:
        apply_assignment(params, assignment)
    except UserError as err:
        raise SystemExit(str(err)) from None


def stage_commands(dvc_yaml: dict, params: dict) -> list[tuple[str, str]]:
    """(name, command) of every stage in file order; ``foreach: ${folds.run}`` expanded."""
    try:
        return [(s.name, s.cmd) for s in expand_stages(dvc_yaml, params)]
    except UserError as err:
        raise SystemExit(str(err)) from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    ap.add_argument(
        "-S",
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a parameter of params.yaml (repeatable)",
    )
    ap.add_argument(
        "--only",
        default=None,
        help="comma-separated stage names (without @fold) to run; default all",
    )
    ap.add_argument("--repo", default=".", help="the pipeline's folder (default: here)")
    ap.add_argument(
        "--out", default=None, help="timings JSON (default: <repo>/bench/results/run_stages.json)"
    )
    args = ap.parse_args(argv)
    repo = Path(args.repo).resolve()
    params = read_yaml(repo / "params.yaml")
    for assignment in args.set:
        apply_override(params, assignment)
    try:
        stages = expand_stages(read_yaml(repo / "dvc.yaml"), params)
    except UserError as err:
        raise SystemExit(str(err)) from None
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {stage.base for stage in stages}
        if unknown:
            raise SystemExit(f"--only: unknown stage(s) {sorted(unknown)}")
        stages = [stage for stage in stages if stage.base in wanted]

    runner = DirectRunner(repo, repo / RUNS_DIR, repo / WORK_DIR)
    with tempfile.NamedTemporaryFile(
        "w", suffix=".yaml", prefix="params-", dir=repo, delete=False, encoding="utf-8"
    ) as tmp:
        yaml.safe_dump(params, tmp, sort_keys=False)
    try:
        rows = runner.run_here(stages, Path(tmp.name), log=lambda line: print(line, flush=True))
    finally:
        os.unlink(tmp.name)
    rc = next((row["exit_code"] for row in rows if row["exit_code"]), 0)
    result = {
        "python": platform.python_version(),
        "overrides": args.set,
        "stages": rows,
        "total_s": round(sum(r["seconds"] for r in rows), 2),
    }
    out = Path(args.out) if args.out else repo / "bench" / "results" / "run_stages.json"
    write_json(out, result)
    print(f"# total {result['total_s']} s; wrote {out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
