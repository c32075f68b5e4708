"""``lttw data check``'s encoder coverage report (issue 26): the share of ``[UNK]`` tokens
that ``model.encoder``'s tokenizer gives a sample of the dataset's texts (as the tokens stage
measures it on the train sample), and a warning naming ``model.encoder`` above 10%."""

from __future__ import annotations

from lttw.checks.word_splitting import evenly_spaced, train_pool_texts
from lttw.data.datasets import Dataset
from lttw.encoder.pretrained import resolve_encoder
from lttw.encoder.tokenizer import load_tokenizer
from lttw.encoder.tokens import UNK_SHARE_WARN, coverage_warning, encode_texts, unknown_share
from lttw.errors import UserError
from lttw.settings import DataSettings, Settings
from lttw.text.encoder_vocab import should_extend, unknown_pieces


def encoder_coverage(settings: Settings, dataset: Dataset, data: DataSettings) -> dict:
    """The unknown-token share of up to ``WORD_SAMPLE`` train-pool texts at ``model.max_len``,
    and the warning (None when the encoder reads them). An encoder that cannot be loaded
    (a hub name, offline) is reported, not raised: the data can still be checked."""
    encoder = settings.model.encoder
    try:
        tokenizer = load_tokenizer(resolve_encoder(encoder))
    except UserError as err:
        return {"encoder": encoder, "error": str(err)}
    texts = evenly_spaced(train_pool_texts(dataset, data))
    ids, mask = encode_texts(tokenizer, texts, settings.model.max_len)
    share, tokens = unknown_share(tokenizer, ids, mask)
    extend = should_extend(settings.model.extend_vocab, share, UNK_SHARE_WARN)
    return {
        "encoder": encoder,
        "unknown_share": share,
        "tokens": tokens,
        "texts": len(ids),
        "warning": coverage_warning(share, encoder, dataset.language),
        "extend_vocab": len(unknown_pieces(tokenizer, texts)) if extend else None,
    }


def render_encoder_coverage(coverage: dict, console) -> None:
    """One line on the coverage, and the warning where there is one."""
    from rich.markup import escape

    if "error" in coverage:
        console.print(escape(f"encoder coverage: not measured ({coverage['error']})"))
        return
    console.print(
        escape(
            f"encoder coverage: {coverage['unknown_share']:.1%} of "
            f"{coverage['tokens']} tokens of {coverage['texts']} texts are [UNK] "
            f"with model.encoder={coverage['encoder']}"
        )
    )
    if coverage["warning"]:
        console.print(f"[yellow]warning:[/yellow] {escape(coverage['warning'])}")
    if coverage.get("extend_vocab") is not None:
        console.print(
            escape(
                "model.extend_vocab: the tokens stage will add the train sample's "
                "[UNK] pieces to the encoder's vocabulary ("
                f"{coverage['extend_vocab']} in these texts, each seen twice or "
                "more; docs/how-to/data.md: choosing parameters)"
            )
        )
