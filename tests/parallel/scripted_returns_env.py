"""An env of known returns, the test env of the evaluator's statistics (serial, parallel, ``Evaluator`` itself).

The env whose last seeded reset had seed ``s`` plays, as its episode ``j`` (0 at that seeded reset, +1 at every
reset after it, autoresets included), ``episode_length(s, j)`` steps of reward ``step_reward(s, j)`` each, whatever
the actions; the episode ends terminated when ``s + j`` is even, else truncated. ``s % 3`` makes an env fast (1-3
steps an episode), middling (3-5) or slow (6-8), so a fast env finishes more episodes than its quota while a slow one
plays its own.
"""
from typing import Dict, List, Sequence

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.utils import ENV_REGISTRY

ENV_TYPE = "test_scripted_returns"
BASE_LENGTH = (1, 3, 6)
STATS = ("return_mean", "return_std", "return_min", "return_max", "episodes")  # what the evaluator reports


def episode_length(s: int, j: int) -> int:
    return BASE_LENGTH[s % 3] + j % 3


def step_reward(s: int, j: int) -> float:
    return float(1 + s % 4 + j)


def episode_return(s: int, j: int) -> float:
    return episode_length(s, j) * step_reward(s, j)


class ScriptedReturns(gym.Env):
    """See the module docstring; obs is ``[episode, step]``, the action (0 or 1) is ignored."""

    observation_space = gym.spaces.Box(0.0, np.inf, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.s, self.j, self.t = 0, -1, 0

    def _obs(self) -> np.ndarray:
        return np.array([self.j, self.t], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.s, self.j = int(seed), -1
        self.j, self.t = self.j + 1, 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        end = self.t >= episode_length(self.s, self.j)
        terminated = end and (self.s + self.j) % 2 == 0
        return self._obs(), step_reward(self.s, self.j), terminated, end and not terminated, {}


def expected_evals(seeds: List[int], quota: int, n_evals: int) -> List[Dict[str, float]]:
    """What ``n_evals`` successive evaluations on one vector env of these envs (seeded ``seeds`` when made) report.

    Each evaluation resets every env (the next episode), counts each env's first ``quota`` episodes and lasts until
    the slowest env has played them; an env that has finished ``c`` episodes by then (and started one more, or was
    just autoreset) begins the next evaluation at episode ``+ c + 1``."""
    first = [1] * len(seeds)  # the seeded reset that made the vector env was episode 0
    results = []
    for _ in range(n_evals):
        returns = [episode_return(s, j + k) for s, j in zip(seeds, first) for k in range(quota)]
        steps = max(sum(episode_length(s, j + k) for k in range(quota)) for s, j in zip(seeds, first))
        for i, s in enumerate(seeds):
            done = 0
            while sum(episode_length(s, first[i] + k) for k in range(done + 1)) <= steps:
                done += 1
            first[i] += done + 1
        results.append(stats(returns))
    return results


def stats(returns: Sequence[float]) -> Dict[str, float]:
    """The evaluator's statistics of these episode returns."""
    r = np.asarray(returns, dtype=np.float64)
    return {"return_mean": float(r.mean()), "return_std": float(r.std()), "return_min": float(r.min()),
            "return_max": float(r.max()), "episodes": len(r)}


def row_stats(row: Dict[str, str]) -> Dict[str, float]:
    """The statistics of an eval.csv row (as ``entry_helpers.read_eval_csv`` reads it)."""
    return {k: int(row[k]) if k == "episodes" else float(row[k]) for k in STATS}


def assert_stats(got: Dict[str, float], want: Dict[str, float], what: str = "") -> None:
    """Exact, but the std to rounding: it depends on the order in which the episodes finished."""
    assert set(got) == set(STATS), what
    for key in ("return_mean", "return_min", "return_max", "episodes"):
        assert got[key] == want[key], (what, key, got, want)
    assert got["return_std"] == pytest.approx(want["return_std"], rel=1e-12, abs=1e-12), (what, got, want)


if ENV_TYPE not in ENV_REGISTRY:
    ENV_REGISTRY.register(ENV_TYPE, ScriptedReturns)
