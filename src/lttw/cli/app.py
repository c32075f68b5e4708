"""The ``lttw`` application: its error handling and exit codes, and what its commands share
(options, the model folder they load). The commands, what DVC does not do (predict, explain,
check data, export, serve, report, experiment grids), are this package's other modules, each
a thin layer: it parses its options and calls the library.

User errors print one line ``error: ...`` on stderr, from one place (``_Group.invoke``),
with an exit code that says whose fault it was (docs/tutorial/your-own-data.md):

* 0: done; 1: an unexpected failure (a bug: a traceback);
* 2 (``EXIT_USAGE``): the command line is wrong (click's own usage errors, an unknown option,
  options that do not go together, an invalid parameter value), a project cannot be made, a
  path cannot be written (no permission, a read-only file system, a file in the way), or the
  command needs a package this install leaves out (``pip install 'lttw[train]'``);
* 3 (``EXIT_BAD_INPUT``): the input is: a data file or its rows / columns (``DataError``), a
  file that cannot be read or parsed, a missing file or folder, a model folder that does not
  load;
* 130: interrupted (Ctrl-C).
"""

from __future__ import annotations

import errno
import logging
import sys
from functools import partial
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from lttw import layout
from lttw.console import quiet_stdout
from lttw.errors import DataError, UserError

EXIT_USAGE = 2  # click's own code for usage errors
EXIT_BAD_INPUT = 3
#: where `lttw predict/explain/serve/export` find a model without --model: the final model
#: (the `final` stage, trained on every labelled row); where a project has none yet, the
#: model of the first fold in folds.run
FINAL_MODEL_DIR = Path("models/final")


class BadInputError(UserError):
    """The input (a model folder, a data file) is unusable: exit code ``EXIT_BAD_INPUT``."""


class InputProblems(BadInputError):
    """Several problems found in the input (``lttw verify``): one ``error:`` line each."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def exit_code(err: BaseException) -> int:
    """The exit code of a user error (see the module docstring)."""
    from lttw.io import UnreadableFileError

    missing = (FileNotFoundError, NotADirectoryError, IsADirectoryError)
    bad_input = (BadInputError, DataError, UnreadableFileError, *missing)
    return EXIT_BAD_INPUT if isinstance(err, bad_input) else EXIT_USAGE


def _message(err: BaseException) -> str:
    """An exception's message on one line (a missing file as 'PATH: reason')."""
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.filename}: {err.strerror or 'cannot be read'}"
    from lttw.errors import one_line

    return one_line(err)


#: --help's words for typer's types (``<str>`` reads TEXT, as click writes it)
_TYPE_WORDS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH", "bool": ""}


def _type_word(param, ctx) -> str:
    """A parameter's type in --help as a word: TEXT, INTEGER, NUMBER, PATH, or its choices
    (``quick|default|paper``); nothing for a flag."""
    if getattr(param, "param_type_name", "") == "argument" and param.metavar:
        return ""  # an argument's own name says it (DIR, TEXT)
    label = type(param).display_type(param, ctx).strip("<>")
    label = label.removeprefix("list[").removesuffix("]").removesuffix(" range")
    return _TYPE_WORDS.get(label, label if "|" in label else label.upper())


