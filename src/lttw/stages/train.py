"""Stage `train`: fine-tune the classifier of `model.variant` on one fold's train part, with
early stopping on its validation part (``lttw.training.fold.train_fold``). Writes a
self-contained model folder, ``metrics/train/fold_N.json`` and the dvclive curves.

Runs standalone as well (no dvc needed): `python -m lttw.stages.train --fold 0`, or on several
processes `torchrun --standalone --nproc-per-node 4 -m lttw.stages.train --fold 0`.
"""

import logging

from lttw.stages import run_stage
from lttw.training.fold import train_fold
from lttw.training.run_settings import RunSettings

log = logging.getLogger("lttw.train")


def main(settings, fold: int):
    summary = train_fold(RunSettings.of(settings), fold)
    log.info(
        "fold %d trained: %d of %d planned epochs, %.1f s per epoch",
        fold,
        summary["epochs_run"],
        summary["epochs_planned"],
        summary["time_per_epoch_s"],
    )


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.train --fold N [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, per_fold=True, argv=argv)


if __name__ == "__main__":
    run()
