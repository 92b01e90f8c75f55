"""The serial pipeline's transport: the collector and evaluator run in this process when the training loop asks
(``ding_lite.worker.transport.Transport``)."""
from typing import Any, Dict, List, Tuple

import gymnasium as gym

from ding_lite.policy import Policy
from ding_lite.torch_utils.threads import threads_description
from ding_lite.utils.seed import env_seeds

from .collector import SampleCollector, leading_dim
from .evaluator import Evaluator
from .transport import Arrival, State


class InProcessTransport:
    """The serial pipeline's transport: the collector and evaluator run in this process when the loop asks.

    Weights need no travel (the collector acts with the learner's own model), so ``publish`` only notes the
    version; a request for samples collects ``policy.collect.n_sample`` of them there and then."""

    name = "in-process"
    evaluates_in_place = True
    weight_sync_freq = 1
    sync = False  # the collector acts with the learner's own model: always current

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

