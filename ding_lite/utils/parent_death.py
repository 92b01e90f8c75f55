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
import multiprocessing.forkserver
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
    """End this process (SIGKILL) when the process that started it ends. ``parent_pid`` defaults to
    multiprocessing's parent; a parent already gone ends the process at once.

    A process started by a fork server (``utils/start_method.py``) has the server as its parent in the kernel's eyes:
    the kernel's signal then fires when the server ends, which it does as soon as the process that started it ends
    (it reads EOF on that process's pipe), and the check below also watches ``parent_pid`` itself."""
    _leave_the_fork_server()
    if parent_pid is None:
        parent = multiprocessing.parent_process()
        parent_pid = parent.pid if parent is not None else os.getppid()
    os_parent = os.getppid()
    if not _prctl_pdeathsig(signal.SIGKILL):
        threading.Thread(target=_poll_parent, args=(os_parent, parent_pid), name="ding_lite-parent-watch",
                         daemon=True).start()
    if os.getppid() != os_parent or not _alive(parent_pid):  # gone before the request above: no signal would come
        os._exit(1)


def _leave_the_fork_server() -> None:
    """A process the fork server forked holds a copy of the write end of the server's liveness pipe (so that it could
    start processes through the same server): while any such copy is open the server, and so the kernel's signal to
    its children, outlives a killed learner. Close it here; a process that starts processes of its own later starts
    its own server."""
    server = multiprocessing.forkserver._forkserver
    if getattr(server, "_forkserver_pid", None) is None and getattr(server, "_forkserver_alive_fd", None) is not None:
        try:
            os.close(server._forkserver_alive_fd)
        except OSError:
            pass
        server._forkserver_alive_fd = None
        server._forkserver_address = None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _poll_parent(os_parent: int, parent_pid: int) -> None:
    while os.getppid() == os_parent and _alive(parent_pid):
        time.sleep(POLL_S)
    os._exit(1)
