"""Stage `tokens`: tokenise the train / test / predict samples for the encoder, once. Where the
encoder cannot read the training sample (model.extend_vocab), its [UNK] pieces are added to
the vocabulary first and the extended encoder is written beside the tokens."""

import logging

import pandas as pd

from lttw import layout
from lttw.encoder.pretrained import check_max_len, load_transformers_encoder, resolve_encoder
from lttw.encoder.tokenizer import load_tokenizer, save_tokenizer
from lttw.encoder.tokens import UNK_SHARE_WARN, coverage_warning, encode_texts, unknown_share
from lttw.io import atomic_dir, read_json, write_arrays, write_json
from lttw.stages import run_stage
from lttw.text.encoder_vocab import extend_encoder, should_extend, unknown_pieces

log = logging.getLogger("lttw.tokens")


def encode_samples(tokenizer, texts: dict, max_len: int) -> dict:
    arrays = {}
    for split, split_texts in texts.items():
        ids, mask = encode_texts(tokenizer, split_texts, max_len, progress=True)
        arrays[f"{split}_input_ids"], arrays[f"{split}_attention_mask"] = ids, mask
        truncated = int((mask[:, -1] == 1).sum()) if len(mask) else 0
        log.info(
            "%s: %d texts, %d truncated at max_len=%d", split, len(split_texts), truncated, max_len
        )
    return arrays


def main(settings):
    path = resolve_encoder(settings.model.encoder)
    check_max_len(path, settings.model.max_len)  # before any work: the config alone
    tokenizer = load_tokenizer(path)
    texts = {
        split: pd.read_parquet(layout.sample_parquet(split), columns=["text"])["text"].tolist()
        for split in layout.SPLITS
    }
    train = {"train": texts["train"]}  # the train sample decides the vocabulary first
    arrays = encode_samples(tokenizer, train, settings.model.max_len)
    share, n = unknown_share(tokenizer, arrays["train_input_ids"], arrays["train_attention_mask"])
    log.info("encoder coverage: %.1f%% of the train sample's %d tokens are [UNK]", 100 * share, n)
    labels = read_json(layout.LABELS_JSON)
    warning = coverage_warning(share, settings.model.encoder, labels.get("language"))
    if warning:
        log.warning("%s", warning)
    extension = None
    pieces = []
    if should_extend(settings.model.extend_vocab, share, UNK_SHARE_WARN):
        pieces = [piece for piece, _ in unknown_pieces(tokenizer, texts["train"])]
        if not pieces:
            log.info(
                "model.extend_vocab: no [UNK] piece is seen twice in the train sample; "
                "the vocabulary stays as it is"
            )
    if pieces:
        encoder = load_transformers_encoder(path)  # resized, saved
        extension = extend_encoder(tokenizer, encoder, pieces, labels.get("word_vectors"))
        arrays = encode_samples(tokenizer, train, settings.model.max_len)
        extension["unk_share_before"] = share
        extension["unk_share_after"], _ = unknown_share(
            tokenizer, arrays["train_input_ids"], arrays["train_attention_mask"]
        )
        log.info(
            "model.extend_vocab: %d pieces added to the encoder's vocabulary (%d rows "
            "from word vectors %s, %d as [UNK]'s); [UNK] share %.1f%% -> %.1f%%",
            extension["added"],
            extension["from_vectors"],
            extension["vectors"],
            extension["from_unk"],
            100 * share,
            100 * extension["unk_share_after"],
        )
    arrays.update(
        encode_samples(
            tokenizer, {s: t for s, t in texts.items() if s != "train"}, settings.model.max_len
        )
    )  # once, with the final vocabulary
    with atomic_dir(layout.TOKENS_DIR) as tmp:
        write_arrays(tmp / layout.tokens_file().name, **arrays)
        save_tokenizer(tokenizer, tmp / layout.tokenizer_dir().name)  # same bytes everywhere
        if extension is not None:
            folder = tmp / layout.extended_encoder_dir().name
            encoder.save_pretrained(str(folder))
            save_tokenizer(tokenizer, folder)
            write_json(folder / "vocab_extension.json", extension)


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.tokens [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, argv=argv)


if __name__ == "__main__":
    run()
