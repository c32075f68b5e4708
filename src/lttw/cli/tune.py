"""`lttw tune`: a hyperparameter search with Optuna (``lttw.experiments.search``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lttw.cli.app import Params, app, examples


@app.command(
    epilog=examples(
        "lttw tune lr --trials 20",
        "lttw tune lr --trials 40 --storage postgresql://user@db/lttw   # on every machine",
        "lttw tune lr --apply",
    )
)
def tune(
    name: Annotated[str, typer.Argument(help="a search space (experiments/search-NAME.yaml)")],
    trials: Annotated[
        int, typer.Option("--trials", "-n", help="run trials until the study holds this many")
    ] = 20,
    storage: Annotated[
        str | None,
        typer.Option(
            "--storage",
            help="Optuna storage URL [default: sqlite:///data/tune/studies.db]; an RDB URL "
            "that several machines reach lets their workers share the study",
        ),
    ] = None,
    study: Annotated[
        str | None, typer.Option("--study", help="the study's name [default: NAME]")
    ] = None,
    budget: Annotated[
        float | None, typer.Option("--budget", help="start no trial after SECONDS")
    ] = None,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply", help="run nothing: write the best trial's parameters into --params"
        ),
    ] = False,
    spaces: Annotated[Path, typer.Option("--spaces", help="the search spaces' folder")] = Path(
        "experiments"
    ),
    params: Params = Path("params.yaml"),
) -> None:
    """Search the parameters of a search space with Optuna: each trial runs the pipeline's
    stages up to the space's fold's training (the direct runner), its objective that fold's
    validation macro F1, pruned on its epoch scores. The study persists in --storage:
    rerun to continue it, or start several workers on the same storage. --apply writes the
    best trial's parameters into params.yaml (then `dvc repro`)."""
    from lttw.experiments import search
    from lttw.experiments.search_space import find_space, load_space

    url = storage or search.default_storage(Path("."))
    if apply:
        from lttw.experiments.grids import full_params
        from lttw.experiments.tuned_params import apply_params, checked_values

        base = full_params(params)
        space = load_space(find_space(name, spaces), base)
        study_name = study or space.name
        values, value = search.best_params(url, study_name)
        checked_values(space, values, base, f"study {study_name!r}'s best trial")
        apply_params(params, values)
        shown = ", ".join(f"{k}={v}" for k, v in values.items())
        typer.echo(f"wrote {params}: {shown} (validation macro F1 {value:.4f})")
        return
    result = search.tune(
        name, trials, url, study, budget, spaces=spaces, log=lambda line: typer.echo(line)
    )
    values, value = search.best_params(url, result.study_name)
    typer.echo(f"best: {values} (validation macro F1 {value:.4f}); `lttw tune {name} --apply`")
