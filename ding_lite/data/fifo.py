"""The FIFO buffer (buffer type 'fifo'): every sample is trained on exactly ``max_use`` times, oldest first.

The data flow of the on-policy and V-trace learners (IMPALA, APPO): the learner works through the samples in the
order they arrived, so what it trains on is the newest data it has not used up yet, and never a draw from a long
history. A push of N samples queues ``max_use`` passes over them, each pass a fresh random permutation (PPO's
epochs over a rollout, one rollout after another); a batch takes the first ``batch_size`` queued entries that name
distinct samples (an entry whose sample is already in the batch waits at the head for the next batch), so no sample
appears twice in one batch. A sample leaves the buffer at its ``max_use``-th use, when a push overwrites it (the
buffer is full: the learner is slower than the collectors) or when it is older than ``max_staleness``.

The lag this gives, in learner updates between the weights that collected a sample and the update that trains on it
(``batch_age`` in the run's logs): when each collection of ``n_sample`` samples allows ``update_per_collect`` updates
of ``batch_size`` and ``n_sample * max_use == update_per_collect * batch_size`` (every queued entry is used before
the next collection), a serial run trains each sample in the ``update_per_collect`` updates right after its
collection: ages 0 to ``update_per_collect - 1`` (tests/data/test_fifo_buffer.py and tests/entry/test_batch_age.py
pin both). Wherever inflow exceeds outflow the queue grows until pushes overwrite its oldest samples, so the
capacity ``replay_buffer_size`` bounds it: a sample is at most ``replay_buffer_size * max_use / batch_size``
batches behind the newest.
"""
from collections import deque
from typing import Any, Deque, Dict, Mapping, Optional, Sequence, Union

import numpy as np
import torch
from easydict import EasyDict

from ding_lite.utils.errors import ConfigError
from ding_lite.utils.registry import BUFFER_REGISTRY

from .buffer import INF, ReplayBuffer


@BUFFER_REGISTRY.register("fifo")
class FIFOBuffer(ReplayBuffer):
    """Samples used exactly ``max_use`` times each, in arrival order, a random permutation per pass (module doc)."""

    config = dict(
        type="fifo",
        # Times each sample is trained on (passes over it, a fresh permutation each); then it is removed. It must be
        # set to an int (the policy's default does: IMPALA's 4); inf, the columnar buffer's default, is refused.
        max_use=INF,
        # Unused by this buffer (a batch always holds distinct samples); True is refused.
        replacement=False,
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        super().check_config(cfg, path)
        if cfg.max_use == INF:
            raise ConfigError(f"{path}.max_use=inf: the 'fifo' buffer trains on each sample max_use times, so it must "
                              f"be an int >= 1; for sampling without a use limit set {path}.type='columnar'")
        if cfg.replacement:
            raise ConfigError(f"{path}.replacement=True: the 'fifo' buffer never draws a sample twice in one batch; "
                              f"remove the key, or set {path}.type='columnar' for uniform sampling with replacement")

    def __init__(self, cfg: Optional[Mapping] = None, device: Union[str, torch.device] = "cpu",
                 seed: Optional[int] = None, pin_memory: bool = False) -> None:
        super().__init__(cfg, device, seed, pin_memory)
        # Queued uses, oldest first: (slot, stamp); an entry counts only while the slot still holds the sample of that
        # stamp (the push number of the sample), so an overwritten or removed sample's entries are skipped.
        self._queue: Deque[tuple] = deque()
        self._stamp = np.full(self.capacity, -1, dtype=np.int64)

    def push(self, samples: Union[Mapping, Sequence[Mapping]], cur_collector_envstep: int,
             collect_iter: int = 0) -> None:
        head, before = self._head, self.pushed
        super().push(samples, cur_collector_envstep, collect_iter)
        n = min(self.pushed - before, self.capacity)
        if n == 0:
            return
        slots = (head + np.arange(n)) % self.capacity
        stamps = before + (self.pushed - before - n) + np.arange(n)  # the kept (last) samples' push numbers
        self._stamp[slots] = stamps
        for _ in range(int(self.max_use)):
            order = torch.randperm(n, generator=self._gen).numpy()
            self._queue.extend(zip(slots[order].tolist(), stamps[order].tolist()))

    def _draw(self, batch_size: int) -> np.ndarray:
        """The first ``batch_size`` queued entries naming distinct live samples (fewer when the queue holds fewer)."""
        queue, valid, stamp = self._queue, self._valid, self._stamp
        chosen: list = []
        seen: set = set()
        waiting: list = []
        while queue and len(chosen) < batch_size:
            slot, s = queue.popleft()
            if not valid[slot] or stamp[slot] != s:
                continue  # overwritten, stale or used up
            if slot in seen:
                waiting.append((slot, s))
                continue
            seen.add(slot)
            chosen.append(slot)
        queue.extendleft(reversed(waiting))
        return np.asarray(chosen, dtype=np.int64)

    def clear(self) -> None:
        super().clear()
        if hasattr(self, "_queue"):
            self._queue.clear()

    def queued(self) -> int:
        """Queued uses of live samples (what the learner has still to train on)."""
        return sum(1 for slot, s in self._queue if self._valid[slot] and self._stamp[slot] == s)

    def content_extra(self) -> Dict[str, Any]:
        """The queue and the stamps, for ``buffer_content`` (checkpointed buffers)."""
        live = [(slot, s) for slot, s in self._queue if self._valid[slot] and self._stamp[slot] == s]
        return {"queue": torch.tensor(live, dtype=torch.int64).reshape(-1, 2),
                "stamp": torch.from_numpy(self._stamp.copy())}

    def load_content_extra(self, extra: Mapping[str, Any]) -> None:
        self._stamp[:] = extra["stamp"].numpy()
        self._queue = deque(tuple(row) for row in extra["queue"].tolist())
