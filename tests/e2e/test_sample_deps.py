"""The `sample` stage depends on the chosen dataset's files only (``${data.root}/${data.dataset}``
in dvc.yaml: a folder or a single file under data.root), not on the whole data.root: adding
another dataset under the root leaves `sample` (and so every stage) up to date, while editing
the chosen dataset's files makes it stale."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from support.tiny_project import REPO, dvc_status, git_commit, make_tiny_project, run

DATASET_DEP = "${data.root}/${data.dataset}"


def test_dvc_yaml_sample_depends_on_the_dataset_not_the_root():
    deps = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["sample"]["deps"]
    assert DATASET_DEP in deps, deps
    assert "${data.root}" not in deps, deps


def _table(path: Path, n: int = 30) -> None:
    pd.DataFrame(
        {
            "text": [f"row {i} word{i % 7}" for i in range(n)],
            "label": [("a", "b", "c")[i % 3] for i in range(n)],
        }
    ).to_csv(path, index=False)


def _use(project: Path, root: Path, dataset: str) -> None:
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["data"].update(
        root=str(root),
        dataset=dataset,
        train_size=12,
        test_size=3,
        predict_size=3,
        use_splits=False,
    )
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def sample_status(project: Path) -> dict:
    """`dvc status sample` as JSON: {} when the stage is up to date."""
    return dvc_status(project, "sample")


def check_sample_ignores_other_datasets(project: Path, root: Path) -> None:
    """For a dataset folder and a single-file dataset: sample runs, stays up to date when
    another dataset is added under the root, and goes stale when its own file changes."""
    (root / "folder_ds").mkdir()
    _table(root / "folder_ds" / "train.csv")
    _table(root / "single.csv")
    for dataset, own_file in (
        ("folder_ds", root / "folder_ds" / "train.csv"),
        ("single.csv", root / "single.csv"),
    ):
        _use(project, root, dataset)
        run(["dvc", "repro", "sample"], project)
        git_commit(project, f"sample of {dataset}")
        assert sample_status(project) == {}
        (root / f"another_{dataset}").mkdir()
        _table(root / f"another_{dataset}" / "train.csv")
        (root / f"unrelated_{dataset}.csv").write_text("text,label\nx,a\n")
        assert sample_status(project) == {}, f"{dataset}: adding other datasets made it stale"
        _table(own_file, n=33)
        assert "sample" in sample_status(project), f"{dataset}: its own change went unseen"


@pytest.mark.slow
def test_adding_a_dataset_under_root_leaves_sample_up_to_date(tmp_path):
    project = make_tiny_project(tmp_path / "project", tmp_path / "no_encoder_needed")
    root = tmp_path / "datasets"
    root.mkdir()
    check_sample_ignores_other_datasets(project, root)
