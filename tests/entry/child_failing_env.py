"""ENV_REGISTRY entries for tests/entry/test_fail_fast.py: envs that build in the main process but not in an env
process of the 'subprocess' manager (spawned), as an env whose package is only importable from the main process.

A module of its own, importable by name (tests/entry is on sys.path), so spawned env processes can unpickle them."""
import multiprocessing

import gymnasium as gym

from ding_lite.utils import ENV_REGISTRY

CHILD_ERROR = "the env's native library failed to load in this process (test)"


@ENV_REGISTRY.register("fails_in_child")
class FailsInChild(gym.Wrapper):
    """CartPole-v1, except that making it in any process but the main one raises an ImportError."""

    def __init__(self) -> None:
        if multiprocessing.current_process().name != "MainProcess":
            raise ImportError(CHILD_ERROR)
        super().__init__(gym.make("CartPole-v1"))
