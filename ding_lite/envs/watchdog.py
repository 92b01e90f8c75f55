"""``env.step_timeout_s``: a vector env's ``step`` or ``reset`` that does not return in time stops the run with one
line naming the env, the call, the env index and how long it has waited (``EnvHangError``, a UserError: exit status
2, and the training loop keeps ckpt_last and writes result.json as for any error). The same limit and line cover the
envs' construction (``__init__``: the probe env that reads the spaces, and each vector env as it is made,
``watched_call``) and ``close``: an env that never returns from either would keep the run from starting or, after
result.json, from exiting.

Every vector env ``make_vector_env`` makes is watched (``watch``), whatever its manager:

- An ``AsyncVectorEnv`` (the 'subprocess' manager) waits on its env processes' pipes with the timeout
  (gymnasium's ``step_wait(timeout)``); the env processes that did not answer are the hung ones. The vector env is
  then closed by terminating its processes (a graceful close would wait for the hung one forever). Its close is
  timed by a timer thread that terminates the processes once the limit has passed.
- Any other vector env steps in this process ('base', 'envpool', a user's manager), where a call cannot be cut
  safely from outside. A watcher thread notes when a call has run past the timeout and sends the calling (main)
  thread a real-time signal whose handler raises ``EnvHangError`` there: a real signal interrupts a blocking wait
  (``time.sleep``, ``select``, a lock) where ``_thread.interrupt_main`` would wait for it to return, and raising in
  the caller lets the run end through its ordinary error path (ckpt_last, result.json). The handler is installed
  once, when the vector env is made (installing it around each call would cost ~20 us a step); it passes signals it
  did not ask for to the handler it replaced. When the exception cannot be raised (the call runs on another
  thread, the handler was replaced, or the caller is stuck in native code that never returns to Python), the
  watcher prints the line and ends the process with status 2 (``os._exit``) after ``EXIT_GRACE_S``: a hung process
  that says why beats one that hangs silently. Per call the cost is two clock reads.

Both count only the time the process ran (``AwakeClock``): a run stopped mid-step (SIGSTOP, Ctrl-Z, a paused VM)
and continued later is not taken for a hung env, however long it was stopped.

The env index of an in-process hang comes from the calling thread's stack (the loop variable of gymnasium's
``SyncVectorEnv.step`` / ``reset``); a vector env that steps all its envs in one native call (envpool) names none.
"""
import contextlib
import multiprocessing
from multiprocessing import connection as mp_connection
import os
import signal
import sys
import threading
import time
from typing import Any, Iterator, List, Optional, Tuple

import gymnasium as gym
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

from ding_lite.utils import UserError

EXIT_GRACE_S = 5.0  # after the signal, how long the caller may take to leave the hung call before the process ends
HANG_SIGNAL = getattr(signal, "SIGRTMIN", signal.SIGALRM)  # real-time signals are free for applications on Linux
_SYNC_CODES = {SyncVectorEnv.step.__code__: "step", SyncVectorEnv.reset.__code__: "reset"}


class EnvHangError(UserError):
    """An env's step or reset did not return within ``env.step_timeout_s``."""


def hang_message(env_name: str, role: str, call: str, indices: Optional[List[int]], waited_s: float,
                 timeout_s: float) -> str:
    """The one line for a hung call; ``indices`` None when the env index is unknown."""
    if role == "probe":
        where = "the env made to read its spaces"
    elif indices:
        where = f"{role} env{'s' if len(indices) > 1 else ''} {', '.join(map(str, indices))}"
    else:
        where = f"one of its {role} envs"
    return (f"env '{env_name}' ({where}) has not returned from {call}() for {waited_s:.1f} s "
            f"(env.step_timeout_s={timeout_s:g}): it hangs (a deadlock, or a simulator or server that never answers); "
            f"fix the env, or raise env.step_timeout_s if a {call} can take this long (None: no limit)")


def check_step_timeout(value: Any, path: str) -> None:
    """ConfigError unless ``value`` is a positive number of seconds or None."""
    from ding_lite.utils import ConfigError

    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
                              or value == float("inf")):
        raise ConfigError(f"{path}={value!r}: must be a positive number of seconds (how long an env's step or reset "
                          f"may take before the run stops), or None for no limit")


class AwakeClock:
    """Seconds seen to pass while this process ran, read in ticks about ``period_s`` apart: a gap between two ticks
    counts up to ``2 * period_s``, so a process stopped for minutes (SIGSTOP, Ctrl-Z, a paused VM) and continued adds
    one short gap, not the minutes. A tick that comes late by less than a period (a busy machine) counts in full."""

    def __init__(self, period_s: float) -> None:
        self.max_gap_s = 2.0 * period_s
        self.seconds = 0.0
        self._last = time.monotonic()

    def restart(self, since: float) -> None:
        """Count from ``since`` (a ``time.monotonic()`` reading after the last tick), not from the last tick."""
        self.seconds, self._last = 0.0, since

    def tick(self) -> float:
        """The seconds counted so far, this tick's gap included."""
        now = time.monotonic()
        self.seconds += min(max(now - self._last, 0.0), self.max_gap_s)
        self._last = now
        return self.seconds


