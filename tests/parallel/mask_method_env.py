"""A test env that gives its action mask outside the observation (``env.action_mask_from``) and records every invalid
action: the env of the mask-source runs (tests/envs/test_mask_source.py, tests/parallel/test_mask_source_parallel.py).
"""
import os
from typing import Optional

import gymnasium as gym
import numpy as np

from ding_lite.utils import ENV_REGISTRY


@ENV_REGISTRY.register("masked_pick")
class MaskedPick(gym.Env):
    """Each step two of 4 actions are valid, drawn at random; the observation (a plain Box) shows them. A valid action
    earns 1; an invalid one appends a line to ``invalid_log`` (so a test sees it from any process) and raises. The
    mask comes from ``action_masks()`` (``via='method'``) or ``info['action_mask']`` (``via='info'``), never from the
    observation. Episodes are truncated after ``length`` steps; after the end ``action_masks()`` raises and ``info``
    has no mask (as in a finished board game)."""

    def __init__(self, invalid_log: str, via: str = "method", length: int = 20) -> None:
        self.invalid_log, self.via, self.length = invalid_log, via, length
        self.observation_space = gym.spaces.Box(0.0, 1.0, (4,), np.float32)
        self.action_space = gym.spaces.Discrete(4)
        self._mask = np.ones(4, dtype=bool)
        self._t = 0
        self._over = True

    def _draw(self) -> None:
        self._mask = np.zeros(4, dtype=bool)
        self._mask[self.np_random.choice(4, size=2, replace=False)] = True

    def _info(self) -> dict:
        return {"action_mask": self._mask.copy()} if self.via == "info" and not self._over else {}

    def action_masks(self) -> np.ndarray:
        if self._over:
            raise RuntimeError("the episode is over: no action is valid")
        return self._mask.copy()

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        super().reset(seed=seed)
        self._t, self._over = 0, False
        self._draw()
        return self._mask.astype(np.float32), self._info()

    def step(self, action):
        if not self._mask[int(action)]:
            with open(self.invalid_log, "a") as f:
                f.write(f"pid {os.getpid()} step {self._t}: action {int(action)}, mask {self._mask.astype(int)}\n")
            raise RuntimeError(f"invalid action {int(action)} under the mask {self._mask.astype(int)}")
        self._t += 1
        self._over = self._t >= self.length
        self._draw()
        return self._mask.astype(np.float32), 1.0, False, self._over, self._info()
