"""Stage `tokens`: tokenise the train / test / predict samples for the encoder, once."""

import logging

import pandas as pd

from lttw import layout
from lttw.encoder.pretrained import check_max_len, load_tokenizer, resolve_encoder, save_tokenizer
from lttw.io import atomic_dir, read_json, write_arrays
from lttw.stage import run_stage
from lttw.encoder.tokens import coverage_warning, encode_texts, unknown_share

log = logging.getLogger("lttw.tokens")


def main(settings):
    path = resolve_encoder(settings.model.encoder)
    check_max_len(path, settings.model.max_len)  # before any work: the config alone
    tokenizer = load_tokenizer(path)
    arrays = {}
    for split in layout.SPLITS:
        texts = pd.read_parquet(layout.sample_parquet(split), columns=["text"])["text"].tolist()
        ids, mask = encode_texts(tokenizer, texts, settings.model.max_len, progress=True)
        arrays[f"{split}_input_ids"], arrays[f"{split}_attention_mask"] = ids, mask
        truncated = int((mask[:, -1] == 1).sum()) if len(mask) else 0
        log.info("%s: %d texts, %d truncated at max_len=%d", split, len(texts), truncated,
                 settings.model.max_len)
    share, n = unknown_share(tokenizer, arrays["train_input_ids"], arrays["train_attention_mask"])
    log.info("encoder coverage: %.1f%% of the train sample's %d tokens are [UNK]", 100 * share, n)
    warning = coverage_warning(share, settings.model.encoder,
                               read_json(layout.LABELS_JSON).get("language"))
    if warning:
        log.warning("%s", warning)
    with atomic_dir(layout.TOKENS_DIR) as tmp:
        write_arrays(tmp / layout.tokens_file().name, **arrays)
        save_tokenizer(tokenizer, tmp / layout.tokenizer_dir().name)  # same bytes everywhere


if __name__ == "__main__":
    run_stage(main, __doc__)
