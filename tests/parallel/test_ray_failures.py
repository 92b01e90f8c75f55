"""How the Ray backend names a lost worker: bad input stops the run, a lost actor restarts it; how its messages
travel."""
import pickle

import numpy as np
import pytest
import torch

from ding_lite.parallel.transport import USER_ERRORS
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
