"""Every parameter (``Settings``) read and validated: a bad value is one error line naming
the parameter and its valid range."""

from __future__ import annotations

from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Union, get_args, get_origin

import annotated_types
import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from lttw.errors import UserError
from lttw.io import read_yaml
from lttw.settings.data import (
    CountSettings,
    DataSettings,
    FoldSettings,
    NMFSettings,
    WordSettings,
)
from lttw.settings.group import Group
from lttw.settings.model import ModelSettings
from lttw.settings.train import FinalSettings, TrainSettings
from lttw.settings.variants import ENCODER_VARIANTS

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo
    from pydantic_core import ErrorDetails

#: the largest seed every consumer accepts (numpy's legacy RandomState, used by scikit-learn)
MAX_SEED = 2**32 - 1


class Settings(Group):
    """Every parameter of ``params.yaml``, one group per concern, validated when read."""

    seed: int = Field(
        default=42,
        ge=0,
        le=MAX_SEED,
        description="The seed of sampling, folds, NMF initialisation and training.",
    )
    data: DataSettings = Field(default=DataSettings(), description="The dataset and its samples.")
    folds: FoldSettings = Field(default=FoldSettings(), description="Cross-validation folds.")
    words: WordSettings = Field(default=WordSettings(), description="Word splitting.")
    counts: CountSettings = Field(default=CountSettings(), description="Word-label counts.")
    nmf: NMFSettings = Field(default=NMFSettings(), description="The NMF of the counts.")
    model: ModelSettings = Field(default=ModelSettings(), description="The classifier.")
    train: TrainSettings = Field(default=TrainSettings(), description="Training.")
    final: FinalSettings = Field(
        default=FinalSettings(), description="The final model on every labelled row."
    )

    @model_validator(mode="after")
    def _frozen_encoder_variant(self) -> Settings:
        if self.train.freeze_encoder and self.model.variant not in ENCODER_VARIANTS:
            raise ValueError(
                f"train.freeze_encoder: true needs a variant with a pretrained "
                f"encoder ({', '.join(sorted(ENCODER_VARIANTS))}); "
                f"model.variant is {self.model.variant!r}"
            )
        return self


class SettingsError(UserError, ValueError):
    """A parameter is missing, unknown or out of range; the message names it."""


def _field(loc: tuple) -> tuple[type[BaseModel] | None, FieldInfo | None]:
    """The model that holds the parameter at ``loc`` and its FieldInfo (None where unknown);
    list indices in ``loc`` select the list's item constraints."""
    model: type[BaseModel] | None = Settings
    info = None
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        info = model.model_fields.get(part)
        if info is None:
            return model, None
        ann = info.annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return model, info


_BOUNDS = (
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
)


def valid_range(dotted: str, metadata) -> str | None:
    """``1 <= model.depth <= 24``-style description of numeric bounds (None: no bounds)."""
    lower = upper = None
    for item in metadata:
        for kind, attr, op in _BOUNDS:
            if isinstance(item, kind):
                if attr in ("ge", "gt"):
                    lower = f"{getattr(item, attr)} {'<=' if attr == 'ge' else '<'} "
                else:
                    upper = f" {op} {getattr(item, attr)}"
    if lower is None and upper is None:
        return None
    return f"{lower or ''}{dotted}{upper or ''}"


def _union_metadata(annotation) -> list:
    """The constraints of a union's constrained member (``Annotated[int, Field(ge=1)] | ...``)."""
    if get_origin(annotation) not in (Union, UnionType):
        return []
    found = [m for a in get_args(annotation) for m in getattr(a, "__metadata__", ())]
    return [c for m in found for c in getattr(m, "metadata", [m])]


