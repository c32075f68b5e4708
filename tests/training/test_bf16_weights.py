"""``Bf16Weights``: the bf16 training step that casts all weights at once (issue 43 item 2)
computes what bf16 autocast over the fp32 weights computes, to bf16's precision, keeps the
model's parameters fp32 (the optimiser's master weights), and is used only where it applies.
"""

from __future__ import annotations

import pytest
import torch
from support.tiny_lttw import BATCH, tiny_data, tiny_model

from lttw.device import Runtime
from lttw.settings import TrainSettings
from lttw.training.bf16_weights import Bf16Weights, applies
from lttw.training.session import lr_schedule, make_optimizer
from lttw.training.steps import train_step

BF16 = Runtime(device=torch.device("cpu"), bf16=True)


def test_the_gradients_are_autocasts_to_bf16_precision():
    model, data = tiny_model(), tiny_data()
    model.eval()  # no dropout: the same function both ways
    inputs, labels = data.batch(torch.arange(BATCH), BF16)

    def grads(step_model) -> dict[str, torch.Tensor]:
        model.zero_grad(set_to_none=True)
        with BF16.autocast():
            loss = torch.nn.functional.cross_entropy(step_model(**inputs).float(), labels)
        loss.backward()
        if isinstance(step_model, Bf16Weights):
            step_model.grads_to_fp32()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    autocast, wrapped = grads(model), grads(Bf16Weights(model))
    assert autocast.keys() == wrapped.keys()
    assert all(grad.dtype == torch.float32 for grad in wrapped.values())
    # all gradients as one vector (some, e.g. the key bias's, are zero up to rounding)
    a = torch.cat([g.reshape(-1) for g in autocast.values()])
    w = torch.cat([wrapped[n].reshape(-1) for n in autocast])
    assert (w - a).norm() <= 0.05 * a.norm()
    assert all(p.dtype == torch.float32 for p in model.parameters())


def losses(wrapped: bool, steps: int) -> list[float]:
    model, data = tiny_model(), tiny_data()
    cfg = TrainSettings(device="cpu", batch_size=BATCH, lr=3e-3, log_every=1, distributed="off")
    optimizer = make_optimizer(model, cfg, BF16)
    scheduler = lr_schedule(optimizer, 1, steps)
    step_model = Bf16Weights(model) if wrapped else model
    model.train()
    out = []
    for i in range(steps):
        inputs, labels = data.batch(torch.arange(i * BATCH, (i + 1) * BATCH) % len(data), BF16)
        loss = train_step(step_model, model, inputs, labels, 1.0, optimizer, scheduler, cfg, BF16)
        out.append(float(loss))
    return out


def test_it_learns_as_autocast_does():
    """30 steps on the tiny model (4 batches seen again and again): the loss falls, and
    stays close to bf16 autocast's over the fp32 weights."""
    steps = 30
    ours, autocast = losses(True, steps), losses(False, steps)
    print("bf16 weights", [round(x, 3) for x in ours])
    print("autocast    ", [round(x, 3) for x in autocast])
    assert sum(ours[-5:]) / 5 < 0.7 * sum(ours[:5]) / 5
    assert ours == pytest.approx(autocast, rel=0.1, abs=0.05)


def test_it_applies_to_the_eager_bf16_step_on_one_process_only():
    assert applies(BF16, compiled=False)
    assert not applies(BF16, compiled=True)
    assert not applies(Runtime(device=torch.device("cpu"), bf16=False), compiled=False)
    assert not applies(
        Runtime(device=torch.device("cpu"), bf16=True, world_size=2, ddp=True), compiled=False
    )


def test_a_bf16_run_resumes_and_ends_with_fp32_weights(one_thread, tiny_encoder_dir, tmp_path):
    """Through ``train_classifier`` (which wraps the model itself): an interrupted bf16 run
    resumes from its fp32 checkpoint and ends where an uninterrupted one ends, its model
    still fp32 (the saved folder's precision)."""
    from support.training_data import TRAIN, VAL, assert_same_weights, build_model, train_settings

    from lttw.training.loop import train_classifier

    class Interrupt:  # a ``live`` stand-in that stops the run at a given step
        def __init__(self, at: int | None):
            self.at, self.steps = at, 0

        def log_metric(self, name, value):
            if name == "train/loss":
                self.steps += 1
                if self.steps == self.at:
                    raise KeyboardInterrupt

        def next_step(self):
            pass

    def run(folder, at=None):
        model = build_model(tiny_encoder_dir)
        result = train_classifier(
            model, TRAIN, VAL, train_settings(), 7, BF16, folder, Interrupt(at), "bf16", 0
        )
        return model, result

    ref_model, ref = run(tmp_path / "ref")
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "cut", at=9)
    model, result = run(tmp_path / "cut")
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert result.steps == ref.steps
    assert_same_weights(model, ref_model, atol=1e-6)
    assert ref.best_val_f1 > 0.5  # it learned (the labels are in the inputs)


@pytest.mark.parametrize("variant", ["transformer", "bilstm_attention", "leam"])
def test_baselines_train_on_bf16_weights(variant, tiny_encoder_dir):
    """An fp32 positional table before a LayerNorm (transformer), an LSTM, an auxiliary loss
    on the raw parameters (LEAM): each gets the autocast step's gradients, to bf16 precision."""
    from lttw.models.registry import MODEL_REGISTRY
    from lttw.settings import ModelSettings

    settings = ModelSettings(variant=variant, hidden=16, layers=1, heads=2, dropout=0.0, max_len=16)
    ids = torch.randint(5, 60, (4, 16), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(4, 16, dtype=torch.int64)
    mask[::2, 10:] = 0
    grads = []
    for wrapped in (False, True):
        torch.manual_seed(0)
        model = MODEL_REGISTRY[variant].from_settings(settings, 3, None, tiny_encoder_dir)
        step_model = Bf16Weights(model) if wrapped else model
        with BF16.autocast():
            logits = step_model(ids * mask, mask).float()
            loss = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2, 1]))
            aux = model.auxiliary_loss()
            loss = loss if aux is None else loss + aux.float()
        loss.backward()
        if wrapped:
            step_model.grads_to_fp32()
        grads.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]))
    autocast, ours = grads
    assert torch.isfinite(ours).all()
    assert (ours - autocast).norm() <= 0.05 * autocast.norm()
