"""The training parameter groups: ``train`` (the loop) and ``final`` (the final model)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from lttw.choices import Device
from lttw.settings.group import Group


class TrainSettings(Group):
    """``train``: the fine-tuning loop (optimiser, schedule, budget, early stopping) and
    where it runs."""

    device: Device = Field(
        default="auto",
        description="`auto` (the GPU where there is one, else the CPU), `cpu` or `cuda`.",
    )
    bf16: bool = Field(
        default=True,
        description="Autocast to bf16 where the device supports it: a GPU, or a CPU with "
        "native bf16 instructions (AVX512-BF16 or AMX); on others fp32.",
    )
    compile: Literal["auto"] | bool = Field(
        default="auto",
        description="Run the training step through `torch.compile`: `auto` compiles on CUDA "
        "(falling back to eager, with a warning, where compiling fails) and stays eager on "
        "the CPU.",
    )
    epochs: int = Field(
        default=1,
        ge=1,
        le=1000,
        description="Planned epochs, at least: more where that is fewer than "
        "`train.min_steps` optimiser steps; early stopping (`train.patience`) ends sooner.",
    )
    min_steps: int = Field(
        default=60,
        ge=0,
        description="Plan enough epochs for this many optimiser steps (a small train part "
        "gets more epochs), at most `train.max_epochs`.",
    )
    max_epochs: int = Field(
        default=20,
        ge=1,
        le=1000,
        description="The most epochs that `train.min_steps` and `train.min_gain` may extend "
        "the plan to.",
    )
    batch_size: int = Field(
        default=32,
        ge=1,
        description="Training batch size (the global batch under DDP), at most the fold's "
        "train part; the paper's 128.",
    )
    group_by_length: bool = Field(
        default=False,
        description="Batches of texts of similar length, sorted within windows of 50 "
        "shuffled batches (as transformers' `Trainer` option of that name): less padding, "
        "faster, but other batches (`lttw.data.batching`).",
    )
    eval_batch_size: int = Field(
        default=128, ge=1, description="Batch size of validation and evaluation."
    )
    lr: float = Field(
        default=1e-4,
        gt=0,
        lt=1,
        description="Peak learning rate of the pretrained weights; the paper's 2e-5 at batch 128.",
    )
    head_lr: float | None = Field(
        default=1e-3,
        gt=0,
        lt=1,
        description="Peak learning rate of the new layers (fusion, attention, classifier); "
        "null: `train.lr`.",
    )
    weight_decay: float = Field(default=0.01, ge=0, description="AdamW's weight decay.")
    warmup_ratio: float = Field(
        default=0.06,
        ge=0,
        lt=1,
        description="Share of the planned optimiser steps that warm the learning rate up.",
    )
    grad_clip: float = Field(
        default=1.0, ge=0, description="Clip the gradients' norm to this; 0 disables clipping."
    )
    keep: Literal["best", "last"] = Field(
        default="best",
        description="Which epoch's weights a fold's model keeps: `best`, the epoch of the best "
        "validation macro-F1 (as Hugging Face's `load_best_model_at_end`); `last`, the last "
        "epoch's, for a validation part too small to choose an epoch by (`lttw init` sets it "
        "for a small dataset): no early stop, no extension by `train.min_gain`, and the final "
        "model trains as many epochs as the folds ran.",
    )
    patience: int = Field(
        default=2,
        ge=0,
        description="Epochs without a validation F1 gain before stopping early; 0: never.",
    )
    min_gain: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="At the planned end, an epoch that raised validation F1 by at least this "
        "over the best before it means still rising: training goes on one epoch at a time, up "
        "to `train.max_epochs`, and keeps the best epoch's weights.",
    )
    max_steps: int = Field(
        default=0, ge=0, description="A cap on optimiser steps; 0: none (tests use a small cap)."
    )
    log_every: int = Field(
        default=20, ge=1, description="Log the training loss every this many steps."
    )
    num_threads: int = Field(
        default=0, ge=0, description="torch's CPU threads; 0: torch's default."
    )
    distributed: Literal["auto", "off"] = Field(
        default="auto",
        description="`auto`: under `torchrun` (WORLD_SIZE > 1), DistributedDataParallel; "
        "`off`: every process trains alone.",
    )
    launcher: str = Field(
        default="python",
        max_length=300,
        pattern=r"^[A-Za-z0-9_./:=@, -]+$",
        description="The command that starts the `train` stage's script (dvc.yaml's `cmd`): "
        "`python`, or `torchrun` with its options to train on several processes, GPUs or "
        "nodes, e.g. `torchrun --standalone --nproc-per-node 4` "
        "(docs/how-to/at-scale.md). One line of plain words: no shell operators or quotes.",
    )
    checkpoint_storage: str | None = Field(
        default=None,
        max_length=1000,
        description="The folder of the `train` stage's resumable checkpoints (a `fold_N` "
        "folder each): null, `data/checkpoints`; on many nodes, a folder on storage that "
        "every node reads, so that a restarted run resumes wherever its rank 0 runs.",
    )
    class_weight: Literal["none", "balanced"] = Field(
        default="none",
        description="Class weights of the training loss, for skewed classes: `none`, or "
        "`balanced` (every trainable variant): single-label, scikit-learn's n / (C * n_c) "
        "per class as cross-entropy `weight`; multi-label, negatives / positives of each "
        "class as binary cross-entropy `pos_weight`; `tfidf_linear` passes "
        '`class_weight="balanced"` to scikit-learn. Computed on the fold\'s train part.',
    )
    threshold_cv: int = Field(
        default=0,
        ge=0,
        description="Multi-label `tfidf_linear`: where its per-label thresholds are tuned. "
        "0: on the fold's validation part; k >= 2: on k-fold out-of-fold probabilities of "
        "the rows it trains on, as scikit-learn's `TunedThresholdClassifierCV` does (k more "
        "fits; the final model tunes its own instead of borrowing the first fold's). "
        "GoEmotions: docs/evidence/results.md.",
    )
    freeze_encoder: bool = Field(
        default=False,
        description="Do not train the pretrained encoder: its hidden states are computed "
        "once (the `encode` stage, cached by DVC) and only the new layers train. Fast sweeps, "
        "but another model than the paper's.",
    )

    @field_validator("checkpoint_storage")
    @classmethod
    def _folder_not_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("a folder, or null for data/checkpoints")
        return value

    @field_validator("threshold_cv")
    @classmethod
    def _folds_to_cross_validate(cls, value: int) -> int:
        if value == 1:
            raise ValueError("0 (the validation part) or at least 2 folds")
        return value


class FinalSettings(Group):
    """``final``: the model a user takes away (``models/final``, the DVC artifact)."""

    enabled: bool = Field(
        default=False,
        description="`true`: the `final` stage retrains `model.variant` on every labelled row "
        "(`final.rows`) for the rounded-up median of the folds' best epoch counts; its "
        "estimate is macro F1 with a 95% interval, its own on a held-out test sample where it "
        "has one, else the folds' out-of-fold figure. `false` (this "
        "repository's paper profile, which needs only the folds; on the default profile it "
        "would add about 6 minutes, estimated): `models/final` is the first fold's model. "
        "`lttw init` projects set `true`.",
    )
    rows: Literal["all", "train_sample"] = Field(
        default="all",
        description="The rows a trained final model learns from. `all`: every labelled row "
        "the user gave, the train sample plus a test (and predict) sample carved from the "
        "same rows (an official test split stays held out); more labels in the deployed "
        "model, whose estimate then comes from the folds' out-of-fold predictions. "
        "`train_sample`: the train sample only; the carved test sample stays held out and "
        "measures the deployed model itself, at the cost of leaving its labels out.",
    )
    license: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.+-]*$",
        description="The licence the model card states (its front matter's `license`, a "
        "Hugging Face licence id such as `apache-2.0`, `mit` or `cc-by-4.0`). null: the "
        "dataset's `manifest.json` `license` (or `licence`) where it has one (free text "
        "there: `other`, the text quoted in the card), else `unknown`.",
    )
