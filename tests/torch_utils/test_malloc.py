"""keep_freed_memory: freed large buffers stay in the process (checked in fresh processes, as it cannot be undone),
and the top-level config key turns it on in the learner and in parallel workers (True), lets an update that needs it
turn it on (None, the default) or refuses that (False)."""
import os
import subprocess
import sys

import pytest
import torch

import ding_lite.entry.build as build_module
import ding_lite.torch_utils.malloc as malloc
from ding_lite.config import compile_config, read_config_file
from ding_lite.parallel.roles import WorkerSpec, prepare_worker

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))

# Resident memory (MB) after a 64 MB tensor is written and freed, in a fresh process.
RSS_AFTER_FREE = """
import os, sys, torch
from ding_lite.torch_utils.malloc import keep_freed_memory
if sys.argv[1] == "on":
    assert keep_freed_memory()
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
before = rss_mb()
x = torch.ones(16 * 2 ** 20)  # 64 MB, touched
del x
print(rss_mb() - before)
"""


def rss_kept_after_free(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", RSS_AFTER_FREE, mode], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=REPO))
    return float(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc are Linux")
def test_freed_memory_stays_in_the_process_only_when_on():
    assert rss_kept_after_free("off") < 8  # glibc's default: the mmap'd 64 MB goes back to the kernel at once
    assert rss_kept_after_free("on") > 56  # kept on the heap for the next allocation


@pytest.fixture(autouse=True)
def _restore_threads():
    threads = torch.get_num_threads()  # prepare_worker pins a worker's threads
    yield
    torch.set_num_threads(threads)


def config():
    return read_config_file(os.path.join(REPO, "dizoo_configs", "cartpole_impala.py"))


@pytest.fixture
def mallopt_calls(monkeypatch):
    """The places that would call mallopt, recorded instead (it cannot be undone in this test process); the run's
    setting restored after the test."""
    calls = []
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: calls.append("mallopt") or True)
    monkeypatch.setattr(malloc, "_setting", None)
    threads = torch.get_num_threads()  # start_process sets them too
    yield calls
    torch.set_num_threads(threads)


def start(overrides=None):
    """The config compiled, then applied as a run applies it when it starts."""
    cfg = build_module.compile_input(config(), 0, overrides)
    build_module.start_process(cfg)
    return cfg


def test_the_config_key_turns_it_on_in_the_learner_and_the_workers(mallopt_calls):
    cfg = start()
    assert cfg.keep_freed_memory is None and mallopt_calls == []  # the default: not at the start of a run
    prepare_worker(WorkerSpec(role="collector", rank=0, cfg=cfg, seed=0))
    assert mallopt_calls == []
    cfg = build_module.compile_input(config(), 0, {"keep_freed_memory": True})
    assert mallopt_calls == []  # compiling changes nothing in the process
    build_module.start_process(cfg)
    assert mallopt_calls == ["mallopt"]  # the learner's process, as its run starts
    prepare_worker(WorkerSpec(role="collector", rank=0, cfg=cfg, seed=0))
    assert mallopt_calls == ["mallopt", "mallopt"]  # and a worker's


@pytest.mark.parametrize("setting, granted", [(None, True), (True, True), (False, False)])
def test_an_update_that_asks_for_it(mallopt_calls, setting, granted):
    """keep_freed_memory_on_request (SAC's compiled update asks): granted unless the run's key is False, in the
    learner and in a worker."""
    cfg = start({"keep_freed_memory": setting})
    for where in ("learner", "worker"):
        if where == "worker":
            malloc._setting = "reset"
            prepare_worker(WorkerSpec(role="collector", rank=0, cfg=cfg, seed=0))
        mallopt_calls.clear()
        assert malloc.keep_freed_memory_on_request() is granted
        assert mallopt_calls == (["mallopt"] if granted else [])


def test_a_platform_without_mallopt_is_named(monkeypatch):
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: False)
    monkeypatch.setattr(malloc, "_setting", None)
    threads = torch.get_num_threads()
    with pytest.warns(UserWarning, match="keep_freed_memory=True has no effect here"):
        start({"keep_freed_memory": True})
    torch.set_num_threads(threads)


@pytest.mark.parametrize("value", ["yes", 1])
def test_a_non_bool_is_refused(value):
    from ding_lite.utils import ConfigError
    with pytest.raises(ConfigError, match=rf"keep_freed_memory={value!r}: must be None \(where an update asks for "
                                          rf"it\), True or False"):
        compile_config(config(), overrides={"keep_freed_memory": value})
