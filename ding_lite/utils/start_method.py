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


_preloaded = list(PRELOAD)


def preload_fork_server(method: str, modules: Iterable[str] = ()) -> None:
    """For ``'forkserver'``: the server imports ``PRELOAD`` and ``modules`` (and those asked for before) when it
    starts; a server already running in this process is left as it is. Other methods: nothing to do."""
    if method == "forkserver":
        _preloaded.extend(m for m in modules if m not in _preloaded)
        multiprocessing.forkserver.set_forkserver_preload(list(_preloaded))


def process_context(method: str = DEFAULT, preload: Iterable[str] = ()):
    """torch's multiprocessing context for ``method``, the fork server's modules set (:func:`preload_fork_server`)."""
    import torch.multiprocessing

    preload_fork_server(method, preload)
    return torch.multiprocessing.get_context(method)
