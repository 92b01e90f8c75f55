"""Child processes of a run (parallel workers, env processes) die with the process that started them, even while
stuck in an env's ``step``: a ``kill -9`` of the learner must not leave them running, re-parented to init.

On Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` has the kernel kill the child when its parent goes. It is set in the
child at its start (a spawned process starts from nothing, so the parent cannot set it), and it fires when the
parent *thread* that started the child ends: ding_lite starts its processes from the main thread of the learner or
worker, which lives as long as the run. Elsewhere a daemon thread polls the parent's pid instead (it cannot run while
the process is stuck in native code that holds the GIL). Imports nothing of ding_lite, as env processes import it.
"""
import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
import threading
import time
from typing import Optional

PR_SET_PDEATHSIG = 1
POLL_S = 0.5


def _prctl_pdeathsig(signum: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent_pid: Optional[int] = None) -> None:
    """End this process (SIGKILL) when its parent process ends. ``parent_pid`` defaults to multiprocessing's parent
    (or ``os.getppid()`` now); a parent already gone ends the process at once."""
    if parent_pid is None:
        parent = multiprocessing.parent_process()
        parent_pid = parent.pid if parent is not None else os.getppid()
    if not _prctl_pdeathsig(signal.SIGKILL):
        threading.Thread(target=_poll_parent, args=(parent_pid,), name="ding_lite-parent-watch", daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the request above: nobody would send the signal
        os._exit(1)


def _poll_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(POLL_S)
    os._exit(1)
