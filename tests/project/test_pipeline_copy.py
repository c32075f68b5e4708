"""The package's pipeline files (src/lttw/project/pipeline/, what ``lttw init`` reads) are this
repository's dvc.yaml, params.yaml and search spaces byte for byte: tools/sync_pipeline.py
copies them, and this test fails while a copy is stale."""

from __future__ import annotations

import sys
from pathlib import Path

from lttw.project.files import pipeline_root

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import sync_pipeline  # noqa: E402  (tools/sync_pipeline.py)


def test_the_package_holds_the_repositorys_pipeline():
    assert pipeline_root() == sync_pipeline.TARGET
    stale = sync_pipeline.differing()
    assert not stale, (
        f"{sync_pipeline.TARGET.relative_to(REPO)}: stale {stale}: run `{sync_pipeline.COMMAND}`"
    )


def test_the_check_sees_an_edit_and_a_stale_file(tmp_path):
    root, target = tmp_path / "repo", tmp_path / "copy"
    (root / "experiments").mkdir(parents=True)
    for name in ("dvc.yaml", "params.yaml", "experiments/search-a.yaml"):
        (root / name).write_text(name)
    assert sync_pipeline.differing(root, target) == sorted(
        ["dvc.yaml", "params.yaml", "experiments/search-a.yaml"]
    )
    sync_pipeline.sync(root, target)
    assert sync_pipeline.differing(root, target) == []
    (root / "params.yaml").write_text("seed: 1\n")
    (target / "experiments" / "search-old.yaml").write_text("")
    assert sync_pipeline.differing(root, target) == ["experiments/search-old.yaml", "params.yaml"]
    sync_pipeline.sync(root, target)
    assert sync_pipeline.differing(root, target) == []
    assert not (target / "experiments" / "search-old.yaml").exists()
