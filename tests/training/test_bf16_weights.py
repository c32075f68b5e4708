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
from lttw.training import loop
from lttw.training.bf16_weights import Bf16Weights, applies

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
    optimizer = loop._optimizer(model, cfg, BF16)
    scheduler = loop._schedule(optimizer, 1, steps)
    step_model = Bf16Weights(model) if wrapped else model
    model.train()
    out = []
    for i in range(steps):
        inputs, labels = data.batch(torch.arange(i * BATCH, (i + 1) * BATCH) % len(data), BF16)
        loss = loop._step(step_model, model, inputs, labels, 1.0, optimizer, scheduler, cfg, BF16)
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
