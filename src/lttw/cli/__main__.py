"""``python -m lttw.cli``: the ``lttw`` command."""

from lttw.cli import app

app()
