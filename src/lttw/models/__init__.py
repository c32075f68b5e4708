"""The classifiers: the registry and its save / load, the pretrained encoder, attention, the
LTTW model, the baselines and the model folder. Importing this package registers every
variant in ``MODEL_REGISTRY``."""

import importlib
import pkgutil

# modules that support the variants rather than define one
_SUPPORT = {"attention", "bundle", "fusion", "registry", "tfidf", "tfidf_vectorizer"}

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in _SUPPORT:
        importlib.import_module(f"{__name__}.{_module.name}")