def _poll_period(timeout_s: float) -> float:
    """How often a watch looks: at least four times per timeout, at most once a second."""
    return min(1.0, timeout_s / 4)


class _PendingHang:
    """The hang the watcher asked the main thread to raise (read by the signal handler)."""

    message: Optional[str] = None
    dog: Optional["InProcessWatchdog"] = None  # whose call, begun at ``since``, hangs
    since: Optional[float] = None
    previous: Any = None  # the handler ours replaced


def _on_hang_signal(signum: int, frame) -> None:
    message, _PendingHang.message = _PendingHang.message, None
    if message is not None:
        if _PendingHang.dog is not None and _PendingHang.dog.since is _PendingHang.since:  # still in that call
            raise EnvHangError(message)
        return
    previous = _PendingHang.previous
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL and signum == signal.SIGALRM:  # as if we were not there: the process ends
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_handler() -> bool:
    """Our handler for HANG_SIGNAL (main thread only); True when it is in place."""
    if threading.current_thread() is not threading.main_thread():
        return signal.getsignal(HANG_SIGNAL) is _on_hang_signal
    current = signal.getsignal(HANG_SIGNAL)
    if current is not _on_hang_signal:
        _PendingHang.previous = current
        signal.signal(HANG_SIGNAL, _on_hang_signal)
    return True


def _sync_index(frame) -> Optional[int]:
    """The env index a thread is stepping inside ``SyncVectorEnv.step``/``reset`` (its loop variable ``i``)."""
    while frame is not None:
        if frame.f_code in _SYNC_CODES:
            index = frame.f_locals.get("i")
            return int(index) if isinstance(index, int) else None
        frame = frame.f_back
    return None


def _die(message: str) -> None:
    """Print the line and end the process with status 2 (the caller cannot be interrupted)."""
    try:
        sys.stderr.write(f"ding_lite: error: {message}\n")
        sys.stderr.flush()
        sys.stdout.flush()
    finally:
        os._exit(2)


class InProcessWatchdog:
    """Times the calls of one in-process vector env (see the module docstring)."""

    def __init__(self, timeout_s: float, env_name: str, role: str) -> None:
        self.timeout_s, self.env_name, self.role = float(timeout_s), env_name, role
        self.since: Optional[float] = None
        self._call = ""
        self._thread_id = 0
        self._closed = threading.Event()
        self._can_signal = _install_handler()
        self._watcher = threading.Thread(target=self._watch, name=f"ding_lite-env-watchdog-{role}", daemon=True)
        self._watcher.start()

    def begin(self, call: str) -> None:
        self._call, self._thread_id = call, threading.get_ident()
        self.since = time.monotonic()

    def end(self) -> None:
        self.since = None

    def close(self) -> None:
        self._closed.set()

    def _watch(self) -> None:
        period = _poll_period(self.timeout_s)
        clock, call = AwakeClock(period), None  # call: the ``since`` of the call the clock times
        while not self._closed.wait(period):
            since = self.since
            if since is None:
                call = None
                continue
            if since is not call:  # a call begun since the last look: count from its start
                call = since
                clock.restart(since)
            if clock.tick() >= self.timeout_s:
                self._fire(since, clock.seconds)

    def _fire(self, since: float, waited_s: float) -> None:
        frame = sys._current_frames().get(self._thread_id)
        index = _sync_index(frame)
        message = hang_message(self.env_name, self.role, self._call, None if index is None else [index],
                               waited_s, self.timeout_s)
        main = threading.main_thread().ident
        if (self._thread_id == main and self._can_signal and signal.getsignal(HANG_SIGNAL) is _on_hang_signal):
            _PendingHang.message, _PendingHang.dog, _PendingHang.since = message, self, since
            signal.pthread_kill(main, HANG_SIGNAL)
            grace = AwakeClock(0.05)  # the grace, too, counts only the time the process ran
            while grace.tick() < EXIT_GRACE_S:
                if self.since is not since:  # the call ended (the exception was raised): the run stops on its own
                    return
                time.sleep(0.05)
            _PendingHang.message = None
        _die(message)


@contextlib.contextmanager
def watched_call(timeout_s: Optional[float], env_name: str, call: str, role: str = "probe") -> Iterator[None]:
    """The block (``call`` of the probe env that reads the spaces, or of a vector env of ``role`` being built: its
    envs' ``__init__``) under the same watchdog, in this process."""
    if timeout_s is None:
        yield
        return
    dog = InProcessWatchdog(timeout_s, env_name, role)
    dog.begin(call)
    try:
        yield
    finally:
        dog.end()
        dog.close()


