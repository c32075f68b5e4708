"""Stage `encode`: with train.freeze_encoder, the pretrained encoder's last hidden states of
every sample text, once (they depend on the tokens and the encoder only, so a k, s, K or
depth change never recomputes them); otherwise a record saying that nothing is cached."""

import logging

from lttw import layout
from lttw.encoder.pretrained import encoder_for_tokens, load_pretrained_encoder, resolve_encoder
from lttw.encoder.states import RECORD, STATES, encoder_states
from lttw.io import atomic_dir, read_arrays, write_arrays, write_json
from lttw.stages import run_stage

log = logging.getLogger("lttw.encode")


def main(settings):
    with atomic_dir(layout.ENCODED_DIR) as tmp:
        if not settings.train.freeze_encoder:
            write_json(tmp / RECORD, {"frozen": False})
            log.info("train.freeze_encoder is false: no encoder states to cache")
            return
        import torch  # here: the stage without train.freeze_encoder starts without it

        path = encoder_for_tokens(resolve_encoder(settings.model.encoder))  # maybe extended
        encoder = load_pretrained_encoder(path)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        tokens = read_arrays(layout.tokens_file())
        states = {
            split: encoder_states(
                encoder,
                tokens[f"{split}_input_ids"],
                tokens[f"{split}_attention_mask"],
                device=device,
                desc=f"encode {split}",
            )
            for split in layout.SPLITS
        }
        write_arrays(tmp / STATES, **states)
        d = int(encoder.config.hidden_size)
        write_json(
            tmp / RECORD,
            {
                "frozen": True,
                "hidden_size": d,
                "dtype": "float16",
                "max_len": settings.model.max_len,
                "rows": {s: len(a) for s, a in states.items()},
            },
        )
        log.info(
            "encoder states of %s texts cached (%d wide, float16)",
            sum(len(a) for a in states.values()),
            d,
        )


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.encode [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, argv=argv)


if __name__ == "__main__":
    run()
