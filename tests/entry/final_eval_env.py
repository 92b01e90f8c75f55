"""Env wrappers for tests/entry/test_signal_at_the_end.py: stepped inside the run's final evaluation (the serial
transport's ``evaluate_now``, which only ``TrainingRun.finish`` calls, after training has ended), the env sends a stop
signal to its own process (the run's: the 'base' manager steps envs there) or raises. Each leaves the file
``final_eval_reached`` in the working directory first, so a test knows that the signal landed there.

A module of its own, importable by name (tests/entry is on sys.path, and on PYTHONPATH for a CLI process)."""
import os
import signal
import sys

import gymnasium as gym

MARKER = "final_eval_reached"


def in_final_evaluation() -> bool:
    """Whether the caller runs inside the transport's ``evaluate_now`` (read from the call stack)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "evaluate_now":
            return True
        frame = frame.f_back
    return False


class _InFinalEval(gym.Wrapper):
    def step(self, action):
        if in_final_evaluation():
            with open(MARKER, "a") as f:
                f.write(f"{type(self).__name__}\n")
            self.act()
        return self.env.step(action)

    def act(self) -> None:
        raise NotImplementedError


class SigintInFinalEval(_InFinalEval):
    """Ctrl-C during the final evaluation."""

    def act(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)


class SigtermInFinalEval(_InFinalEval):
    """SIGTERM (``kill``, a job scheduler) during the final evaluation."""

    def act(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)


class RaiseInFinalEval(_InFinalEval):
    """An env error during the final evaluation."""

    def act(self) -> None:
        raise RuntimeError("the test env failed in the final evaluation")
