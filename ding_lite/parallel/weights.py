"""Versioned weights in shared memory: the learner writes, any number of worker processes read without blocking.

A sequence lock guards the tensors: the writer makes ``seq`` odd, copies, sets ``version`` and makes ``seq`` even
again. A reader copies the tensors out only when ``seq`` is even and ``version`` is newer than what it has, and keeps
the copy only if ``seq`` did not move meanwhile (else it tries again at its next step). Neither side ever waits, and
no weight is pickled after the processes start.
"""
from typing import Dict, Optional, Tuple

import torch

State = Dict[str, torch.Tensor]


def cpu_state(state: State) -> State:
    """Detached CPU copies of a state dict's tensors (what crosses to workers; they run on the CPU)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in state.items()}


class SharedWeights:
    """One slot of versioned weights shaped like ``template``; picklable into spawned processes (shared storage).

    ``ctx`` is a multiprocessing context (spawn) providing ``RawValue``.
    """

    def __init__(self, template: State, ctx) -> None:
        self.names = list(template)
        self.tensors = [v.detach().to("cpu", copy=True).share_memory_() for v in template.values()]
        self._seq = ctx.RawValue("q", 0)
        self._version = ctx.RawValue("q", -1)

    @property
    def version(self) -> int:
        """The newest complete version (-1 before the first write)."""
        return self._version.value

    def write(self, version: int, state: State) -> None:
        """Publish ``state`` (same keys and shapes as the template, any device) as ``version``."""
        self._seq.value += 1  # odd: a write is in progress
        for name, dst in zip(self.names, self.tensors):
            dst.copy_(state[name])
        self._version.value = version
        self._seq.value += 1  # even: stable again

    def read_if_newer(self, seen: int) -> Optional[Tuple[int, State]]:
        """``(version, private copy of the state)`` if a version newer than ``seen`` is complete, else None."""
        seq = self._seq.value
        if seq & 1:
            return None
        version = self._version.value
        if version <= seen:
            return None
        copies = [t.clone() for t in self.tensors]
        if self._seq.value != seq:  # torn by a concurrent write: try again next time
            return None
        return version, dict(zip(self.names, copies))
