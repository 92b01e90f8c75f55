"""The local transport: spawned collector and evaluator processes, versioned weights, credits, crash detection."""
import os
import signal
import sys
import time

import pytest

from ding_lite.config import compile_config
from ding_lite.config.loader import read_config_file
from ding_lite.entry.build import probe_env_spec
from ding_lite.entry.parallel import resolve_parallel
from ding_lite.parallel.local import LocalBackend
from ding_lite.parallel.roles import WorkerSpec
from ding_lite.utils import POLICY_REGISTRY

from entry_helpers import CARTPOLE, SMALL_DICT


@pytest.fixture(scope="module")
def setup():
    cfg = compile_config(read_config_file(CARTPOLE), overrides=SMALL_DICT)
    probe_env_spec(cfg, 0)
    resolve_parallel(cfg)
    policy = POLICY_REGISTRY.get("impala")(cfg.policy, enable_field=("learn",))
    return cfg, policy.model.state_dict()


def _spec(cfg, role="collector", rank=0, seed=1):
    return WorkerSpec(role, rank, cfg, seed, sys_path=list(sys.path))


def _wait_for(backend, kind, timeout=60.0, samples=True):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        messages = [m for m in backend.poll(0.05, samples) if m["kind"] == kind]
        if messages:
            return messages
    raise AssertionError(f"no '{kind}' message within {timeout} s")


def test_collector_streams_versioned_segments_and_picks_up_new_weights(setup):
    cfg, state = setup
    backend = LocalBackend(1, 2, state)
    try:
        backend.publish(0, state)
        backend.start(_spec(cfg))
        (first, *_) = _wait_for(backend, "samples")
        n, T = cfg.env.collector_env_num, cfg.policy.unroll_len  # one segment: an unroll of every env
        assert first["version"] == 0 and first["rank"] == 0 and first["n"] == n
        assert first["data"]["obs"].shape == (n, T, 4)
        assert first["env_steps"] == n * T  # every env step of the segment, counted once
        assert set(first["timing"]) == {"collect_s", "sync_s", "wait_s"}
        backend.publish(7, {k: v + 1 for k, v in state.items()})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # batches already under way carry the old version
            if any(m["version"] == 7 for m in _wait_for(backend, "samples")):
                break
        else:
            raise AssertionError("the collector never picked up version 7")
    finally:
        backend.shutdown()


def test_collectors_wait_when_queue_size_segments_are_under_way(setup):
    cfg, state = setup
    backend = LocalBackend(1, 2, state)
    try:
        backend.publish(0, state)
        backend.start(_spec(cfg))
        time.sleep(0.5)
        _wait_for(backend, "samples")  # started; take what is there
        deadline = time.monotonic() + 20
        while sum(backend._credits.sent) - sum(backend._credits.taken) < 2 and time.monotonic() < deadline:
            backend.poll(0.05, samples=False)
        time.sleep(1.0)  # plenty of time to collect more, were it allowed to send
        assert sum(backend._credits.sent) - sum(backend._credits.taken) == 2
        assert len(backend.poll(0.0)) == 2
    finally:
        backend.shutdown()


def test_evaluator_scores_requested_weights(setup):
    cfg, state = setup
    backend = LocalBackend(1, 2, state)
    try:
        backend.start(_spec(cfg, "evaluator", seed=10_000))
        backend.request_eval(42, state)
        (message,) = _wait_for(backend, "eval", samples=False)
        assert message["train_iter"] == 42
        assert message["result"]["episodes"] == cfg.env.n_evaluator_episode
    finally:
        backend.shutdown()


def test_a_killed_collector_is_reported_and_can_be_restarted(setup):
    cfg, state = setup
    backend = LocalBackend(1, 2, state)
    try:
        backend.publish(0, state)
        backend.start(_spec(cfg))
        _wait_for(backend, "samples")
        pid = backend.pids()[("collector", 0)]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        failed = []
        while not failed and time.monotonic() < deadline:
            failed = backend.failed()
            time.sleep(0.05)
        assert failed == [(("collector", 0), "killed by SIGKILL")]
        backend.start(_spec(cfg, seed=2))
        assert backend.pids()[("collector", 0)] != pid
        _wait_for(backend, "samples")  # the new one streams; the dead one's credits were returned
        assert backend.failed() == []
    finally:
        backend.shutdown()
    assert not _alive(pid)


def test_shutdown_leaves_no_process(setup):
    cfg, state = setup
    backend = LocalBackend(2, 2, state)
    backend.publish(0, state)
    for rank in range(2):
        backend.start(_spec(cfg, rank=rank, seed=rank + 1))
    backend.start(_spec(cfg, "evaluator", seed=10_000))
    pids = list(backend.pids().values())
    _wait_for(backend, "samples")
    start = time.monotonic()
    backend.shutdown()
    assert time.monotonic() - start < 5
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False
