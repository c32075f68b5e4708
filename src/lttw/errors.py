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


#: the top-level modules that the slim install (``pip install lttw``: answering with an ONNX
#: model folder) leaves out, and the extra of pyproject.toml that brings each
EXTRA_OF = {
    "torch": "train",
    "transformers": "train",
    "dvc": "train",
    "dvclive": "train",
    "matplotlib": "plots",
    "sklearn": "train",
    "scipy": "train",
    "onnx": "train",
    "iterstrat": "train",
    "ruamel": "train",
    "jieba": "jieba",
    "pyarrow": "parquet",
    "huggingface_hub": "hub",
}


def missing_extra(err: ModuleNotFoundError) -> UserError | None:
    """A one-line UserError naming the extra to install for a module this install leaves
    out (``EXTRA_OF``); None for any other missing module (a bug, left to its traceback)."""
    top = (err.name or "").split(".")[0]
    extra = EXTRA_OF.get(top)
    if extra is None:
        return None
    return UserError(
        f"this needs {top}, which this install leaves out: pip install 'lttw[{extra}]'"
    )
