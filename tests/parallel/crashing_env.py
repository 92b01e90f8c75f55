"""A CartPole that raises once, in one named worker process: the test env of collector restarts."""
import multiprocessing
import os

import gymnasium as gym

from ding_lite.utils import ENV_REGISTRY


@ENV_REGISTRY.register("crash_once")
class CrashOnce(gym.Wrapper):
    """CartPole-v1 whose ``crash_at``-th step raises in the process named ``crash_in``, unless ``marker`` exists
    (it is created just before raising, so the restarted worker runs on)."""

    def __init__(self, marker: str, crash_at: int = 200, crash_in: str = "ding_lite-collector-0") -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.marker, self.crash_at, self.crash_in = marker, crash_at, crash_in
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if (self.steps >= self.crash_at and multiprocessing.current_process().name == self.crash_in
                and not os.path.exists(self.marker)):
            open(self.marker, "w").close()
            raise RuntimeError("the test env crashed on purpose")
        return self.env.step(action)
