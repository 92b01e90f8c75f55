"""How the Ray backend names a lost worker: bad input stops the run, a lost actor restarts it; how its messages
travel."""
import pickle

import numpy as np
import pytest
import torch

from ding_lite.parallel.worker_transport import USER_ERRORS
from ding_lite.utils.env_worker import EnvBuildError

exceptions = pytest.importorskip("ray.exceptions", reason="the Ray backend needs the extra: pip install 'ding_lite[ray]'")

from ding_lite.parallel.ray_backend import _packed, _state_of, failure_reason, unpacked  # noqa: E402


def test_a_user_error_raised_in_an_actor_keeps_its_name():
    err = exceptions.RayTaskError("collect", "Traceback ...", EnvBuildError("env 'x' could not be built: boom"))
    reason = failure_reason(err.as_instanceof_cause())  # what ray.get raises
    assert reason == "EnvBuildError: env 'x' could not be built: boom"
    assert reason.split(":", 1)[0] in USER_ERRORS  # so the run stops instead of restarting into the same failure


def test_a_crash_in_an_actor_is_a_restartable_failure():
    err = exceptions.RayTaskError("collect", "Traceback ...", RuntimeError("the env crashed\nsecond line"))
    reason = failure_reason(err.as_instanceof_cause())
    assert reason == "RuntimeError: the env crashed"
    assert reason.split(":", 1)[0] not in USER_ERRORS


def test_a_lost_actor_says_it_died():
    reason = failure_reason(exceptions.ActorDiedError())
    assert reason.startswith("ActorDiedError: ") and "died" in reason
    assert reason.split(":", 1)[0] not in USER_ERRORS


def test_small_segments_travel_as_one_pickled_bytes_object_and_large_ones_as_arrays():
    small = {"kind": "samples", "n": 8, "data": {"obs": np.arange(32, dtype=np.float32).reshape(8, 4),
                                                  "nested": {"reward": np.ones(8)}}}
    packed = _packed(small)
    assert isinstance(packed, bytes)
    back = unpacked(packed)
    assert back.keys() == small.keys() and back["n"] == 8
    np.testing.assert_array_equal(back["data"]["obs"], small["data"]["obs"])
    np.testing.assert_array_equal(back["data"]["nested"]["reward"], small["data"]["nested"]["reward"])
    frames = {"kind": "samples", "data": {"obs": np.zeros((2, 4, 84, 84), np.uint8)}}  # 56 KiB: still inline
    assert isinstance(_packed(frames), bytes)
    frames = {"kind": "samples", "data": {"obs": np.zeros((4, 4, 84, 84), np.uint8)}}  # 110 KiB: the store's job
    assert _packed(frames) is frames and unpacked(frames) is frames
    weights = {"w": np.arange(6, dtype=np.float32)}
    state = _state_of([pickle.dumps(weights, protocol=5)])
    assert torch.equal(state["w"], torch.arange(6, dtype=torch.float32))


def test_a_collect_call_returns_segments_per_call_segments_acted_with_its_weights(monkeypatch):
    """``parallel.segments_per_call``: the collector actor's ``collect`` (here its class, in this process) answers one
    call with that many segments, consecutive and all acted with the call's weights; one segment stays one message."""
    from ding_lite.config import compile_config
    from ding_lite.config.loader import read_config_file
    from ding_lite.entry.build import probe_env_spec
    from ding_lite.entry.parallel import resolve_parallel
    from ding_lite.parallel import ray_backend
    from ding_lite.parallel.roles import WorkerSpec, to_numpy
    from ding_lite.utils import POLICY_REGISTRY

    from entry_helpers import CARTPOLE, SMALL_DICT

    cfg = compile_config(read_config_file(CARTPOLE), overrides=SMALL_DICT)
    probe_env_spec(cfg, 0)
    resolve_parallel(cfg)
    state = POLICY_REGISTRY.get("impala")(cfg.policy, enable_field=("learn",)).model.state_dict()
    monkeypatch.setattr(ray_backend, "_node_id", lambda: "this-node")
    actor = ray_backend.RayCollector()
    assert actor.setup(WorkerSpec("collector", 0, cfg, 1)) == "this-node"
    try:
        weights = [pickle.dumps(to_numpy(state), protocol=5)]
        answer = actor.collect(3, weights, 3)
        assert isinstance(answer, list) and len(answer) == 3
        segments = [unpacked(m) for m in answer]
        n, T = cfg.env.collector_env_num, cfg.policy.unroll_len
        assert all(s["kind"] == "samples" and s["version"] == 3 and s["n"] == n for s in segments)
        assert sum(s["env_steps"] for s in segments) == 3 * n * T
        assert [s["timing"]["fetch_s"] > 0 for s in segments] == [True, False, False]  # fetched once, for the first
        assert not np.array_equal(segments[0]["data"]["obs"], segments[1]["data"]["obs"])  # consecutive, not copies
        single = actor.collect(3, weights)
        assert isinstance(unpacked(single), dict) and unpacked(single)["version"] == 3
    finally:
        actor.close()
