"""How samples reach the learner and weights reach the actors: the one seam between the serial and the parallel
pipeline. The training loop (``ding_lite.entry.training_loop``) is written once against ``Transport``; the serial
pipeline plugs in ``InProcessTransport`` (collector and evaluator in this process, run when the loop asks), the
parallel one ``ding_lite.parallel.transport.WorkerTransport`` (collector and evaluator processes or Ray actors).
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Protocol, Tuple

import gymnasium as gym
import torch

from ding_lite.policy import Policy
from ding_lite.torch_utils.threads import threads_description
from ding_lite.utils.seed import env_seeds

from .collector import SampleCollector, leading_dim
from .evaluator import Evaluator

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


class InProcessTransport:
    """The serial pipeline's transport: the collector and evaluator run in this process when the loop asks.

    Weights need no travel (the collector acts with the learner's own model), so ``publish`` only notes the
    version; a request for samples collects ``policy.collect.n_sample`` of them there and then."""

    name = "in-process"
    evaluates_in_place = True
    weight_sync_freq = 1

    def __init__(self, cfg, policy: Policy, collector_env: gym.vector.VectorEnv,
                 evaluator_env: gym.vector.VectorEnv, seed: int, run_dir: str = ".") -> None:
        self.collector = SampleCollector(collector_env, policy.collect_mode)
        self.evaluator = Evaluator(evaluator_env, policy.eval_mode, cfg.env.n_evaluator_episode,
                                   cfg.policy.eval.evaluator.eval_freq, Evaluator.video_for(cfg, seed, run_dir),
                                   cfg.policy.eval.evaluator.video_every)
        self.n_sample, self.seed = cfg.policy.collect.n_sample, seed
        self.unroll_len = policy.collect_mode.unroll_len
        self.description = threads_description(cfg.torch_threads)
        if cfg.matmul_precision != "highest":
            self.description += f", matmul_precision={cfg.matmul_precision!r}"
        self._version = 0
        self._pending: List[Arrival] = []

    def launch(self, env_step: int, warm_up_steps: int, logger) -> None:
        self.collector.envstep = env_step
        if env_step:  # env states are not checkpointed: new episodes, seeded apart from the old ones
            self.collector.reset(seed=env_seeds(self.seed, "collector", self.collector.num_envs, env_step=env_step))
        if warm_up_steps > 0:  # whole segments on every env, at least warm_up_steps env steps
            num_envs = self.collector.num_envs
            n = -(-warm_up_steps // (self.unroll_len * num_envs)) * num_envs
            self._pending.append(self._collect(n, warm_up=True))

    def _collect(self, n_sample: int, warm_up: bool = False) -> Arrival:
        start = self.collector.envstep
        data = self.collector.collect(n_sample, random_action=True) if warm_up else self.collector.collect(n_sample)
        return Arrival(data, leading_dim(data), self.collector.envstep - start, self._version,
                       self.collector.episodes.pop_finished(), warm_up)

    def publish(self, version: int, weights: State) -> None:
        self._version = version

    def receive(self, timeout: float, samples: bool) -> Tuple[List[Arrival], list]:
        arrivals, self._pending = self._pending, []
        if samples:
            arrivals.append(self._collect(self.n_sample))
        return arrivals, []

    def request_eval(self, train_iter: int, weights: State) -> Dict[str, float]:
        return self.evaluator.eval(train_iter, self.collector.envstep)

    def evaluate_now(self, train_iter: int) -> Dict[str, float]:
        return self.evaluator.eval(train_iter, self.collector.envstep)

    def supervise(self, env_step: int) -> None:
        pass

    def progress(self, dt: float, env_step: int) -> Tuple[str, str, str]:
        return "", "", ""

    def stop(self) -> None:
        pass

    def summary(self, common: Dict[str, Any]) -> Dict[str, Any]:
        return {}

    def close(self) -> None:
        self.collector.close()
        self.evaluator.close()

