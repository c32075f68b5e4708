"""Run the pipeline's stages without dvc, in dvc.yaml's order, on a machine that lacks dvc (the
GPU runner): every stage once, the per-fold stages for each fold of ``folds.run``, with
``-S key=value`` overrides as ``dvc exp run -S`` takes them. Nothing is cached: each stage
runs. Prints each stage's wall time and writes them to bench/results/run_stages.json.

    python tools/run_stages.py                                   # params.yaml as it is
    python tools/run_stages.py -S data.root=.carry/datasets -S model.max_len=128 \\
        -S train.batch_size=128 -S 'folds.run=[0,1]'             # e.g. part of the paper profile
    python tools/run_stages.py --only train,evaluate,summary     # stages whose inputs exist

With dvc installed, use ``dvc repro`` / ``dvc exp run``: they cache and track what ran. A
whole grid of runs, several at a time, within a time budget: ``lttw exp run NAME --direct``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # lttw from this checkout when it is not installed

from lttw.errors import UserError  # noqa: E402
from lttw.experiments.grids import apply_assignment  # noqa: E402
from lttw.experiments.stage_plan import expand_stages  # noqa: E402
from lttw.io import write_json  # noqa: E402


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
    params = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))
    for assignment in args.set:
        apply_override(params, assignment)
    commands = stage_commands(
        yaml.safe_load((repo / "dvc.yaml").read_text(encoding="utf-8")), params
    )
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {name.split("@")[0] for name, _ in commands}
        if unknown:
            raise SystemExit(f"--only: unknown stage(s) {sorted(unknown)}")
        commands = [(n, c) for n, c in commands if n.split("@")[0] in wanted]

    env = dict(os.environ)
    src = str(repo / "src")  # the package from the checkout when it is not installed
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    rows, rc = [], 0
    with tempfile.NamedTemporaryFile(
        "w", suffix=".yaml", prefix="params-", dir=repo, delete=False, encoding="utf-8"
    ) as tmp:
        yaml.safe_dump(params, tmp, sort_keys=False)
    try:
        for name, cmd in commands:
            argv_ = shlex.split(cmd)
            if argv_[0] in ("python", "python3"):
                argv_[0] = sys.executable
            argv_ += ["--params", tmp.name]
            print(f"# {name}: {cmd}", flush=True)
            t0 = time.perf_counter()
            rc = subprocess.run(argv_, cwd=repo, env=env).returncode
            rows.append(
                {"stage": name, "seconds": round(time.perf_counter() - t0, 2), "exit_code": rc}
            )
            print(f"# {name}: {rows[-1]['seconds']} s (exit {rc})", flush=True)
            if rc:
                break
    finally:
        os.unlink(tmp.name)
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