class _Group(TyperGroup):
    """Turns user errors raised by any (sub)command into one line and exit code 2 (usage)
    or 3 (bad input): ``exit_code``. --help names the options' types as words."""

    def get_command(self, ctx, cmd_name):
        command = super().get_command(ctx, cmd_name)
        for param in getattr(command, "params", []):
            if hasattr(param, "display_type"):
                param.display_type = partial(_type_word, param)
        return command

    def invoke(self, ctx):
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a closed pipe or a full device shows here, not at exit
            return result
        except (UserError, FileNotFoundError, NotADirectoryError, IsADirectoryError) as err:
            lines = err.problems if isinstance(err, InputProblems) else [_message(err)]
            for line in lines:
                typer.echo(f"error: {line}", err=True)
            raise typer.Exit(exit_code(err)) from None
        except ModuleNotFoundError as err:  # the slim install: a command of an extra
            from lttw.errors import missing_extra

            if missing_extra(err) is None:
                raise
            typer.echo(f"error: {missing_extra(err)}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
        except BrokenPipeError:  # the reader went away (`| head`): a normal end
            quiet_stdout()
            raise typer.Exit(0) from None
        except OSError as err:
            if err.filename is None and err.errno in (errno.ENOSPC, errno.EIO, errno.EDQUOT):
                quiet_stdout()  # stdout itself (`> /dev/full`): said once, on stderr
                typer.echo(f"error: stdout: {err.strerror}", err=True)
                raise typer.Exit(EXIT_USAGE) from None
            if err.filename is None:  # not about a path the user named: a real fault
                raise
            # a place that cannot be written (no permission, a read-only file system, a
            # file where a folder is wanted, a full disk): the path and the reason
            typer.echo(f"error: {_message(err)}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None


def new_app(help_text: str) -> typer.Typer:
    return typer.Typer(
        cls=_Group,
        help=help_text,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_show_locals=False,
        rich_markup_mode=None,  # click's plain help: types as words, wide descriptions at 80 columns
        context_settings={"help_option_names": ["-h", "--help"]},
    )


app = new_app(
    "LTTW text classifier: predict, explain, check data, export, report, exp. "
    "Training and evaluation run through DVC (`dvc repro`)."
)
data_app = new_app("Check a dataset, list the known ones.")
app.add_typer(data_app, name="data")

Params = Annotated[Path, typer.Option("--params", help="parameters file (pipeline settings)")]
#: a grid's cells to run (``exp run``, ``exp submit``)
OnlyCells = Annotated[
    list[str] | None, typer.Option("--only", help="only this cell (its key); repeatable")
]
#: more parameters for every cell of a grid, as dvc's -S
CellParams = Annotated[
    list[str] | None,
    typer.Option("-S", "--set-param", help="another parameter for every cell, as dvc's -S"),
]
#: where ``report`` and ``exp`` find the grids and their cells
Cells = Annotated[
    Path, typer.Option("--cells", help="the grids' cells, one folder each (evidence/runs)")
]
Grids = Annotated[Path, typer.Option("--grids", help="the grid files' folder (experiments)")]
#: ``--chunk`` of ``evaluate`` and ``serve`` (``predict``'s own help says more)
ChunkTexts = Annotated[
    bool,
    typer.Option(
        "--chunk",
        help="read texts longer than the model's max_len whole, in sliding windows "
        "(probabilities averaged); without it they are cut to their start",
    ),
]
ModelDir = Annotated[
    Path | None,
    typer.Option(
        "--model",
        "-m",
        help="model folder, or a Hugging Face hub id (org/name, downloaded into the hub "
        "cache) [default: models/final, else models/fold_N, N = the first of folds.run in "
        "--params]",
    ),
]
#: the branch, tag or commit of a --model given as a hub id
Revision = Annotated[
    str | None,
    typer.Option(help="with --model org/name: the hub branch, tag or commit [default: main]"),
]


def examples(*commands: str) -> str:
    """A help epilog listing example command lines."""
    return "\n\n".join(["Examples:", *(f"`{c}`" for c in commands)])


#: what a command that needs a model says where there is none to find
NO_PROJECT = (
    "no model to use: this folder is not an lttw project (no models/final, no {params}); "
    "pass --model DIR (a trained model folder), or make a project (`lttw init DIR --data "
    "FILE`, then `cd DIR && dvc repro`) and run this there"
)


def model_folder(model: Path | None, params: Path, revision: str | None = None) -> Path:
    if model is not None:
        from lttw.models.hub_snapshot import resolve_model_location

        try:
            return resolve_model_location(model, revision)
        except UserError as err:
            raise BadInputError(str(err)) from None
    if revision is not None:
        raise UserError("--revision goes with --model org/name (a hub id)")
    if FINAL_MODEL_DIR.is_dir():
        return FINAL_MODEL_DIR
    if not params.is_file():
        raise UserError(NO_PROJECT.format(params=params))
    from lttw.settings import read_settings

    return layout.model_dir(read_settings(params).folds.run[0])


def open_model(
    model: Path | None,
    params: Path,
    device: str = "cpu",
    onnx: bool = False,
    revision: str | None = None,
):
    """The model folder's ``Predictor`` (``inference.loading.load_predictor``: opened and
    checked once; ``model``: a folder or a hub id at ``revision``); with ``onnx``, run by
    onnxruntime where the folder holds ``model.onnx`` (``lttw export --onnx``), else torch.
    A folder that does not load is bad input (``BadInputError``, exit code 3)."""
    from lttw.inference.loading import load_predictor

    # a folder or a hub id goes to load_predictor as given: it resolves and opens it once
    folder = model if model is not None else model_folder(None, params, revision)
    try:
        return load_predictor(
            folder, device=device, backend="auto" if onnx else "torch", revision=revision
        )
    except BadInputError:
        raise
    except UserError as err:
        raise BadInputError(str(err)) from None


def project_columns(params: Path) -> tuple[str | None, str | None, str | None]:
    """The project's data.text_column, data.label_column and data.label_delimiter where
    ``params`` exists (None each where it does not or leaves them unset)."""
    if not params.is_file():
        return None, None, None
    from lttw.settings import read_settings

    data = read_settings(params).data
    return data.text_column, data.label_column, data.label_delimiter


def utf8_argument(text: str, where: str) -> str:
    """``text`` where it came as valid UTF-8 (Python keeps an argument's invalid bytes as
    lone surrogates), else a ``BadInputError`` naming ``where``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise BadInputError(
            f"{where}: not valid UTF-8 (byte {err.start + 1}); pass the text as UTF-8"
        ) from None
    return text


def _version(show: bool) -> None:
    if show:
        from lttw import __version__

        typer.echo(f"lttw {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
