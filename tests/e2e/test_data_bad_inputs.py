"""The bad-input matrix (``stage_cases.DATA_CASES``) through the real ``sample`` stage: a bad
dataset fails in one line with nothing left behind, an unusual one works.

Decisions recorded here:
* non-integral float labels (1.5) are an error, not strings: they are almost always a
  regression target or a corrupted column, and silently making each value a class would train
  a nonsense classifier;
* mixed labels (a CSV column with ``1``, ``pos``, ``2.0``) are strings, taken verbatim;
* duplicate texts are kept, counted (``duplicate_texts``, ``conflicting_texts``) and warned
  about; test / predict texts that also occur in the train sample are counted
  (``duplicates_test_in_train``) and warned about;
* ``train.batch_size`` larger than the fold's train part is an error (``check_batch_size``),
  not a silent clamp: the batch size defines the experiment."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.stage_cases import DATA_CASES, PLAIN_DATA_CASES

from lttw import layout


@pytest.mark.parametrize("name", PLAIN_DATA_CASES)
def test_in_process_stage_runs_match_plain_subprocess(stage_runs, name):
    """The in-process runs are the script's plain runs: same exit code, same stderr."""
    in_process, plain = stage_runs[name], stage_runs[f"plain: {name}"]
    assert in_process.returncode == plain.returncode
    strip = lambda text: [
        re.sub(r"^\d\d:\d\d:\d\d |/\S+/(data|plain)\d+/", "", line) for line in text.splitlines()
    ]
    assert strip(in_process.stderr) == strip(plain.stderr)


def _outputs_left(cwd: Path) -> list[str]:
    data = cwd / "data"
    return sorted(str(p.relative_to(cwd)) for p in data.rglob("*")) if data.exists() else []


@pytest.mark.parametrize("name", [n for n, c in DATA_CASES.items() if c.error])
def test_bad_data_fails_cleanly_in_sample_stage(stage_runs, name):
    ran = stage_runs[name]
    line = ran.error_line()
    assert re.search(DATA_CASES[name].error, line), line
    assert _outputs_left(ran.cwd) == []  # no data/sample, no temporary folder


@pytest.mark.parametrize("name", [n for n, c in DATA_CASES.items() if not c.error])
def test_unusual_data_works_in_sample_stage(stage_runs, name):
    ran = stage_runs[name]
    assert ran.returncode == 0, ran.stderr[-3000:]
    info = json.loads((ran.cwd / layout.LABELS_JSON).read_text(encoding="utf-8"))
    samples = {
        split: pd.read_parquet(ran.cwd / layout.sample_parquet(split)) for split in layout.SPLITS
    }
    for split, sample in samples.items():
        assert len(sample) == info["sizes"][split]
        assert sample["text"].str.len().min() > 0
    DATA_CASES[name].check(info, samples, ran.stderr)
    leftovers = [p.name for p in (ran.cwd / "data").iterdir() if p.name != "sample"]
    assert leftovers == []  # no temporary folder beside data/sample


def test_symbol_only_texts_get_zero_factor_rows():
    """Texts without a single word (punctuation, emoji) give all-zero H_tw blocks."""
    from lttw.factors.counts import corpus_counts, word_label_counts
    from lttw.factors.features import latent_factor_tensor
    from lttw.settings import CountSettings
    from lttw.text.words import WordSplitter

    counts, vocabulary = word_label_counts(
        ["cat sat", "dog ran fast"], np.array([0, 1]), 2, CountSettings()
    )
    factors = np.arange(len(vocabulary) * 2, dtype=np.float32).reshape(-1, 2) + 1
    out = latent_factor_tensor(
        ["!!! ???", "😀😀🎉", "—–", "cat 🙂"],
        vocabulary,
        corpus_counts(counts),
        factors,
        2,
        2,
        "count_then_corpus",
        WordSplitter(),
    )
    assert out.shape == (4, 4, 2)
    assert not out[:3].any() and out[3, 0].any() and not out[3, 1:].any()
