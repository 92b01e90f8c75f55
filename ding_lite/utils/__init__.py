"""Registries, errors, seeding and atomic file io shared by every layer of ding_lite."""
from typing import Any

from .errors import ConfigError, NonFiniteError, RegistryError, RunIOError, RunLockedError, UserError
from .registry import (BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY, Registry,
                       import_modules)
from .dict_tools import Configurable, class_default_config, deep_merge, to_plain


def __getattr__(name: str) -> Any:
    """The seeding helpers (which import torch) load on first use, so that ``ding_lite --help`` starts fast."""
    if name in ("get_rng_state", "set_rng_state", "set_seed"):
        from . import seed
        return getattr(seed, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
