"""`lttw init --profile quick|default|paper` through the real command: params.yaml holds the
profile's values (each line saying so, valid settings, the final model's comment true to its
value), and the project's .gitignore covers every pipeline output itself, so that `git add
-A` commits none even where DVC's own entries are missing (DVC drops them after a failed
run)."""

from __future__ import annotations

import re
import subprocess

import pandas as pd
import pytest
import yaml
from support.cli_runner import assert_user_error, invoke

from lttw.profiles import PROFILES, QUICK_STEPS
from lttw.project.files import pipeline_ignores, project_params
from lttw.settings import read_settings, settings_from_dict


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    rows = [("good fun movie", "pos"), ("boring bad film", "neg")] * 20
    pd.DataFrame(rows, columns=["text", "label"]).to_csv(folder / "reviews.csv", index=False)
    return folder / "reviews.csv"


def test_quick_profile_and_ignores_of_every_output(data, tmp_path):
    project = tmp_path / "first"
    result = invoke("init", project, "--data", data, "--profile", "quick")
    assert result.exit_code == 0, result.output
    assert "quick profile" in result.stdout and "lttw evaluate FILE" in result.stdout
    text = (project / "params.yaml").read_text()
    assert "# Profile: quick" in text
    assert re.search(r"\n  max_steps: 150 +# quick profile\n", text)
    assert re.search(r"\n  enabled: false +# models/final: the first fold's model\n", text)
    settings = read_settings(project / "params.yaml")
    assert settings.train.max_steps == QUICK_STEPS and settings.train.max_epochs == 1
    assert not settings.final.enabled and settings.data.sampling == "all"
    # every output of every stage, as a (failed) run leaves it, with no DVC .gitignore beside
    outputs = [p.strip("/").replace("*", "0") for p in pipeline_ignores()]
    for out in outputs:
        (project / out).mkdir(parents=True, exist_ok=True)
        (project / out / "part.bin").write_bytes(b"x")
    (project / "metrics").mkdir()
    (project / "metrics" / "summary.json").write_text("{}")  # cache: false, committed
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status.split() == ["??", "metrics/summary.json"], status
    assert {"/data/sample", "/models/fold_*", "/models/final", "/data/eval/fold_*"} <= set(
        pipeline_ignores()
    )


@pytest.mark.parametrize("profile", list(PROFILES))
def test_every_profile_is_valid_settings(profile):
    params = yaml.safe_load(project_params("reviews.csv", profile=profile))
    settings = settings_from_dict(params, "params.yaml")
    for dotted, value in PROFILES[profile].items():
        group, name = dotted.split(".")
        assert getattr(getattr(settings, group), name) == value
    if profile == "paper":
        assert settings.folds.run == list(range(10)) and settings.train.batch_size == 128
    if profile == "default":
        assert settings.final.enabled  # lttw init's own default: the final model retrained
        text = project_params("reviews.csv")
        assert re.search(r"enabled: true +# models/final: retrained on every labelled row", text)


def test_an_unknown_profile_is_a_usage_error(data, tmp_path):
    result = invoke("init", tmp_path / "p", "--data", data, "--profile", "fast")
    assert result.exit_code == 2 and "fast" in result.output
    assert not (tmp_path / "p").exists()
    upgrade = invoke("init", "--upgrade", tmp_path, "--profile", "quick")
    assert_user_error(upgrade, "--upgrade keeps the project's params.yaml")
