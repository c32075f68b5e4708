"""`lttw verify`: a model folder's files checked against their recorded checksums."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lttw.cli.app import BadInputError, InputProblems, app, examples
from lttw.errors import UserError


@app.command(
    epilog=examples(
        "lttw verify models/fold_0",
        "lttw verify exported/lttw-ag-news",
        "lttw verify --record my-hand-built-model",
    )
)
def verify(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="a model folder")],
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="first record the checksums of a folder that has none (one assembled by "
            "hand); refused where they are recorded",
        ),
    ] = False,
) -> None:
    """Check a model folder's files against the sha256 checksums recorded in its lttw.json
    when it was written (by the train stage or `lttw export`), and print its model card's
    estimate (README.md, metrics.json) where it has one. Exit 0: every file matches;
    3: no checksums recorded, a file is missing, changed or unrecorded, or a number of the
    card's model-index differs from metrics.json (one `error:` line each)."""
    from lttw.models.model_folder import verify_folder

    try:
        found = verify_folder(folder, record=record)
    except UserError as err:
        raise BadInputError(str(err)) from None
    if found.problems:
        raise InputProblems(found.problems)
    ignored = (
        f"; {len(found.ignored)} files the loader does not read, not checked: "
        + ", ".join(found.ignored[:10])
        if found.ignored
        else ""
    )
    typer.echo(f"{folder}: {found.checked} files match their recorded sha256{ignored}")
    _say_card(folder)


def _say_card(folder: Path) -> None:
    """The model card's headline (``lttw.models.card``), where the folder has one; its
    README.md's model-index must hold metrics.json's numbers (``card_problems``)."""
    from lttw.models.card import card_problems, headline, read_card
    from lttw.models.files import CARD

    card = read_card(folder)
    if card is None:
        from lttw.reporting.fold_card import fold_card

        made = fold_card(folder)  # a pipeline fold's folder: the card its project's files make
        if made is None:
            typer.echo(f"{folder}: no model card (README.md, metrics.json)")
        else:
            typer.echo(
                f"{folder}: a fold's model, evaluated after it was written: {headline(made[0])} "
                "(`lttw export` writes its model card into the copy)"
            )
    elif not (folder / CARD).is_file():
        raise BadInputError(f"{folder / CARD}: missing beside its metrics.json")
    elif problems := card_problems(folder, card):
        raise InputProblems(problems)
    else:
        typer.echo(
            f"{folder}: model card: {card.get('rows') or 0:,} training texts, "
            f"{card.get('classes') or 0} classes; {headline(card)}"
        )
