"""Which settings fields a stage's ``main`` reads: while ``recording(settings, reads)`` is
open, every read of a field of ``settings`` or of one of its groups (``settings.nmf.rank``,
including reads inside the settings' own properties and in library code handed a group)
adds its dotted name to ``reads``. Used in a stage process by ``sitecustomize.py`` (this
folder on PYTHONPATH) and in the test's process by ``support.in_process_pipeline``."""

import contextlib
from collections.abc import Iterator

from pydantic import BaseModel

from lttw.settings import Group


@contextlib.contextmanager
def recording(settings: BaseModel, reads: set[str]) -> Iterator[None]:
    plain = Group.__getattribute__
    prefixes: dict[int, str] = {}

    def register(group: BaseModel, prefix: str) -> None:
        prefixes[id(group)] = prefix
        for field in type(group).model_fields:
            value = plain(group, field)
            if isinstance(value, BaseModel):
                register(value, f"{prefix}{field}.")

    def reading(self, attribute: str):
        value = plain(self, attribute)
        prefix = prefixes.get(id(self))
        if prefix is not None and attribute in type(self).model_fields:
            if not isinstance(value, BaseModel):
                reads.add(prefix + attribute)
        return value

    register(settings, "")
    Group.__getattribute__ = reading  # type: ignore[method-assign]
    try:
        yield
    finally:
        Group.__getattribute__ = plain  # type: ignore[method-assign]
