"""From a policy's action tensor(s) to what a gymnasium vector env's ``step`` takes."""
from typing import Any, Dict, Optional, Union

import numpy as np
import torch

from ding_lite.utils.errors import ConfigError

from .env_spec import EnvSpec

# How a policy's continuous actions reach the env's Box bounds:
#   'clip':    the action is in env units (e.g. an unbounded Gaussian sample) and is clipped to [low, high];
#   'rescale': the action is in [-1, 1] (e.g. a tanh-squashed Gaussian) and is mapped linearly onto [low, high].
ACTION_BOUNDS = ("clip", "rescale")
BOUNDS_FIX = ("declare the bounds the env takes with a wrapper last in env.wrappers, e.g. dict(type="
              "'ding_lite.envs.bound_actions:BoundActions', kwargs=dict(low=-2.0, high=2.0)) (it clips to them); "
              "gymnasium's ClipAction declares Box(-inf, inf) and RescaleAction cannot bound an infinite bound, so "
              "neither helps here")


def rescale_overflows(low: np.ndarray, high: np.ndarray) -> bool:
    """Whether the map of [-1, 1] onto finite bounds, centre + half-range x a, overflows in the bounds' dtype (a Box of
    +-3.4e38 in float32: (high - low) / 2 is inf)."""
    with np.errstate(over="ignore", invalid="ignore"):
        half, centre = (high - low) / 2, (high + low) / 2
    return not (np.isfinite(half).all() and np.isfinite(centre).all())


def check_action_bounds(spec: EnvSpec, bound: str, env_name: Optional[str] = None) -> None:
    """Refuse a Box action space the policy cannot act in: a NaN bound (any policy), an infinite one for a policy
    that maps [-1, 1] onto the bounds (``bound='rescale'``: SAC; that map of an infinite bound is NaN). A policy that
    clips its actions (``'clip'``: IMPALA, ACER) takes infinite bounds: its Gaussian samples reach the env unclipped."""
    if spec.action_low is None:
        return
    low, high = np.asarray(spec.action_low), np.asarray(spec.action_high)
    nan = bool(np.isnan(low).any() or np.isnan(high).any())
    overflow = bound == "rescale" and not nan and rescale_overflows(low, high)
    if not nan and not overflow and (bound != "rescale" or (np.isfinite(low).all() and np.isfinite(high).all())):
        return
    where = f"env '{env_name}'" if env_name else "the env"
    if nan:
        why = "has a NaN bound"
    elif not (np.isfinite(low).all() and np.isfinite(high).all()):
        why = ("is unbounded (an infinite bound), and this policy maps its tanh-squashed actions in [-1, 1] onto the "
               "bounds (infinite bounds give NaN actions)")
    else:
        why = (f"is too wide for {low.dtype}: its half-range (high - low) / 2 or its centre (high + low) / 2 overflows "
               f"to infinity, and this policy maps its tanh-squashed actions in [-1, 1] onto the bounds through them")
    raise ConfigError(f"{where} has the action space Box(low={low.tolist()}, high={high.tolist()}), which {why}; "
                      f"{BOUNDS_FIX}")


class ActionAdapter:
    """Converts batched policy actions (tensor, or ``{'discrete', 'continuous'}`` for a mixed space) to numpy for
    ``env.step``. Only the env's copy is clipped or rescaled; the stored action is the policy's own. Bounds the
    policy cannot act in are refused (``check_action_bounds``)."""

    def __init__(self, spec: EnvSpec, bound: str = "clip", env_name: Optional[str] = None) -> None:
        if bound not in ACTION_BOUNDS:
            raise ValueError(f"action bound mode must be one of {ACTION_BOUNDS}, got '{bound}'")
        check_action_bounds(spec, bound, env_name)
        self.low, self.high = spec.action_low, spec.action_high
        self.bound = bound
        if self.low is not None and bound == "rescale":
            self.center, self.half = (self.high + self.low) / 2, (self.high - self.low) / 2

    def _box(self, action: torch.Tensor) -> np.ndarray:
        action = action.cpu().numpy()
        if self.low is None:
            return action
        if self.bound == "rescale":
            return self.center + self.half * np.clip(action, -1.0, 1.0)
        return np.clip(action, self.low, self.high)

    def __call__(self, action: Union[torch.Tensor, Dict[str, torch.Tensor]]) -> Any:
        if isinstance(action, dict):
            return action["discrete"].cpu().numpy(), self._box(action["continuous"])
        return self._box(action)
