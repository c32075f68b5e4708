"""The shared entry point of every ``stages/*.py`` script: parse ``--params`` (and ``--fold``),
load the typed settings, run, and turn user errors into one line on stderr with exit code 2."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from lttw.errors import UserError, one_line
from lttw.settings import Settings, read_settings

log = logging.getLogger("lttw")


def run_stage(
    main: Callable[..., None],
    description: str,
    per_fold: bool = False,
    argv: list[str] | None = None,
) -> None:
    """Run ``main(settings)`` or ``main(settings, fold)`` as a pipeline stage."""
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
