"""Fixtures shared by the test packages; the run helpers themselves are in entry/entry_helpers.py."""
import os
import sys

import pytest
import torch

# entry_helpers (run helpers) and the test envs of tests/parallel, whatever pytest's import mode.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "entry"), os.path.join(HERE, "parallel")]

from entry_helpers import Cli  # noqa: E402


@pytest.fixture
def cli() -> Cli:
    return Cli()


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Run the test inside an empty temporary directory (run directories are created relative to the cwd)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return tmp_path


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    """A run sets torch's thread count from the config (torch_threads=1); give other test files theirs back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device (runs where a GPU exists: docs/benchmarks.md)"))])
def device(request) -> str:
    """The test on the CPU, and again on a GPU where torch sees one (``-k cuda`` picks those runs)."""
    return request.param
