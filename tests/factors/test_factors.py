"""NMF latent factors: shapes, non-negativity, rank checks, persistence."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import scipy.sparse as sp

from lttw.errors import UserError
from lttw.factors.counts import normalise_rows
from lttw.factors.nmf import (
    FACTORS_FILE,
    factor_metrics,
    latent_factors,
    load_word_factors,
    save_factors,
)
from lttw.io import read_arrays
from lttw.settings import NMFSettings


@pytest.fixture()
def V():
    rng = np.random.default_rng(0)
    counts = sp.random(
        200, 6, density=0.5, random_state=1, format="csr", data_rvs=lambda n: rng.integers(1, 20, n)
    ).astype(np.int64)
    counts = counts[np.asarray(counts.sum(axis=1)).ravel() > 0]
    return normalise_rows(counts)


def test_shapes_and_non_negativity(V):
    f = latent_factors(V, 3, NMFSettings(), random_state=0)
    assert f.word_factors.shape == (V.shape[0], 3) and f.word_factors.dtype == np.float32
    assert f.factor_label.shape == (3, 6) and f.factor_label.dtype == np.float32
    assert (f.word_factors >= 0).all() and (f.factor_label >= 0).all()
    assert f.n_iter >= 1 and f.rank == 3 and f.init == "nndsvda"
    err = np.linalg.norm(V.toarray() - f.word_factors @ f.factor_label)
    assert err == pytest.approx(f.reconstruction_err, rel=1e-3)
    m = factor_metrics(V, f)
    assert set(m) == {"reconstruction_error", "relative_error", "n_iter", "rank", "n_words"}
    assert 0 <= m["relative_error"] < 1 and m["n_words"] == V.shape[0]


def test_seeded(V):
    a = latent_factors(V, 4, NMFSettings(init="random"), random_state=3)
    b = latent_factors(V, 4, NMFSettings(init="random"), random_state=3)
    np.testing.assert_array_equal(a.word_factors, b.word_factors)


def test_rank_above_n_words_names_parameter():
    with pytest.raises(UserError, match=r"nmf.rank=5 .*3 words"):
        latent_factors(sp.csr_matrix(np.eye(3)), 5, NMFSettings(), 0)


def test_rank_above_n_labels_warns_and_falls_back(V, caplog):
    with caplog.at_level(logging.WARNING, logger="lttw.factors.nmf"):
        f = latent_factors(V, 8, NMFSettings(), random_state=0)
    assert f.word_factors.shape == (V.shape[0], 8) and f.init == "random"
    assert "number of labels (6)" in caplog.text and "init=random" in caplog.text


@pytest.mark.parametrize("n_labels, rank", [(4, 5), (6, 6), (10, 10)])
def test_auto_rank_is_the_classes_but_at_least_the_papers(n_labels, rank, caplog):
    from lttw.factors.nmf import resolve_rank

    with caplog.at_level(logging.INFO, logger="lttw.factors.nmf"):
        assert resolve_rank("auto", n_labels) == rank
    assert f"nmf.rank=auto: {n_labels} classes -> rank {rank}" in caplog.text
    assert resolve_rank(3, n_labels) == 3  # a number stays


def test_rank_setting_is_auto_or_a_number():
    from lttw.settings import SettingsError, settings_from_dict

    assert NMFSettings().rank == "auto"
    assert settings_from_dict({"nmf": {"rank": 7}}).nmf.rank == 7
    for bad in (0, "five"):
        with pytest.raises(SettingsError, match="nmf.rank"):
            settings_from_dict({"nmf": {"rank": bad}})


def test_rank_below_n_labels_warns(V, caplog):
    with caplog.at_level(logging.WARNING, logger="lttw.factors.nmf"):
        latent_factors(V, 5, NMFSettings(max_iter=20), random_state=0)
    assert "nmf.rank=5 is below the number of classes (6)" in caplog.text
    assert "set nmf.rank >= 6" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lttw.factors.nmf"):
        latent_factors(V, 6, NMFSettings(max_iter=20), random_state=0)
    assert "below the number of classes" not in caplog.text


def test_save_and_load(V, tmp_path):
    f = latent_factors(V, 2, NMFSettings(max_iter=5), random_state=0)
    save_factors(tmp_path, f)
    np.testing.assert_array_equal(load_word_factors(tmp_path), f.word_factors)
    np.testing.assert_array_equal(
        read_arrays(tmp_path / FACTORS_FILE)["factor_label"], f.factor_label
    )
