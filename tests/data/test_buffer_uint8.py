"""The columnar buffer allocates each column from the pushed dtype: uint8 frames are stored and sampled as uint8
(one byte per pixel), whether pushed batched, as a list of per-sample dicts or as NumPy arrays."""
import numpy as np
import pytest
import torch

from ding_lite.data import ReplayBuffer

FRAME = (4, 84, 84)
T = 3


def unrolls(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"obs": torch.randint(0, 256, (n, T + 1, *FRAME), dtype=torch.uint8, generator=g),
            "final_obs": torch.zeros(n, 1, *FRAME, dtype=torch.uint8),
            "action": torch.randint(0, 6, (n, T), generator=g), "logit": torch.randn(n, T, 6, generator=g),
            "reward": torch.randn(n, T, generator=g), "terminated": torch.zeros(n, T, dtype=torch.bool),
            "truncated": torch.zeros(n, T, dtype=torch.bool)}


def columns(buffer):
    return {".".join(p): c for p, c in zip(buffer._paths, buffer._cols)}


def test_uint8_columns_and_batches():
    buffer = ReplayBuffer(dict(replay_buffer_size=8), seed=0)
    data = unrolls(5)
    buffer.push(data, cur_collector_envstep=0)
    cols = columns(buffer)
    assert cols["obs"].dtype == cols["final_obs"].dtype == torch.uint8
    assert cols["obs"].nbytes == 8 * (T + 1) * int(np.prod(FRAME))
    assert cols["logit"].dtype == torch.float32 and cols["action"].dtype == torch.int64
    batch = buffer.sample(16, cur_learner_iter=0, min_valid=1)
    assert batch["obs"].dtype == torch.uint8 and batch["obs"].shape == (16, T + 1, *FRAME)
    stored = {bytes(x.numpy()) for x in data["obs"]}
    assert all(bytes(x.numpy()) in stored for x in batch["obs"])  # exact frames back


def test_uint8_from_per_sample_dicts_and_numpy():
    data = unrolls(3)
    buffer = ReplayBuffer(dict(replay_buffer_size=4), seed=0)
    buffer.push([{k: v[i].numpy() for k, v in data.items()} for i in range(3)], cur_collector_envstep=0)
    assert columns(buffer)["obs"].dtype == torch.uint8
    assert buffer.sample(2, cur_learner_iter=0)["obs"].dtype == torch.uint8


def test_float_frames_into_uint8_columns_are_refused():
    buffer = ReplayBuffer(dict(replay_buffer_size=4), seed=0)
    buffer.push(unrolls(2), cur_collector_envstep=0)
    bad = unrolls(2)
    bad["obs"] = bad["obs"].float()
    with pytest.raises(ValueError, match="leaf 'obs' expected dtype torch.uint8, got torch.float32"):
        buffer.push(bad, cur_collector_envstep=0)
