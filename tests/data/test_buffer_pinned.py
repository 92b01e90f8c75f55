"""Pinned (page-locked) sampled batches when the learner runs on a GPU, and never on a CPU-only run (issue 25, item 6):
from pageable memory a ``.to('cuda', non_blocking=True)`` copy is synchronous. Without a GPU here, torch's pinning
is replaced by a recorder (``torch.empty(..., pin_memory=True)`` is what the buffer asks for)."""
from typing import List

import pytest
import torch
from easydict import EasyDict

from ding_lite.data import ReplayBuffer
from ding_lite.entry.build import build_buffer

T = 3


def samples(n: int) -> dict:
    return {"obs": torch.arange(n * T * 2, dtype=torch.float32).view(n, T, 2),
            "x": {"flag": torch.arange(n * T).view(n, T) % 2 == 0}, "frame": torch.ones(n, T, 4, dtype=torch.uint8)}


@pytest.fixture
def pinning(monkeypatch) -> List[tuple]:
    """Pretend a CUDA device is present; record every pinned allocation (made unpinned)."""
    calls: List[tuple] = []
    empty = torch.empty

    def recording_empty(*args, pin_memory=False, **kwargs):
        if pin_memory:
            calls.append((tuple(args[0]), kwargs.get("dtype")))
        return empty(*args, **kwargs)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch, "empty", recording_empty)
    return calls


def test_sampled_batches_are_pinned_for_a_gpu_learner(pinning):
    pinned, plain = ReplayBuffer(dict(replay_buffer_size=8), seed=0, pin_memory=True), ReplayBuffer(seed=0)
    for buf in (pinned, plain):
        buf.push(samples(6), 0)
    a, b = pinned.sample(5, 0), plain.sample(5, 0)
    assert sorted(pinning, key=str) == sorted([((5, T, 2), torch.float32), ((5, T), torch.bool),
                                               ((5, T, 4), torch.uint8)], key=str)
    assert torch.equal(a["obs"], b["obs"]) and torch.equal(a["x"]["flag"], b["x"]["flag"])
    assert torch.equal(a["frame"], b["frame"])


def test_pipelines_pin_only_with_policy_cuda(pinning):
    cfg = EasyDict(policy=dict(cuda=True, other=dict(replay_buffer=dict(type="columnar", replay_buffer_size=8))))
    assert build_buffer(cfg, 0).pin_memory
    cfg.policy.cuda = False
    buf = build_buffer(cfg, 0)
    buf.push(samples(2), 0)
    buf.sample(2, 0)
    assert not buf.pin_memory and pinning == []


def test_no_pinning_without_a_cuda_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    buf = ReplayBuffer(dict(replay_buffer_size=8), seed=0, pin_memory=True)
    buf.push(samples(2), 0)
    assert not buf.pin_memory and not buf.sample(2, 0)["obs"].is_pinned()
