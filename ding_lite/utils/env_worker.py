"""The env process of the 'subprocess' env manager: gymnasium's own worker, except that an env that cannot be built
in the process reports its own exception to the main process.

gymnasium's ``_async_worker`` makes the env before its error handling starts: an env that fails to build in an env
process (a module that imports in the main process only, a native library missing there) kills the process with a
traceback on stderr, and the main process sees only a broken pipe ('Connection reset by peer'). Here the failure
goes, as any error of a step or reset does, through the vector env's error queue: the main process raises an
:class:`EnvBuildError` that names the env, the process and the exception (type, message and where it was raised).

The module lives in ``ding_lite.utils`` because an env process imports it: neither torch nor the ``ding_lite.envs``
package loads with it, so an env made by ``gymnasium.make`` alone costs its process no more than before.
"""
import signal
import traceback
from typing import Any, Callable

from .errors import UserError


class EnvBuildError(UserError):
    """An env could not be built in an env process of the 'subprocess' manager; the message holds its exception."""


def where_raised(err: BaseException) -> str:
    """'file:line in function' of the innermost frame of ``err``'s traceback ('' without one)."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"


def build_error_message(err: BaseException, env_name: str, role: str, index: int) -> str:
    """The one line the main process raises for an env that failed to build in env process ``index``."""
    where = where_raised(err)
    return (f"env '{env_name}' ({role} env {index}) could not be built in its env process (env.manager.type="
            f"'subprocess', a separate process that shares nothing with this one): {type(err).__name__}: {err}"
            f"{f' (raised at {where})' if where else ''}. It builds in this process, so check what the env needs "
            f"in a fresh process: modules to import (env.import_names), files relative to the working directory, "
            f"environment variables; or use env.manager.type='base' (envs in this process)")


def env_worker(index: int, env_fn: Callable[[], Any], pipe: Any, parent_pipe: Any, shared_memory: Any,
               error_queue: Any, *rest: Any, env_name: str = "?", role: str = "collector") -> None:
    """A ``worker`` for ``gymnasium.vector.AsyncVectorEnv`` (its arguments, ``rest`` handed on as they come:
    ``autoreset_mode``, and from gymnasium 1.4 a ``semaphore``; ``env_name`` and ``role`` bound with
    ``functools.partial`` for the message). The env is made here: on success gymnasium's ``_async_worker`` runs with
    it; on failure the error goes to ``error_queue`` and every command is answered as failed until the main process
    closes the pipe. The process ignores SIGINT: Ctrl-C in a terminal reaches every process of the group, and the
    main process, which stops the run cleanly, closes its env processes. It dies with the one that started it, even
    while stuck in a step (``die_with_parent``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from gymnasium.vector.async_vector_env import _async_worker

    from .parent_death import die_with_parent

    die_with_parent()
    try:
        env = env_fn()
    except Exception as err:  # noqa: BLE001 - any failure of the user's env code is reported, not swallowed
        parent_pipe.close()
        error_queue.put((index, EnvBuildError, build_error_message(err, env_name, role, index),
                         traceback.format_exc()))
        try:
            while True:
                command, _ = pipe.recv()
                pipe.send((None, False))
                if command == "close":
                    break
        except (EOFError, OSError, KeyboardInterrupt):
            pass  # the main process closed its end (it raised the error) or stopped
        finally:
            pipe.close()
        return
    try:
        _async_worker(index, lambda: env, pipe, parent_pipe, shared_memory, error_queue, *rest)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        # The main process closed its end while this process answered (it stopped on a signal, or is gone): there is
        # nobody to answer, and the traceback gymnasium's worker would print is not an error of the run.
        pass
