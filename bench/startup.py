"""How long a user waits: a fresh process that does one small thing (the median of a few
runs), a user's first project, and ``dvc repro`` of this repository from an empty cache.

    python bench/startup.py cli --model models/fold_0   # lttw --help and lttw predict TEXT
    python bench/startup.py cli                         # builds a MiniLM LTTW folder itself
    python bench/startup.py cli --check                 # exit 1 above the targets
    python bench/startup.py stage --project DIR         # stages/train.py --fold 0, 3 runs
    python bench/startup.py stage --project DIR --stage evaluate --runs 5
    python bench/startup.py first-run                   # lttw init + dvc repro + lttw evaluate
    python bench/startup.py repro                       # dvc repro in a fresh clone (make repro)

``cli``: ``lttw --help`` and ``lttw predict --model DIR "one text"`` (imports, model load, one
forward pass), ``--runs`` (5) runs each. Without ``--model`` the folder is built as
``prediction.py batch --synthetic`` builds it: an LTTW classifier around the embedded
MiniLM-L6 with latent factors, laid out as the train stage writes it (the weights do not
change the time). Targets (issue 13.7): ``lttw --help`` <= 0.4 s, ``lttw predict`` <= 2.5 s.
Writes ``bench/results/cli_startup.json``.

``stage``: one pipeline stage run as DVC runs it (``python stages/<name>.py ...``: imports,
loading, the work), ``--runs`` (3) runs, and which heavy libraries the process imported. On a
tiny profile the work is small and start-up dominates, which is what the test suite and
quick experiments pay per stage. ``DIR`` is a project after ``dvc repro`` (the stage reruns
on its own inputs and rewrites its own outputs with the same content; use a copy if that
matters). Writes ``bench/results/stage_startup.json``.

``first-run`` and ``repro`` (``steps/first_run.py``): a user's first project (``lttw init
--profile quick`` on AG News CSVs, ``dvc repro``, ``lttw evaluate``) and ``dvc repro`` of
this checkout in a fresh clone, each timed with the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, ROOT, describe, run_mode  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TARGETS_S = {"help": 0.4, "predict": 2.5}
TEXT = "Stocks rally as oil prices fall and the central bank holds its rate"
WATCHED = ("transformers", "torch._dynamo", "sklearn", "pandas", "jieba")
#: runs the stage as __main__ (as `python stages/NAME.py` does), then reports the imports
RUNNER = (
    "import runpy, sys, json\n"
    "sys.argv = sys.argv[1:]\n"
    "try:\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
    "finally:\n"
    f"    print('IMPORTED ' + json.dumps({{m: m in sys.modules for m in {WATCHED!r}}}),\n"
    "          file=sys.stderr)\n"
)


def run_timed(command: list[str], cwd: Path) -> tuple[float, str]:
    """(wall seconds, stderr) of one run of ``command``, which must exit 0."""
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} failed ({proc.returncode}) in {cwd}:\n{proc.stderr[-2000:]}"
        )
    return wall, proc.stderr


def timings(walls: list[float]) -> dict:
    return {"median_s": round(statistics.median(walls), 3), "runs_s": [round(w, 3) for w in walls]}


def lttw_command() -> list[str]:
    """The ``lttw`` console script of this interpreter (else ``python -m lttw.cli``)."""
    script = Path(sys.executable).parent / "lttw"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "lttw.cli"]


def build_model_folder(folder: Path, encoder: str | None) -> str:
    from steps.predict_batch import build_synthetic_folder, default_encoder_dir

    encoder_dir = encoder or default_encoder_dir()
    build_synthetic_folder(folder, encoder_dir, "lttw", max_len=128, seed=0)
    return encoder_dir


def cli(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="startup.py cli", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--model",
        default=None,
        help="a trained model folder (default: build a MiniLM LTTW folder in a temporary folder)",
    )
    ap.add_argument(
        "--encoder",
        default=None,
        help="without --model: the encoder folder (default: the embedded MiniLM package)",
    )
    ap.add_argument("--runs", type=int, default=5, help="runs per command (median reported)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a median is above its target")
    ap.add_argument("--out", default=str(RESULTS / "cli_startup.json"))
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="lttw-cli-bench-") as tmp:
        if args.model:
            folder, source = Path(args.model), args.model
            if not (folder / "lttw.json").is_file():
                raise SystemExit(f"{folder}: not a trained model folder (no lttw.json)")
        else:
            folder = Path(tmp) / "model"
            source = f"synthetic LTTW around {build_model_folder(folder, args.encoder)}"
        lttw = lttw_command()
        commands = {
            "help": [*lttw, "--help"],
            "predict": [*lttw, "predict", "--model", str(folder), TEXT],
        }
        rows = {}
        print(f"# model: {source} | {args.runs} runs each | python {platform.python_version()}")
        print(f"{'command':8} {'median s':>9} {'min s':>7} {'max s':>7} {'target s':>9}")
        for name, command in commands.items():
            times = [run_timed(command, ROOT)[0] for _ in range(args.runs)]
            rows[name] = {
                "command": " ".join(command[len(lttw) - 1 :]),
                **timings(times),
                "target_s": TARGETS_S[name],
            }
            print(
                f"{name:8} {rows[name]['median_s']:9.3f} {min(times):7.3f} {max(times):7.3f} "
                f"{TARGETS_S[name]:9.1f}",
                flush=True,
            )
    result = {
        "machine": describe(packages=("torch", "transformers", "tokenizers")),
        "model": source,
        "runs": args.runs,
        "rows": rows,
    }
    write(result, args.out)
    if args.check and any(r["median_s"] > r["target_s"] for r in rows.values()):
        raise SystemExit(1)
    return result


def stage(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="startup.py stage", description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", type=Path, required=True, help="a project after dvc repro")
    ap.add_argument("--stage", default="train", help="stages/<name>.py (default train)")
    ap.add_argument("--fold", type=int, default=0, help="for per-fold stages")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "stage_startup.json")
    args = ap.parse_args(argv)
    script = args.project / "stages" / f"{args.stage}.py"
    if not script.is_file():
        sys.exit(f"error: {script}: no such stage script")
    command = [str(script.relative_to(args.project))]
    dvc_yaml = (args.project / "dvc.yaml").read_text(encoding="utf-8")
    if re.search(rf"stages/{re.escape(args.stage)}\.py --fold", dvc_yaml):  # a per-fold stage
        command += ["--fold", str(args.fold)]
    walls, imported = [], {}
    for _ in range(args.runs):
        wall, stderr = run_timed([sys.executable, "-c", RUNNER, *command], args.project)
        line = [x for x in stderr.splitlines() if x.startswith("IMPORTED ")][-1]
        walls.append(wall)
        imported = json.loads(line.removeprefix("IMPORTED "))
    result = {
        "machine": describe(),
        "project": str(args.project.resolve()),
        "command": " ".join(["python", *command]),
        **timings(walls),
        "imported": imported,
    }
    print(
        f"{result['command']}: median {result['median_s']:.2f} s over {args.runs} runs "
        f"({', '.join(f'{w:.2f}' for w in walls)}); imported: "
        f"{', '.join(m for m, yes in imported.items() if yes) or 'none of the watched'}"
    )
    write(result, args.out)
    return result


def write(result: dict, out) -> None:
    from lttw.io import write_json

    write_json(Path(out), result)  # atomic: a killed run leaves the old file
    print(f"# wrote {out}")


def main(argv=None) -> dict:
    from steps import first_run

    modes = {"cli": cli, "stage": stage, "first-run": first_run.main, "repro": first_run.repro}
    return run_mode(__doc__, modes, argv)


if __name__ == "__main__":
    main()
