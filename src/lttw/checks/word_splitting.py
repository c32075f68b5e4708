"""``lttw data check``'s word-splitting report: the rule ``words.splitter`` resolves to for a
dataset (as the counts stage resolves it), why, how it splits the texts, what ``model.k`` /
``model.s`` ``auto`` come to on them, and a warning when the splitting is degenerate
(issue 12)."""

from __future__ import annotations

import numpy as np

from lttw.data.datasets import Dataset
from lttw.data.sample_sizes import pools_of
from lttw.factors.slots import resolve_slots
from lttw.settings import DataSettings, Settings
from lttw.text.splitting_quality import degenerate_warning, splitting_quality
from lttw.text.words import make_splitter

#: texts (evenly spaced) of the train pool that word_splitting measures
WORD_SAMPLE = 2000


def train_pool_texts(dataset: Dataset, data: DataSettings) -> list[str]:
    """The texts of the pool the train sample is drawn from."""
    pool = next(p for p in pools_of(dataset, data) if "train" in p.splits)
    return dataset.texts[dataset.rows_of(pool.source)].tolist()


def evenly_spaced(texts: list[str], n: int = WORD_SAMPLE) -> list[str]:
    """Up to ``n`` of ``texts``, evenly spaced."""
    return texts[:: max(1, len(texts) // n)][:n]


def word_splitting(settings: Settings, dataset: Dataset, data: DataSettings) -> dict:
    """The rule ``words.splitter`` resolves to for this dataset (as the counts stage resolves
    it: the manifest's language, else the train pool's texts), why, how it splits the texts
    (``splitting_quality`` of up to ``WORD_SAMPLE`` of them) and a degenerate warning."""
    texts = train_pool_texts(dataset, data)
    splitter, reason = make_splitter(
        settings.words.splitter,
        settings.counts.token_pattern,
        settings.counts.lowercase,
        texts=texts,
        language=dataset.language,
    )
    sample = evenly_spaced(texts)
    quality = splitting_quality(sample, splitter)
    distinct = np.array([len(set(splitter(text))) for text in sample], dtype=np.int64)
    m = settings.model
    return {
        "rule": splitter.rule,
        "reason": reason,
        "texts": quality.texts,
        "median_words": quality.median_words,
        "share_short": quality.share_short,
        "vocabulary": quality.vocabulary,
        "example": splitter(sample[0]) if sample else [],
        "warning": degenerate_warning(splitter.rule, quality),
        # every word of the sample counts (the counts stage's vocabulary: min_count 1)
        "distinct_words": float(distinct.mean()) if len(distinct) else 0.0,
        "slots": resolve_slots(m.k, m.s, distinct) if "auto" in (m.k, m.s) else None,
    }


def render_word_splitting(words: dict, console) -> None:
    """One line on the rule and its quality, and the warning where there is one."""
    from rich.markup import escape

    console.print(
        escape(
            f"word splitting: {words['reason']}; median {words['median_words']:g} "
            f"words per text, {words['share_short']:.0%} of {words['texts']} texts "
            f"with <= 2 words, {words['vocabulary']} distinct words; e.g. "
            f"{' | '.join(words['example'][:12])}"
        )
    )
    if words.get("slots"):
        console.print(
            escape(
                f"model.k / model.s auto: k={words['slots'][0]}, "
                f"s={words['slots'][1]} (about {words['distinct_words']:.1f} "
                "distinct words a text; the features stage resolves them per fold)"
            )
        )
    if words["warning"]:
        console.print(f"[yellow]warning:[/yellow] {escape(words['warning'])}")
