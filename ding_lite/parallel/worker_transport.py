"""The parallel pipeline's transport: collector and evaluator workers (spawned processes or Ray actors) that stream
samples to the learner and receive versioned weights; written against ``ding_lite.worker.transport.Transport``.

Collectors never wait for weights: they pick up the newest between env steps, and a segment carries the oldest
weight version it acted with. Segments more than ``parallel.max_staleness`` versions behind are dropped on arrival
(their env steps still count). Workers that crash are restarted, at most ``parallel.max_restarts`` times each; a
worker stopped by bad input (a ``UserError``: a non-finite observation, a bad env) stops the run instead; a worker
whose env hung (``env.step_timeout_s``) is restarted as a crashed one.
"""
import collections
import copy
import math
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from easydict import EasyDict

from ding_lite.envs import make_vector_env
from ding_lite.envs.watchdog import EnvHangError
from ding_lite.policy import Policy
from ding_lite.utils import UserError
from ding_lite.utils.dict_tools import to_plain
from ding_lite.utils.seed import env_seeds
from ding_lite.worker import Evaluator
from ding_lite.worker.transport import Arrival, State

from .roles import WorkerSpec, from_numpy

SHUTDOWN_TIMEOUT_S = 3.0


def _user_error_names() -> set:
    names, todo = set(), [UserError]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return names


USER_ERRORS = _user_error_names()  # a worker's error of these types stops the run instead of a restart
HANG_ERRORS = {EnvHangError.__name__}  # ... except a hung env (env.step_timeout_s): restarted as a crash is


BOTTLENECK_LINES = {
    "learner": "bottleneck: the learner (it trained most of the run while collectors waited for room); more "
               "collectors only add policy lag; a faster learner (policy.cuda, fewer update_per_collect) would use them",
    "collectors": "bottleneck: the collectors (the learner waited for samples); more collectors (or faster envs) "
                  "would speed the run up",
    "balanced": "bottleneck: none clear (neither the learner nor the collectors waited much)",
}


def bottleneck(learner_time: Dict[str, float], collector_time: Dict[str, float]) -> str:
    """'learner', 'collectors' or 'balanced', from where the time went: the learner is the bottleneck when it
    waited for samples less than 10% of its time and the collectors waited for room more than 25% of theirs; the
    collectors are when the learner waited more than 25% of its time."""
    learner_total = sum(learner_time.values()) or 1e-9
    collector_total = sum(collector_time.values()) or 1e-9
    learner_wait = learner_time.get("wait_s", 0.0) / learner_total
    collector_wait = collector_time.get("wait_s", 0.0) / collector_total
    if learner_wait > 0.25:
        return "collectors"
    if learner_wait < 0.10 and collector_wait > 0.25:
        return "learner"
    return "balanced"


def learner_capacity(learner_time: Dict[str, float], collector_time: Dict[str, float],
                     segments: int) -> Optional[Dict[str, float]]:
    """Per-segment costs and how many collectors one learner keeps up with: a collector's busy time per segment
    (collecting and loading weights) over the learner's (training on it, ingesting it, publishing weights). Both
    are measured in this run, so on a machine where they share cores each is inflated by the other."""
    if not segments:
        return None
    learner = sum(v for k, v in learner_time.items() if k != "wait_s") / segments
    collector = sum(v for k, v in collector_time.items() if k in ("collect_s", "sync_s")) / segments
    return {"learner_ms_per_segment": round(1e3 * learner, 3), "collector_ms_per_segment": round(1e3 * collector, 3),
            "collectors_absorbed": round(collector / learner, 2) if learner > 0 else None}


def prepare_backend(pcfg: EasyDict) -> Optional[Any]:
    """The Ray backend, started before the learner builds its policy: Ray's instance, and actor processes that
    import ding_lite and torch meanwhile (they are set up with their specs at ``launch``). None for 'local', whose
    processes start at ``launch``."""
    if pcfg.backend != "ray":
        return None
    from .ray_backend import RayBackend
    backend = RayBackend(pcfg, None)
    try:
        backend.prestart({"collector": pcfg.collector_num, "evaluator": 1})
    except BaseException:
        backend.release()
        raise
    return backend


