"""Fixtures of the entry-point tests; the helpers themselves are in entry_helpers.py."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # entry_helpers, whatever pytest's import mode

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
