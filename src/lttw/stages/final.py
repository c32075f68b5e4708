"""Stage `final`: the model a user takes away, `models/final` (``lttw.training.final``). With
`final.enabled` the chosen variant retrained on every labelled row (`final.rows`) for the
epochs the folds' early stopping chose; otherwise a copy of the first fold's model, marked as
such. Its estimate (macro F1 with an interval) is its own on a held-out test sample where it
has one, else the folds' pooled out-of-fold figure. Writes `metrics/final.json` (numbers
only) and the folder's model card (README.md, metrics.json), and logs the estimate."""

import logging
from functools import partial

from lttw.inference.held_out import held_out_test
from lttw.stages import run_stage
from lttw.training.final import FINAL_MODEL_DIR, write_final_model
from lttw.training.final_card import write_final_card
from lttw.training.run_settings import RunSettings

log = logging.getLogger("lttw.final")


def main(settings):
    run = RunSettings.of(settings)
    final = settings.final
    rows = final.rows if final.enabled else None
    measure = partial(
        held_out_test,
        FINAL_MODEL_DIR,
        batch_size=settings.train.eval_batch_size,
        seed=settings.seed,
    )
    card = partial(write_final_card, settings=settings, rows=rows, license=final.license)
    record = write_final_model(run, final, settings.folds.run, settings.nmf, measure, card)
    estimate = record["estimate"]
    log.info(
        "%s: trained on %d rows%s; macro F1 %.4f (%d%% interval %.4f to %.4f, %s)",
        FINAL_MODEL_DIR.as_posix(),
        record["trained_on"],
        "" if final.enabled else " (a copy of the first fold's model)",
        estimate["f1_macro"],
        round(100 * estimate["level"]),
        estimate["f1_macro_low"],
        estimate["f1_macro_high"],
        "the folds' out-of-fold predictions" if estimate["from_folds"] else "held-out test",
    )


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.final [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, argv=argv)


if __name__ == "__main__":
    run()
