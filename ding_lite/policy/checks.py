"""Config checks shared by several policies (called from their ``check_config``)."""
from typing import Iterable

from easydict import EasyDict

from ding_lite.utils import ConfigError


def check_positive(section: EasyDict, keys: Iterable[str], path: str) -> None:
    """Every ``section[key]`` must be > 0; ``path`` is the section's dotted location."""
    for key in keys:
        if section[key] <= 0:
            raise ConfigError(f"{path}.{key}={section[key]}: must be positive")


def check_optimizer(learn: EasyDict, path: str) -> None:
    """``optim`` in {'adam', 'rmsprop'}; ``grad_clip_type`` in {None, 'clip_norm', 'clip_value'} with a positive
    ``clip_value`` when clipping is on. ``path`` is the learn section's dotted location."""
    if learn.optim not in ("adam", "rmsprop"):
        raise ConfigError(f"{path}.optim='{learn.optim}': must be 'adam' or 'rmsprop'")
    if learn.grad_clip_type not in (None, "clip_norm", "clip_value"):
        raise ConfigError(f"{path}.grad_clip_type='{learn.grad_clip_type}': must be None, 'clip_norm' or "
                          f"'clip_value'")
    if learn.grad_clip_type is not None and (isinstance(learn.clip_value, bool) or
                                             not isinstance(learn.clip_value, (int, float)) or learn.clip_value <= 0):
        raise ConfigError(f"{path}.clip_value={learn.clip_value!r}: must be a positive number when "
                          f"grad_clip_type='{learn.grad_clip_type}'")
