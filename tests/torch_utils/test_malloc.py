"""keep_freed_memory: freed large buffers stay in the process (checked in fresh processes, as it cannot be undone),
and the top-level config key turns it on in the learner and in parallel workers."""
import os
import subprocess
import sys

import pytest
import torch

import ding_lite.entry.build as build_module
import ding_lite.parallel.roles as roles
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


def test_the_config_key_turns_it_on_in_the_learner_and_the_workers(monkeypatch):
    calls = []
    monkeypatch.setattr(build_module, "keep_freed_memory", lambda: calls.append("learner") or True)
    monkeypatch.setattr(roles, "keep_freed_memory", lambda: calls.append("worker") or True)
    build_module.compile_input(config(), 0)
    assert calls == []  # off by default
    cfg = build_module.compile_input(config(), 0, {"keep_freed_memory": True})
    prepare_worker(WorkerSpec(role="collector", rank=0, cfg=cfg, seed=0))
    assert calls == ["learner", "worker"]


def test_a_platform_without_mallopt_is_named(monkeypatch):
    monkeypatch.setattr(build_module, "keep_freed_memory", lambda: False)
    with pytest.warns(UserWarning, match="keep_freed_memory=True has no effect here"):
        build_module.compile_input(config(), 0, {"keep_freed_memory": True})


def test_a_non_bool_is_refused():
    from ding_lite.utils import ConfigError
    with pytest.raises(ConfigError, match="keep_freed_memory='yes': expected bool"):
        compile_config(config(), overrides={"keep_freed_memory": "yes"})
