"""The pipeline definition ``lttw init`` projects run: this repository's own ``dvc.yaml``,
``params.yaml`` and search spaces (``experiments/search-*.yaml``), kept as package data in
``pipeline/`` beside this module (byte-identical copies: ``python tools/sync_pipeline.py``
refreshes them, ``tests/project/test_pipeline_copy.py`` fails while they differ). A user
project's ``dvc.yaml`` and ``params.yaml`` are derived from these files by code
(``project_dvc_yaml``, ``project_params``), never kept by hand.

In a user project there is no ``src/lttw`` or ``stages/``: each stage runs the installed
package's module (``python -m lttw.stages.NAME``), and the stages' code dependencies are
replaced by one file, ``lttw-version.json`` (``lttw.project.stamp``), so that an upgrade of
lttw reruns the stages it touches (all of them) and nothing else does.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path

from lttw.errors import UserError
from lttw.project.stamp import STAMP

#: the search spaces of ``lttw tune`` a new project gets, relative to ``pipeline_root()``
SEARCH_SPACES = "experiments/search-*.yaml"
#: where ``lttw init`` puts the user's data (``data.root`` of the project)
DATA_ROOT = "data/raw"
#: the package that holds each stage's module (``lttw.stages.NAME``)
STAGE_PACKAGE = "lttw.stages"
#: the repository's entry point of stage NAME (``stages/NAME.py``), which only calls its module
STAGE_SCRIPT = re.compile(r"stages/(\w+)\.py")
#: the project's command for the repository's ``python stages/NAME.py``: NAME follows
STAGE_COMMAND = f"python -m {STAGE_PACKAGE}."
#: DVC's top-level ``plots:`` of this repository that belong to its paper study only
REPO_ONLY_PREFIXES = ("evidence/",)


def pipeline_root() -> Path:
    """The folder holding the pipeline's ``dvc.yaml``, ``params.yaml`` and search spaces."""
    return Path(__file__).resolve().parent / "pipeline"


def search_spaces() -> list[Path]:
    """The pipeline's search spaces (``SEARCH_SPACES``): ``lttw init`` copies them into the
    project's ``experiments/``, so that ``lttw tune NAME`` works there."""
    return sorted(pipeline_root().glob(SEARCH_SPACES))


