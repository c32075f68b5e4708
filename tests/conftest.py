"""Shared test fixtures: a tiny random BERT encoder folder with its tokenizer (no hub).

Tests never reach a model hub: the hub is switched off for the whole session, before any
test module imports transformers / huggingface_hub.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# one intra-op thread in this process and in every process a test starts (dvc repro, stages,
# lttw): the tiny models run fastest on one, and the suite runs 2 xdist workers on 2 cores,
# where OpenMP threads that wait on each other slow a training step 10-fold
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import string  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
#: whole words of the tiny vocabulary; any other lowercase ascii word still tokenizes into
#: letter pieces (``c ##a ##t``), so arbitrary English text never maps to [UNK] only
TINY_WORDS = (
    "the a an and or of to in on at for with by from is are was were be it this that "
    "cat dog sat mat ran fast team game match win won lost play player season score "
    "news world business sport sports science tech technology company market stock price "
    "oil bank shares profit deal new year says said report government president war "
    "good great bad movie film story love hate best worst fun boring not very "
    "what why how who when where which question answer computer internet music health"
).split()


def tiny_vocab() -> list[str]:
    """The tiny WordPiece vocabulary: specials, punctuation, digits, letters, ##letters, words."""
    chars = list(string.punctuation) + list(string.digits) + list(string.ascii_lowercase)
    pieces = [f"##{c}" for c in string.ascii_lowercase + string.digits]
    vocab = SPECIAL_TOKENS + chars + pieces
    return vocab + [w for w in TINY_WORDS if w not in vocab]


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory) -> Path:
    """A Hugging Face folder (config.json, model.safetensors, tokenizer files) holding a
    random 2-layer, 32-wide ``BertModel`` (4 heads, 128 positions, no pooler) and an uncased
    WordPiece tokenizer over ``tiny_vocab()``. Load it with ``lttw.encoder.tokenizer.load_tokenizer`` /
    ``load_pretrained_encoder`` (or ``AutoModel``/``AutoTokenizer``); treat it as read-only."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder = tmp_path_factory.mktemp("tiny_encoder")
    vocab = tiny_vocab()
    vocab_file = folder / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    # BertTokenizer(vocab=path): BertTokenizerFast(vocab_file=...) drops the vocab in v5
    tokenizer = BertTokenizer(vocab=str(vocab_file), do_lower_case=True, model_max_length=128)
    assert len(tokenizer) == len(vocab), "tiny tokenizer lost its vocabulary"
    tokenizer.save_pretrained(folder)

    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    BertModel(config, add_pooling_layer=False).save_pretrained(folder)
    return folder


from support.fixed_predictor import fixed_model  # noqa: E402,F401  (fixture: a stand-in model)
from support.queued_grids import queued_grids  # noqa: E402,F401  (session fixture: DVC's queue)
from support.stage_cases import stage_runs  # noqa: E402,F401  (session fixture: stage runs on bad inputs)
from support.stand_in_hub import stand_in_hub  # noqa: E402,F401  (fixture: a local hub)


@pytest.fixture(scope="session")
def tiny_repro(request, tmp_path_factory, tiny_encoder_dir):
    """The tiny profile's ``dvc repro``, once per session (``tiny_project.TinyRepro``): the
    tests that only read a trained pipeline share it; the ones that change it take a copy."""
    from support.tiny_project import tiny_repro_once

    if hasattr(request.config, "workerinput"):  # an xdist worker: one build for all
        base = tmp_path_factory.getbasetemp().parent / "tiny_repro"  # the session's folder
    else:
        base = tmp_path_factory.mktemp("tiny_repro")
    return tiny_repro_once(base, tiny_encoder_dir)


#: session fixtures that cost a pipeline run and are built per worker: with pytest-xdist
#: (``-n 2 --dist loadgroup``, ``make test``) every test that uses one runs on the same worker,
#: so each is built once (``tiny_repro`` is built once for all workers under a file lock)
SHARED_RUNS = ("stage_runs", "queued_grids")


def pytest_configure(config):
    # xdist hands out the groups in the order of ``run_order`` below, not sorted by their
    # number of tests (its default, which leaves the end-to-end files with few tests for last)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def run_order(items) -> list:
    """The tests, files that run the real pipeline (a ``slow`` test) first, so the long ones
    start early and the unit tests even out the end on both workers: the first file that
    reads ``tiny_repro`` (its worker builds the run while the other starts on the next
    files), then those that build a project of their own, then the other readers of
    ``tiny_repro``, built by then, so that no worker waits on its lock. Collection order
    holds within each part."""
    by_file: dict = {}
    for item in items:
        by_file.setdefault(item.path, []).append(item)
    part = {}
    for path, tests in by_file.items():
        slow = any(test.get_closest_marker("slow") for test in tests)
        shared = any("tiny_repro" in getattr(test, "fixturenames", ()) for test in tests)
        part[path] = (2 if shared else 1) if slow else 3  # 0, 1, 2: end-to-end; 3: the rest
    builder = next((path for path in by_file if part[path] == 2), None)
    if builder is not None:
        part[builder] = 0
    return sorted(items, key=lambda item: part[item.path])


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config, items):
    """xdist groups: a shared run's name for the tests that use it, else the test's file, so
    that a module's own fixtures are never built on both workers; the tests in ``run_order``."""
    items[:] = run_order(items)
    for item in items:
        shared = [name for name in SHARED_RUNS if name in getattr(item, "fixturenames", ())]
        item.add_marker(pytest.mark.xdist_group(shared[0] if shared else item.path.name))