def make_backend(pcfg: EasyDict, template: State):
    """The worker transport named by ``parallel.backend``: 'local' processes or 'ray' actors."""
    if pcfg.backend == "ray":
        from .ray_backend import RayBackend
        return RayBackend(pcfg, template)
    from .local import LocalBackend
    return LocalBackend(pcfg.collector_num, pcfg.queue_size, template)


class WorkerTransport:
    """Samples from ``parallel.collector_num`` collector workers; evaluations by one evaluator worker.

    ``policy`` is the learner's (its model is the weight template; its eval mode runs the final evaluation here).
    ``imports`` are the ``(module names, config path)`` pairs a fresh worker imports before it looks a type up in a
    registry (ding_lite's components and the config's ``import_names``). ``model_given``: the user handed the
    pipeline a model instance, so the workers get a CPU copy of it instead of building one from the config."""

    evaluates_in_place = False

    def __init__(self, cfg: EasyDict, seed: int, policy: Policy, imports: Sequence[Tuple[List[str], str]],
                 model_given: bool = False, run_dir: Optional[str] = None, backend: Optional[Any] = None) -> None:
        self.cfg, self.pcfg, self.seed, self.policy = cfg, cfg.parallel, seed, policy
        self.name = cfg.parallel.backend
        self.weight_sync_freq = cfg.parallel.weight_sync_freq
        self.sync = bool(cfg.parallel.sync)
        self.description = (f"{self.collector_num} collector(s) and an evaluator ({self.name} backend)")
        self._worker_cfg = EasyDict(to_plain(cfg))
        self._worker_cfg.policy.cuda = False  # workers act on the CPU; the learner may use the GPU
        evaluator = self._worker_cfg.policy.eval.evaluator
        if evaluator.video_every and not evaluator.video_dir and run_dir:  # the evaluator worker writes the videos
            evaluator.video_dir = os.path.abspath(os.path.join(run_dir, "videos"))
        self._model_copy = copy.deepcopy(policy.model).cpu() if model_given else None
        self._imports = [(list(names), where) for names, where in imports]
        self.backend = backend  # made ahead by ``prepare_backend`` (Ray), else at ``launch``
        self.logger = None
        self.version = 0
        self._warm_up_steps = 0
        self.restarts: Dict[str, int] = collections.Counter()
        # Statistics since the last progress line, and for the whole run.
        self._lags: List[int] = []
        self.lag_counts: Dict[int, int] = collections.Counter()
        self.dropped_stale = 0
        self._rank_steps: Dict[int, int] = collections.Counter()
        self._worker_time: Dict[str, float] = collections.defaultdict(float)  # collectors: collect, sync, send
        self._no_collector_since: Optional[float] = None
        self.segments = 0  # segments (messages of samples) received

    @property
    def collector_num(self) -> int:
        return self.pcfg.collector_num

    # ---- workers -------------------------------------------------------------------------------------------------
    def launch(self, env_step: int, warm_up_steps: int, logger) -> None:
        self.logger, self._warm_up_steps = logger, warm_up_steps
        if self.backend is None:
            self.backend = make_backend(self.pcfg, self.policy.model.state_dict())
        for rank in range(self.collector_num):
            self.backend.start(self._spec("collector", rank, env_step))
        self.backend.start(self._spec("evaluator", 0, env_step))

    def _spec(self, role: str, rank: int, env_step: int) -> WorkerSpec:
        """The worker ``(role, rank)`` after its ``restarts`` so far; a collector (re)started at ``env_step``. Its
        seeds derive from the run's seed, role, rank, restarts and (collectors) that env step
        (``ding_lite.utils.seed``), so no two workers, or restarts of one, share env seeds."""
        restarts = self.restarts[f"{role}{rank}"]
        if role == "evaluator":
            env_step, warm_up = 0, 0
        else:
            warm_up = 0 if restarts else math.ceil(self._warm_up_steps / self.collector_num)
        return WorkerSpec(role, rank, self._worker_cfg, self.seed, self._model_copy, warm_up, list(sys.path),
                          self._imports, restarts=restarts, env_step=env_step)

    def live_collectors(self) -> int:
        """Collectors running now (the Ray backend's may be lost with a node, or wait for a free CPU)."""
        live = getattr(self.backend, "live", None)
        return self.collector_num if live is None else live("collector")

    def supervise(self, env_step: int) -> None:
        """Restart lost workers, log placements, and stop the run when no collector has run for
        ``parallel.collector_wait_s``."""
        self._restart_failed(env_step)
        for line in getattr(self.backend, "placement_news", list)():
            self.logger.info(line)
        now = time.monotonic()
        if self.live_collectors() > 0:
            self._no_collector_since = None
        elif self._no_collector_since is None:
            self._no_collector_since = now
        elif now - self._no_collector_since > self.pcfg.collector_wait_s:
            raise UserError(f"no collector has run for {self.pcfg.collector_wait_s:g} s (parallel.collector_wait_s): "
                            f"{self.collector_num} wanted, none could be started or kept (see the log for why); "
                            f"free CPUs on the Ray cluster or lower parallel.collector_num")

    def _restart_failed(self, env_step: int) -> None:
        for (role, rank), reason in self.backend.failed():
            name = f"{role}{rank}"
            self.restarts[name] += 1
            count, limit = self.restarts[name], self.pcfg.max_restarts
            kind = reason.split(":", 1)[0]
            hung = kind in HANG_ERRORS  # an env that hung may be a passing fault (a simulator, a server): restart
            if kind in USER_ERRORS and not hung:  # bad input (an env's NaN, a config): a restart repeats it
                raise UserError(f"{role} {rank} stopped: {reason}")
            if count > limit:
                what = "hung" if hung else "crashed"
                raise UserError(f"{role} {rank} {what} {count} times (parallel.max_restarts={limit}); last: "
                                f"{reason}")
            self.logger.info(f"{role} {rank} {'hung' if hung else 'crashed'} ({reason}); restarting it (restart "
                             f"{count} of at most {limit})")
            self.logger.scalars("parallel", {"restarts": sum(self.restarts.values())}, env_step)
            self.backend.start(self._spec(role, rank, env_step))

    # ---- weights and messages ------------------------------------------------------------------------------------
    def publish(self, version: int, weights: State) -> None:
        self.version = version
        self.backend.publish(version, weights)

    def request_eval(self, train_iter: int, weights: State) -> None:
        self.backend.request_eval(train_iter, weights)

    def receive(self, timeout: float, samples: bool) -> Tuple[List[Arrival], List[Tuple[int, Dict[str, float]]]]:
        arrivals, evals = [], []
        for message in self.backend.poll(timeout, samples):
            if message["kind"] == "samples":
                arrivals.append(self._arrival(message))
            elif message["kind"] == "eval":
                evals.append((message["train_iter"], message["result"]))
        return arrivals, evals

    def _arrival(self, message: Dict[str, Any]) -> Arrival:
        lag = self.version - message["version"]
        self._rank_steps[message["rank"]] += message["env_steps"]
        for key, value in message["timing"].items():
            self._worker_time[key] += value
        self._lags.append(lag)
        self.lag_counts[lag] += 1
        self.segments += 1
        stale = lag > self.pcfg.max_staleness
        if stale:
            self.dropped_stale += message["n"]
        return Arrival(None if stale else from_numpy(message["data"]), 0 if stale else message["n"],
                       message["env_steps"], message["version"], message["episodes"], message["warm_up"])

    # ---- evaluation at the end -----------------------------------------------------------------------------------
    def evaluate_now(self, train_iter: int) -> Dict[str, float]:
        """Evaluate the learner's weights in this process (the workers are stopped by now), as the serial pipeline
        does, on envs seeded apart from the evaluator worker's (evaluator rank 1)."""
        env_cfg = self.cfg.env
        env = make_vector_env(env_cfg, env_cfg.evaluator_env_num,
                              env_seeds(self.seed, "evaluator", env_cfg.evaluator_env_num, rank=1), role="evaluator")
        evaluator = Evaluator(env, self.policy.eval_mode, self.cfg.env.n_evaluator_episode, 1)
        try:
            return evaluator.eval(train_iter)
        finally:
            evaluator.close()

    # ---- statistics ----------------------------------------------------------------------------------------------
    def progress(self, dt: float, env_step: int) -> Tuple[str, str, str]:
        per_rank = {r: self._rank_steps[r] / dt for r in range(self.collector_num)}
        for rank, rate in per_rank.items():
            self.logger.scalars(f"collector{rank}", {"env_step_per_s": rate}, env_step)
        lags = np.asarray(self._lags or [0])
        self.logger.scalars("parallel", {"policy_lag_mean": float(lags.mean()), "policy_lag_max": int(lags.max()),
                                         "dropped_stale": self.dropped_stale, "weight_version": self.version},
                            env_step)
        self.logger.histogram("parallel/policy_lag", lags, env_step)
        self._lags, self._rank_steps = [], collections.Counter()
        rates = ", ".join(f"{rate:,.0f}" for rate in per_rank.values())
        live = self.live_collectors()
        if live < self.collector_num:
            rates += f"; collectors {live}/{self.collector_num}"
            self.logger.scalars("parallel", {"collectors_live": live}, env_step)
        return (f" ({rates})", f" | lag {lags.mean():.1f} (max {lags.max()})", f", lag {lags.mean():.1f}")

    def summary(self, common: Dict[str, Any]) -> Dict[str, Any]:
        """result.json's ``parallel``: speeds, where the time went, the policy lag, restarts."""
        lags = np.repeat(np.array(list(self.lag_counts), dtype=np.int64),
                         np.array(list(self.lag_counts.values()), dtype=np.int64))
        lag = ({"mean": float(lags.mean()), "p50": float(np.percentile(lags, 50)),
                "p90": float(np.percentile(lags, 90)), "max": int(lags.max())} if lags.size else None)
        return {"parallel": {
            "backend": self.name,
            "collector_num": self.collector_num,
            "env_step_per_s": common["env_step_per_s"],
            "train_iter_per_s": common["train_iter_per_s"],
            "policy_lag": lag,
            "policy_lag_counts": {str(k): v for k, v in sorted(self.lag_counts.items())},
            "dropped_stale": self.dropped_stale,
            "restarts": dict(self.restarts),
            "learner_time_s": common["learner_time_s"],
            "collector_time_s": {k: round(v, 3) for k, v in self._worker_time.items()},
            "run_s": common["run_s"],
            "placements": dict(getattr(self.backend, "placements", {}) or {}),
            "bottleneck": bottleneck(common["learner_time_s"], self._worker_time),
            "segments": self.segments,
            "learner_capacity": learner_capacity(common["learner_time_s"], self._worker_time, self.segments),
        }}

    def bottleneck_line(self, summary: Dict[str, Any]) -> Optional[str]:
        """The log line that says which side limited the run and how many collectors the learner keeps up with
        (from ``summary()['parallel']``)."""
        par = summary["parallel"]
        line = BOTTLENECK_LINES.get(par["bottleneck"])
        capacity = par["learner_capacity"]
        if line and capacity:
            line += (f" (per segment: learner {capacity['learner_ms_per_segment']:.1f} ms, a collector "
                     f"{capacity['collector_ms_per_segment']:.1f} ms: one learner keeps up with about "
                     f"{capacity['collectors_absorbed']:.1f} collector(s))")
        return line

    # ---- the end -------------------------------------------------------------------------------------------------
    def stop(self) -> None:
        if self.backend is not None:
            self.backend.shutdown(SHUTDOWN_TIMEOUT_S)

    def close(self) -> None:
        self.stop()
        release = getattr(self.backend, "release", None)  # the Ray backend's own instance ends last
        if release is not None:
            release()
