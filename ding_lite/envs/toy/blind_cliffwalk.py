"""Blind Cliffwalk (Schaul et al. 2016, "Prioritized Experience Replay", section 3.1): the task the paper uses to
show why replaying by TD error pays when rewards are rare.

A chain of ``n`` states, two actions. In each state one action is "right" (a fixed pattern, the same in every
episode and for every seed) and moves to the next state; the other is "wrong" and ends the episode (terminated,
reward 0). The "right" action in the last state ends the episode with reward 1, the only nonzero reward. So a uniformly
random policy reaches the reward once in 2^n episodes, and most stored transitions carry no information about it: an
agent learns the chain only by propagating that one reward back through n states, which uniform replay does slowly.

Observations are one-hot vectors (n,) float32 of the state (all zeros after the end), so a network cannot generalise
from one state to another ("blind"). A random policy scores 2^-n on average; the policy that knows the pattern
(``oracle_action``) scores 1 (``SOLVED_RETURN``) in n steps. ``benchmarks/studies/per_cliffwalk.py`` measures how many updates
SAC needs to learn it with uniform and with prioritised replay.
"""
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np

from ding_lite.utils import ENV_REGISTRY

SOLVED_RETURN = 1.0
PATTERN_SEED = 2016  # the "right" actions: the same chain for every env seed


@ENV_REGISTRY.register("blind_cliffwalk")
class BlindCliffwalkEnv(gym.Env):
    """The chain of ``n`` states of the module docstring."""

    metadata = {"render_modes": []}

    def __init__(self, n: int = 10) -> None:
        if n < 1:
            raise ValueError(f"BlindCliffwalk: n >= 1 states, got n={n}")
        self.n = n
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.right = np.random.default_rng(PATTERN_SEED).integers(0, 2, size=n)  # the "right" action per state
        self._state = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.n, dtype=np.float32)
        if self._state < self.n:
            obs[self._state] = 1.0
        return obs

    def oracle_action(self) -> int:
        """The "right" action in the current state."""
        return int(self.right[self._state])

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        super().reset(seed=seed)
        self._state = 0
        return self._obs(), {}

    def step(self, action: int):
        action = int(action)
        if action not in (0, 1):
            raise ValueError(f"BlindCliffwalk: action must be 0 or 1, got {action}")
        if self._state >= self.n:
            raise RuntimeError("BlindCliffwalk: step after the episode ended; call reset()")
        if action != self.right[self._state]:
            self._state = self.n  # off the cliff
            return self._obs(), 0.0, True, False, {}
        self._state += 1
        done = self._state == self.n
        return self._obs(), float(done), done, False, {}
