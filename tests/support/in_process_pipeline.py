"""A project's pipeline run in the test's process, for tests whose subject is what the stages
compute, not what DVC does: every stage of the project's ``dvc.yaml`` (the library's own
expansion, ``stage_plan.expand_stages``: ``foreach``, ``${}``), in file order, each through
``stage_scripts.run_stage_script`` (the stage module's ``run(argv)``). As ``dvc repro`` does,
a stage's declared outputs are removed before it runs; unlike it, nothing is skipped or
restored from a cache, no ``dvc.lock`` is written and no interpreter starts: a stage costs
its own work only. What DVC reruns, caches, queues and resumes is tested through the real
``dvc`` (tests/e2e/test_pipeline.py, test_faults.py, test_chinese.py's rule change).

``trace``: the parameters each stage reads, written as ``param_trace/sitecustomize.py``
writes them for a stage process (``<trace>/<stage>[@fold].json``), for
``stage_graph.undeclared_reads``."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import yaml

from lttw.experiments.stage_plan import Stage, expand_stages, upstream
from support.stage_scripts import Ran, run_stage_script

PACKAGE = "lttw.stages."


class StageFailed(AssertionError):
    """A stage exited non-zero: ``ran`` holds its exit code, stdout and stderr."""

    def __init__(self, name: str, ran: Ran):
        super().__init__(f"stage {name} exited {ran.returncode}:\n{ran.stderr[-4000:]}")
        self.stage, self.ran = name, ran


@dataclass(frozen=True)
class Planned:
    """One stage of the plan: dvc.yaml's stage and the module and arguments it runs."""

    stage: Stage
    module: str  # "train": lttw.stages.train
    args: tuple[str, ...]


@dataclass(frozen=True)
class PipelineRun:
    """The stages that ran, in order, and their stdout and stderr, one after the other."""

    ran: tuple[str, ...]
    output: str


def stage_command(name: str, cmd: str) -> tuple[str, tuple[str, ...]]:
    """The stage module and arguments of a dvc.yaml command: ``python -m lttw.stages.NAME
    ARGS``, ``python stages/NAME.py ARGS``, or a launcher's (``${train.launcher}``) ``-m
    lttw.stages.NAME ARGS`` / ``stages/NAME.py ARGS``; anything else is a ``ValueError``
    naming the stage."""
    words = shlex.split(cmd)
    for i, word in enumerate(words):
        if word == "-m" and words[i + 1 : i + 2] and words[i + 1].startswith(PACKAGE):
            module, args = words[i + 1].removeprefix(PACKAGE), words[i + 2 :]
        elif word.endswith(".py") and Path(word).parent == Path("stages"):
            module, args = Path(word).stem, words[i + 1 :]
        else:
            continue
        if importlib.util.find_spec(PACKAGE + module) is None:
            break
        return module, tuple(args)
    raise ValueError(
        f"stage {name}: {cmd!r} runs no lttw stage (python -m lttw.stages.NAME or "
        "python stages/NAME.py)"
    )


def plan(project: Path) -> list[Planned]:
    """Every stage of ``project/dvc.yaml`` with ``project/params.yaml``, in file order."""
    dvc_yaml = yaml.safe_load((project / "dvc.yaml").read_text())
    params = yaml.safe_load((project / "params.yaml").read_text())
    return [
        Planned(stage, *stage_command(stage.name, stage.cmd))
        for stage in expand_stages(dvc_yaml, params)
    ]


def with_upstream(stages: list[Planned], targets: tuple[str, ...]) -> list[Planned]:
    """``targets`` and every stage they read from, transitively (what ``dvc repro
    TARGET`` runs), in plan order; all of them without targets."""
    if not targets:
        return stages
    by_name = {planned.stage.name: planned for planned in stages}
    unknown = sorted(set(targets) - set(by_name))
    if unknown:
        raise ValueError(
            f"no stage {', '.join(unknown)} in dvc.yaml (stages: {', '.join(by_name)})"
        )
    every = [planned.stage for planned in stages]
    wanted, todo = set(), list(targets)
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo.extend(stage.name for stage in upstream(by_name[name].stage, every))
    return [planned for planned in stages if planned.stage.name in wanted]


def run_pipeline(
    project: Path, *targets: str, only: bool = False, trace: Path | None = None
) -> PipelineRun:
    """Run ``targets`` (every stage without) and what they read, as ``dvc repro TARGETS``
    would with nothing cached; ``only``: the targets alone (``dvc repro -s``). A stage that
    exits non-zero raises ``StageFailed`` with its stderr; the plan is checked whole first."""
    stages = plan(project)
    chosen = with_upstream(stages, targets)
    if only:
        chosen = [planned for planned in chosen if planned.stage.name in targets]
    names, output = [], []
    for planned in chosen:
        for out in planned.stage.outs:  # as dvc repro does: no stale output left to read
            path = project / out
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
        module = importlib.import_module(PACKAGE + planned.module)
        with traced(module, trace / f"{planned.stage.name}.json" if trace else None):
            ran = run_stage_script(planned.module, project, *planned.args)
        names.append(planned.stage.name)
        output.append(ran.stdout + ran.stderr)
        if ran.returncode != 0:
            raise StageFailed(planned.stage.name, ran)
    return PipelineRun(tuple(names), "".join(output))


@contextlib.contextmanager
def traced(module: ModuleType, record: Path | None) -> Iterator[None]:
    """While the stage ``module`` runs: every settings field its ``main`` reads
    (``param_trace.settings_reads.recording``), written to ``record`` as sorted dotted
    names. Nothing without ``record``."""
    if record is None:
        yield
        return
    from support.param_trace.settings_reads import recording

    reads: set[str] = set()
    run_stage = module.run_stage

    def run_traced(main, description, per_fold=False, argv=None):
        def traced_main(settings, *fold):
            with recording(settings, reads):
                main(settings, *fold)

        return run_stage(traced_main, description, per_fold, argv)

    module.run_stage = run_traced
    try:
        yield
    finally:
        module.run_stage = run_stage
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(sorted(reads)))
