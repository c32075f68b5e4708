"""User-facing errors: stages and the CLI print their message on one line, no traceback."""


class UserError(Exception):
    """Something the user can fix (a file, a column, a row, a parameter); the message says what."""


class DataError(UserError):
    """The dataset is missing, unreadable or does not fit the requested sample."""
