"""The base of every parameter group."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Group(BaseModel):
    """A parameter group: unknown names are rejected, values are frozen once read."""

    # allow_inf_nan: a float parameter is a finite number (.inf / .nan in YAML are rejected)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
