"""The lttw_tfidf ensemble against its two parts, in the paired study's cell format (issue 42,
part 5), at a reduced profile that fits a small CPU.

One `dvc repro` per dataset with ``model.variant: lttw_tfidf`` trains LTTW and tf-idf on each
fold (the ensemble's parts are the two variants' own training runs, same settings and seed),
then each part folder of ``models/fold_N`` is scored on its own. Cells are written as
``lttw exp collect`` writes them (``<out>/<cell>/``: cell.json, params.yaml,
summary.json, folds/fold_N.json, test_predictions.parquet), named
``ev-<dataset>-n<train texts>-<variant>``, and the paired tests of the study report (the
paired t-test across folds, McNemar's exact test on the pooled held-out predictions) of the
ensemble against each part go to ``<out>/ens-<dataset>-n<texts>.json``.

    python bench/ensemble_study.py sst2 --train-size 1500 --folds 0 1 2

(``--out``: evidence/ensemble, kept apart from the study's evidence/runs.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
COPY = ["dvc.yaml", "params.yaml", "stages", "src", ".dvc/config", ".dvcignore", ".gitignore"]
PARTS = ("lttw", "tfidf_linear")
#: the study's per-dataset settings (experiments/study.yaml), and this profile's
DATASET_SET = {"thucnews": {"model": {"max_len": 48}}}


def make_project(root: Path, dataset: str, train_size: int, folds: list[int]) -> None:
    for name in COPY:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / name)
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["data"].update(
        dataset=dataset, root=str(REPO.parent / "shared" / "datasets"), train_size=train_size
    )
    params["data"]["predict_size"] = 0  # this profile: no predict sample (time)
    params["folds"]["run"] = folds
    params["model"]["variant"] = "lttw_tfidf"
    # this profile: the encoder frozen (the encode stage's cached states; the CPU is shared)
    # and 2-3 epochs (train.min_steps 0, train.max_epochs 3)
    params["train"].update(freeze_encoder=True, min_steps=0, max_epochs=3)
    for group, values in DATASET_SET.get(dataset, {}).items():
        params[group].update(values)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "profile"], cwd=root, check=True)


def set_folds(root: Path, folds: list[int]) -> None:
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["folds"]["run"] = folds
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def repro(root: Path, log: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "DVC_NO_ANALYTICS": "1"}
    env["HF_HUB_OFFLINE"] = "1"
    t0 = time.perf_counter()
    with open(log, "a") as out:
        subprocess.run(["dvc", "repro"], cwd=root, env=env, stdout=out, stderr=out, check=True)
    return time.perf_counter() - t0


def part_metrics(root: Path, fold: int, settings) -> dict[str, tuple[dict, pd.DataFrame]]:
    """Each part's metrics (as the evaluate stage writes them) and held-out predictions."""
    from lttw.data.fold_inputs import load_fold_inputs
    from lttw.evaluation.calibration_error import calibration_metrics
    from lttw.evaluation.metrics import classification_metrics, predicted_labels
    from lttw.inference.predict import predict_cached_parts
    from lttw.models.calibration import load_calibration

    os.chdir(root)
    inputs = load_fold_inputs(fold)
    ensemble = json.loads((root / f"metrics/folds/fold_{fold}.json").read_text())
    out = {}
    for part in PARTS:
        folder = root / f"models/fold_{fold}/{part}"
        probs = predict_cached_parts(folder, inputs, fold, settings.train)
        temperature = load_calibration(folder).temperature
        metrics = {**{k: ensemble[k] for k in ("fold", "dataset", "seed")}, "variant": part}
        for name in ("fold_test", "test"):
            y = inputs.part_labels(name)
            metrics[name] = classification_metrics(
                y, predicted_labels(probs[name]), inputs.n_labels
            )
            # ECE / NLL before and after the part's own temperature (as the evaluate stage)
            metrics[name].update(calibration_metrics(probs[name], y, temperature))
        y = inputs.part_labels("test")
        out[part] = (metrics, predictions(fold, y, predicted_labels(probs["test"])))
    predicted = pd.read_parquet(root / f"data/eval/fold_{fold}/predictions.parquet")
    test = predicted[predicted["part"] == "test"]
    out["lttw_tfidf"] = (ensemble, predictions(fold, test["label"], test["pred"]))
    return out


