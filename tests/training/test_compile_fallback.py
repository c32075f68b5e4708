"""``train.compile``: ``auto`` compiles on CUDA only, and a step whose compiling fails is redone
eager, with a warning, for the rest of the run (issue 43 item 2)."""

from __future__ import annotations

import logging
import math

import pytest
import torch
from support.tiny_lttw import BATCH, tiny_data, tiny_model  # noqa: E402

from lttw.device import Runtime  # noqa: E402
from lttw.settings import TrainSettings  # noqa: E402
from lttw.training.session import lr_schedule, make_optimizer  # noqa: E402
from lttw.training.steps import CompiledOrEager, compiles, train_step  # noqa: E402


@pytest.mark.parametrize(
    ("setting", "device", "expected"),
    [("auto", "cpu", False), ("auto", "cuda", True), (True, "cpu", True), (False, "cuda", False)],
)
def test_auto_compiles_on_cuda_only(setting, device, expected):
    cfg = TrainSettings(compile=setting)
    assert compiles(cfg, Runtime(device=torch.device(device), bf16=False)) is expected


def test_a_failed_compile_falls_back_to_eager(monkeypatch, caplog):
    from torch._dynamo.exc import InternalTorchDynamoError

    def broken_compile(model):
        def run(*args, **kwargs):
            raise InternalTorchDynamoError("no C++ compiler")

        return run

    monkeypatch.setattr(torch, "compile", broken_compile)
    rt = Runtime(device=torch.device("cpu"), bf16=False)
    model, data = tiny_model(), tiny_data()
    step_model = CompiledOrEager(model)
    cfg = TrainSettings(device="cpu", batch_size=BATCH, distributed="off")
    optimizer = make_optimizer(model, cfg, rt)
    scheduler = lr_schedule(optimizer, 1, 10)
    inputs, labels = data.batch(torch.arange(BATCH), rt)
    with caplog.at_level(logging.WARNING, logger="lttw.training.steps"):
        loss = train_step(step_model, model, inputs, labels, 1.0, optimizer, scheduler, cfg, rt)
    assert step_model.failed and math.isfinite(float(loss))
    assert "torch.compile failed, training eager" in caplog.text
    assert model.classifier.weight.grad is not None


def test_errors_of_the_model_itself_are_not_swallowed(monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda model: model)
    rt = Runtime(device=torch.device("cpu"), bf16=False)
    model = tiny_model()
    step_model = CompiledOrEager(model)
    cfg = TrainSettings(device="cpu", batch_size=BATCH, distributed="off")
    optimizer = make_optimizer(model, cfg, rt)
    scheduler = lr_schedule(optimizer, 1, 10)
    too_long = torch.ones(2, model.config.max_len + 1, dtype=torch.int64)
    inputs = {"input_ids": too_long, "attention_mask": too_long, "factors": None}
    with pytest.raises(ValueError, match="exceeds max_len"):
        train_step(
            step_model,
            model,
            inputs,
            torch.zeros(2, dtype=torch.int64),
            1.0,
            optimizer,
            scheduler,
            cfg,
            rt,
        )
    assert not step_model.failed
