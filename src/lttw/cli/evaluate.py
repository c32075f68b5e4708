"""`lttw evaluate`: a trained model scored on a labelled file (metrics with bootstrap
intervals, pictures, one HTML page)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lttw.choices import Device
from lttw.cli.app import ChunkTexts, ModelDir, Params, app, examples, open_model, project_columns
from lttw.errors import UserError

#: evaluation.evaluate's N_BOOT and MAX_BOOTSTRAP (not imported: numpy and pandas at start-up)
N_BOOT, MAX_BOOTSTRAP = 1000, 10_000


@app.command(
    epilog=examples(
        "lttw evaluate data/sample/test.parquet",
        "lttw evaluate labelled.csv --model models/final --out evaluation/labelled",
        "lttw evaluate reviews.csv --text-column review --label-column stars --chunk",
    )
)
def evaluate(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="labelled texts: .csv/.tsv, .parquet or .jsonl with a text and a label column "
            "(labels: the model's class names, or class ids 0..p-1; multi-label: a list, or "
            "names joined by --label-delimiter)",
        ),
    ],
    model: ModelDir = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="the folder to write (metrics.json, predictions.parquet, confusion.png, "
            "reliability.png, precision_recall.png, report.html) [default: "
            "evaluation/FILE_STEM]",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="replace --out if it exists")] = False,
    text_column: Annotated[
        str | None, typer.Option(help="text column [default: data.text_column, else text]")
    ] = None,
    label_column: Annotated[
        str | None, typer.Option(help="label column [default: data.label_column, else label]")
    ] = None,
    label_delimiter: Annotated[
        str | None,
        typer.Option(
            help="multi-label CSV: separator of labels [default: data.label_delimiter, else |]"
        ),
    ] = None,
    bootstrap: Annotated[
        int,
        typer.Option(
            min=0, max=MAX_BOOTSTRAP, help="bootstrap resamples for the 95% intervals (0: none)"
        ),
    ] = N_BOOT,
    seed: Annotated[int, typer.Option(min=0, help="the bootstrap's random seed")] = 0,
    chunk: ChunkTexts = False,
    max_chars: Annotated[
        int, typer.Option(min=1, help="characters per text; a longer one is an error")
    ] = 100_000,
    batch_size: Annotated[int, typer.Option(min=1, help="texts per forward pass")] = 64,
    device: Annotated[
        Device, typer.Option(help="where the model runs (auto: a GPU where there is one)")
    ] = "auto",
    params: Params = Path("params.yaml"),
) -> None:
    """Score a trained model on a labelled file: macro precision / recall / F1 and accuracy
    (multi-label: micro and macro, subset accuracy) with 95% bootstrap intervals, per-class
    scores, a confusion matrix, a reliability diagram and precision-recall curves per class,
    as metrics.json, PNG files and one self-contained report.html. The columns default to
    the project's (data.text_column / data.label_column in --params)."""
    from lttw.inference.file_evaluation import Columns, evaluate_file
    from lttw.inference.long_texts import WindowedPredictor
    from lttw.inference.text_lines import LineCap

    if not file.is_file():
        raise FileNotFoundError(2, "file not found", str(file))
    out = out if out is not None else Path("evaluation") / file.stem
    if out.exists() and not force:
        raise UserError(f"{out}: exists; pass --force to replace it (or choose another --out)")
    if out.exists() and not (out / "metrics.json").is_file():
        raise UserError(
            f"{out}: exists and is not an evaluation folder (no metrics.json); --force "
            "replaces only one: choose another --out"
        )
    text, label, delimiter = project_columns(params)
    columns = Columns(
        text_column or text or "text",
        label_column or label or "label",
        label_delimiter or delimiter,
    )
    predictor = WindowedPredictor(open_model(model, params, device, onnx=True), chunk)
    report = evaluate_file(
        predictor, file, out, columns, LineCap(max_chars), batch_size, bootstrap, seed
    )
    note = predictor.note()
    if note:
        typer.echo(note, err=True)
    absent = report.get("absent_classes", [])
    if absent:
        shown = ", ".join(absent[:10]) + (", ..." if len(absent) > 10 else "")
        typer.echo(
            f"warning: {len(absent)} of the model's {len(report['classes'])} classes are "
            f"absent from {file} (neither a label nor predicted: {shown}); the macro "
            "averages are over the other classes",
            err=True,
        )
    metrics, intervals = report["metrics"], report["intervals"]
    for key, value in metrics.items():
        if key == "n":
            continue
        span = intervals.get(key)
        typer.echo(f"{key:<18} {value:.4f}" + (f"  [{span[0]:.4f}, {span[1]:.4f}]" if span else ""))
    typer.echo(f"{report['n']} texts; wrote {out}/ ({', '.join(report['files'])})")
