"""MixedTarget: a small env with a mixed action space, Tuple(Discrete(3), Box(2)), to test and demonstrate SAC on it.

A point in the plane must reach a goal and stay there. Each step the agent picks a *gear* (discrete: stop, fine
step of 0.05, coarse step of 0.25) and a *direction* (continuous, 2-D, normalised by the env). Reward is minus the
distance to the goal after the move, over 20 steps. Neither part alone suffices: the coarse gear overshoots near the
goal, the fine gear is too slow from far away, and the direction must point at the goal.

Returns (20 steps, mean over 1,000 episodes, see ``tests/envs/test_mixed_target.py``): a uniformly random policy about
-22.3; always coarse towards the goal -4.2; always fine towards the goal -11.4; the greedy oracle (coarse while farther
than 0.25, then fine, stop within 0.025) -2.5. ``SOLVED_RETURN = -3.0`` is out of reach without using both parts of
the action well.
"""
from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np

from ding_lite.utils import ENV_REGISTRY

GEARS = np.array([0.0, 0.05, 0.25], dtype=np.float32)
SOLVED_RETURN = -3.0


@ENV_REGISTRY.register("mixed_target")
class MixedTargetEnv(gym.Env):
    """Reach a goal with a (gear, direction) action; see the module docstring. ``max_steps`` is the time limit."""

    metadata = {"render_modes": []}

    def __init__(self, max_steps: int = 20) -> None:
        self.max_steps = max_steps
        self.observation_space = gym.spaces.Box(-2.0, 2.0, shape=(5,), dtype=np.float32)
        self.action_space = gym.spaces.Tuple((gym.spaces.Discrete(len(GEARS)),
                                              gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)))
        self._pos = np.zeros(2, dtype=np.float32)
        self._goal = np.zeros(2, dtype=np.float32)
        self._t = 0

    def _obs(self) -> np.ndarray:
        return np.concatenate([self._pos, self._goal, [self._t / self.max_steps]]).astype(np.float32)

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        super().reset(seed=seed)
        self._pos = self.np_random.uniform(-1.0, 1.0, size=2).astype(np.float32)
        self._goal = self.np_random.uniform(-1.0, 1.0, size=2).astype(np.float32)
        self._t = 0
        return self._obs(), {}

    def step(self, action: Tuple[int, np.ndarray]):
        gear, direction = int(action[0]), np.asarray(action[1], dtype=np.float32)
        norm = float(np.linalg.norm(direction))
        if norm > 1e-6:
            self._pos = np.clip(self._pos + GEARS[gear] * direction / norm, -2.0, 2.0).astype(np.float32)
        self._t += 1
        reward = -float(np.linalg.norm(self._pos - self._goal))
        truncated = self._t >= self.max_steps
        return self._obs(), reward, False, truncated, {}


def oracle_action(obs: np.ndarray) -> Tuple[int, np.ndarray]:
    """The greedy policy of the module docstring (used by tests to document the solved return)."""
    delta = obs[2:4] - obs[0:2]
    dist = float(np.linalg.norm(delta))
    gear = 2 if dist > GEARS[2] else 1 if dist > GEARS[1] / 2 else 0
    return gear, delta.astype(np.float32)
