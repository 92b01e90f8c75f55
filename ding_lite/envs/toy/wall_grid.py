"""WallGrid: a small maze where a move into a wall or off the grid is invalid, with an action mask that says which
moves are valid (``obs['action_mask']``): the proof that masks matter (``tests/learning/test_action_mask_learning.py``).

A 5x5 maze (``maze='snake'``, a 16-step corridor, the default; ``'open'``, shorter with a choice of paths); the agent
starts in the top-left corner, the goal is the bottom-right one. Actions: 0 up, 1 down, 2 left, 3 right. Reaching the goal: reward 1, ``terminated``. An invalid
move (into a wall or the border): reward -1, ``terminated`` (the penalty of an invalid action). Otherwise reward 0;
an episode is truncated after ``max_steps`` (60) steps. The observation::

    {'position': Discrete(size * size),      # the agent's cell, row * size + column
     'action_mask': MultiBinary(4)}          # 1 where the move is valid

A masked policy never makes an invalid move, so it explores the maze by walking; an unmasked one dies on most of its
early moves and rarely sees the goal. ``SOLVED_RETURN = 0.9``: the goal reached (the greedy return is then 1).
"""
from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np

from ding_lite.utils import ENV_REGISTRY

SOLVED_RETURN = 0.9
MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])  # up, down, left, right
# The mazes ('#' a wall): the path from S (top-left) to G (bottom-right) winds through them.
MAZES = {
    "open": ("S.#..",
             "..#.#",
             "#...#",
             ".##..",
             "....G"),
    "snake": ("S....",
              "####.",
              ".....",
              ".####",
              "....G"),
}


@ENV_REGISTRY.register("wall_grid")
class WallGridEnv(gym.Env):
    """Walk from the top-left corner to the bottom-right one without an invalid move (module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, maze: str = "snake", max_steps: Optional[int] = None) -> None:
        if maze not in MAZES:
            raise ValueError(f"WallGrid: maze must be one of {sorted(MAZES)}, got {maze!r}")
        self.size = len(MAZES[maze])
        self.walls = np.array([[c == "#" for c in row] for row in MAZES[maze]])
        self.max_steps = max_steps or 12 * self.size
        self.observation_space = gym.spaces.Dict({
            "position": gym.spaces.Discrete(self.size * self.size),
            "action_mask": gym.spaces.MultiBinary(4),
        })
        self.action_space = gym.spaces.Discrete(4)
        self._pos = np.zeros(2, dtype=np.int64)
        self._steps = 0

    def _free(self, cell: np.ndarray) -> bool:
        return bool((cell >= 0).all() and (cell < self.size).all() and not self.walls[cell[0], cell[1]])

    def action_mask(self) -> np.ndarray:
        """(4,) int8: 1 where the move stays on the grid and off the walls."""
        return np.array([self._free(self._pos + m) for m in MOVES], dtype=np.int8)

    def _obs(self) -> Dict[str, Any]:
        return {"position": int(self._pos[0] * self.size + self._pos[1]), "action_mask": self.action_mask()}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Dict[str, Any], dict]:
        super().reset(seed=seed)
        self._pos = np.zeros(2, dtype=np.int64)
        self._steps = 0
        return self._obs(), {}

    def step(self, action: int) -> Tuple[Dict[str, Any], float, bool, bool, dict]:
        self._steps += 1
        target = self._pos + MOVES[int(action)]
        if not self._free(target):
            return self._obs(), -1.0, True, False, {"invalid_action": True}
        self._pos = target
        if (self._pos == self.size - 1).all():
            return self._obs(), 1.0, True, False, {}
        return self._obs(), 0.0, False, self._steps >= self.max_steps, {}
