"""``python -m lttw.project.run_stage NAME [--fold N] [--params F]``: run the installed lttw's
pipeline stage ``stages/NAME.py`` in the current folder, as a user project's ``dvc.yaml``
does (``lttw init``). It first checks the project's ``lttw-version.json`` against the
installed lttw: a stage run with other code than the stamp says would store its outputs under
the wrong dependency hash, so it stops and says to run ``lttw init --upgrade .``."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from lttw.errors import UserError, one_line
from lttw.project.files import STAMP, read_stamp, stage_script, stamp


def check_stamp(project: Path) -> None:
    """UserError unless ``project/lttw-version.json`` matches the installed lttw."""
    found, installed = read_stamp(project / STAMP), stamp()
    if found != installed:
        said = f"lttw {found.get('lttw')}" if found else "nothing readable"
        raise UserError(
            f"{project / STAMP}: says {said}, code {str((found or {}).get('code_sha256'))[:12]}; "
            f"the installed lttw is {installed['lttw']}, code {installed['code_sha256'][:12]}: "
            "run `lttw init --upgrade .` (then `dvc repro` reruns what the new code changes)"
        )


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0].startswith("-"):
        print("usage: python -m lttw.project.run_stage NAME [stage options]", file=sys.stderr)
        sys.exit(2)
    try:
        check_stamp(Path.cwd())
        script = stage_script(args[0])
    except UserError as err:
        print(f"error: {one_line(err)}", file=sys.stderr)
        sys.exit(2)
    sys.argv = [str(script), *args[1:]]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
