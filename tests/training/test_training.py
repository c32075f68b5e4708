"""The training loop on one CPU process: same seed -> same run; a run interrupted and rerun
resumes from its checkpoint and ends exactly where an uninterrupted run ends; a checkpoint of
another run (other fingerprint) is never resumed."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.training_data import (
    CPU,
    N_LABELS,
    SEQ,
    TRAIN,
    VAL,
    assert_same_weights,
    build_model,
    make_data,
    train_settings,
)

from lttw import models  # noqa: F401  (registers the variants)
from lttw.data.batching import Batchable
from lttw.training.loop import train_classifier


class StepCounter:
    """A ``live`` stand-in: counts the optimiser steps this call runs (log_every=1 logs
    train/loss once per step) and can interrupt the run at a given global step."""

    def __init__(self, interrupt_at: int | None = None):
        self.interrupt_at, self.steps, self.f1 = interrupt_at, 0, []

    def log_metric(self, name, value):
        if name == "train/loss":
            self.steps += 1
            if self.interrupt_at is not None and self.steps == self.interrupt_at:
                raise KeyboardInterrupt
        elif name == "val/f1_macro":
            self.f1.append(value)

    def next_step(self):
        pass


def run(encoder_dir, ckpt_dir, live=None, fingerprint="run-a", **kw):
    model = build_model(encoder_dir)
    result = train_classifier(
        model,
        TRAIN,
        VAL,
        train_settings(),
        seed=7,
        rt=CPU,
        checkpoint_dir=ckpt_dir,
        live=live,
        fingerprint=fingerprint,
        **kw,
    )
    return model, result


@pytest.fixture(scope="module")
def reference(one_thread, tiny_encoder_dir, tmp_path_factory):
    """One uninterrupted run: (model, result, steps executed)."""
    counter = StepCounter()
    model, result = run(tiny_encoder_dir, tmp_path_factory.mktemp("ref"), live=counter)
    return model, result, counter.steps


def test_same_seed_same_run(tiny_encoder_dir, tmp_path, reference):
    ref_model, ref_result, ref_steps = reference
    assert ref_steps == ref_result.steps == 2 * 6  # ceil(45 / 8) = 6 steps per epoch
    model, result = run(tiny_encoder_dir, tmp_path)
    assert_same_weights(model, ref_model)  # bit-identical
    assert result.best_val_f1 == ref_result.best_val_f1
    assert result.best_epoch == ref_result.best_epoch
    # the run learned something (the labels are in the inputs): not a vacuous comparison
    assert ref_result.best_val_f1 > 0.5
    before = build_model(tiny_encoder_dir)
    with pytest.raises(AssertionError):
        assert_same_weights(before, ref_model)


def test_interrupted_run_resumes(tiny_encoder_dir, tmp_path, reference):
    ref_model, ref_result, ref_steps = reference
    stop = 9  # in epoch 2 (steps 7..12), after an end-of-epoch checkpoint and validation
    first = StepCounter(interrupt_at=stop)
    with pytest.raises(KeyboardInterrupt):
        run(tiny_encoder_dir, tmp_path, live=first, checkpoint_every_s=0)
    assert (tmp_path / "last.safetensors").is_file()
    second = StepCounter()
    model, result = run(tiny_encoder_dir, tmp_path, live=second, checkpoint_every_s=0)
    # the interrupt came after step 9's update but before its checkpoint: the last
    # checkpoint holds step 8, so the rerun executes steps 9..12 only (a restart would run 12)
    assert second.steps == ref_steps - (stop - 1)
    assert result.steps == ref_steps
    assert_same_weights(model, ref_model, atol=1e-6)
    assert result.best_epoch == ref_result.best_epoch
    assert result.best_val_f1 == pytest.approx(ref_result.best_val_f1, abs=1e-9)
    assert len(result.epoch_times_s) == ref_result.epochs_run == 2
    # each process's first step (its start-up) is measured in the epoch it ran in: the first
    # run's in epoch 0 (kept in the checkpointed history), the resumed run's in epoch 1
    assert ["startup_s" in row for row in ref_result.history] == [True, False]
    assert ["startup_s" in row for row in result.history] == [True, True]
    assert all(0 <= row["startup_s"] <= row["epoch_time_s"] for row in result.history)


def test_a_frozen_encoders_checkpoint_holds_only_what_training_changes(tiny_encoder_dir, tmp_path):
    """With the encoder frozen (train.freeze_encoder), checkpoints and best weights leave its
    parameters out (the model is built with them); a killed run still resumes to the
    uninterrupted run's weights."""
    from safetensors import safe_open

    def frozen_run(folder, live):
        model = build_model(tiny_encoder_dir)
        model.encoder.requires_grad_(False)
        settings = train_settings(min_gain=0.0, max_epochs=3)  # val F1 may fall: best on disk
        result = train_classifier(
            model, TRAIN, VAL, settings, seed=7, rt=CPU, checkpoint_dir=folder, live=live,
            fingerprint="frozen", checkpoint_every_s=0,
        )  # fmt: skip
        return model, result

    reference, _ = frozen_run(tmp_path / "ref", None)
    with pytest.raises(KeyboardInterrupt):
        frozen_run(tmp_path / "run", StepCounter(interrupt_at=9))
    with safe_open(str(tmp_path / "run" / "last.safetensors"), framework="pt") as f:
        names = list(f.keys())
    assert any(n.startswith("model.") for n in names)
    assert not any(n.startswith("model.encoder.") for n in names), names
    model, _ = frozen_run(tmp_path / "run", StepCounter())
    assert_same_weights(model, reference, atol=1e-6)


