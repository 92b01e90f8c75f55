"""MovingDot: a tiny pixel env (uint8 frames) on which a conv policy learns in seconds, for tests and demos of the
pixel path (conv encoders, uint8 storage) without Atari.

A ``size`` x ``size`` grid of cells, drawn ``scale`` pixels per cell as one grey channel, frames ``(1, H, W)`` uint8
with H = W = size * scale (36x36 by default, the smallest the Nature-DQN encoder takes). A dot (255) bounces around the
upper ``size - 1`` rows, one cell per step diagonally, and reverses its horizontal direction at random (probability
``flip_prob`` per step), so its next column cannot be read off one frame. The agent's paddle (160) sits in the bottom
row; actions: 0 stay, 1 left, 2 right (one cell). Reward 1 for each step that ends with the paddle under the dot's
column (the column shown in the frame the agent acted on), else 0. No terminal state: an episode is truncated after
``max_steps`` steps (30).

Returns over 30 steps (``tests/envs/test_moving_dot.py`` checks them on 1,000 episodes): a uniformly random policy
scores 3.3 on average (at most 17 in 10,000 episodes; the mean of 10 episodes at most 5.6), always staying put 3.3,
and the greedy tracker (``tracker_action``: move towards the dot's column) 28.0. ``SOLVED_RETURN = 20`` is out of
reach of a policy that does not locate the dot in the frame.
"""
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np

from ding_lite.utils import ENV_REGISTRY

SOLVED_RETURN = 20.0
STAY, LEFT, RIGHT = 0, 1, 2
DOT, PADDLE = 255, 160


@ENV_REGISTRY.register("moving_dot")
class MovingDotEnv(gym.Env):
    """Keep the paddle under a moving dot (see the module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, size: int = 9, scale: int = 4, max_steps: int = 30, flip_prob: float = 0.2) -> None:
        if size < 3 or scale < 1 or max_steps < 1 or not 0 <= flip_prob <= 1:
            raise ValueError(f"MovingDot: size >= 3, scale >= 1, max_steps >= 1 and flip_prob in [0, 1]; got "
                             f"size={size}, scale={scale}, max_steps={max_steps}, flip_prob={flip_prob}")
        self.size, self.scale, self.max_steps, self.flip_prob = size, scale, max_steps, flip_prob
        pixels = size * scale
        self.observation_space = gym.spaces.Box(0, 255, shape=(1, pixels, pixels), dtype=np.uint8)
        self.action_space = gym.spaces.Discrete(3)
        self._dot = np.zeros(2, dtype=np.int64)  # (row, column)
        self._vel = np.ones(2, dtype=np.int64)
        self._paddle = 0
        self._t = 0

    def _frame(self) -> np.ndarray:
        frame = np.zeros(self.observation_space.shape, dtype=np.uint8)
        s = self.scale
        row, col = self._dot
        frame[0, row * s:(row + 1) * s, col * s:(col + 1) * s] = DOT
        frame[0, (self.size - 1) * s:, self._paddle * s:(self._paddle + 1) * s] = PADDLE
        return frame

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        super().reset(seed=seed)
        rng = self.np_random
        self._dot = np.array([rng.integers(self.size - 1), rng.integers(self.size)], dtype=np.int64)
        self._vel = rng.choice([-1, 1], size=2).astype(np.int64)
        self._paddle = int(rng.integers(self.size))
        self._t = 0
        return self._frame(), {}

    def step(self, action: int):
        action = int(action)
        if action not in (STAY, LEFT, RIGHT):
            raise ValueError(f"MovingDot: action must be 0 (stay), 1 (left) or 2 (right), got {action}")
        self._paddle = int(np.clip(self._paddle + (action == RIGHT) - (action == LEFT), 0, self.size - 1))
        reward = float(self._paddle == self._dot[1])
        if self.np_random.random() < self.flip_prob:
            self._vel[1] = -self._vel[1]
        limits = (self.size - 2, self.size - 1)  # the dot's rows stop above the paddle's
        for axis in (0, 1):  # bounce off the walls
            nxt = self._dot[axis] + self._vel[axis]
            if not 0 <= nxt <= limits[axis]:
                self._vel[axis] = -self._vel[axis]
                nxt = self._dot[axis] + self._vel[axis]
            self._dot[axis] = nxt
        self._t += 1
        return self._frame(), reward, False, self._t >= self.max_steps, {}


def tracker_action(obs: np.ndarray, scale: int = 4) -> int:
    """The greedy tracker of the module docstring, from a frame: move towards the dot's column."""
    frame = obs[0]
    dot_col = int(np.flatnonzero((frame == DOT).any(axis=0))[0]) // scale
    paddle_col = int(np.flatnonzero((frame[-1] == PADDLE))[0]) // scale
    return STAY if dot_col == paddle_col else (RIGHT if dot_col > paddle_col else LEFT)
