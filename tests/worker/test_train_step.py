"""The training step (``ding_lite/worker/train_step.py``): one update on a batch from the buffer, with prioritised
replay's new priorities handed back."""
import numpy as np
import torch

from ding_lite.data import PrioritizedReplayBuffer, ReplayBuffer
from ding_lite.worker.train_step import train_on_sample


def items(ids):
    ids = torch.as_tensor(ids, dtype=torch.int64)
    return {"id": ids.clone(), "obs": ids.float().unsqueeze(-1).repeat(1, 3)}


def test_train_on_sample_hands_the_batch_priorities_back_and_stops_when_empty():
    buf = PrioritizedReplayBuffer(dict(replay_buffer_size=20, priority_alpha=1.0, priority_eps=1e-6), seed=0,
                                  IS_weight=True)
    assert train_on_sample(buf, 4, 0, lambda batch: {"priority": torch.zeros(4)}) is None  # nothing to sample yet
    buf.push(items(range(20)), 0)
    seen = {}

    def train(batch):  # an update whose |TD error| for each sample is its id + 1
        seen["ids"] = batch["id"].numpy()
        return {"priority": batch["id"].double() + 1}

    assert set(train_on_sample(buf, 8, 0, train)) == {"priority"}
    ids = seen["ids"]
    np.testing.assert_allclose(buf.priorities()[ids], ids + 1 + 1e-6)
    uniform = ReplayBuffer(dict(replay_buffer_size=20), seed=0)
    uniform.push(items(range(20)), 0)
    assert train_on_sample(uniform, 8, 0, lambda batch: {"loss": 1.0}) == {"loss": 1.0}  # no priorities asked for
