"""`lttw predict --engine ray`: the predict command's rows spread over Ray Data
(``lttw.serving.ray_batch``)."""

from __future__ import annotations

from pathlib import Path

import typer

from lttw.errors import UserError


def predict_on_ray(
    model_dir: Path,
    file: Path | None,
    out: str | None,
    *,
    actors: int,
    ray_address: str | None,
    project_column: str | None,
    **settings,
) -> None:
    """Predict the shards ``file`` names into the parquet folder ``out``; refuses the
    options that have no meaning there (see ``lttw predict --help``)."""
    from lttw.serving.ray_batch import RayBatchSettings, predict_shards

    if file is None or out is None or out == "-":
        raise UserError("--engine ray reads --file SHARDS and writes --out FOLDER (parquet shards)")
    config = RayBatchSettings(
        actors=actors, address=ray_address, project_column=project_column, **settings
    )
    rows = predict_shards(model_dir, file, out, config)
    typer.echo(f"wrote {rows} predictions to {out}/ (parquet shards)", err=True)
