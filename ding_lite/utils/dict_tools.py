"""Nested-dict helpers used by every configurable component."""
import copy
from typing import Any, Mapping, MutableMapping

from easydict import EasyDict


def deep_merge(base: MutableMapping, update: Mapping) -> MutableMapping:
    """Merge ``update`` into ``base`` in place (dicts recurse, everything else replaces) and return ``base``."""
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), Mapping):
            deep_merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def to_plain(obj: Any) -> Any:
    """A deep copy of ``obj`` with every mapping turned into a plain ``dict`` and tuples kept as tuples."""
    if isinstance(obj, Mapping):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [to_plain(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(to_plain(v) for v in obj)
    return copy.deepcopy(obj)


def class_default_config(cls: type) -> EasyDict:
    """The class attribute ``config`` merged down the class hierarchy (a subclass's keys win)."""
    merged: dict = {}
    for klass in reversed(cls.__mro__):
        if "config" in vars(klass):
            deep_merge(merged, to_plain(vars(klass)["config"]))
    return EasyDict(merged)


class Configurable:
    """Mixin for components with a declared default config: ``config`` (class attribute) and ``default_config()``.

    ``check_config(cfg, path)`` may be overridden to reject impossible values with a ``ConfigError`` that names
    ``path`` (the dotted location of this component's section in the full config).
    """

    config: dict = {}
    # Dotted paths (relative to this component's section) whose contents are not validated key by key,
    # e.g. ``('kwargs',)`` for keyword arguments passed straight to an env constructor.
    free_form: tuple = ()

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        """Validate values beyond their types (ranges, choices). The default accepts everything."""