def test_checkpoint_of_another_run_is_ignored(tiny_encoder_dir, tmp_path, reference):
    ref_model, ref_result, ref_steps = reference
    with pytest.raises(KeyboardInterrupt):
        run(
            tiny_encoder_dir,
            tmp_path,
            live=StepCounter(interrupt_at=5),
            fingerprint="other-run",
            checkpoint_every_s=0,
        )
    counter = StepCounter()
    model, result = run(
        tiny_encoder_dir, tmp_path, live=counter, fingerprint="run-a", checkpoint_every_s=0
    )
    assert counter.steps == ref_steps  # started from scratch
    assert_same_weights(model, ref_model, atol=1e-6)
    assert result.best_val_f1 == pytest.approx(ref_result.best_val_f1, abs=1e-9)


def test_batches_are_trimmed_to_their_longest_row():
    mask = torch.zeros(4, 32, dtype=torch.int8)
    for row, n in enumerate((3, 9, 17, 32)):
        mask[row, :n] = 1
    mask[3] = mask[3].flip(0)  # left padding: the last real token is still at 32
    mask[3, :20] = 0
    data = Batchable(torch.ones(4, 32, dtype=torch.int32), mask, None, torch.zeros(4))
    assert data.lengths.tolist() == [3, 9, 17, 32]
    widths = {
        rows: data.batch(torch.tensor(rows), CPU)[0]["input_ids"].shape[1]
        for rows in [(0,), (0, 1), (1, 2), (3, 0)]
    }
    assert widths == {(0,): 8, (0, 1): 16, (1, 2): 24, (3, 0): 32}  # multiples of 8, <= 32
    full = data.batch(torch.tensor([0, 1]), CPU, trim=False)[0]["input_ids"]
    assert full.shape == (2, 32)


def test_predict_proba_matches_untrimmed_row_order(tiny_encoder_dir):
    """Length-sorted, trimmed batches give every row the probabilities of a plain full-width
    forward pass, returned in the data's own row order."""
    model = build_model(tiny_encoder_dir).eval()
    data = make_data(21, seed=3)
    data.attention_mask[::2, 5:] = 0  # every other row 5 tokens: some batches trim to 8
    data.input_ids[::2, 5:] = 0
    assert data.batch(torch.argsort(data.lengths)[:4], CPU)[0]["input_ids"].shape[1] == 8
    probs = training_predict(model, data, batch_size=4)
    inputs, _ = data.batch(torch.arange(len(data)), CPU, trim=False)
    with torch.no_grad():
        expected = torch.softmax(model(**inputs), dim=-1).numpy()
    assert probs.shape == (21, N_LABELS)
    assert abs(probs - expected).max() < 1e-5


def training_predict(model, data, batch_size):
    from lttw.models.trained import predict_proba

    return predict_proba(model, data, CPU, batch_size)


def test_group_by_length_orders_rows_into_similar_length_batches():
    from lttw.data.batching import LENGTH_GROUP_BATCHES, epoch_order

    n, batch = 8 * LENGTH_GROUP_BATCHES * 2 + 5, 8  # two windows and a partial last batch
    data = make_data(n, seed=4)
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(2, SEQ + 1, (n,), generator=g)
    data.attention_mask[:] = (torch.arange(SEQ)[None, :] < lengths[:, None]).to(torch.int8)
    plain = epoch_order(data, batch, seed=3)
    grouped = epoch_order(data, batch, seed=3, group_by_length=True)
    assert torch.equal(plain, torch.randperm(n, generator=torch.Generator().manual_seed(3)))
    assert sorted(grouped.tolist()) == list(range(n))  # every row once
    assert torch.equal(grouped, epoch_order(data, batch, seed=3, group_by_length=True))
    assert not torch.equal(grouped, epoch_order(data, batch, seed=4, group_by_length=True))

    def padding(order):  # padded positions summed over the batches, each trimmed to its max
        return sum(
            int(data.lengths[b].max()) * len(b) - int(data.lengths[b].sum())
            for b in order.split(batch)
        )

    assert padding(grouped) < 0.2 * padding(plain)
    firsts = [int(data.lengths[b].max()) for b in grouped.split(batch)[:-1]]
    assert firsts != sorted(firsts, reverse=True)  # batches are shuffled, not longest-first


