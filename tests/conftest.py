"""Fixtures shared by the test packages; the run helpers themselves are in entry/entry_helpers.py."""
import os
import sys

import pytest
import torch

# entry_helpers (run helpers) and the test envs of tests/parallel, whatever pytest's import mode.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "entry"), os.path.join(HERE, "parallel")]

from entry_helpers import Cli  # noqa: E402

# Under pytest-xdist (``-n 2``, as .ci/run) two workers share the machine's cores: one torch thread each, since
# OpenMP threads that spin-wait for a core the other worker holds burn CPU time for nothing.
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)

# Test files that start Ray instances and check how its processes start and end: marked ``ray``. .ci/run runs them
# in a pass of their own, one process, after the others: beside a second busy test worker, Ray's worker processes
# took longer than these tests allow to exit (two failures in each of two runs with ``-n 2``, none in one process).
RAY_FILES = ("test_parallel_pipeline.py", "test_ray_failures.py", "test_ray_backend.py", "test_nested_obs_parallel.py",
             "test_recurrent_parallel.py", "test_ray_cluster.py")


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


def pytest_addoption(parser):
    parser.addoption(
        "--all-seeds", action="store_true", default=False,
        help="run the learning tests (marked slow) on every seed they list; by default each runs on its first seed")


def _listed_seeds(item) -> list:
    """The seeds a test's ``@pytest.mark.parametrize("seed", [...])`` lists, in order ([] if it lists none)."""
    for mark in item.iter_markers("parametrize"):
        names = mark.args[0]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        if names == ["seed"]:
            return [p.values[0] if hasattr(p, "values") else p for p in mark.args[1]]
    return []


def pytest_collection_modifyitems(config, items):
    """A learning test states its claim for several seeds; CI runs the first, ``--all-seeds`` runs them all.

    Each learning test's docstring gives the env steps every listed seed took against the budget it asserts, so the
    first seed carries the claim in CI and the others are the statistical check a change to an algorithm runs."""
    for item in items:  # under --dist loadgroup each test file runs on one worker
        item.add_marker(pytest.mark.xdist_group(os.path.relpath(str(item.fspath), HERE)))
        if os.path.basename(str(item.fspath)) in RAY_FILES:
            item.add_marker(pytest.mark.ray)
    if config.getoption("--all-seeds"):
        return
    kept, dropped = [], []
    for item in items:
        seeds = _listed_seeds(item) if item.get_closest_marker("slow") else []
        params = getattr(getattr(item, "callspec", None), "params", {})
        if seeds and "seed" in params and params["seed"] != seeds[0]:
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
