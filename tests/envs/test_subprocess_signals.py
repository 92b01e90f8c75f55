"""The 'subprocess' manager's env processes and stop signals: they ignore Ctrl-C (the main process stops the run and
closes them); one killed by SIGTERM is an interrupt (``Terminated``, exit 143 from the CLI), not a broken pipe; one
killed otherwise is still an error; ``close`` ends what is left either way, also with a step half read."""
import os
import signal
import threading
import time

import numpy as np
import pytest

from ding_lite.envs import GymEnv, make_vector_env
from ding_lite.utils.signals import Terminated

ACTIONS = np.zeros(2, dtype=np.int64)


@pytest.fixture
def venv():
    cfg = GymEnv.default_config()
    cfg.update(env_id="CartPole-v1", type="gym", manager=dict(type="subprocess", context="spawn"))
    env = make_vector_env(cfg, 2, seed=0)
    yield env
    env.close()
    assert not any(process.is_alive() for process in env.processes)


def test_env_processes_ignore_ctrl_c(venv):
    for process in venv.processes:
        os.kill(process.pid, signal.SIGINT)
    venv.step(ACTIONS)  # answered: the processes are alive and well
    assert all(process.is_alive() for process in venv.processes)


def test_an_env_process_killed_by_sigterm_is_an_interrupt(venv):
    os.kill(venv.processes[0].pid, signal.SIGTERM)
    venv.processes[0].join(10)
    with pytest.raises(Terminated):
        venv.step(ACTIONS)
    venv.close()  # no broken pipe: the other env process is closed, the dead one's pipe let go


def test_an_env_process_killed_otherwise_is_still_an_error(venv):
    os.kill(venv.processes[0].pid, signal.SIGKILL)
    venv.processes[0].join(10)
    with pytest.raises((EOFError, OSError)):
        venv.step(ACTIONS)
    venv.close()


def test_close_with_a_step_half_read_ends(venv):
    """A stop signal that lands in ``step_wait`` after env 0's result was read and before env 1's: gymnasium's close
    waited for the pending step on env 0's pipe, already empty, for ever (a CI run's Ctrl-C test hung there)."""
    venv.step_async(ACTIONS)
    venv.parent_pipes[0].recv()  # what the interrupted step_wait had read
    closing = threading.Thread(target=venv.close, daemon=True)
    start = time.monotonic()
    closing.start()
    closing.join(30)
    assert not closing.is_alive(), "close hangs on a step half read"
    assert time.monotonic() - start < 10
