"""From a policy's action tensor(s) to what a gymnasium vector env's ``step`` takes."""
from typing import Any, Dict, Union

import numpy as np
import torch

from .env_spec import EnvSpec

# How a policy's continuous actions reach the env's Box bounds:
#   'clip':    the action is in env units (e.g. an unbounded Gaussian sample) and is clipped to [low, high];
#   'rescale': the action is in [-1, 1] (e.g. a tanh-squashed Gaussian) and is mapped linearly onto [low, high].
ACTION_BOUNDS = ("clip", "rescale")


class ActionAdapter:
    """Converts batched policy actions (tensor, or ``{'discrete', 'continuous'}`` for a mixed space) to numpy for
    ``env.step``. Only the env's copy is clipped or rescaled; the stored action is the policy's own."""

    def __init__(self, spec: EnvSpec, bound: str = "clip") -> None:
        if bound not in ACTION_BOUNDS:
            raise ValueError(f"action bound mode must be one of {ACTION_BOUNDS}, got '{bound}'")
        self.low, self.high = spec.action_low, spec.action_high
        self.bound = bound
        if self.low is not None:
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
