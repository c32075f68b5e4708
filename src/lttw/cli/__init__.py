"""The ``lttw`` command line: what DVC does not do (predict, explain, check data, export,
serve, report, experiment grids). One module per command or group of commands; ``app``
holds the application, its error handling and exit codes (see its docstring), and the
options the commands share. Importing this package registers every command on ``app``."""

# --help lists the commands in the order their modules register them
from lttw.cli import predict, explain, evaluate, data, init  # noqa: F401  # isort: skip
from lttw.cli import export, verify, push, serve, report, exp, tune  # noqa: F401  # isort: skip
from lttw.cli.app import (
    EXIT_BAD_INPUT,
    EXIT_USAGE,
    FINAL_MODEL_DIR,
    BadInputError,
    app,
    exit_code,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_USAGE",
    "FINAL_MODEL_DIR",
    "BadInputError",
    "app",
    "exit_code",
]
