"""Fixtures shared by the test packages; the run helpers themselves are in entry/entry_helpers.py."""
import os
import signal
import sys
import warnings

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

# Tests that start Ray instances carry the ``ray`` mark. .ci/run runs them in a pass of their own, in one process,
# after the others: beside a busy worker Ray's processes compete for the cores (their group took 657 s there against
# 220 s alone, and a Ray test up to 6x its time alone). Split over two workers of their own pass they took 170 s,
# against 164 s in one process, each test 1.5-3x slower than alone and so closer to its deadlines. Under pytest-xdist
# they are one group, so that a run of everything with ``-n 2`` never has two Ray instances at once (their
# process-exit checks count every Ray process on the machine).


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


@pytest.fixture(autouse=True)
def _restore_signal_handlers(request):
    """A test that leaves SIGINT or SIGTERM handled otherwise gets them back, with a warning that names it: child
    processes inherit an ignored SIGINT, and in one pass with the Ray files beside the others, a later test that stops
    a subprocess with SIGINT (tests/benchmarks/test_learning_suite.py) saw it run to its end. (Ray's driver sets
    SIGTERM: the warning names tests/parallel/test_ray_cluster.py's tests.)"""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in handlers.items():
        if signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)
            warnings.warn(f"{request.node.nodeid} left the handler of {sig.name} changed; restored")


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


def pytest_configure(config):
    # pytest-xdist hands out the groups in the order of the collection (below: the longest first) rather than sorted
    # by their number of tests, which would put the learning files (a few long tests each) last.
    if getattr(config.option, "loadscopereorder", None) is not None:
        config.option.loadscopereorder = False


# Folders whose files share a session fixture that trains real runs: one group each, so that the fixture is built
# once (tests/analysis: its runs_dir, about 10 s, was built on both workers).
SHARED_FIXTURE_DIRS = ("analysis",)


def _group(item) -> str:
    """The pytest-xdist group of a test: its file, its folder for SHARED_FIXTURE_DIRS, or "ray" for the tests that
    start Ray instances."""
    if item.get_closest_marker("ray"):
        return "ray"
    path = os.path.relpath(str(item.fspath), HERE)
    folder = path.split(os.sep)[0]
    return folder if folder in SHARED_FIXTURE_DIRS else path


# tryfirst: pytest-xdist's own hook turns the xdist_group marks into node ids, so the marks must be there before it
# runs. The groups also need pytest below 9.2 (setup.py): with 9.2 every test was a group of its own, each file's
# tests spread over both workers, and each worker built the file's module and session fixtures again.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Groups for pytest-xdist (``--dist loadgroup``: each group runs on one worker), the longest groups first, and
    a learning test on its first seed unless ``--all-seeds``.

    A learning test states its claim for several seeds; CI runs the first, ``--all-seeds`` runs them all. Each
    learning test's docstring gives the env steps every listed seed took against the budget it asserts, so the
    first seed carries the claim in CI and the others are the statistical check a change to an algorithm runs. Two
    of the longest list first the seed their measurements show fastest (the pixel test, Pendulum PPO: issue 46's CI
    time); the budget each asserts is the same for every seed."""
    for item in items:
        # The long tier is part of the slow one: `-m "not slow"` and `--all-seeds -m slow` rely on it.
        if item.get_closest_marker("long") and not item.get_closest_marker("slow"):
            raise pytest.UsageError(f"{item.nodeid} is marked long but not slow: mark it slow too")
        # .ci/run's Ray pass collects tests/parallel only; a Ray test elsewhere would run in no pass.
        in_parallel = os.path.relpath(str(item.fspath), HERE).startswith("parallel" + os.sep)
        if item.get_closest_marker("ray") and not in_parallel:
            raise pytest.UsageError(f"{item.nodeid} starts Ray instances (marked ray) outside tests/parallel, which "
                                    f"is all that .ci/run's Ray pass collects: move it there")
    groups = {item.nodeid: _group(item) for item in items}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    if not config.getoption("--all-seeds"):
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
    # The longest groups first, so that the last ones to start are short and both workers finish together: the Ray
    # group (minutes, mostly waiting on processes), then the files with learning tests, then the rest, each kind in
    # the order of the collection.
    slow_groups = {groups[item.nodeid] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (0 if groups[item.nodeid] == "ray" else 1 if groups[item.nodeid] in slow_groups else 2))
