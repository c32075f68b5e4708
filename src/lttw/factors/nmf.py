"""NMF of the row-normalised word-label matrix (paper eq. 2-3): V ~ W H, Frobenius loss.

W (n_words x rank) holds the per-word latent factors that the features stage looks up;
H (rank x n_labels) relates factors to labels.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lttw.errors import DataError, UserError
from lttw.io import read_arrays, write_arrays
from lttw.settings import NMFSettings

if TYPE_CHECKING:  # scipy where a factorisation is measured: loading factors needs none
    import scipy.sparse as sp

log = logging.getLogger(__name__)

FACTORS_FILE = "latent_factors.safetensors"
#: the one objective and solver of every factorisation here (the fit and the fixed-H solve)
SOLVER = {"beta_loss": "frobenius", "solver": "cd"}
#: the paper's rank (AG News, 4 classes); ``nmf.rank: auto`` never goes below it
PAPER_RANK = 5
#: ``nmf.rank: auto`` never goes above this (1,000 classes would otherwise make a rank-1,000
#: NMF and 20,000-wide factor features per token)
AUTO_RANK_MAX = 32


@dataclass(frozen=True)
class LatentFactors:
    """Result of ``latent_factors``.

    word_factors: (n_words, rank) float32, row w = latent factor of word w.
    factor_label: (rank, n_labels) float32.
    """

    word_factors: np.ndarray
    factor_label: np.ndarray
    reconstruction_err: float
    n_iter: int
    init: str  # the initialisation actually used

    @property
    def rank(self) -> int:
        return int(self.word_factors.shape[1])


def resolve_rank(rank: int | str, n_labels: int, warn: bool = True) -> int:
    """``nmf.rank`` as a number: ``auto`` is the number of classes where that is above
    ``PAPER_RANK``, else ``PAPER_RANK`` (one factor per class), and at most
    ``AUTO_RANK_MAX`` (logged as a warning when it caps, unless ``warn`` is false)."""
    if rank != "auto":
        return int(rank)
    resolved = min(max(PAPER_RANK, n_labels), AUTO_RANK_MAX)
    if resolved < n_labels and warn:
        log.warning(auto_rank_capped(n_labels))
    else:
        log.info("nmf.rank=auto: %d classes -> rank %d", n_labels, resolved)
    return resolved


def auto_rank_capped(n_labels: int) -> str:
    """What ``nmf.rank: auto`` says where it caps the rank for ``n_labels`` classes."""
    return (
        f"nmf.rank=auto: {n_labels} classes -> rank {AUTO_RANK_MAX} (auto stops at "
        f"{AUTO_RANK_MAX}: the NMF's time and the factor features' width, (k+s) x rank, grow "
        f"with the rank); some classes share factors; set nmf.rank (up to {n_labels}) for "
        "one factor per class"
    )


def check_rank(rank: int, n_words: int, n_labels: int, warn_below: bool = True) -> None:
    """Reject rank > n_words (no factorisation); warn when rank < n_labels (too few factors
    for every class to get one of its own) or rank > n_labels (degenerate)."""
    if rank > n_words:
        raise UserError(
            f"nmf.rank={rank} exceeds the vocabulary size ({n_words} words); "
            f"use nmf.rank <= {n_words}"
        )
    if rank < n_labels and warn_below:
        log.warning(
            "nmf.rank=%d is below the number of classes (%d): some class gets no "
            "factor of its own and weak factor features; set nmf.rank >= %d",
            rank,
            n_labels,
            n_labels,
        )
    if rank > n_labels:
        log.warning(
            "nmf.rank=%d > number of labels (%d): V (n_words x %d) can be factorised "
            "exactly and the factors are not unique",
            rank,
            n_labels,
            n_labels,
        )


def latent_factors(
    V: sp.spmatrix | np.ndarray, rank: int, settings: NMFSettings, random_state: int | None
) -> LatentFactors:
    """Factorise V (n_words x n_labels, non-negative) with scikit-learn's NMF.

    The NNDSVD initialisations need rank <= min(V.shape); above that the initialisation falls
    back to ``random`` (what scikit-learn itself does by default), and the log says so.
    """
    n_words, n_labels = V.shape
    # nmf.rank auto at its cap warned as it resolved
    capped = settings.rank == "auto" and rank == AUTO_RANK_MAX
    check_rank(rank, n_words, n_labels, warn_below=not capped)
    init = settings.init
    if init != "random" and rank > min(n_words, n_labels):
        log.warning(
            "nmf.init=%s needs nmf.rank <= %d; using init=random for rank %d",
            init,
            min(n_words, n_labels),
            rank,
        )
        init = "random"
    from sklearn.decomposition import NMF  # here: loading factors (prediction) needs no sklearn
    from sklearn.exceptions import ConvergenceWarning

    model = NMF(
        n_components=rank,
        init=init,
        **SOLVER,
        max_iter=settings.max_iter,
        tol=settings.tol,
        random_state=random_state,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        W = model.fit_transform(V)
    if any(issubclass(w.category, ConvergenceWarning) for w in caught):
        log.warning(
            "NMF did not converge within nmf.max_iter=%d (tol %g)", settings.max_iter, settings.tol
        )
    log.info(
        "NMF rank %d on %d x %d: %d iterations, reconstruction error %.6g",
        rank,
        n_words,
        n_labels,
        model.n_iter_,
        model.reconstruction_err_,
    )
    return LatentFactors(
        word_factors=W.astype(np.float32),
        factor_label=model.components_.astype(np.float32),
        reconstruction_err=float(model.reconstruction_err_),
        n_iter=int(model.n_iter_),
        init=init,
    )


def factors_given_labels(
    V, factor_label: np.ndarray, settings: NMFSettings, random_state: int | None
) -> np.ndarray:
    """Word factors W (n_words, rank) float32 of V (n_words, n_labels) for a fixed H
    (W = argmin ||V - W H||, W >= 0): the same objective and solver as ``latent_factors``."""
    from sklearn.decomposition import non_negative_factorization

    H = np.asarray(factor_label, dtype=np.float64)
    W, _, _ = non_negative_factorization(
        V.astype(np.float64),
        H=H,
        n_components=H.shape[0],
        update_H=False,
        **SOLVER,
        max_iter=settings.max_iter,
        tol=settings.tol,
        random_state=random_state,
    )
    return W.astype(np.float32)


def factor_metrics(V: sp.spmatrix | np.ndarray, factors: LatentFactors) -> dict:
    """Metrics JSON of the nmf stage; relative_error = ||V - WH||_F / ||V||_F."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import norm as sparse_norm

    norm = float(sparse_norm(V) if sp.issparse(V) else np.linalg.norm(V))
    return {
        "reconstruction_error": factors.reconstruction_err,
        "relative_error": factors.reconstruction_err / norm if norm > 0 else 0.0,
        "n_iter": factors.n_iter,
        "rank": factors.rank,
        "n_words": int(V.shape[0]),
    }


