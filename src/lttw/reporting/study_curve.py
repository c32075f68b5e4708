"""The paired study's learning curve as files beside its cells: ``learning_curve.csv`` (for
``dvc plots``) and a plot (``study_report`` builds the curve and the report section)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def write_curve(curve: pd.DataFrame, folder: Path) -> list[Path]:
    """``learning_curve.csv`` (for ``dvc plots``) and, where matplotlib is installed,
    ``learning_curve.png``; the files written."""
    from lttw.io import atomic_path, write_csv

    written = [folder / "learning_curve.csv"]
    write_csv(written[0], curve.reset_index())
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return written
    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=120)
    for variant in curve.columns:
        points = curve[variant].dropna()
        ax.plot(points.index, 100 * points.values, marker="o", label=variant)
    ax.set_xscale("log")
    ax.set_xticks(curve.index, [f"{n:,}" for n in curve.index])  # the sizes, not 10^k
    ax.minorticks_off()
    ax.set_xlabel("training texts per fold")
    ax.set_ylabel("held-out macro F1 (%)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_path(folder / "learning_curve.png") as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return [*written, folder / "learning_curve.png"]