def predictions(fold: int, y, pred) -> pd.DataFrame:
    y = np.asarray(y, np.int64)
    return pd.DataFrame(
        {"fold": fold, "row": np.arange(len(y)), "label": y, "pred": np.asarray(pred, np.int64)}
    )


def write_cell(folder: Path, per_fold: dict[int, dict], preds: list[pd.DataFrame], params, info):
    from lttw.evaluation.metrics import summarize_folds

    if folder.exists():
        shutil.rmtree(folder)
    (folder / "folds").mkdir(parents=True)
    for fold, metrics in per_fold.items():
        (folder / "folds" / f"fold_{fold}.json").write_text(json.dumps(metrics, indent=2) + "\n")
    summary = {k: v for k, v in per_fold[min(per_fold)].items() if k in ("dataset", "variant")}
    summary.update(summarize_folds(per_fold))
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (folder / "cell.json").write_text(json.dumps(info, indent=2) + "\n")
    pd.concat(preds, ignore_index=True).to_parquet(folder / "test_predictions.parquet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("--train-size", type=int, default=1500)
    ap.add_argument("--folds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "ens")
    ap.add_argument("--out", type=Path, default=REPO / "evidence" / "ensemble")
    args = ap.parse_args()
    root = args.work / args.dataset
    if not (root / "dvc.yaml").is_file():
        root.mkdir(parents=True)
        make_project(root, args.dataset, args.train_size, args.folds)
    else:
        set_folds(root, args.folds)
    seconds = repro(root, args.work / f"{args.dataset}.log")
    print(f"{args.dataset}: dvc repro {seconds:.0f} s", flush=True)
    sys.path.insert(0, str(root / "src"))
    from lttw.experiments.cell_folder import read_cell
    from lttw.reporting.stats import paired_test, pooled_mcnemar
    from lttw.settings.reading import settings_from_dict

    params = yaml.safe_load((root / "params.yaml").read_text())
    settings = settings_from_dict(params)
    texts = round(0.8 * args.train_size)
    cells: dict[str, tuple[dict, list]] = {}
    for fold in args.folds:
        for variant, (metrics, preds) in part_metrics(root, fold, settings).items():
            cells.setdefault(variant, ({}, []))
            cells[variant][0][fold] = metrics
            cells[variant][1].append(preds)
    folders = {}
    for variant, (per_fold, preds) in cells.items():
        name = f"ev-{args.dataset}-n{texts}-{variant}"
        cell_params = {**params, "model": {**params["model"], "variant": variant}}
        info = {"experiment": name, "profile": "bench/ensemble_study.py", "repro_s": seconds}
        folders[variant] = args.out / name
        write_cell(folders[variant], per_fold, preds, cell_params, info)
    ensemble = read_cell(folders["lttw_tfidf"])
    report = {"dataset": args.dataset, "train_texts": texts, "folds": args.folds, "vs": {}}
    report["test_f1_macro"] = {
        v: {
            "mean": float(read_cell(f).values("f1_macro").mean()),
            "per_fold": read_cell(f).values("f1_macro").tolist(),
        }
        for v, f in folders.items()
    }
    report["test_ece"] = {  # the ensemble's: before / after the mixture's own temperature
        v: {k: float(read_cell(f).values(k).mean()) for k in ("ece", "ece_uncalibrated")}
        for v, f in folders.items()
    }
    report["weights"] = {
        fold: json.loads((root / f"models/fold_{fold}/ensemble.json").read_text())
        for fold in args.folds
    }
    for part in PARTS:
        report["vs"][part] = {  # delta: ensemble - part
            "paired": paired_test(ensemble, read_cell(folders[part])),
            "mcnemar": pooled_mcnemar(pd.concat(cells[part][1]), pd.concat(cells["lttw_tfidf"][1])),
        }
    path = args.out / f"ens-{args.dataset}-n{texts}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
