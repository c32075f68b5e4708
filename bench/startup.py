"""Wall time of one pipeline stage run as DVC runs it (``python stages/<name>.py ...`` in a
fresh process: imports, loading, the work), the median of ``--runs`` runs, and which heavy
libraries the process imported. On a tiny profile the work is small and start-up dominates,
which is what the test suite and quick experiments pay per stage.

    python bench/stage_startup.py --project DIR                  # train --fold 0, 3 runs
    python bench/stage_startup.py --project DIR --stage evaluate --runs 5

``DIR`` is a project after ``dvc repro`` (the stage reruns on its own inputs and rewrites its
own outputs with the same content; use a copy if that matters). Writes
``bench/results/stage_startup.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine import describe  # noqa: E402  (bench/ is on sys.path: the script's folder)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "stage_startup.json"
WATCHED = ("transformers", "torch._dynamo", "sklearn", "pandas", "jieba")
#: runs the stage as __main__ (as `python stages/x.py` does), then reports the imports
RUNNER = (
    "import runpy, sys, json\n"
    "sys.argv = sys.argv[1:]\n"
    "try:\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
    "finally:\n"
    f"    print('IMPORTED ' + json.dumps({{m: m in sys.modules for m in {WATCHED!r}}}),\n"
    "          file=sys.stderr)\n"
)


def run_once(project: Path, argv: list[str]) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, *argv], cwd=project, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(argv)} failed in {project}:\n{proc.stderr[-2000:]}")
    line = [x for x in proc.stderr.splitlines() if x.startswith("IMPORTED ")][-1]
    return wall, json.loads(line.removeprefix("IMPORTED "))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--project", type=Path, required=True, help="a project after dvc repro")
    parser.add_argument("--stage", default="train", help="stages/<name>.py (default train)")
    parser.add_argument("--fold", type=int, default=0, help="for per-fold stages")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT, help=f"JSON file (default {OUT})")
    args = parser.parse_args(argv)
    script = args.project / "stages" / f"{args.stage}.py"
    if not script.is_file():
        sys.exit(f"error: {script}: no such stage script")
    stage = [str(script.relative_to(args.project))]
    dvc_yaml = (args.project / "dvc.yaml").read_text(encoding="utf-8")
    if re.search(rf"stages/{re.escape(args.stage)}\.py --fold", dvc_yaml):  # a per-fold stage
        stage += ["--fold", str(args.fold)]
    walls, imported = [], {}
    for _ in range(args.runs):
        wall, imported = run_once(args.project, stage)
        walls.append(wall)
    result = {
        "machine": describe(),
        "project": str(args.project.resolve()),
        "command": " ".join(["python", *stage]),
        "runs_s": [round(w, 3) for w in walls],
        "median_s": round(statistics.median(walls), 3),
        "imported": imported,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(
        f"{result['command']}: median {result['median_s']:.2f} s over {args.runs} runs "
        f"({', '.join(f'{w:.2f}' for w in walls)}); imported: "
        f"{', '.join(m for m, yes in imported.items() if yes) or 'none of the watched'}"
    )
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
