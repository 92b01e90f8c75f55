"""Proportional prioritised replay (Schaul et al. 2016, "Prioritized Experience Replay") on the columnar buffer.

``policy.priority=True`` builds this buffer instead of the uniform one (same config section, same columns, same
``max_use`` / ``max_staleness``); ``policy.priority_IS_weight=True`` adds the importance weights to each batch.

* Sampling: P(i) = p_i^alpha / sum_k p_k^alpha over the valid items, drawn stratified (one draw in each of B equal
  segments of the total mass) with replacement, from a :class:`~ding_lite.data.sum_tree.PriorityTree` (vectorised:
  no per-sample Python). alpha = ``priority_alpha``.
* New items enter at the largest priority given so far (the running maximum of p^alpha, 1 at the start: as DI-engine
  and OpenAI baselines do), so each is likely to be replayed at least once before its TD error is known.
* Priorities: after each update the learner hands the policy's per-sample ``priority`` (|TD error|, >= 0) to
  ``update_priority``, which stores (|delta| + priority_eps)^alpha. Slots removed (max_use, staleness) or overwritten
  since the batch was drawn are skipped; removed slots hold 0 and are never drawn.
* Importance weights (batch key ``weight``, (B,) float32): w_i = (N P(i))^-beta / max_j w_j with the maximum over
  the *whole buffer* (the item of least priority), as in the paper's stability normalisation and DI-engine's
  buffer; so w_i = (p_min^alpha / p_i^alpha)^beta in (0, 1]. beta grows linearly from ``priority_beta`` at train
  iteration 0 to 1 at ``priority_beta_anneal_steps`` train iterations (the ``cur_learner_iter`` of ``sample``).
"""
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ding_lite.utils.errors import ConfigError

from .buffer import INF, ReplayBuffer, Tree
from .sum_tree import PriorityTree

WEIGHT_KEY = "weight"  # DI-engine's name for the importance weights in a learn batch


@dataclass(frozen=True)
class SampleIndex:
    """Where a batch came from: its slots (B,) and the buffer's push count and head when it was drawn (to skip
    slots overwritten since)."""

    slots: np.ndarray
    pushed: int
    head: int


