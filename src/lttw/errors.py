"""User-facing errors: stages and the CLI print their message on one line, no traceback."""


class UserError(Exception):
    """Something the user can fix (a file, a column, a row, a parameter); the message says what."""


class DataError(UserError):
    """The dataset is missing, unreadable or does not fit the requested sample."""


def one_line(err: BaseException, lines: int | None = None, limit: int | None = None) -> str:
    """``err``'s message on one line: its non-blank lines (all, or the first ``lines``) joined
    by '; ', trailing colons dropped, at most ``limit`` characters; the exception's type
    name where it has no message. The one way every error here is shortened."""
    kept = [line.strip().rstrip(" :") for line in str(err).splitlines() if line.strip()]
    text = "; ".join(kept[:lines]) or type(err).__name__
    return text[:limit] if limit else text