def test_group_by_length_trains(tiny_encoder_dir, tmp_path):
    model = build_model(tiny_encoder_dir)
    result = train_classifier(
        model,
        TRAIN,
        VAL,
        train_settings(group_by_length=True),
        seed=7,
        rt=CPU,
        checkpoint_dir=tmp_path,
    )
    assert result.steps == 2 * 6 and result.best_val_f1 > 0.5


# ------------------------------------------------------------------ the training budget


def test_default_budget_plans_one_epoch_at_2000_rows():
    """The default AG News profile (2,000-row train part at batch 32: 63 steps an epoch)
    keeps its 1 epoch; a small train part gets more epochs, up to train.max_epochs."""
    from support.tiny_project import REPO

    from lttw.settings import read_settings
    from lttw.training.session import plan_epochs

    default = read_settings(REPO / "params.yaml").train
    assert default.batch_size == 32 and plan_epochs(2000, default) == 1
    assert plan_epochs(412, default) == 5  # 13 steps an epoch: ceil(60 / 13)
    assert plan_epochs(40, default) == default.max_epochs == 20  # 2 steps an epoch: capped
    assert plan_epochs(412, default.model_copy(update={"min_steps": 0})) == default.epochs


def test_max_epochs_caps_only_the_extension():
    """train.epochs is always run; max_epochs caps only the epochs min_steps adds."""
    from lttw.settings import settings_from_dict
    from lttw.training.session import plan_epochs

    cfg = settings_from_dict({"train": {"epochs": 5, "max_epochs": 3}}).train
    assert plan_epochs(40, cfg) == 5  # 2 steps an epoch: min_steps would ask for 100
    cfg = settings_from_dict({"train": {"epochs": 1, "max_epochs": 3}}).train
    assert plan_epochs(40, cfg) == 3


def test_schedule_and_loop_use_the_planned_steps(tiny_encoder_dir, tmp_path):
    """min_steps 20 on 6 steps an epoch plans 4 epochs (24 steps), and the learning rate
    decays to 0 over those 24 steps, not over train.epochs' 12."""
    lrs = []

    class Recorder(StepCounter):
        def log_metric(self, name, value):
            super().log_metric(name, value)
            if name == "train/lr":
                lrs.append(value)

    model = build_model(tiny_encoder_dir)
    result = train_classifier(
        model,
        TRAIN,
        VAL,
        train_settings(min_steps=20),
        seed=7,
        rt=CPU,
        checkpoint_dir=tmp_path,
        live=Recorder(),
    )
    assert result.epochs_planned == result.epochs_run == 4 and result.steps == 24
    assert len(lrs) == 24 and lrs[-1] == 0.0 and min(lrs[:-1]) > 0


def test_still_rising_validation_f1_is_reported(tiny_encoder_dir, tmp_path, monkeypatch, caplog):
    from lttw.training import loop

    scores = iter([0.4, 0.5, 0.45, 0.6])
    monkeypatch.setattr(loop, "validate", lambda *a: next(scores))
    with caplog.at_level("WARNING", logger="lttw.training"):
        result = train_classifier(
            build_model(tiny_encoder_dir),
            TRAIN,
            VAL,
            train_settings(epochs=4, max_epochs=4, min_gain=0.01),
            seed=7,
            rt=CPU,
            checkpoint_dir=tmp_path,
        )
    assert [r["val_f1_macro"] for r in result.history] == [0.4, 0.5, 0.45, 0.6]
    assert result.val_f1_still_rising and "still rising" in caplog.text  # max_epochs: no more
    assert result.best_epoch == 3
    flat = loop.TrainResult(
        0,
        0.5,
        2,
        12,
        [1, 1],
        1.0,
        2,
        [{"epoch": 0, "val_f1_macro": 0.5}, {"epoch": 1, "val_f1_macro": 0.5}],
    )
    assert not flat.val_f1_still_rising


