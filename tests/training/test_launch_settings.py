"""``train.launcher`` and ``train.checkpoint_storage``: where and how a run trains, not what it
trains (a checkpoint is resumed across them), and where a fold's checkpoints go."""

from __future__ import annotations

from pathlib import Path

import pytest

from lttw.settings import SettingsError, settings_from_dict
from lttw.training.run_outputs import RunPaths
from lttw.training.run_settings import RunSettings


def test_launcher_and_checkpoint_folder_keep_the_fingerprint():
    base = RunSettings.of(settings_from_dict({})).fingerprint(0)
    moved = {"launcher": "torchrun --nnodes 2 --nproc-per-node 8", "checkpoint_storage": "/mnt/c"}
    assert RunSettings.of(settings_from_dict({"train": moved})).fingerprint(0) == base


def test_the_checkpoint_folder_holds_a_folder_per_fold():
    assert RunPaths.of_fold(2).checkpoints == Path("data/checkpoints/fold_2")
    assert RunPaths.of_fold(2, "/mnt/shared/ckpt").checkpoints == Path("/mnt/shared/ckpt/fold_2")


@pytest.mark.parametrize(
    "train, message",
    [
        ({"launcher": "torchrun --nproc-per-node 2; rm -rf ."}, "train.launcher"),
        ({"launcher": 'torchrun "x"'}, "train.launcher"),
        ({"launcher": ""}, "train.launcher"),
        ({"checkpoint_storage": " "}, "train.checkpoint_storage: a folder, or null"),
    ],
)
def test_a_launcher_is_plain_words_and_a_folder_is_not_blank(train, message):
    with pytest.raises(SettingsError, match=message) as err:
        settings_from_dict({"train": train})
    assert "\n" not in str(err.value)
