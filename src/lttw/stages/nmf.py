"""Stage `nmf`: latent factors of the fold's row-normalised word-label matrix (eq. 2-3)."""

from lttw import layout
from lttw.factors.nmf import factor_counts_folder
from lttw.io import atomic_dir, write_metrics
from lttw.stages import run_stage


def main(settings, fold):
    with atomic_dir(layout.nmf_dir(fold)) as tmp:
        metrics = factor_counts_folder(layout.counts_dir(fold), tmp, settings.nmf, settings.seed)
    write_metrics(layout.nmf_metrics(fold), metrics)


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.nmf --fold N [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, per_fold=True, argv=argv)


if __name__ == "__main__":
    run()
