"""`lttw export`: a model folder copied for deployment, its files checksummed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lttw import layout
from lttw.cli.app import (
    ModelDir,
    Params,
    app,
    examples,
    model_folder,
    open_model,
)
from lttw.errors import UserError


@app.command(
    epilog=examples(
        "lttw export --model models/fold_0 --out exported/lttw-ag-news",
        "lttw export --model models/fold_0 --out exported/lttw-onnx --onnx",
        "lttw export --model models/fold_0 --out exported/lttw-int8 --int8 "
        "--check-file data/sample/test.parquet",
    )
)
def export(
    out: Annotated[Path, typer.Option("--out", "-o", help="the new self-contained folder")],
    model: ModelDir = None,
    force: Annotated[bool, typer.Option(help="replace --out if it exists")] = False,
    onnx: Annotated[
        bool,
        typer.Option(
            "--onnx",
            help="also write the classifier as model.onnx (encoder, factor fusion, "
            "attention, head; tokenising and the factor lookup stay in Python): `lttw predict` "
            "and `lttw serve` then run it on onnxruntime",
        ),
    ] = False,
    int8: Annotated[
        bool,
        typer.Option(
            "--int8",
            help="with --onnx (implied): int8 dynamic quantisation of the weights; "
            "checked by macro F1 on --check-file",
        ),
    ] = False,
    check_file: Annotated[
        Path | None,
        typer.Option(
            help="labelled held-out texts (.parquet/.csv, columns text and label) the ONNX "
            "export is checked on [default: data/sample/test.parquet where it exists and "
            "has the model's classes]"
        ),
    ] = None,
    check_rows: Annotated[int, typer.Option(min=1, help="texts of --check-file used")] = 1000,
    max_f1_drop: Annotated[
        float,
        typer.Option(
            "--max-f1-diff",
            "--max-f1-drop",
            min=0.0,
            help="int8: the most macro F1 on --check-file may differ from torch's, "
            "either way (higher or lower)",
        ),
    ] = 0.005,
    params: Params = Path("params.yaml"),
) -> None:
    """Copy a model folder (the files its loader reads: config, weights, tokenizer, labels,
    lttw.json, factors/, and its pipeline metrics as metrics.json; nothing else) into a
    self-contained folder, atomically, with the sha256 of every file in its lttw.json
    (`lttw verify`), and check that it loads and predicts identically. An ensemble
    (lttw_tfidf) is copied with each of its part folders. With --onnx / --int8 also export
    the classifier (an ensemble: each neural part) to ONNX and check it against torch on
    held-out texts (fp32: the same label on every text; int8: macro F1 within
    ±--max-f1-diff); an ONNX folder holds model.onnx without the torch weights. Prints the
    sizes of both folders. Nothing is written when a check fails."""
    import numpy as np

    from lttw.inference.predict import Predictor
    from lttw.io import atomic_dir
    from lttw.models.files import META
    from lttw.models.folder_files import copy_loader_files, record_checksums

    source = model_folder(model, params)
    original = open_model(source, params)  # also checks that the source is a model folder
    src, dst = source.resolve(), out.resolve()
    if dst == src or src in dst.parents or dst in src.parents:
        raise UserError(
            f"--out {out} must neither contain nor lie inside the model folder {source}"
        )
    if out.exists() and not force:
        raise UserError(f"{out}: exists; pass --force to replace it")
    if out.exists() and not (out.is_dir() and (out / META).is_file()):
        raise UserError(
            f"{out}: exists and is not a model folder (no {META}); --force replaces only a "
            "model folder: choose another --out"
        )
    if check_file is None and _sample_fits(original):
        check_file = layout.sample_parquet("test")
    if int8 and check_file is None:
        raise UserError(
            "an int8 export is checked by macro F1 on labelled held-out texts: "
            "pass --check-file F.parquet|F.csv (columns text, label)"
        )
    if check_file is not None and not check_file.is_file():
        raise FileNotFoundError(2, "file not found", str(check_file))
    probe = ["lttw export check", "a second, longer probe text for the exported model"]
    with atomic_dir(out) as tmp:
        left_out = copy_loader_files(source, tmp)  # follows links: self-contained
        if left_out:
            typer.echo(
                f"left out {len(left_out)} files the loader does not read: "
                + ", ".join(left_out[:10])
                + (" ..." if len(left_out) > 10 else ""),
                err=True,
            )
        copy = Predictor.load(tmp)
        if not np.allclose(copy.predict_proba(probe), original.predict_proba(probe), atol=1e-6):
            raise UserError(f"{out}: the exported model predicts differently from {source}")
        _carry_card(source, tmp)
        if onnx or int8:
            from lttw.serving.onnx_export import add_onnx

            for folder, predictor in _onnx_targets(tmp, original):
                add_onnx(
                    folder,
                    predictor,
                    int8,
                    check_file,
                    check_rows,
                    max_f1_drop,
                    say=lambda line: typer.echo(line, err=True),
                )
        record_checksums(tmp)  # last: the sha256 of every file of the export
    typer.echo(
        f"exported {source} ({_size(source)}) to {out} ({_size(out)}; loads and predicts "
        "identically" + (f"; ONNX {'int8' if int8 else 'fp32'} checked)" if onnx or int8 else ")")
    )


def _size(folder: Path) -> str:
    """The bytes of the files loading ``folder`` reads (an ensemble's parts included), in MB."""
    from lttw.models.folder_files import loader_files, unread_files

    files = set(loader_files(folder)) | set(unread_files(folder))
    return f"{sum((folder / name).stat().st_size for name in files) / 1e6:.1f} MB"


def _carry_card(source: Path, dest: Path) -> None:
    """The model card travels with an export: ``source``'s README.md and metrics.json
    (``lttw.models.card``); a fold's folder without one gets one made from its project's files
    (``reporting.fold_card``), else its pipeline metrics as metrics.json."""
    import shutil

    from lttw.io import write_json
    from lttw.models.card import write_card
    from lttw.models.files import CARD, METRICS
    from lttw.reporting.fold_card import fold_card
    from lttw.serving.info import folder_metrics

    if (source / CARD).is_file() and (source / METRICS).is_file():
        for name in (CARD, METRICS):
            shutil.copy2(source / name, dest / name)
    elif (card := fold_card(source)) is not None:
        write_card(dest, *card)
    elif metrics := folder_metrics(source):
        write_json(dest / METRICS, metrics)


def _onnx_targets(folder: Path, predictor) -> list[tuple[Path, object]]:
    """Where ``--onnx`` writes a model.onnx, and the predictor it exports: the folder itself,
    or for an ensemble each part that runs a neural network (a part that reads raw texts,
    tfidf_linear, stays as it is)."""
    parts = getattr(predictor, "parts", None)
    if parts is None:
        return [(folder, predictor)]
    targets = []
    for name, part in zip(predictor.weights.parts, parts):
        if getattr(part.model, "reads", "tokens") == "tokens":
            targets.append((folder / name, part))
        else:
            typer.echo(f"the {name} part reads raw texts: copied as it is, no ONNX", err=True)
    if not targets:
        raise UserError(
            f"{predictor.folder}: no part of this ensemble runs a neural network: there is "
            "nothing to export to ONNX (leave out --onnx)"
        )
    return targets


def _sample_fits(predictor) -> bool:
    """Whether this project's held-out sample (data/sample/test.parquet) labels texts as the
    model does (the same classes, one label or a set per text): the default --check-file
    only then, so a model of another dataset is checked on the probe texts."""
    from lttw.io import read_json

    if not (layout.sample_parquet("test").is_file() and layout.LABELS_JSON.is_file()):
        return False
    info = read_json(layout.LABELS_JSON)
    same_kind = bool(info.get("multi_label", False)) == bool(
        getattr(predictor, "multi_label", False)
    )
    return same_kind and info.get("classes") == list(predictor.classes)
