"""The committed numbers are the committed code's: every code dependency (``src/``,
``stages/``) that ``dvc.lock`` records has the hash it had when the stages ran, so a change to
a stage's code comes with its ``dvc repro`` (DVC's own status, without the data: missing
data shows as deleted, never as modified code)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = ("src/", "stages/")


def changed_code(status: dict) -> list[str]:
    """``stage: path`` for each code dependency DVC's status finds modified."""
    changed = []
    for stage, entries in status.items():
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            for path, state in (entry.get("changed deps") or {}).items():
                if state == "modified" and path.startswith(CODE):
                    changed.append(f"{stage}: {path}")
    return sorted(changed)


def test_dvc_lock_records_the_stage_code_as_it_is():
    from dvc.repo import Repo

    with Repo(str(ROOT)) as repo:
        status = repo.status()
    changed = changed_code(status)
    assert not changed, (
        "dvc.lock records other code than the checkout's; rerun `dvc repro` and commit "
        "dvc.lock and metrics/: " + ", ".join(changed)
    )


def test_a_modified_code_dependency_is_found():
    status = {
        "train@0": [{"changed deps": {"src/lttw/io.py": "modified", "data/sample": "deleted"}}],
        "summary": [{"changed outs": {"metrics/summary.json": "deleted"}}, "always changed"],
    }
    assert changed_code(status) == ["train@0: src/lttw/io.py"]
