"""The ``lttw`` command line: what DVC does not do (predict, explain, check data, export,
serve, report, experiment grids). One module per group of commands; ``main`` holds the
application, its error handling and exit codes (see its docstring), and the options the
commands share. Importing this package registers every command on ``app``."""

# --help lists the commands in the order their modules register them
from lttw.cli import predicting, evaluating, datasets, label_issues, initialising  # noqa: F401  # isort: skip
from lttw.cli import folders, sharing, serving, reports, grid_jobs, comparing, tuning  # noqa: F401  # isort: skip
from lttw.cli.main import (
    EXIT_BAD_INPUT,
    EXIT_USAGE,
    EXIT_USER_ERROR,
    FINAL_MODEL_DIR,
    BadInputError,
    app,
    exit_code,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_USAGE",
    "EXIT_USER_ERROR",
    "FINAL_MODEL_DIR",
    "BadInputError",
    "app",
    "exit_code",
]
