"""Word patterns read from a model folder: the safe subset compiles, patterns whose matching
may take exponential time are refused in one line (``text.pattern_cost``)."""

from __future__ import annotations

import pytest

from lttw.errors import UserError
from lttw.text.pattern_cost import check_pattern_cost


@pytest.mark.parametrize(
    "pattern", [r"(?u)\b\w+\b", r"(?u)\b\w\w+\b", r"(a|b)*c", r"[^\W\d_]+", r"(?:\d{1,3})"]
)
def test_safe_patterns_compile(pattern):
    assert check_pattern_cost(pattern, "x").pattern == pattern


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(a|a)*b", "alternative"),
        (r"(\w+)+$", "repeat inside"),
        (r"(a*)*", "repeat inside"),
        (r"(\w)\1", "back-reference"),
        ("(", "not a valid regular expression"),
        ("a" * 2000, "at most 1000"),
    ],
)
def test_costly_or_broken_patterns_are_one_line(pattern, why):
    with pytest.raises(UserError, match=why) as err:
        check_pattern_cost(pattern, "lttw.json: words.token_pattern")
    assert "\n" not in str(err.value) and str(err.value).startswith("lttw.json")
