"""A bound on what a word pattern (``counts.token_pattern``) read from a model folder may
cost: Python's ``re`` backtracks, and a pattern such as ``(a|a)*b`` takes time exponential
in the text's length (26 letters: seconds; 40: hours) without any way to stop it.

``check_pattern_cost`` allows the subset of patterns whose matching cannot blow up that way
and refuses the rest in one line: no unbounded repeat (``*``, ``+``, ``{n,}``) may hold an
alternative (``a|b`` that is not a character set) or another repeat, and no pattern may
use a back-reference; a pattern is at most ``MAX_PATTERN_CHARS`` long. Every word rule lttw
writes (the default ``(?u)\\b\\w+\\b``, scikit-learn's ``(?u)\\b\\w\\w+\\b``) is in it.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from lttw.errors import UserError

try:  # Python 3.11+: the parser of the re module (sre_parse before, deprecated since)
    _parse: Any = importlib.import_module("re._parser")
    _sre: Any = importlib.import_module("re._constants")
except ImportError:  # pragma: no cover - Python 3.10
    _parse = importlib.import_module("sre_parse")
    _sre = importlib.import_module("sre_constants")

MAX_PATTERN_CHARS = 1000
_REPEATS = (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", None))


def _problem(items, inside_unbounded: bool) -> str | None:
    """What makes the parsed ``items`` costly, or None."""
    for op, arg in items:
        if op in (_sre.GROUPREF, _sre.GROUPREF_EXISTS):
            return "a back-reference"
        if op in _REPEATS:
            low, high, body = arg
            if inside_unbounded and high > 1:
                return "a repeat inside an unbounded repeat (e.g. (a+)*)"
            found = _problem(body, inside_unbounded or high == _sre.MAXREPEAT)
        elif op == _sre.BRANCH:
            if inside_unbounded:
                return "an alternative inside an unbounded repeat (e.g. (a|ab)*)"
            found = next((p for b in arg[1] if (p := _problem(b, False))), None)
        elif op == _sre.SUBPATTERN:
            found = _problem(arg[-1], inside_unbounded)
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            found = _problem(arg[1], inside_unbounded)
        elif op == getattr(_sre, "ATOMIC_GROUP", None):
            found = _problem(arg, inside_unbounded)
        else:
            found = None
        if found:
            return found
    return None


def check_pattern_cost(pattern: str, where: str) -> re.Pattern:
    """``pattern`` compiled, or a one-line UserError naming ``where`` (the file and key it
    was read from) when it is not a regular expression or may cost exponential time."""
    if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_CHARS:
        raise UserError(
            f"{where}: the word pattern is not a string of at most {MAX_PATTERN_CHARS} "
            "characters; the file is damaged or edited (re-export the model)"
        )
    try:
        compiled = re.compile(pattern)
        problem = _problem(_parse.parse(pattern), False)
    except (re.error, RecursionError, OverflowError) as err:
        raise UserError(f"{where}: {pattern!r} is not a valid regular expression ({err})") from None
    if problem:
        raise UserError(
            f"{where}: the word pattern {pattern!r} holds {problem}, whose matching may take "
            "time exponential in a text's length; refused (the file is edited: re-export the "
            "model, or train with a simpler counts.token_pattern)"
        )
    return compiled
