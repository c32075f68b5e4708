"""Start-up time of the command line: wall time of ``lttw --help`` and of
``lttw predict --model DIR "one text"`` in a fresh subprocess each time (imports, model load,
one forward pass), the median of ``--runs`` (default 5) runs of each.

    python bench/cli_startup.py --model models/fold_0     # a trained model folder
    python bench/cli_startup.py                           # builds a MiniLM LTTW folder itself
    python bench/cli_startup.py --check                   # exit 1 above the targets

Without ``--model`` the folder is built as ``predict_throughput.py --synthetic`` builds it:
an LTTW classifier around the embedded MiniLM-L6 with latent factors, laid out as the train
stage writes it (what a trained ``models/fold_0`` holds; the weights do not change the time).
Targets (issue 13.7): ``lttw --help`` <= 0.4 s, ``lttw predict`` <= 2.5 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import describe  # noqa: E402  (bench/ is on sys.path: the script's folder)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "cli_startup.json"
TARGETS_S = {"help": 0.4, "predict": 2.5}
TEXT = "Stocks rally as oil prices fall and the central bank holds its rate"


def lttw_command() -> list[str]:
    """The ``lttw`` console script of this interpreter (else ``python -m lttw.cli``)."""
    script = Path(sys.executable).parent / "lttw"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "lttw.cli"]


def time_command(args: list[str], runs: int) -> list[float]:
    """Wall seconds of ``runs`` runs of ``args`` (each must exit 0)."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return times


def build_model_folder(folder: Path, encoder: str | None) -> str:
    sys.path.insert(0, str(ROOT / "bench"))
    from predict_throughput import build_synthetic_folder, default_encoder_dir

    encoder_dir = encoder or default_encoder_dir()
    build_synthetic_folder(folder, encoder_dir, "lttw", max_len=128, seed=0)
    return encoder_dir


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)

    tmp = None
    try:
        if args.model:
            folder, source = Path(args.model), args.model
            if not (folder / "lttw.json").is_file():
                raise SystemExit(f"{folder}: not a trained model folder (no lttw.json)")
        else:
            tmp = Path(tempfile.mkdtemp(prefix="lttw-cli-bench-"))
            folder = tmp / "model"
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
            times = time_command(command, args.runs)
            rows[name] = {
                "command": " ".join(command[len(lttw) - 1 :]),
                "median_s": round(statistics.median(times), 3),
                "runs_s": [round(t, 3) for t in times],
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
        from lttw.io import write_json

        write_json(Path(args.out), result)
        print(f"# wrote {args.out}")
        if args.check and any(r["median_s"] > r["target_s"] for r in rows.values()):
            raise SystemExit(1)
        return result
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
