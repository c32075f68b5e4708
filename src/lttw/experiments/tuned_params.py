"""``lttw tune --apply``: a study's best parameters written into params.yaml. Only the
parameters of the search space (its ``set:`` and ``space:``) are written, each value checked
by ``lttw.settings`` as the stages read it back; a study holding anything else (a parameter
outside the space, a value the settings refuse) is one line and leaves the file as it was.
The file's comments and layout stay (ruamel's round trip), its nulls written as ``null``."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

from lttw.errors import DataError, UserError, one_line
from lttw.experiments.assignments import param_value, set_param
from lttw.experiments.search_space import SearchSpace
from lttw.io import atomic_path, load_yaml


def checked_values(space: SearchSpace, values: dict[str, Any], base: dict, where: str) -> None:
    """``values`` (a study's parameters, dotted names) are parameters of ``space`` whose
    values the settings take over ``base`` (``grids.full_params``): else a ``DataError``
    naming ``where`` (the study) and the parameter."""
    from lttw.settings import settings_from_dict

    allowed = {dim.name for dim in space.dimensions} | set(space.fixed)
    params = copy.deepcopy(base)
    for key, value in values.items():
        if key not in allowed:
            raise DataError(f"{where}: {key!r} is not a parameter of {space.path}; nothing written")
        # as the stages read the value back from params.yaml (``-S`` parses it the same way)
        set_param(params, key, load_yaml(param_value(value)), where=f"{where}:")
    try:
        settings_from_dict(params, source=where)
    except UserError as err:
        raise DataError(f"{one_line(err)}; nothing written") from None


def apply_params(path: Path, values: dict[str, Any]) -> None:
    """Write ``values`` (dotted names) into the parameters file ``path``, its comments kept;
    an unknown parameter, or a file that cannot be written, is an error that leaves the file
    as it was."""
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import RoundTripRepresenter

    class _Nulls(RoundTripRepresenter):  # ruamel writes None as an empty value otherwise
        pass

    _Nulls.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    # ruamel's round-trip loader: the file's comments and layout stay, and it builds plain
    # mappings, lists and scalars only (no Python objects from tags)
    round_trip = YAML()
    round_trip.Representer = _Nulls
    round_trip.width = 100
    round_trip.preserve_quotes = True
    doc = round_trip.load(path.read_text(encoding="utf-8"))
    for key, value in values.items():
        set_param(doc, key, value, where=f"{path}:")
    out = io.StringIO()
    round_trip.dump(doc, out)
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(out.getvalue(), encoding="utf-8")
    except OSError as err:  # named by the file, not by the temporary file beside it
        raise UserError(f"{path}: cannot be written ({err.strerror or err})") from None
