"""Stage `final`: the model a user takes away, `models/final` (``lttw.training.final``). With
`final.enabled` the chosen variant retrained on every labelled row of the train sample for
the epochs the folds' early stopping chose; otherwise a copy of the first fold's model,
marked as such. Its quality estimate is the folds' held-out metrics; a trained one is also
measured on the held-out test sample. Also writes `metrics/final.json` (rows, epochs and how
they were chosen, and that test metric)."""

import logging
from functools import partial

from lttw.inference.held_out import held_out_test
from lttw.stage import run_stage
from lttw.training.final import FINAL_MODEL_DIR, write_final_model
from lttw.training.run_settings import RunSettings

log = logging.getLogger("lttw.final")


def main(settings):
    measure = partial(held_out_test, FINAL_MODEL_DIR, batch_size=settings.train.eval_batch_size)
    record = write_final_model(RunSettings.of(settings), settings.final, measure)
    log.info(
        "%s%s: trained on %d rows",
        record["model"],
        f" (a copy of {record['copy_of']})" if "copy_of" in record else "",
        record["trained_on"],
    )


if __name__ == "__main__":
    run_stage(main, __doc__)
