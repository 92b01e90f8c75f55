"""GoalGrid: a small grid world with a Dict (or Tuple) observation whose goal is a separate key, for tests and demos
of nested observation spaces (every leaf kind ding_lite takes but images).

A ``size`` x ``size`` grid; the agent and a goal start on two different random cells. Actions: 0 up, 1 down, 2 left,
3 right (a move into the border stays put). Reward 1 and ``terminated`` when the agent steps onto the goal, else 0;
an episode is truncated after ``max_steps`` steps (``4 * size`` by default). The observation (``nesting='dict'``)::

    {'goal': Discrete(size * size),                 # the goal's cell, row * size + column
     'position': Box(0, 1, (2,), float32),          # the agent's (row, column) / (size - 1)
     'walls': MultiBinary(4)}                       # 1 where the border blocks up, down, left, right

``nesting='tuple'`` gives the same three leaves as ``Tuple(goal, position, walls)``; ``'nested'`` puts the agent's
leaves one level down: ``{'agent': {'position', 'walls'}, 'goal'}``. The goal changes every episode, so a policy
that ignores the ``goal`` key cannot be reliably fast: ``tests/envs/test_goal_grid.py`` measures a uniformly random
policy's success rate (episodes that reach the goal; about 0.4 on 5x5) and checks that the shortest-path policy
(``oracle_action``) always succeeds. ``SOLVED_RETURN = 0.95``: the mean return of a policy that reads the goal.
"""
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np

from ding_lite.utils import ENV_REGISTRY

SOLVED_RETURN = 0.95
MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])  # up, down, left, right
NESTINGS = ("dict", "tuple", "nested")


@ENV_REGISTRY.register("goal_grid")
class GoalGridEnv(gym.Env):
    """Walk to a goal given as its own observation key (see the module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, size: int = 5, max_steps: Optional[int] = None, nesting: str = "dict") -> None:
        if size < 2 or (max_steps is not None and max_steps < 1) or nesting not in NESTINGS:
            raise ValueError(f"GoalGrid: size >= 2, max_steps >= 1 (or None) and nesting in {NESTINGS}; got "
                             f"size={size}, max_steps={max_steps}, nesting={nesting!r}")
        self.size, self.nesting = size, nesting
        self.max_steps = 4 * size if max_steps is None else max_steps
        goal = gym.spaces.Discrete(size * size)
        position = gym.spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32)
        walls = gym.spaces.MultiBinary(4)
        if nesting == "tuple":
            self.observation_space = gym.spaces.Tuple((goal, position, walls))
        elif nesting == "nested":
            self.observation_space = gym.spaces.Dict(
                goal=goal, agent=gym.spaces.Dict(position=position, walls=walls))
        else:
            self.observation_space = gym.spaces.Dict(goal=goal, position=position, walls=walls)
        self.action_space = gym.spaces.Discrete(4)
        self._agent = np.zeros(2, dtype=np.int64)
        self._goal = np.zeros(2, dtype=np.int64)
        self._t = 0

    def _obs(self) -> Any:
        goal = np.int64(self._goal[0] * self.size + self._goal[1])
        position = (self._agent / (self.size - 1)).astype(np.float32)
        walls = np.array([self._agent[0] == 0, self._agent[0] == self.size - 1, self._agent[1] == 0,
                          self._agent[1] == self.size - 1], dtype=np.int8)
        if self.nesting == "tuple":
            return goal, position, walls
        if self.nesting == "nested":
            return {"agent": {"position": position, "walls": walls}, "goal": goal}
        return {"goal": goal, "position": position, "walls": walls}

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        super().reset(seed=seed)
        cells = self.np_random.choice(self.size * self.size, size=2, replace=False)
        self._agent = np.array(divmod(int(cells[0]), self.size), dtype=np.int64)
        self._goal = np.array(divmod(int(cells[1]), self.size), dtype=np.int64)
        self._t = 0
        return self._obs(), {}

    def step(self, action: Any):
        self._agent = np.clip(self._agent + MOVES[int(action)], 0, self.size - 1)
        self._t += 1
        reached = bool((self._agent == self._goal).all())
        truncated = not reached and self._t >= self.max_steps
        return self._obs(), float(reached), reached, truncated, {}

    def oracle_action(self) -> int:
        """A shortest-path move towards the goal (rows first)."""
        d = self._goal - self._agent
        if d[0]:
            return 0 if d[0] < 0 else 1
        return 2 if d[1] < 0 else 3
