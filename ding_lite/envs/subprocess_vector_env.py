"""The vector env of the 'subprocess' manager: gymnasium's ``AsyncVectorEnv``, except that env processes ended by a
stop signal are part of the run's interrupt, not an error.

Ctrl-C in a terminal sends SIGINT to the whole process group, a job scheduler or ``timeout`` SIGTERM. The env
processes ignore SIGINT (``ding_lite/utils/env_worker.py``): the main process gets it and closes them. SIGTERM ends
them at once, so the main process can meet their closed pipes before its own handler has run, or while it closes
them after its clean stop: a call that fails on the pipe of an env process killed by SIGINT or SIGTERM (or after the
main process received one) raises the interrupt of that signal (``ding_lite.utils.signals``), and ``close`` ends
what is left without a broken pipe.
"""
import signal
import time
from typing import Optional

from gymnasium.vector import AsyncVectorEnv
from gymnasium.vector.async_vector_env import AsyncState

from ding_lite.utils.signals import STOP_SIGNALS, interrupt_for, stop_signal_received

# how long an env process whose pipe has closed may take to be reaped, so that its exit code tells the signal
EXIT_CODE_WAIT_S = 1.0
# how long ``close`` gives the env processes still running, after another one ended, to close their envs
CLOSE_GRACE_S = 2.0
PIPE_ERRORS = (EOFError, OSError)  # a dead peer: EOFError, BrokenPipeError, ConnectionResetError


class SubprocessVectorEnv(AsyncVectorEnv):
    """``AsyncVectorEnv`` whose env processes' deaths by a stop signal raise that signal's interrupt."""

    def stop_signal(self, wait: float = 0.0) -> Optional[int]:
        """The stop signal behind a failed call: the one the main process received, else SIGINT or SIGTERM as the
        exit code of an ended env process tells (waiting up to ``wait`` s for one to be reaped); None otherwise."""
        deadline = time.monotonic() + wait
        while True:
            received = stop_signal_received()
            if received is not None:
                return received
            codes = [process.exitcode for process in self.processes]
            for code in codes:
                if code is not None and code < 0 and signal.Signals(-code) in STOP_SIGNALS:
                    return -code
            if any(code is not None for code in codes) or time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def _as_interrupt(self, err: BaseException) -> BaseException:
        signum = self.stop_signal(EXIT_CODE_WAIT_S)
        return err if signum is None else interrupt_for(signum)

    def _call(self, method, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except PIPE_ERRORS as err:
            interrupt = self._as_interrupt(err)
            if interrupt is err:
                raise
            raise interrupt from None

    def reset_async(self, *args, **kwargs):
        return self._call(AsyncVectorEnv.reset_async, *args, **kwargs)

    def reset_wait(self, *args, **kwargs):
        return self._call(AsyncVectorEnv.reset_wait, *args, **kwargs)

    def step_async(self, *args, **kwargs):
        return self._call(AsyncVectorEnv.step_async, *args, **kwargs)

    def step_wait(self, *args, **kwargs):
        return self._call(AsyncVectorEnv.step_wait, *args, **kwargs)

    def call_async(self, *args, **kwargs):
        return self._call(AsyncVectorEnv.call_async, *args, **kwargs)

    def call_wait(self, *args, **kwargs):
        return self._call(AsyncVectorEnv.call_wait, *args, **kwargs)

    def close_extras(self, timeout: Optional[float] = None, terminate: bool = False) -> None:
        """gymnasium's close; once an env process has been killed (by a signal) or a pipe breaks, the processes
        still running get ``close`` and ``CLOSE_GRACE_S`` to end before they are terminated (``terminate``: at
        once).

        A call still under way (a stop signal or an error came while the main process waited on it) is waited for at
        most ``CLOSE_GRACE_S``: its results may be half read, and gymnasium's wait without a timeout then blocks for
        ever on a pipe already read (Ctrl-C to a run's process group hung in ``close`` once in a CI run)."""
        if self._state != AsyncState.DEFAULT:
            timeout = CLOSE_GRACE_S if timeout is None else min(timeout, CLOSE_GRACE_S)
        if not terminate and not any(code is not None and code < 0 for code in self._exit_codes()):
            try:
                super().close_extras(timeout=timeout, terminate=False)
                return
            except PIPE_ERRORS:  # an env process ended meanwhile
                pass
        self._close_what_is_left(0.0 if terminate else CLOSE_GRACE_S)

    def _exit_codes(self):
        return [process.exitcode for process in self.processes]

    def _close_what_is_left(self, grace: float) -> None:
        if grace > 0:
            for pipe, process in zip(self.parent_pipes, self.processes):
                if pipe is not None and not pipe.closed and process.is_alive():
                    try:
                        pipe.send(("close", None))
                    except PIPE_ERRORS:
                        pass
        deadline = time.monotonic() + grace
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.terminate()
                process.join(1.0)
            if process.is_alive():
                process.kill()
                process.join()
        for pipe in self.parent_pipes:
            if pipe is not None:
                pipe.close()
