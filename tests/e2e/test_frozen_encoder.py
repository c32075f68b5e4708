"""Issue 16.3: ``train.freeze_encoder``: the encode stage caches the encoder's states once, the
new layers train on them, and the model folder predicts the same from raw tokens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from support.tiny_project import dvc_status, git_commit, ran, run, set_params

from lttw.encoder.pretrained import load_pretrained_encoder
from lttw.encoder.states import encoder_states, frozen_states
from lttw.errors import UserError
from lttw.settings import SettingsError, settings_from_dict


def test_states_are_the_encoders_output_zero_at_padding(tiny_encoder_dir):
    encoder = load_pretrained_encoder(tiny_encoder_dir).eval()
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 60, size=(7, 12)).astype(np.int32)
    mask = np.ones((7, 12), np.int8)
    for row, length in enumerate([12, 3, 7, 1, 12, 5, 9]):
        mask[row, length:] = 0
        ids[row, length:] = 0
    states = encoder_states(encoder, ids, mask, batch_size=3)
    assert states.dtype == np.float16 and states.shape == (7, 12, 32)
    with torch.no_grad():
        for row in range(7):
            n = int(mask[row].sum())
            want = (
                encoder(input_ids=torch.from_numpy(ids[row : row + 1, :n]).long())
                .last_hidden_state[0]
                .numpy()
            )
            np.testing.assert_allclose(states[row, :n].astype(np.float32), want, atol=5e-3)
            assert not states[row, n:].any()


def test_freeze_needs_an_encoder_variant():
    with pytest.raises(SettingsError, match="train.freeze_encoder.*bilstm_attention"):
        settings_from_dict(
            {"model": {"variant": "bilstm_attention"}, "train": {"freeze_encoder": True}}
        )
    assert settings_from_dict(
        {"model": {"variant": "encoder_cnn"}, "train": {"freeze_encoder": True}}
    ).train.freeze_encoder


def test_missing_or_unfrozen_cache_is_one_clear_error(tmp_path):
    with pytest.raises(UserError, match="encoded.json: not found"):
        frozen_states(tmp_path, ["train"])
    (tmp_path / "encoded.json").write_text(json.dumps({"frozen": False}))
    with pytest.raises(UserError, match="freeze_encoder: false"):
        frozen_states(tmp_path, ["train"])


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_repro) -> Path:
    """A copy of the session's tiny run, switched to a frozen encoder: sampling, folds,
    factors and tokens are reused; encode and train run."""
    root = tiny_repro.copy(tmp_path_factory.mktemp("frozen") / "project")
    set_params(root, train={"freeze_encoder": True})
    git_commit(root, "frozen")
    return root


@pytest.mark.slow
def test_frozen_run_caches_states_and_keeps_the_encoder(project, tiny_encoder_dir, monkeypatch):
    # up to training: the evaluate stage's predictions are computed below, in this process
    out = run(["dvc", "repro", "train@0"], project)
    assert ran(out) == {"encode", "train@0"}  # sample, folds, tokens, counts, nmf: cached
    record = json.loads((project / "data/encoded/encoded.json").read_text())
    assert record["frozen"] and record["hidden_size"] == 32
    assert json.loads((project / "models/fold_0/lttw.json").read_text())["frozen_encoder"]
    assert json.loads((project / "metrics/train/fold_0.json").read_text())["frozen_encoder"]
    git_commit(project, "lock")

    # the trained folder's encoder is the pretrained one, untouched
    from lttw.data.fold_inputs import load_fold_inputs, load_tensors
    from lttw.device import make_runtime
    from lttw.inference.predict import predict_cached_parts
    from lttw.models.trained import load_classifier, predict_proba
    from lttw.settings import read_settings

    model = load_classifier(project / "models/fold_0")
    pretrained = load_pretrained_encoder(tiny_encoder_dir).state_dict()
    for name, weight in model.encoder.state_dict().items():
        assert torch.equal(weight, pretrained[name]), name

    # the same logits from the cached states as from running the encoder on the tokens
    monkeypatch.chdir(project)
    settings = read_settings("params.yaml")
    rt = make_runtime(settings.train)
    inputs = load_fold_inputs(0)
    cached = load_tensors(inputs, 0, frozen_encoder=True)["test"]
    tokens = load_tensors(inputs, 0)["test"]
    assert cached.encoder_states is not None and tokens.encoder_states is None
    model.eval()
    with torch.no_grad():
        rows = torch.arange(len(tokens))
        from_cache = model(**cached.batch(rows, rt, trim=False)[0])
        from_encoder = model(**tokens.batch(rows, rt, trim=False)[0])
    torch.testing.assert_close(from_cache, from_encoder, atol=2e-3, rtol=1e-3)
    assert torch.equal(from_cache.argmax(1), from_encoder.argmax(1))
    # and the evaluate stage's predictions (its own function) are those of the cached states
    probs = predict_cached_parts(project / "models/fold_0", inputs, 0, settings.train)["test"]
    np.testing.assert_allclose(probs, predict_proba(model, tokens, rt), atol=2e-3)


@pytest.mark.slow
def test_states_rerun_on_encoder_or_max_len_only(project, tiny_encoder_dir):
    if "encode" in dvc_status(project, "train@0"):  # the test above did not run
        run(["dvc", "repro", "train@0"], project)
        git_commit(project, "lock")
    # params.yaml edited and `dvc repro` up to training (what follows it reads no encoder
    # states): what `dvc exp run -S` does, without its own work
    set_params(
        project,
        model={"k": 2, "s": 3, "depth": 2, "linformer_k": 4},
        train={"lr": 0.002, "batch_size": 8},
        nmf={"rank": 2},
    )
    out = run(["dvc", "repro", "train@0"], project)
    # nmf.rank reruns nmf, not counts (nor the samples, folds and tokens); k / s the factor
    # tensors; the rest of the changes training only: the encoder's states stay cached
    assert ran(out) == {"nmf@0", "features@0", "train@0"}
    # the k / s change retrained only the new layers, from the cached states: seconds; a
    # max_len or encoder change makes tokens and encode stale (`dvc status`: what reruns, as
    # the run above shows, without running it)
    other = project.parent / "other_encoder"
    shutil.copytree(tiny_encoder_dir, other)
    for change in ({"max_len": 24}, {"encoder": str(other)}):
        assert {"tokens", "encode"} <= stale_after(project, model=change), change


def stale_after(project: Path, **changes) -> set[str]:
    """The stages `dvc status` reports changed once params.yaml has ``changes`` (section ->
    {key: value}); params.yaml is restored after."""
    path = project / "params.yaml"
    kept = path.read_text()
    set_params(project, **changes)
    try:
        return set(dvc_status(project))
    finally:
        path.write_text(kept)
