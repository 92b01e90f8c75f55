"""The start method of the processes a run starts (parallel workers, env processes): a fork server that has imported
torch once, so each process starts in a fraction of a second instead of importing torch again.

``spawn`` starts every process from a fresh interpreter: each one imports torch, gymnasium and ding_lite (about 2 s
of CPU, measured: 3 workers ready in 6.3-9.2 s on 2 busy cores). ``forkserver`` starts one clean, single-threaded
server process that imports them (``PRELOAD``) and forks every later process from it: the same 3 workers were ready
in 1.7 s the first time, 0.06 s after. Like ``spawn`` it never forks a process that holds torch threads or a CUDA
context, and Python 3.14 makes it the default on Linux. A forked process takes the server's environment variables,
which are those of the run when its first process started. Where ``forkserver`` does not exist (Windows), ``spawn``.
Imports nothing of ding_lite, as env processes import it.
"""
import multiprocessing
import multiprocessing.forkserver
from typing import Iterable

# Modules every ding_lite process needs; the fork server imports them once (a module that fails to import is left
# to the process that needs it).
PRELOAD = ("torch", "numpy", "gymnasium", "ding_lite.utils.env_worker")
DEFAULT = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def process_context(method: str = DEFAULT, preload: Iterable[str] = ()):
    """torch's multiprocessing context for ``method``; for ``'forkserver'``, the server imports ``PRELOAD`` and
    ``preload`` (which take effect if the server has not started yet in this process)."""
    import torch.multiprocessing

    if method == "forkserver":
        multiprocessing.forkserver.set_forkserver_preload(list(dict.fromkeys([*PRELOAD, *preload])))
    return torch.multiprocessing.get_context(method)
