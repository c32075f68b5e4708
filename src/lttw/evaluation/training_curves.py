"""A fold's training curves as one picture (``dvc plots show`` draws it offline, as it draws
the held-out pictures): the per-step metrics dvclive logged (``plots/metrics/**/*.tsv``:
``train/loss``, ``train/lr`` against the optimiser step) and the validation macro F1 per
epoch (``plots/custom/epochs.json``), one panel each, side by side (``training.live`` writes
both). A run that logged nothing gets a picture that says so."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from lttw.evaluation.plots import figure_file, note_png

#: the per-epoch file of ``training.live`` and the value drawn from it
EPOCHS_JSON = Path("plots") / "custom" / "epochs.json"
EPOCH_VALUE = "val_f1_macro"
STEP_METRICS = Path("plots") / "metrics"


def step_curves(live_dir: Path) -> dict[str, tuple[list[float], list[float]]]:
    """``{metric: (steps, values)}`` of every per-step TSV under ``live_dir``, by name
    (``train/loss``)."""
    curves = {}
    folder = live_dir / STEP_METRICS
    for tsv in sorted(folder.rglob("*.tsv")) if folder.is_dir() else []:
        name = tsv.relative_to(folder).with_suffix("").as_posix()
        with tsv.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        column = tsv.stem
        points = [(float(r["step"]), float(r[column])) for r in rows if r.get(column)]
        if points:
            curves[name] = ([s for s, _ in points], [v for _, v in points])
    return curves


def epoch_curve(live_dir: Path) -> tuple[list[float], list[float]]:
    """(epochs, validation macro F1) of ``live_dir``'s per-epoch file; empty without it."""
    path = live_dir / EPOCHS_JSON
    rows = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
    kept = [r for r in rows if r.get(EPOCH_VALUE) is not None]
    return [float(r["epoch"]) for r in kept], [float(r[EPOCH_VALUE]) for r in kept]


def training_png(path: Path, live_dir: Path, title: str) -> None:
    """The curves of ``live_dir`` (a dvclive folder) into ``path``."""
    steps = step_curves(live_dir)
    epochs = epoch_curve(live_dir)
    panels = len(steps) + (1 if epochs[0] else 0)
    if not panels:
        note_png(path, f"{title}: no training curves logged")
        return
    with figure_file(path, (5.0 * panels, 4.0), ncols=panels) as (fig, axes):
        axes = list(axes) if panels > 1 else [axes]
        for ax, (name, (x, y)) in zip(axes, steps.items()):
            ax.plot(x, y)
            ax.set_xlabel("optimiser step")
            ax.set_title(name)
            if name.endswith("lr"):
                ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        if epochs[0]:
            ax = axes[-1]
            ax.plot(*epochs, "o-")
            ax.set_xlabel("epoch")
            ax.set_ylabel("macro F1")
            ax.set_title("validation macro F1 per epoch")
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        fig.suptitle(title)