def _yaml():
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip: the pipeline's comments and flow-style lists stay
    yaml.width = 100
    yaml.preserve_quotes = True
    yaml.representer.add_representer(  # null as the shipped files write it, not blank
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    return yaml


def _dump(doc, header: str) -> str:
    out = io.StringIO()
    _yaml().dump(doc, out)
    return header + out.getvalue()


def _rewrite_stage(stage: dict) -> None:
    """A stage (or a foreach's ``do``) of this repository as it runs in a user project."""
    stage["cmd"] = re.sub(  # python or the train stage's launcher (torchrun takes -m too)
        rf"(python|\$\{{train\.launcher\}}) {STAGE_SCRIPT.pattern}",
        lambda m: f"{STAGE_COMMAND.replace('python', m[1], 1)}{m[2]}",
        stage["cmd"],
    )
    deps = stage.get("deps")
    if deps is None:
        return
    for i in reversed(range(len(deps))):
        dep = deps[i] if isinstance(deps[i], str) else next(iter(deps[i]))
        if dep.startswith(("src/", "stages/")):
            del deps[i]
    deps.insert(0, STAMP)


def project_dvc_yaml() -> str:
    """The ``dvc.yaml`` of a user project: this repository's, with each stage's command
    running the installed package's stage module, its code dependencies replaced by ``STAMP``, and the
    repository's study-only plots left out."""
    from lttw import __version__

    doc = _yaml().load((pipeline_root() / "dvc.yaml").read_text(encoding="utf-8"))
    for stage in doc["stages"].values():
        _rewrite_stage(stage["do"] if "foreach" in stage else stage)
    plots = doc.get("plots")
    if plots is not None:
        for i in reversed(range(len(plots))):
            path = plots[i] if isinstance(plots[i], str) else next(iter(plots[i]))
            if path.startswith(REPO_ONLY_PREFIXES):
                del plots[i]
        if not plots:
            del doc["plots"]
    doc.ca.comment = None  # the repository's own header (its tests, its layout): dropped
    header = (
        f"# Written by `lttw init` from lttw {__version__}'s pipeline; `lttw init --upgrade .`\n"
        f"# rewrites it. Each stage runs lttw's own module and depends on {STAMP} (the lttw\n"
        "# version and code) instead of the code itself. Change params.yaml, not this file.\n"
    )
    return _dump(doc, header)


def project_params(
    dataset: str,
    text_column: str | None = None,
    label_column: str | None = None,
    label_delimiter: str | None = None,
    profile: str = "default",
    values: Sequence[tuple[str, object, str]] = (),
) -> str:
    """The ``params.yaml`` of a user project: the shipped defaults (comments kept) with the
    user's data (``data.root`` = ``DATA_ROOT``, ``data.dataset``, the columns), every row
    used (``data.sampling: all``), the held-out figure on the whole test part
    (``data.predict_size: 0``), where the pipeline has it the final model on, then the
    ``profile``'s values (``lttw.profiles``), each line saying which profile set it, then
    ``values``: (dotted name, value, the line's comment), validated by the caller."""
    from lttw.profiles import DESCRIPTIONS, PROFILES

    if profile not in PROFILES:
        raise UserError(f"no profile {profile!r} (profiles: {', '.join(PROFILES)})")
    doc = _yaml().load((pipeline_root() / "params.yaml").read_text(encoding="utf-8"))
    data = doc["data"]
    data["dataset"], data["root"] = dataset, DATA_ROOT
    data["text_column"], data["label_column"] = text_column, label_column
    if label_delimiter is not None:  # multi-label data (data.multi_label: auto reads it)
        data["label_delimiter"] = label_delimiter
    data["sampling"], data["predict_size"] = "all", 0
    data.yaml_add_eol_comment("every labelled row (the sizes are ignored)", "sampling", _COLUMN)
    data.yaml_add_eol_comment("0: no separate predict sample", "predict_size", _COLUMN)
    if "final" in doc:  # the final stage: a model on every labelled row
        doc["final"]["enabled"] = True
    for dotted, value in PROFILES[profile].items():
        _set(doc, dotted, value, f"{profile} profile")
    for dotted, value, comment in values:
        _set(doc, dotted, value, comment)
    if "final" in doc:  # the line says what the value does, whichever it is
        enabled = doc["final"]["enabled"]
        said = "retrained on every labelled row" if enabled else "the first fold's model"
        doc["final"].yaml_add_eol_comment(f"models/final: {said}", "enabled", _COLUMN)
    header = (
        "# Parameters of this project (written by `lttw init`; every value is validated before\n"
        "# a stage runs). Change one for a run: `dvc exp run -S model.k=32`.\n"
        f"# Profile: {profile}, {DESCRIPTIONS[profile]}.\n"
    )
    # the shipped file's own header describes this repository's profiles: dropped
    doc.ca.comment = None
    return _spaced(_dump(doc, header))


#: the column of a nested parameter's end-of-line comment, as the shipped params.yaml aligns it
_COLUMN = 30


def _set(doc, dotted: str, value, comment: str) -> None:
    """``doc``'s parameter ``dotted`` (``seed`` or ``group.name``) set, with ``comment``."""
    *group, name = dotted.split(".")
    node = doc[group[0]] if group else doc
    node[name] = _flow(value)
    node.yaml_add_eol_comment(comment, name, _COLUMN if group else _COLUMN - 2)


def _spaced(text: str) -> str:
    """A blank line before every parameter group after the first (a comment written on a
    group's last line takes the blank line that followed it)."""
    lines = text.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        group = line[:1].isalpha() and line.rstrip().endswith(":")
        if group and out and out[-1].strip() and not out[-1].startswith("#"):
            out.append("")
        out.append(line)
    return "\n".join(out) + "\n"


def _flow(value):
    """A list as a flow-style YAML sequence (``[0, 1]``, as the shipped file writes lists)."""
    if not isinstance(value, list):
        return value
    from ruamel.yaml.comments import CommentedSeq

    seq = CommentedSeq(value)
    seq.fa.set_flow_style()
    return seq


def pipeline_ignores() -> list[str]:
    """``.gitignore`` patterns of every output of the pipeline's stages (a per-fold output as
    ``fold_*``): a user project ignores them itself, so that a ``git add -A`` never commits
    one, even where DVC's own ``.gitignore`` entries are missing (after a failed run)."""
    doc = _yaml().load((pipeline_root() / "dvc.yaml").read_text(encoding="utf-8"))
    found: list[str] = []
    for stage in doc["stages"].values():
        body = stage["do"] if "foreach" in stage else stage
        for out in body.get("outs", []):
            path = out if isinstance(out, str) else next(iter(out))
            pattern = "/" + re.sub(r"\$\{[^}]*\}", "*", str(path)).strip("/")
            if pattern not in found:
                found.append(pattern)
    return found