class WatchedInThisProcess:
    """A picklable env factory whose calls in the process that made it run under ``watched_call`` ("__init__"):
    the 'subprocess' manager's first factory, which gymnasium calls once here (a dummy env for the spaces, before any
    env process starts) and then again in env process 0, where the first reset is watched instead."""

    def __init__(self, make: Any, timeout_s: Optional[float], env_name: str, role: str) -> None:
        self.make, self.timeout_s, self.env_name, self.role = make, timeout_s, env_name, role
        self.pid = os.getpid()

    def __call__(self) -> gym.Env:
        if os.getpid() != self.pid:
            return self.make()
        with watched_call(self.timeout_s, self.env_name, "__init__", self.role):
            env = self.make()
        return _CloseWatched(env, self.timeout_s, self.env_name, self.role)  # gymnasium closes it at once


class _CloseWatched(gym.Wrapper):
    """The env, its ``close`` under ``watched_call``."""

    def __init__(self, env: gym.Env, timeout_s: Optional[float], env_name: str, role: str) -> None:
        super().__init__(env)
        self._watch = (timeout_s, env_name, role)

    def close(self) -> None:
        timeout_s, env_name, role = self._watch
        with watched_call(timeout_s, env_name, "close", role):
            self.env.close()


def _watch_in_process(venv: gym.vector.VectorEnv, timeout_s: float, env_name: str, role: str) -> None:
    dog = InProcessWatchdog(timeout_s, env_name, role)
    step, reset, close = venv.step, venv.reset, venv.close

    def watched_step(actions):
        dog.begin("step")
        try:
            return step(actions)
        finally:
            dog.end()

    def watched_reset(*, seed=None, options=None):
        dog.begin("reset")
        try:
            return reset(seed=seed, options=options)
        finally:
            dog.end()

    def watched_close(**kwargs):
        dog.begin("close")  # an env whose close() hangs would keep the finished run from exiting
        try:
            return close(**kwargs)
        finally:
            dog.end()
            dog.close()

    venv.step, venv.reset, venv.close = watched_step, watched_reset, watched_close


def _await_answers(venv: AsyncVectorEnv, timeout_s: float) -> Tuple[List[int], float]:
    """Wait until every env process of ``venv`` has answered its call, or ``timeout_s`` seconds of this process's run
    time have passed (``AwakeClock``); returns the indices of the envs that have not answered (none: all did) and the
    seconds counted."""
    period = _poll_period(timeout_s)
    clock = AwakeClock(period)
    waiting = {pipe: i for i, pipe in enumerate(venv.parent_pipes)}
    while waiting:
        if None in waiting or any(pipe.closed for pipe in waiting):
            break
        for pipe in mp_connection.wait(list(waiting), timeout=period):
            del waiting[pipe]
        if waiting and clock.tick() >= timeout_s:
            break
    return sorted(waiting.values()), clock.seconds


def _watch_async(venv: AsyncVectorEnv, timeout_s: float, env_name: str, role: str) -> None:
    close = venv.close
    hung = []

    def wait(call: str, finish):
        indices, waited_s = _await_answers(venv, timeout_s)
        if not indices:
            return finish(timeout=None)  # every answer is in: reads them without waiting
        try:  # gymnasium's own check, which ends the pending call (an answer that came in meanwhile is taken)
            return finish(timeout=0)
        except multiprocessing.TimeoutError:
            hung.append(call)
            raise EnvHangError(hang_message(env_name, role, call, indices, waited_s, timeout_s)) from None

    def watched_step(actions):
        venv.step_async(actions)
        return wait("step", venv.step_wait)

    def watched_reset(*, seed=None, options=None):
        venv.reset_async(seed=seed, options=options)
        return wait("reset", venv.reset_wait)

    def watched_close(**kwargs):
        if hung:  # a graceful close would wait for the hung process's answer forever
            kwargs["terminate"] = True
            return close(**kwargs)
        fired = []

        def give_up():  # an env process whose close() hangs: end them all, then say so
            fired.append(True)
            for process in venv.processes:
                if process.is_alive():
                    process.terminate()

        timer = threading.Timer(timeout_s, give_up)
        timer.daemon = True
        timer.start()
        try:
            close(**kwargs)
        except (EOFError, OSError):  # the pipes of the processes ended above
            if not fired:
                raise
        finally:
            timer.cancel()
        if fired:
            raise EnvHangError(hang_message(env_name, role, "close", None, timeout_s, timeout_s))

    venv.step, venv.reset, venv.close = watched_step, watched_reset, watched_close


def watch(venv: gym.vector.VectorEnv, timeout_s: Optional[float], env_name: str, role: str) -> gym.vector.VectorEnv:
    """Make ``venv``'s ``step`` and ``reset`` stop with ``EnvHangError`` after ``timeout_s`` seconds (None: leave it
    as it is). The vector env stays the same object (its own attributes unchanged); returns it."""
    if timeout_s is None:
        return venv
    if isinstance(venv, AsyncVectorEnv):
        _watch_async(venv, timeout_s, env_name, role)
    else:
        _watch_in_process(venv, timeout_s, env_name, role)
    return venv