# ------------------------------------------------------------------ past the plan while rising


def _scripted(monkeypatch, scores, snapshots=None):
    """Validation F1 taken from ``scores``; ``snapshots`` gets each epoch's weights."""
    from lttw.training import loop

    scores = iter(scores)

    def validate(model, *rest):
        if snapshots is not None:
            snapshots.append({k: v.clone() for k, v in model.state_dict().items()})
        return next(scores)

    monkeypatch.setattr(loop, "validate", validate)


def test_training_continues_while_rising_and_keeps_the_best_epoch(
    tiny_encoder_dir, tmp_path, monkeypatch
):
    lrs, snapshots = [], []

    class Recorder(StepCounter):
        def log_metric(self, name, value):
            super().log_metric(name, value)
            if name == "train/lr":
                lrs.append(value)

    _scripted(monkeypatch, [0.4, 0.5, 0.6, 0.55], snapshots)
    model = build_model(tiny_encoder_dir)
    result = train_classifier(
        model,
        TRAIN,
        VAL,
        train_settings(min_gain=0.01, max_epochs=10),
        seed=7,
        rt=CPU,
        checkpoint_dir=tmp_path,
        live=Recorder(),
    )
    # epochs 2 and 3 rose by 0.1 each: one epoch more each time; epoch 4 fell: stop there
    assert result.epochs_run == result.epochs_planned == 4 and result.steps == 24
    assert result.best_epoch == 2 and result.best_val_f1 == 0.6
    best = snapshots[2]
    assert all(torch.equal(v, best[k]) for k, v in model.state_dict().items())
    assert not all(torch.equal(v, snapshots[3][k]) for k, v in model.state_dict().items())
    # each added epoch decays to 0 from about 1/(epochs + 1) of the peak, as the last epoch of
    # a plan one epoch longer would (1 warm-up step; lrs[i]: the rate after step i + 1)
    peak = max(lrs)
    assert lrs[11] == 0.0 and lrs[17] == 0.0 and lrs[23] == 0.0
    assert lrs[12] == pytest.approx(peak * 5 / 17) and lrs[18] == pytest.approx(peak * 5 / 23)


def test_keep_last_keeps_the_last_epoch_without_early_stop_or_extension(
    tiny_encoder_dir, tmp_path, monkeypatch
):
    """train.keep last (a small dataset's): the last epoch's weights whatever validation
    says, no early stop though F1 falls for longer than patience, no epoch added though the
    last one rose; the planned epochs are the best_epoch the final stage counts."""
    snapshots = []
    _scripted(monkeypatch, [0.9, 0.1, 0.1, 0.5], snapshots)
    model = build_model(tiny_encoder_dir)
    settings = train_settings(epochs=4, max_epochs=10, patience=1, min_gain=0.01, keep="last")
    result = train_classifier(
        model, TRAIN, VAL, settings, seed=7, rt=CPU, checkpoint_dir=tmp_path
    )  # fmt: skip
    assert result.epochs_run == result.epochs_planned == 4
    assert result.best_epoch == 3 and result.best_val_f1 == 0.5
    assert all(torch.equal(v, snapshots[3][k]) for k, v in model.state_dict().items())
    assert not all(torch.equal(v, snapshots[0][k]) for k, v in model.state_dict().items())


def test_a_gain_below_min_gain_ends_at_the_plan(tiny_encoder_dir, tmp_path, monkeypatch):
    _scripted(monkeypatch, [0.4, 0.405])
    result = train_classifier(
        build_model(tiny_encoder_dir),
        TRAIN,
        VAL,
        train_settings(min_gain=0.01),
        seed=7,
        rt=CPU,
        checkpoint_dir=tmp_path,
    )
    assert result.epochs_run == 2 and result.val_f1_still_rising and result.best_epoch == 1


def test_rising_training_stops_at_max_epochs(tiny_encoder_dir, tmp_path, monkeypatch, caplog):
    _scripted(monkeypatch, [0.1, 0.2, 0.3, 0.4])
    with caplog.at_level("WARNING", logger="lttw.training"):
        result = train_classifier(
            build_model(tiny_encoder_dir),
            TRAIN,
            VAL,
            train_settings(min_gain=0.01, max_epochs=3),
            seed=7,
            rt=CPU,
            checkpoint_dir=tmp_path,
        )
    assert result.epochs_run == 3 and result.best_epoch == 2
    assert "raise train.max_epochs" in caplog.text


# ------------------------------------------------------------------ resume: one history


def _tsv(path) -> list[tuple[int, float]]:
    import csv

    with open(path, encoding="utf-8") as f:
        return [(int(r["step"]), float(r["loss"])) for r in csv.DictReader(f, delimiter="\t")]


