"""`lttw push`: a checked model folder uploaded to the Hugging Face hub, for `lttw predict
--model org/name`, `lttw serve --model org/name` and `lttw.load_model("org/name")`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lttw.cli.app import BadInputError, app, examples
from lttw.errors import UserError


@app.command(
    epilog=examples(
        "lttw push exported/lttw-ag-news my-org/lttw-ag-news",
        "lttw push exported/lttw-int8 my-org/lttw-ag-news --revision int8 --private",
    )
)
def push(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="a model folder (lttw export)")],
    repo_id: Annotated[str, typer.Argument(metavar="ORG/NAME", help="the hub model repository")],
    revision: Annotated[
        str | None, typer.Option(help="the branch to push to (made where missing) [default: main]")
    ] = None,
    private: Annotated[
        bool, typer.Option("--private", help="make a new repository private")
    ] = False,
) -> None:
    """Upload a model folder to the Hugging Face hub (the repository made where missing),
    after checking its files against the checksums in its lttw.json as `lttw verify` does:
    a folder that fails the check is never pushed. Files the loader does not read stay
    behind. Log in first (`hf auth login`, or HF_TOKEN); HF_ENDPOINT names another hub."""
    from lttw.models.hub_push import push_folder

    try:
        url = push_folder(folder, repo_id, revision, private)
    except UserError as err:
        raise BadInputError(str(err)) from None
    at = f" (revision {revision})" if revision else ""
    typer.echo(f"pushed {folder} to {repo_id}{at}: {url}")
    typer.echo(f"load it with: lttw predict --model {repo_id} TEXT")
