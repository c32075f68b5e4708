"""A user's first run: ``lttw init --profile quick`` on a CSV of labelled texts, ``dvc repro``
and ``lttw evaluate`` of the held-out texts, each timed (wall seconds), with the held-out
macro F1 the run reached.

    python bench/first_run.py                       # 4,000 train + 1,000 test AG News texts
    python bench/first_run.py --train-rows 2000 --test-rows 500 --profile quick

The texts are the first ``--train-rows`` / ``--test-rows`` rows of each class of the local AG
News folder (``--data DIR``, default the embedded ``datasets/ag_news``; class names,
columns ``text`` and ``label``),
written as ``train.csv`` / ``test.csv`` of one folder, which ``lttw init`` reads as the
splits. The project is made in a temporary folder (``--keep DIR``: there instead, kept);
the encoder is the embedded MiniLM-L6 the profile names. Writes
``bench/results/first_run.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, ROOT  # noqa: E402
from machine import describe  # noqa: E402

AG_NEWS = ROOT / "datasets" / "ag_news"  # the embedded sample; --data for another copy


def write_data(source: Path, folder: Path, train_rows: int, test_rows: int) -> None:
    """train.csv and test.csv: the first rows of each class of ``source`` (a dataset folder
    with its manifest.json: splits, classes), balanced, class names."""
    import pandas as pd

    manifest = json.loads((source / "manifest.json").read_text())
    names = manifest["classes"]
    folder.mkdir(parents=True)
    for split, rows in (("train", train_rows), ("test", test_rows)):
        frame = pd.read_parquet(source / manifest["splits"][split], columns=["text", "label"])
        per_class = rows // len(names)
        frame = frame.groupby("label", group_keys=False).head(per_class)
        frame = frame.assign(label=frame["label"].map(lambda i: names[int(i)]))
        frame.to_csv(folder / f"{split}.csv", index=False)


def timed(args: list[str], cwd: Path) -> float:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "HF_HUB_OFFLINE": "1"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return time.perf_counter() - start


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=AG_NEWS, help="an AG News dataset folder")
    parser.add_argument("--train-rows", type=int, default=4000)
    parser.add_argument("--test-rows", type=int, default=1000)
    parser.add_argument("--profile", default="quick", choices=["quick", "default", "paper"])
    parser.add_argument("--keep", type=Path, help="make the project here and keep it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        base = args.keep or Path(scratch)
        data, project = base / "news", base / "project"
        write_data(args.data, data, args.train_rows, args.test_rows)
        seconds = {
            "init": timed(
                ["lttw", "init", str(project), "--data", str(data), "--profile", args.profile],
                base,
            ),
            "repro": timed(["dvc", "repro"], project),
        }
        test = project / "data" / "raw" / "news" / "test.csv"
        seconds["evaluate"] = timed(["lttw", "evaluate", str(test), "--out", "ev"], project)
        summary = json.loads((project / "metrics" / "summary.json").read_text())
        evaluated = json.loads((project / "ev" / "metrics.json").read_text())
    result = {
        "profile": args.profile,
        "train_rows": args.train_rows,
        "test_rows": args.test_rows,
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
        "held_out_f1_macro": summary.get("test/f1_macro", {}).get("mean"),
        "evaluate_f1_macro": evaluated["metrics"]["f1_macro"],
        "evaluate_f1_interval": evaluated["intervals"]["f1_macro"],
        "machine": describe(packages=("torch", "transformers", "dvc")),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "first_run.json").write_text(json.dumps(result, indent=2) + "\n")
    for step, value in result["seconds"].items():
        print(f"{step:<10} {value:8.1f} s")
    print(f"held-out macro F1 {result['evaluate_f1_macro']:.4f} {result['evaluate_f1_interval']}")
    return result


if __name__ == "__main__":
    main()
