"""Name -> class tables filled by class decorators: the classifiers' (``registry``) and the
fusions' (``fusion``). Its own module, below both: importing ``registry`` imports every
variant, and a variant imports ``fusion``, so ``fusion`` cannot import ``registry``."""

from __future__ import annotations


def registrar(table: dict[str, type], attribute: str):
    """A class decorator maker: ``@it(name)`` files the class under ``name`` in ``table``
    and sets its ``attribute`` to ``name``."""

    def register_as(name: str):
        def wrap(cls):
            setattr(cls, attribute, name)
            table[name] = cls
            return cls

        return wrap

    return register_as
