"""Typed, validated pipeline settings: the one place where parameters are checked.

Stages read ``params.yaml`` themselves and pass the relevant group in; the library
functions take these typed objects (or plain values), never the YAML file.
Every bad value is rejected at load time with the parameter's dotted name and its
valid range, before any stage does work. Each parameter is described once, here, as the
``description`` of its ``Field``; ``python tools/params_doc.py`` renders them into
docs/reference/parameters.md.

Modules, one concept each: ``variants`` (the names of the choices), ``group`` (the base of a
parameter group), ``data``, ``model`` and ``train`` (the groups), ``reading`` (``Settings``,
validated when read). Import every name from ``lttw.settings``.
"""

from lttw.settings.data import (
    DEFAULT_TOKEN_PATTERN,
    CountSettings,
    DataSettings,
    FoldSettings,
    NMFSettings,
    WordSettings,
)
from lttw.settings.group import Group
from lttw.settings.model import ModelSettings
from lttw.settings.reading import (
    MAX_SEED,
    Settings,
    SettingsError,
    check_batch_size,
    read_settings,
    settings_from_dict,
    valid_range,
)
from lttw.settings.train import FinalSettings, TrainSettings
from lttw.settings.variants import (
    ATTENTIONS,
    BASELINES,
    ENCODER_VARIANTS,
    ENSEMBLE_VARIANTS,
    FACTOR_VARIANTS,
    FUSIONS,
    NON_NEURAL_VARIANTS,
    RANKINGS,
    VARIANTS,
    WORD_VOCAB_VARIANTS,
)

__all__ = [
    "ATTENTIONS",
    "BASELINES",
    "DEFAULT_TOKEN_PATTERN",
    "ENCODER_VARIANTS",
    "ENSEMBLE_VARIANTS",
    "FACTOR_VARIANTS",
    "FUSIONS",
    "MAX_SEED",
    "NON_NEURAL_VARIANTS",
    "RANKINGS",
    "VARIANTS",
    "WORD_VOCAB_VARIANTS",
    "CountSettings",
    "DataSettings",
    "FinalSettings",
    "FoldSettings",
    "ModelSettings",
    "NMFSettings",
    "Settings",
    "SettingsError",
    "TrainSettings",
    "WordSettings",
    "Group",
    "check_batch_size",
    "read_settings",
    "settings_from_dict",
    "valid_range",
]