def _hint(loc: tuple, err_type: str) -> str:
    """What is valid at ``loc``: the known names (unknown parameter) or the numeric range."""
    dotted = ".".join(str(p) for p in loc if not isinstance(p, int))
    holder, info = _field(loc)
    if err_type == "extra_forbidden":
        known = sorted(holder.model_fields) if holder is not None else []
        return f"; known names: {', '.join(known)}" if known else ""
    if info is None:
        return ""
    metadata = list(info.metadata) or _union_metadata(info.annotation)
    item_index = [p for p in loc if isinstance(p, int)]
    if item_index:  # an item of a list: its own constraints
        args = getattr(info.annotation, "__args__", ())
        metadata = [m for a in args for m in getattr(a, "__metadata__", ())]
        metadata = [c for m in metadata for c in getattr(m, "metadata", [m])]
        dotted = f"{dotted}[{item_index[0]}]"
    described = valid_range(dotted, metadata)
    return f"; valid: {described}" if described else ""


def _field_loc(loc: tuple) -> tuple:
    """``loc`` without pydantic's union-member tags (``nmf.rank.constrained-int`` -> ``nmf.rank``)."""
    model: type[BaseModel] | None = Settings
    kept = []
    for part in loc:
        if isinstance(part, int):
            kept.append(part)
        elif model is not None:  # a field (or an unknown name) of a group; below a leaf field
            kept.append(part)  # only union-member tags follow
            info = model.model_fields.get(part)
            ann = info.annotation if info is not None else None
            model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return tuple(kept)


def _format(err: ValidationError, source: str) -> str:
    """One line per parameter: a union's members' complaints (``nmf.rank``: a number in
    range or 'auto') are joined into one."""
    grouped: dict[tuple, list[ErrorDetails]] = {}
    for e in err.errors():
        grouped.setdefault(_field_loc(tuple(e["loc"])), []).append(e)
    lines = []
    for loc, errors in grouped.items():
        e = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
        where = where.removeprefix(".") or "(top level)"
        msgs = [x["msg"].removeprefix("Value error, ") for x in errors]
        msg = " or ".join([msgs[0]] + [m.removeprefix("Input should be ") for m in msgs[1:]])
        if e["type"] == "extra_forbidden":
            msg = "unknown parameter"
        quiet = e["type"] in ("missing", "extra_forbidden") or isinstance(e.get("input"), dict)
        got = "" if quiet else f" (got {e.get('input')!r})"
        lines.append(f"{source}: {where}: {msg}{got}{_hint(loc, e['type'])}")
    return "\n".join(lines)


def settings_from_dict(raw: dict | None, source: str = "params") -> Settings:
    try:
        return Settings.model_validate(raw or {})
    except ValidationError as err:
        raise SettingsError(_format(err, source)) from None


def check_batch_size(n_train: int, batch_size: int, fold: int | None = None) -> None:
    """Reject ``train.batch_size`` larger than the rows it batches (call it where the data is
    known: at the start of training, with the fold's train-part size).

    An error rather than a silent clamp: the batch size is part of the experiment (it sets the
    steps per epoch and the learning-rate schedule), so the run must not quietly use another.
    """
    if n_train < 1:
        where = f"fold {fold}'s" if fold is not None else "the"
        raise SettingsError(
            f"{where} train part is empty: nothing to train on (raise data.train_size)"
        )
    if batch_size > n_train:
        where = f"fold {fold}'s train part" if fold is not None else "the train part"
        raise SettingsError(
            f"train.batch_size={batch_size} is larger than {where} "
            f"({n_train} rows); valid: 1 <= train.batch_size <= {n_train} "
            "(or raise data.train_size)"
        )


def read_settings(path: str | Path = "params.yaml") -> Settings:
    path = Path(path)
    if not path.is_file():
        raise SettingsError(f"{path}: parameters file not found")
    try:
        raw = read_yaml(path)
    except yaml.YAMLError as err:
        raise SettingsError(f"{path}: not valid YAML: {err}") from None
    if raw is not None and not isinstance(raw, dict):
        raise SettingsError(f"{path}: expected a mapping of parameter groups")
    return settings_from_dict(raw, str(path))
