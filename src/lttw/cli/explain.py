"""`lttw explain`: why a trained model answers what it does for one text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lttw.cli.app import ModelDir, Params, app, examples, model_folder, open_model, utf8_argument
from lttw.console import console


def _has_torch() -> bool:
    """Whether torch is installed (the slim install explains an ONNX folder without it)."""
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError:
        return False
    return True


@app.command(
    epilog=examples(
        'lttw explain "Stocks rally as oil prices fall"',
        'lttw explain "Stocks rally as oil prices fall" --json',
    )
)
def explain(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="the text to explain")],
    model: ModelDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON document")] = False,
    params: Params = Path("params.yaml"),
) -> None:
    """Why the model predicts what it does: the top-k / bottom-s words and their latent
    factors and class affinities, the probabilities, and [CLS]'s attention."""
    from lttw.inference.explain import explain as build
    from lttw.inference.explain import render

    text = utf8_argument(text, "TEXT")
    folder = model_folder(model, params)
    # an ONNX export holds no torch weights: explained on onnxruntime (no attention weights)
    export = (folder / "model.onnx").is_file() and not (folder / "model.safetensors").is_file()
    doc = build(open_model(folder, params, onnx=export or not _has_torch()), text)
    if as_json:
        typer.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        render(doc, console())