class PrioritizedReplayBuffer(ReplayBuffer):
    """The columnar buffer with proportional priorities (see the module docstring). ``compiled``: the sum tree's
    numba kernels (None: when numba is installed, the ``fast`` extra; False: NumPy only)."""

    def __init__(self, cfg: Optional[Mapping] = None, device: Union[str, torch.device] = "cpu",
                 seed: Optional[int] = None, pin_memory: bool = False, IS_weight: bool = False,
                 compiled: Optional[bool] = None) -> None:
        self.IS_weight = bool(IS_weight)
        super().__init__(cfg, device=device, seed=seed, pin_memory=pin_memory)
        self.alpha = float(self.cfg.priority_alpha)
        self.beta0 = float(self.cfg.priority_beta)
        self.beta_anneal_steps = int(self.cfg.priority_beta_anneal_steps)
        self.eps = float(self.cfg.priority_eps)
        self._tree = PriorityTree(self.capacity, track_min=self.IS_weight, compiled=compiled)
        self._max_p = 1.0  # running max of p^alpha
        self._beta = self.beta0
        self._weight: Optional[torch.Tensor] = None
        self.last_index: Optional[SampleIndex] = None

    @classmethod
    def check_config(cls, cfg, path: str) -> None:
        super().check_config(cfg, path)
        if not cfg.replacement:
            raise ConfigError(f"{path}.replacement=False: prioritised replay draws by priority with replacement "
                              f"(stratified over the total mass); set replacement=True or policy.priority=False")

    @property
    def compiled(self) -> bool:
        """Whether the sum tree runs numba's kernels (the ``fast`` extra) or its NumPy path."""
        return self._tree.compiled

    @classmethod
    def nbytes_for(cls, capacity: int, leaves: Sequence[Tuple[Sequence[int], torch.dtype]]) -> int:
        return super().nbytes_for(capacity, leaves) + PriorityTree.nbytes_for(capacity)

    @property
    def nbytes(self) -> int:
        return super().nbytes + self._tree.nbytes

    def beta(self, cur_learner_iter: int) -> float:
        """The importance-sampling exponent at ``cur_learner_iter``: linear from priority_beta to 1."""
        if self.beta_anneal_steps <= 0:
            return self.beta0
        return self.beta0 + (1.0 - self.beta0) * min(1.0, max(0, cur_learner_iter) / self.beta_anneal_steps)

    # ---- the hooks of the uniform buffer ---------------------------------------------------------------------------
    def push(self, samples: Union[Mapping, Sequence[Mapping]], cur_collector_envstep: int,
             collect_iter: int = 0) -> None:
        head, pushed = self._head, self.pushed
        super().push(samples, cur_collector_envstep, collect_iter)
        n = min(self.pushed - pushed, self.capacity)
        if n:
            slots = np.arange(head, head + n) % self.capacity  # as the base push wrote them
            self._tree.update(slots, np.full(n, self._max_p))

    def _remove(self, slots: np.ndarray) -> None:
        super()._remove(slots)
        self._tree.update(slots, np.zeros(slots.size))

    def clear(self) -> None:
        super().clear()
        if hasattr(self, "_tree"):  # the base __init__ clears before the tree exists
            self._tree.clear()

    def _draw(self, batch_size: int) -> np.ndarray:
        uniform = torch.rand(batch_size, generator=self._gen, dtype=torch.float64).numpy()
        # the weights before max_use removes any of the slots: (p_min / p_i)^beta
        slots, weight = self._tree.sample(uniform, self._beta if self.IS_weight else None)
        if weight is not None:
            self._weight = torch.from_numpy(weight)
        self.last_index = SampleIndex(slots, self.pushed, self._head)
        return slots

    def sample(self, batch_size: int, cur_learner_iter: int, min_valid: Optional[int] = None) -> Optional[Tree]:
        """As the uniform buffer's ``sample``, drawing by priority; with IS weights the batch has ``weight`` (B,).
        ``last_index`` says where the batch came from, for ``update_priority``."""
        self._beta = self.beta(cur_learner_iter)
        self.last_index = None
        batch = super().sample(batch_size, cur_learner_iter, min_valid)
        if batch is not None and self.IS_weight:
            weight = self._weight
            if self.pin_memory:
                weight = weight.pin_memory()
            batch[WEIGHT_KEY] = weight.to(self.device)
        return batch

    def index_for(self, slots: Any) -> SampleIndex:
        """A ``SampleIndex`` for given slots now (to set priorities other than a sampled batch's)."""
        return SampleIndex(np.asarray(slots, dtype=np.int64), self.pushed, self._head)

    def update_priority(self, index: SampleIndex, priority: Any) -> None:
        """Set the priorities of a sampled batch from the policy's per-sample ``priority`` (|TD error|, (B,), a
        tensor on any device or an array): p = (priority + priority_eps)^alpha. Slots no longer valid or overwritten
        since ``index`` was drawn are skipped; a slot drawn twice gets one of its values."""
        if isinstance(priority, torch.Tensor):
            priority = priority.detach().to("cpu", torch.float64).numpy()
        priority = np.asarray(priority, dtype=np.float64).reshape(-1)
        slots = index.slots
        if priority.shape != slots.shape:
            raise ValueError(f"update_priority: {priority.size} priorities for a batch of {slots.size}")
        if not np.isfinite(priority).all() or (priority < 0).any():
            raise ValueError(f"update_priority: priorities must be finite and >= 0, got min {priority.min()}, max "
                             f"{priority.max()}")
        keep = self._valid[slots]
        since = self.pushed - index.pushed
        if since:  # the ring wrote `since` slots from the head of then
            keep &= (slots - index.head) % self.capacity >= min(since, self.capacity)
        if not keep.all():
            slots, priority = slots[keep], priority[keep]
        if slots.size:
            p = (priority + self.eps) ** self.alpha
            self._tree.update(slots, p)
            self._max_p = max(self._max_p, float(p.max()))

    # ---- inspection and checkpoints --------------------------------------------------------------------------------
    def priorities(self) -> np.ndarray:
        """p^alpha of every slot (capacity,), 0 for empty or removed slots (a copy)."""
        return self._tree.leaves.copy()

    def stats(self) -> Dict[str, int]:
        return {**super().stats(), "beta": self._beta}

    def state_dict(self) -> Dict[str, Any]:
        return {**super().state_dict(), "max_priority": self._max_p, "beta": self._beta}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)
        self._max_p = float(state.get("max_priority", 1.0))
        self._beta = float(state.get("beta", self.beta0))

    def __repr__(self) -> str:
        return "Prioritized" + super().__repr__() + f"[alpha={self.alpha}, IS_weight={self.IS_weight}]"


def is_prioritized(buffer: Any) -> bool:
    return isinstance(buffer, PrioritizedReplayBuffer)


__all__ = ["PrioritizedReplayBuffer", "SampleIndex", "WEIGHT_KEY", "INF", "is_prioritized"]
