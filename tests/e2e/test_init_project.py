"""A user's own project from the wheel (issue 39): build the wheel from this repository in a
temporary folder, install it with ``--no-deps`` into a fresh virtual environment that sees
the test environment's packages (a .pth file; nothing from this checkout: no PYTHONPATH),
then, in a temporary folder outside the repository, ``lttw init`` on a small CSV with its
own column names, ``dvc repro`` on the tiny profile, ``dvc exp run -S model.k=...``
rerunning only what reads model.k and back again restoring from the run-cache, an edit of
the CSV showing in ``dvc status``, the model folder answering ``lttw predict --json`` on
stdin, and the Python API on that folder.

Three DVC runs in all (repro, two experiments), processes of the venv's ``dvc`` running the
wheel's stages; everything else reads what they wrote (``dvc status``, ``metrics diff``,
``exp show``: DVC in this process, ``support.dvc_runner``, the same DVC the venv sees)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pandas as pd
import pytest
import yaml
from support.dvc_runner import dvc as dvc_here
from support.tiny_project import DATASETS, git_commit, ran, tiny_params

REPO = Path(__file__).resolve().parents[2]
#: the model folder the Python API loads
MODEL = "models/final"  # the final stage: every labelled row (final.enabled in init projects)
#: what the sdist / wheel is built from, besides src/
BUILD_FILES = ["pyproject.toml", "README.md", "LICENSE"]

pytestmark = pytest.mark.slow


def _env(venv: Path) -> dict:
    """The venv first on PATH (so dvc.yaml's `python` is the venv's), no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        DVC_NO_ANALYTICS="1",
        HF_HUB_OFFLINE="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env["PATH"]])
    return env


def _run(venv: Path, args: list[str], cwd: Path, stdin: str | None = None, code: int = 0):
    env = _env(venv)
    done = subprocess.run(
        args, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == code, (
        f"{' '.join(map(str, args))}:\n{(done.stdout + done.stderr)[-4000:]}"
    )
    return done


def build_wheel(dest: Path) -> Path:
    """``pip wheel --no-deps --no-build-isolation`` of a copy of the files a source
    distribution holds (the checkout itself stays clean of build/ and *.egg-info)."""
    source = dest / "source"
    for name in BUILD_FILES:
        shutil.copy2(REPO / name, source / name if source.exists() else _mk(source) / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "src", source / "src", ignore=ignore)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["-w", str(dest / "dist"), str(source)],
        check=True,
        capture_output=True,
    )
    return next((dest / "dist").glob("lttw-*.whl"))


def _mk(folder: Path) -> Path:
    folder.mkdir(parents=True)
    return folder


