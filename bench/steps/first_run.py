"""A user's first run: ``lttw init --profile quick`` on a CSV of labelled texts, ``dvc repro``
and ``lttw evaluate`` of the held-out texts, each timed (wall seconds), with the held-out
macro F1 the run reached.

    python bench/startup.py first-run                       # 4,000 train + 1,000 test AG News texts
    python bench/startup.py first-run --train-rows 2000 --test-rows 500 --profile quick
    python bench/startup.py repro                   # dvc repro of this checkout in a fresh clone

The texts are the first ``--train-rows`` / ``--test-rows`` rows of each class of the local AG
News folder (``--data DIR``, default the embedded ``datasets/ag_news``; class names,
columns ``text`` and ``label``),
written as ``train.csv`` / ``test.csv`` of one folder, which ``lttw init`` reads as the
splits. The project is made in a temporary folder (``--keep DIR``: there instead, kept);
the encoder is the embedded MiniLM-L6 the profile names. Writes
``bench/results/first_run.json``.

``repro``: ``dvc repro`` of a checkout's own pipeline (``--repo``, default this one: its
committed HEAD, ``params.yaml``'s default profile) in a fresh clone, from an empty DVC cache,
as ``make repro`` runs it: its wall time, the held-out macro F1 it reached and which committed
files it rewrote (none where the committed outputs are the committed code's). Writes
``bench/results/repro.json`` (``--out``).
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

from common import RESULTS, ROOT, describe  # (bench/ is on sys.path: the script's folder)

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
    parser = argparse.ArgumentParser(
        prog="startup.py first-run", description=__doc__.split("\n\n")[0]
    )
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


def repro(argv=None) -> dict:
    parser = argparse.ArgumentParser(
        prog="startup.py repro", description="dvc repro of a checkout in a fresh clone"
    )
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout to clone (HEAD)")
    parser.add_argument("--keep", type=Path, help="clone into this folder and keep it")
    parser.add_argument("--out", type=Path, default=RESULTS / "repro.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        clone = args.keep or Path(scratch) / "clone"
        git = ["git", "-C", str(clone)]
        subprocess.run(["git", "clone", "-q", str(args.repo), str(clone)], check=True)
        commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
        seconds = timed(["dvc", "repro"], clone)
        status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
        summary_file = clone / "metrics" / "summary.json"
        summary = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
    result = {
        "command": "dvc repro",
        "commit": commit.stdout.strip(),
        "seconds": round(seconds, 1),
        "held_out_f1_macro": summary.get("test/f1_macro", {}).get("mean"),
        "files_rewritten": [line[3:] for line in status.stdout.splitlines()],
        "machine": describe(packages=("torch", "transformers", "dvc")),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"dvc repro {result['seconds']:.1f} s on {result['machine']['cpu']} "
        f"({', '.join(result['machine']['cpu_flags'])}; {result['machine']['cpus_usable']} cores)"
    )
    print(f"# wrote {args.out}")
    return result
