"""Atomic writes under stop signals: a Ctrl-C or SIGTERM in the middle of a write waits for the file to be in place.

Raised inside torch.save's writer callback, a KeyboardInterrupt comes out of torch.save as a RuntimeError, which
atomic_write reports as a failed write (RunIOError): a run stopped by Ctrl-C then recorded 'error: RunIOError' and
was not resumed. These tests send the signal from inside the write itself, so they do not depend on timing."""
import io
import os
import signal

import pytest
import torch

from ding_lite.utils.file_io import atomic_torch_save, atomic_write
from ding_lite.utils.signals import Terminated, stop_signals_as_interrupts


def test_a_signal_during_a_write_takes_effect_after_the_file_is_in_place(tmp_path):
    path = tmp_path / "result.json"
    path.write_bytes(b"old")

    def write(f: io.BufferedWriter) -> None:
        f.write(b"first half, ")
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # bytecode boundaries at which an undeferred handler would raise
            pass
        f.write(b"second half")

    with stop_signals_as_interrupts():
        with pytest.raises(Terminated):
            atomic_write(str(path), write)
    assert path.read_bytes() == b"first half, second half"
    assert os.listdir(tmp_path) == ["result.json"]  # no temporary file left


class SignalOnThirdWrite:
    """A file object for torch.save that receives SIGINT inside its third ``write``: inside torch's zip writer."""

    def __init__(self, f: io.BufferedWriter) -> None:
        self.f, self.writes = f, 0

    def write(self, data: bytes) -> int:
        self.writes += 1
        if self.writes == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return self.f.write(data)

    def flush(self) -> None:
        self.f.flush()


def test_ctrl_c_inside_torch_save_is_an_interrupt_not_a_failed_write(tmp_path):
    path = tmp_path / "ckpt_best.pth.tar"
    state = {"model": {"w": torch.arange(1000.0)}}
    with stop_signals_as_interrupts():
        with pytest.raises(KeyboardInterrupt) as info:
            atomic_write(str(path), lambda f: torch.save(state, SignalOnThirdWrite(f)), "write checkpoint")
    assert type(info.value) is KeyboardInterrupt  # not RunIOError (an OSError), which would end the run as an error
    assert torch.equal(torch.load(path)["model"]["w"], state["model"]["w"])


def test_atomic_torch_save_writes_a_loadable_file(tmp_path):
    path = tmp_path / "ckpt.pth.tar"
    atomic_torch_save({"x": torch.ones(3)}, str(path))
    assert torch.equal(torch.load(path)["x"], torch.ones(3))
