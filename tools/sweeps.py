"""Wall time of whole paper sweeps (`lttw sweep`), each run as a user would: queue one DVC
experiment per setting, run the queue, on this commit's cached samples, folds and factors.

    python tools/sweeps.py table7 table8-K                       # fine-tuned, fold 0
    python tools/sweeps.py --frozen --folds 0,1,2,3,4 table7 table8-K

Writes bench/results/sweeps.json (one row per sweep, appended): the sweep, the mode, the
folds, the wall time, and each experiment's held-out test macro F1 per fold (read back with
`dvc exp show --json`). Run `lttw report` afterwards for the tables with paired tests.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from lttw.reporting.experiments import experiment_runs
from lttw.reporting.sweeps import get_sweep

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "sweeps.json"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sweeps", nargs="+", help="table6, table7, table8-K, ...")
    parser.add_argument("--frozen", action="store_true", help="train.freeze_encoder: true")
    parser.add_argument("--folds", default="0", help="folds.run, e.g. 0,1,2 (default 0)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    folds = [int(f) for f in args.folds.split(",")]
    rows = json.loads(args.out.read_text()) if args.out.is_file() else []
    for name in args.sweeps:
        sweep = get_sweep(name)
        command = [
            "lttw",
            "sweep",
            name,
            "-S",
            f"folds.run=[{','.join(map(str, folds))}]",
            *(["--frozen"] if args.frozen else []),
        ]
        print("$", " ".join(command), flush=True)
        start = time.perf_counter()
        subprocess.run(command, check=True)
        wall = time.perf_counter() - start
        names = {sweep.experiment(s.key, args.frozen): s.label for s in sweep.settings}
        f1 = {
            names[run.name]: {str(f): m["test"]["f1_macro"] for f, m in run.folds.items()}
            for run in experiment_runs(".")
            if run.name in names
        }
        rows.append(
            {
                "sweep": name,
                "frozen": args.frozen,
                "folds": folds,
                "wall_s": round(wall, 1),
                "settings": len(names),
                "test_f1_macro": f1,
                "machine": f"{platform.machine()}, {platform.processor() or '?'}",
                "cpus": __import__("os").cpu_count(),
                "python": sys.version.split()[0],
            }
        )
        print(
            f"{name} ({'frozen' if args.frozen else 'fine-tuned'}, folds {folds}): "
            f"{wall:.0f} s wall",
            flush=True,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