def test_resumed_run_continues_the_dvclive_history(tiny_encoder_dir, tmp_path, monkeypatch):
    """A run killed at step 7 (mid-epoch 2, its checkpoint holding a partial loss sum) and
    resumed logs one continuous dvclive history equal to an uninterrupted run's: the same
    steps, once each, the same mean losses, and the resumed epoch's full time and rows."""
    import json

    from lttw.training.checkpoint import Checkpointer, read_checkpoint_state
    from lttw.training.live import open_live

    cfg = train_settings(log_every=4)  # logs at steps 4, 8, 12; epochs of 6 steps

    def train(live_dir, ckpt_dir, resume=False):
        live = open_live(live_dir, {"seed": 7}, resume=resume)
        model = build_model(tiny_encoder_dir)
        result = train_classifier(
            model,
            TRAIN,
            VAL,
            cfg,
            seed=7,
            rt=CPU,
            live=live,
            checkpoint_dir=ckpt_dir,
            fingerprint="run-a",
            checkpoint_every_s=0,
        )
        live.end()
        return result

    ref = train(tmp_path / "ref_live", tmp_path / "ref_ckpt")
    save = Checkpointer.save

    def killed_after_step_7(self, *args, **loop):
        save(self, *args, **loop)
        if loop["step"] == 7:
            raise KeyboardInterrupt

    monkeypatch.setattr(Checkpointer, "save", killed_after_step_7)
    with pytest.raises(KeyboardInterrupt):
        train(tmp_path / "live", tmp_path / "ckpt")
    monkeypatch.setattr(Checkpointer, "save", save)
    before_kill = read_checkpoint_state(tmp_path / "ckpt")["loop"]
    assert before_kill["loss_count"] == 3 and before_kill["epoch_elapsed_s"] > 0
    result = train(tmp_path / "live", tmp_path / "ckpt", resume=True)

    got = _tsv(tmp_path / "live" / "plots" / "metrics" / "train" / "loss.tsv")
    want = _tsv(tmp_path / "ref_live" / "plots" / "metrics" / "train" / "loss.tsv")
    assert [s for s, _ in got] == [s for s, _ in want] == [4, 8, 12]
    assert np.allclose([v for _, v in got], [v for _, v in want], atol=1e-6)
    epochs = json.loads((tmp_path / "live" / "plots" / "custom" / "epochs.json").read_text())
    assert [row["epoch"] for row in epochs] == [0, 1]
    assert [row["resumed"] for row in epochs] == [False, True]
    assert result.resumed_epochs == [1] and ref.resumed_epochs == []
    assert [row["samples"] for row in result.history] == [45, 45]
    assert result.epoch_times_s[1] >= before_kill["epoch_elapsed_s"]
    assert result.best_val_f1 == pytest.approx(ref.best_val_f1, abs=1e-9)


def test_trim_history_drops_steps_after_the_checkpoint(tmp_path):
    """Rows logged after the last checkpoint (before a kill) are dropped on resume, so each
    step appears once in the continued history."""
    from lttw.training.live import log_steps, open_live, trim_history

    live = open_live(tmp_path, {}, resume=False)
    for step in (2, 4, 6, 8):
        log_steps(live, step, {"train/loss": step / 10})
    resumed = open_live(tmp_path, {}, resume=True)
    trim_history(resumed, 4, [])
    log_steps(resumed, 6, {"train/loss": 0.65})
    assert _tsv(tmp_path / "plots" / "metrics" / "train" / "loss.tsv") == [
        (2, 0.2),
        (4, 0.4),
        (6, 0.65),
    ]


def test_a_run_shorter_than_log_every_logs_its_loss_at_the_end(tiny_encoder_dir, tmp_path):
    """Fewer optimiser steps than train.log_every: the loss of the steps since the last log
    is logged at the last step, so dvclive writes the loss curve that dvc.yaml declares."""
    from lttw.training.live import open_live

    live = open_live(tmp_path / "live", {"seed": 7}, resume=False)
    result = train_classifier(
        build_model(tiny_encoder_dir),
        TRAIN,
        VAL,
        train_settings(log_every=1000),
        seed=7,
        rt=CPU,
        checkpoint_dir=tmp_path / "ckpt",
        live=live,
        fingerprint="run-a",
    )
    live.end()
    rows = _tsv(tmp_path / "live" / "plots" / "metrics" / "train" / "loss.tsv")
    assert [step for step, _ in rows] == [result.history[-1]["step"]]
    assert 0 < rows[0][1] < 10
