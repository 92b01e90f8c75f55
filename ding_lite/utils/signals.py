"""Ctrl-C and SIGTERM as clean stops, never in the middle of a write that must not be cut.

Python raises KeyboardInterrupt wherever the main thread happens to be. Raised inside tensorboardX's hand-off of an
event to its writer thread, it can leave that writer unable to close (the run then hangs at exit instead of stopping).
Within ``stop_signals_as_interrupts`` both signals raise at the next point outside a ``deferred_interrupts`` block:
immediately when none is open, else when the outermost one ends.
"""
import contextlib
import signal
import threading
from typing import Iterator, Optional


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as a KeyboardInterrupt so that every clean-stop path of Ctrl-C applies; ``signum`` gives the
    CLI its exit status (128 + 15 = 143, as a shell reports a process ended by SIGTERM)."""

    signum = signal.SIGTERM


class _State:
    depth = 0  # open deferred_interrupts blocks
    pending: Optional[int] = None  # a signal that arrived inside one
    last: Optional[int] = None  # the last stop signal received
    active = False  # inside stop_signals_as_interrupts


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def interrupt_for(signum: int) -> KeyboardInterrupt:
    """The exception a stop signal raises: ``Terminated`` for SIGTERM, else a plain KeyboardInterrupt."""
    if signum == signal.SIGTERM:
        return Terminated(f"signal {signal.Signals(signum).name}")
    return KeyboardInterrupt()


def _handler(signum, frame) -> None:
    _State.last = signum
    if _State.depth:
        _State.pending = signum
        return
    raise interrupt_for(signum)


@contextlib.contextmanager
def stop_signals_as_interrupts() -> Iterator[None]:
    """Within the block, SIGINT (Ctrl-C) and SIGTERM (``kill``, a job scheduler) raise KeyboardInterrupt (SIGTERM:
    ``Terminated``), deferred out of ``deferred_interrupts`` blocks. Off the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _State.last = None
    previous = {sig: signal.signal(sig, _handler) for sig in STOP_SIGNALS}
    _State.active = True
    try:
        yield
    finally:
        _State.active = False
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _State.pending = None


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """A section that a stop signal must not cut: the signal takes effect when the outermost such section ends."""
    _State.depth += 1
    try:
        yield
    finally:
        _State.depth -= 1
        if not _State.depth and _State.pending is not None:
            signum, _State.pending = _State.pending, None
            raise interrupt_for(signum)


def stop_signal_received() -> Optional[int]:
    """The stop signal this process has received inside the ``stop_signals_as_interrupts`` block it is in; None if
    none came, or outside such a block."""
    return _State.last if _State.active else None


def stop_signal(err: KeyboardInterrupt) -> int:
    """The signal behind a KeyboardInterrupt: its own ``signum``, else the last stop signal received (a library may
    catch the ``Terminated`` raised inside its call and raise a plain KeyboardInterrupt instead, as Ray's ``wait``
    does), else SIGINT."""
    signum = getattr(err, "signum", None)
    return int(signum if signum is not None else _State.last if _State.last is not None else signal.SIGINT)