def save_factors(directory: str | Path, factors: LatentFactors) -> None:
    """Write ``latent_factors.safetensors`` (word_factors, factor_label) into ``directory``."""
    write_arrays(
        Path(directory) / FACTORS_FILE,
        metadata={"init": factors.init},
        word_factors=factors.word_factors,
        factor_label=factors.factor_label,
    )


def factor_counts_folder(
    counts_directory: str | Path, directory: str | Path, settings: NMFSettings, seed: int
) -> dict:
    """The nmf stage's work on one counts folder: the latent factors of its row-normalised
    matrix, saved into ``directory``; returns their metrics (``factor_metrics``)."""
    from lttw.factors.counts import load_counts, normalise_rows

    counts, _ = load_counts(counts_directory)
    V = normalise_rows(counts)
    rank = resolve_rank(settings.rank, V.shape[1])  # the metrics JSON records it
    factors = latent_factors(V, rank, settings, seed)
    save_factors(directory, factors)
    return factor_metrics(V, factors)


def load_word_factors(directory: str | Path) -> np.ndarray:
    """The (n_words, rank) float32 word factors saved by ``save_factors``."""
    path = Path(directory) / FACTORS_FILE
    if not path.is_file():
        raise DataError(f"{path}: not found (run the nmf stage first)")
    return read_arrays(path)["word_factors"]
