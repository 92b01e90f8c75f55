"""The ``Transport`` interface: how samples reach the learner and weights reach the actors, the one seam between the
serial and the parallel pipeline, and ``Arrival``, what comes through it. The training loop
(``ding_lite.entry.training_loop``) is written once against ``Transport``; the serial pipeline plugs in
``ding_lite.worker.in_process_transport.InProcessTransport`` (collector and evaluator in this process, run when the
loop asks), the parallel one ``ding_lite.parallel.worker_transport.WorkerTransport`` (collector and evaluator
processes or Ray actors).
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Protocol, Tuple

import torch

State = Dict[str, torch.Tensor]


@dataclass
class Arrival:
    """Train samples that reached the learner, with what it needs to account for them.

    ``data`` is the nested dict of ``(N, ...)`` tensors (None when the transport dropped the samples as too stale:
    their env steps and episodes still count). ``version`` is the oldest weight version any of their steps acted
    with. Warm-up samples (uniformly random actions) fill the buffer but buy no updates."""

    data: Optional[Dict[str, Any]]
    n: int
    env_steps: int
    version: int
    episodes: List[Dict[str, float]] = field(default_factory=list)
    warm_up: bool = False


class Transport(Protocol):
    """Where samples come from and where weights and evaluation requests go."""

    name: str
    description: str  # how samples travel, for the run's first log line
    evaluates_in_place: bool  # request_eval answers at once (no snapshot of the weights needs keeping)
    weight_sync_freq: int  # publish the weights every this many train iterations
    sync: bool  # publish once the updates that the samples allow are made (the actors wait for it), not per freq

    def launch(self, env_step: int, warm_up_steps: int, logger) -> None:
        """Start the actors (a resumed run at ``env_step``; ``warm_up_steps`` of random actions first), reporting
        to ``logger`` (a ``RunLogger``)."""

    def publish(self, version: int, weights: State) -> None:
        """New weights for the actors (the first call releases them)."""

    def receive(self, timeout: float, samples: bool) -> Tuple[List[Arrival], List[Tuple[int, Dict[str, float]]]]:
        """What arrived: sample batches (only if ``samples``; waiting up to ``timeout`` s for anything) and
        finished evaluations ``(train_iter, result)``."""

    def request_eval(self, train_iter: int, weights: State) -> Optional[Dict[str, float]]:
        """Evaluate ``weights`` (those of ``train_iter``): the result now, or None when it comes through ``receive``."""

    def evaluate_now(self, train_iter: int) -> Dict[str, float]:
        """Evaluate the learner's current weights in this process (the final evaluation)."""

    def supervise(self, env_step: int) -> None:
        """Restart actors that crashed; raise a ``UserError`` when one cannot go on."""

    def progress(self, dt: float, env_step: int) -> Tuple[str, str, str]:
        """Statistics of the last ``dt`` seconds (also logged): text for the progress line after the env-step rate
        and after the it/s, and a short form of the latter for the live bar."""

    def stop(self) -> None:
        """Stop the actors (idempotent); the loop calls it before its final evaluation and on errors."""

    def summary(self, common: Dict[str, Any]) -> Dict[str, Any]:
        """Entries this transport adds to result.json, given the loop's ``common`` speed and time figures."""

    def close(self) -> None:
        """Release everything (envs, processes)."""
