"""The pipeline's stages, one module each (``sample``, ``folds``, ``tokens``, ``encode``,
``counts``, ``nmf``, ``features``, ``train``, ``evaluate``, ``final``, ``summary``): each holds
the stage's ``main(settings[, fold])`` and runs as ``python -m lttw.stages.NAME [--fold N]
[--params F]`` (this repository's ``stages/NAME.py`` calls the same ``run``).

``run_stage``, the runner they share: in a project made by ``lttw init`` (a folder with
``lttw-version.json``) check the stamp against the installed lttw, parse ``--params`` (and
``--fold``), load the typed settings, run, and turn user errors into one line on stderr with
exit code 2."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from lttw.errors import UserError, one_line
from lttw.project.stamp import STAMP, check_stamp
from lttw.settings import Settings, read_settings

log = logging.getLogger("lttw")


def run_stage(
    main: Callable[..., None],
    description: str,
    per_fold: bool = False,
    argv: list[str] | None = None,
) -> None:
    """Run ``main(settings)`` or ``main(settings, fold)`` as a pipeline stage, in the
    current folder."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--params", default="params.yaml", help="parameters file (default: %(default)s)"
    )
    if per_fold:
        parser.add_argument("--fold", type=int, required=True, help="fold index (0-based)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S"
    )
    try:
        if Path(STAMP).is_file():  # a user project: its code stamp is the installed lttw's
            check_stamp(Path.cwd())
        settings: Settings = read_settings(args.params)
        if per_fold:
            if args.fold not in settings.folds.run and not 0 <= args.fold < settings.folds.n_folds:
                raise UserError(f"--fold {args.fold}: must be in 0..{settings.folds.n_folds - 1}")
            main(settings, args.fold)
        else:
            main(settings)
    except UserError as err:
        print(f"error: {one_line(err)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