def install_in_venv(wheel: Path, venv: Path) -> Path:
    """A fresh venv seeing this environment's site-packages (but not their .pth files, so not
    the editable lttw), with the wheel installed into it, ``--no-deps``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    own = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    shared = sysconfig.get_paths()["purelib"]
    Path(own, "_test_environment.pth").write_text(shared + "\n")
    _run(venv, [python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], venv)
    return venv


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    return install_in_venv(build_wheel(base), base / "venv")


def small_csv(path: Path, per_class: int = 30) -> Path:
    """AG News rows as a user's CSV would hold them: columns `review` and `stars`."""
    rows = pd.read_parquet(DATASETS / "ag_news" / "train.parquet")
    rows = rows.groupby("label", group_keys=False).head(per_class)
    rows = rows.rename(columns={"text": "review", "label": "stars"})[["review", "stars"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    rows.sample(frac=1.0, random_state=0).to_csv(path, index=False)
    return path


def test_the_wheel_ships_this_repositorys_pipeline(venv):
    """One source of truth: the installed package's dvc.yaml, params.yaml and search spaces
    are this repository's files byte for byte, each stage of stages/ is a module of the
    package, and `lttw` there is the wheel's, not this checkout."""
    python = venv / "bin" / "python"
    code = "import lttw.project.files as p; print(p.pipeline_root()); print(p.__file__)"
    root, module = _run(venv, [python, "-c", code], venv).stdout.split()
    root = Path(root)
    assert root == Path(module).parent / "pipeline" and Path(module).is_relative_to(venv)
    shipped = sorted(
        p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.suffix != ".pyc"
    )
    expected = [Path("dvc.yaml"), Path("params.yaml")]
    expected += [p.relative_to(REPO) for p in REPO.glob("experiments/search-*.yaml")]
    assert shipped == sorted(expected)
    package = Path(module).parents[1]
    stages = sorted(p.name for p in (REPO / "stages").glob("*.py"))
    assert stages and all((package / "stages" / name).is_file() for name in stages)
    assert not (package / "_pipeline").exists()
    for rel in shipped:
        assert (root / rel).read_bytes() == (REPO / rel).read_bytes(), rel
    assert _run(venv, [venv / "bin" / "lttw", "--version"], venv).stdout.startswith("lttw ")
    assert (Path(module).parents[1] / "examples" / "news.csv").is_file()  # lttw init --example


def test_a_project_of_ones_own(venv, tmp_path, tiny_encoder_dir):
    lttw, python = venv / "bin" / "lttw", venv / "bin" / "python"
    dvc = [python, "-m", "dvc"]
    data = small_csv(tmp_path / "mine" / "reviews.csv")
    project = tmp_path / "reviews"
    done = _run(
        venv,
        [lttw, "init", project, "--data", data, "--text-column", "review"]
        + ["--label-column", "stars"],
        tmp_path,
    )
    assert "dvc repro" in done.stdout and "created" in done.stdout
    for name in ("dvc.yaml", "params.yaml", ".gitignore", "README.md", "lttw-version.json"):
        assert (project / name).is_file(), name
    assert (project / "data/raw/reviews.csv.dvc").is_file()
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert params["data"]["sampling"] == "all" and params["data"]["text_column"] == "review"
    assert "src/" not in (project / "dvc.yaml").read_text()
    assert _run(venv, ["git", "status", "--porcelain"], project).stdout == ""  # committed

    tiny = tiny_params(tiny_encoder_dir, DATASETS)  # the tiny profile, the user's data
    for group in ("folds", "nmf", "model", "train"):
        params[group].update(tiny[group])
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    git_commit(project, "tiny profile")

    first = _run(venv, [*dvc, "repro"], project).stdout
    assert {"sample", "folds", "train@0", "evaluate@0", "summary"} <= ran(first), first
    summary = json.loads((project / "metrics/summary.json").read_text())
    assert summary, summary
    if "final" in ran(first):  # the deployed model first, trained on every labelled row
        sizes = json.loads((project / "data/sample/labels.json").read_text())["sizes"]
        assert next(iter(summary)) == "final"
        final = summary["final"]
        # one file of the user's (small: lttw init fits data.test_size to 0, every row in the
        # folds): the final model learns every row, a test sample carved from it or not
        rows = final["trained_on"]
        assert rows == sizes["train"] + sizes["test"]
        estimate = final["estimate"]  # so its estimate comes from the folds, with an interval
        assert estimate["from_folds"] == 1 and "test" not in final
        assert estimate["f1_macro_low"] <= estimate["f1_macro"] <= estimate["f1_macro_high"]
        card = json.loads((project / "models/final/metrics.json").read_text())
        assert card["rows"] == rows and (project / "models/final/README.md").is_file()
        verified = _run(venv, [lttw, "verify", MODEL], project).stdout
        assert f"model card: {rows} training texts" in verified
    git_commit(project, "trained")

    k = params["model"]["k"] - 1
    exp = _run(venv, [*dvc, "exp", "run", "-S", f"model.k={k}"], project).stdout
    assert ran(exp) == {"features@0", "train@0", "evaluate@0", "summary"} | (
        {"final"} & ran(first)
    ), exp
    assert "metrics/summary.json" in dvc_here(["metrics", "diff"], project)
    shown = json.loads(dvc_here(["exp", "show", "--json"], project))
    assert f'"k": {k}' in json.dumps(shown)  # the experiment, with its parameter
    # back to the committed k: the fold's model and metrics come from DVC's run-cache (which
    # holds every stage, train included: its checkpoints are no output), nothing retrains
    back = _run(venv, [*dvc, "exp", "run", "-S", f"model.k={k + 1}"], project).stdout
    assert not {"features@0", "train@0", "evaluate@0"} & ran(back), back
    assert "Stage 'train@0' is cached - skipping run" in back

    with (project / "data/raw/reviews.csv").open("a") as f:  # the user edits their data
        f.write('"one more row about the stock market",Business\n')
    status = json.loads(dvc_here(["status", "--json"], project))
    assert "sample" in status and "data/raw/reviews.csv.dvc" in status, status

    texts = "Stocks rally as oil prices fall\nLate goal wins the cup final\n"
    # no --model: the CLI's default, models/final where the project has one, else models/fold_0
    lines = _run(venv, [lttw, "predict", "-", "--json"], project, texts)
    records = [json.loads(line) for line in lines.stdout.splitlines()]
    classes = json.loads((project / "data/sample/labels.json").read_text())["classes"]
    assert [r["text"] for r in records] == texts.split("\n")[:2]
    assert all(r["label"] in classes and set(r["probs"]) == set(classes) for r in records)

    api = (
        f"import json, lttw; m = lttw.load_model({MODEL!r}); t = ['Stocks rally', 'A late goal'];"
        "p = m.predict_proba(t); print(json.dumps([m.predict(t), p.sum(axis=1).tolist(), "
        "m.classes, lttw.__file__]))"
    )
    labels, sums, api_classes, where = json.loads(_run(venv, [python, "-c", api], project).stdout)
    assert api_classes == classes and all(label in classes for label in labels)
    assert all(abs(s - 1) < 1e-4 for s in sums) and Path(where).is_relative_to(venv)
