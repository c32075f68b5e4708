"""Stage `nmf`: latent factors of the fold's row-normalised word-label matrix (eq. 2-3)."""

from lttw import layout
from lttw.factors.counts import load_counts, normalise_rows
from lttw.factors.nmf import factor_metrics, latent_factors, resolve_rank, save_factors
from lttw.io import atomic_dir, write_json
from lttw.stage import run_stage


def main(settings, fold):
    counts, _ = load_counts(layout.counts_dir(fold))
    V = normalise_rows(counts)
    rank = resolve_rank(settings.nmf.rank, V.shape[1])  # the metrics JSON records it
    factors = latent_factors(V, rank, settings.nmf, settings.seed)
    with atomic_dir(layout.nmf_dir(fold)) as tmp:
        save_factors(tmp, factors)
    write_json(layout.nmf_metrics(fold), factor_metrics(V, factors))


if __name__ == "__main__":
    run_stage(main, __doc__, per_fold=True)
