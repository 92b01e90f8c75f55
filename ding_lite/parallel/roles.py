"""The worker roles of the parallel pipeline, written once for every transport.

A role runs in its own process (a spawned process, or a Ray actor) and talks to the learner only through an
``Endpoint``: it polls for newer weights without waiting, sends messages (plain dicts of numbers and NumPy arrays),
and asks whether to stop. The local and Ray backends differ only in how they implement that endpoint.

Messages to the learner:
    {"kind": "samples", "rank", "version", "data", "warm_up", "n", "env_steps", "episodes", "timing"}  (a segment)
    {"kind": "eval", "train_iter", "result"}
    {"kind": "error", "role", "rank", "error", "traceback"}   (sent by ``run_role`` before a crashed role exits)
"""
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple

import numpy as np
import torch
from easydict import EasyDict

from ding_lite.torch_utils import tree_map
from ding_lite.torch_utils.process_settings import apply_process_settings
from ding_lite.torch_utils.threads import worker_threads
from ding_lite.utils import UserError, seed as seeding
from ding_lite.utils.env_worker import EnvBuildError

State = Dict[str, torch.Tensor]
WorkerKey = Tuple[str, int]  # (role, rank)

IDLE_SLEEP_S = 0.002


class Endpoint(Protocol):
    """A worker's side of the transport."""

    def stopping(self) -> bool:
        """True once the learner asked every worker to stop (or is gone)."""

    def poll_weights(self) -> Optional[Tuple[int, State]]:
        """The newest published ``(version, state)`` if newer than the last one returned; never waits."""

    def reserve(self) -> bool:
        """Wait until the learner has room for one more sample batch (backpressure: ``parallel.queue_size``
        batches reserved or untaken, all collectors together); False if the run is stopping meanwhile."""

    def send(self, message: Dict[str, Any]) -> bool:
        """Hand a message to the learner (a sample batch needs a ``reserve`` first). False if it was dropped."""

    def send_error(self, message: Dict[str, Any]) -> None:
        """Report a worker's error; best effort, as the worker is about to exit."""


@dataclass
class WorkerSpec:
    """Everything a worker process needs to build its part of the run (picklable)."""

    role: str  # 'collector' or 'evaluator'
    rank: int
    cfg: EasyDict  # the compiled config, env shapes resolved, policy.cuda=False
    seed: int  # the run's seed; the worker's own seeds derive from it (``process_seed``, ``env_seeds``)
    model: Optional[torch.nn.Module] = None  # a CPU copy of a user-given model, else None (built from cfg)
    warm_up_steps: int = 0  # env steps of uniformly random actions first (policy.random_collect_size, split)
    sys_path: List[str] = field(default_factory=list)  # the learner's sys.path entries, for import_names
    # (module names, config path) to import before a registry lookup: ding_lite's components and import_names
    imports: List[Tuple[List[str], str]] = field(default_factory=list)
    restarts: int = 0  # how many times this worker was restarted before
    env_step: int = 0  # a collector's start: the run's env step when it was (re)started

    def process_seed(self) -> int:
        """The seed of this worker's Python, NumPy and torch generators (``ding_lite.utils.seed.derive_seed``)."""
        return seeding.derive_seed(self.seed, self.role, self.rank, self.restarts, self.env_step)

    def env_seeds(self, num_envs: int) -> List[int]:
        """The first-reset seeds of this worker's ``num_envs`` envs (``ding_lite.utils.seed.env_seeds``)."""
        return seeding.env_seeds(self.seed, self.role, num_envs, self.rank, self.restarts, self.env_step)


def prepare_worker(spec: WorkerSpec) -> None:
    """Make a fresh process ready: the learner's import paths, registries, torch threads and seeds."""
    from ding_lite.utils import import_modules, set_seed

    for entry in spec.sys_path:  # at the end, as the learner has them: they never shadow an installed package
        if entry not in sys.path:
            sys.path.append(entry)
    for names, where in spec.imports:
        import_modules(names, where)
    apply_process_settings(spec.cfg, worker_threads(spec.cfg.torch_threads), warn=False)  # the learner warned
    set_seed(spec.process_seed())


def build_worker_policy(spec: WorkerSpec, field_name: str):
    from ding_lite.utils import POLICY_REGISTRY

    return POLICY_REGISTRY.get(spec.cfg.policy.type)(spec.cfg.policy, model=spec.model, enable_field=(field_name,))


def wait_for_weights(endpoint: Endpoint, model: torch.nn.Module) -> Optional[int]:
    """Block until weights newer than the last ``poll_weights`` returned arrive (the first: the learner publishes
    them before it starts workers), load them into ``model`` and return their version; None if stopping."""
    while not endpoint.stopping():
        got = endpoint.poll_weights()
        if got is not None:
            model.load_state_dict(got[1])
            return got[0]
        time.sleep(IDLE_SLEEP_S)
    return None


def to_numpy(tree: Any) -> Any:
    """Tensors -> NumPy arrays (they pickle as one buffer each, and need no torch reductions on the way)."""
    return tree_map(lambda x: x.numpy() if isinstance(x, torch.Tensor) else x, tree)


def from_numpy(tree: Any) -> Any:
    """NumPy arrays -> tensors sharing their memory (read-only arrays, as Ray hands them out, are copied first)."""
    return tree_map(lambda x: torch.from_numpy(np.require(x, requirements="W")) if isinstance(x, np.ndarray) else x,
                    tree)


class CollectorRole:
    """A collector worker's state between segments: its policy, vector env and weight version. The local backend
    drives it from a loop (``run_collector``), the Ray backend one ``segment`` per actor call."""

    def __init__(self, spec: WorkerSpec) -> None:
        from ding_lite.worker import SampleCollector

        prepare_worker(spec)
        self.spec = spec
        self.policy = build_worker_policy(spec, "collect")
        self.collector = SampleCollector(build_worker_env(spec, spec.cfg.env.collector_env_num, "collector"),
                                         self.policy.collect_mode)
        # the run's env steps, as a schedule over them sees it (DQN's epsilon): about this collector's times their number
        self.collector.env_step_scale = max(1, int(spec.cfg.parallel.collector_num or 1))
        self.version = -1

    def load(self, version: int, state: State) -> None:
        self.policy.model.load_state_dict(state)
        self.version = version

    def segment(self, poll_weights: Callable[[], Optional[Tuple[int, State]]] = lambda: None,
                stopping: Callable[[], bool] = lambda: False, wait_s: float = 0.0) -> Optional[Dict[str, Any]]:
        """Step the envs until a segment (``collector_env_num`` unrolls) is complete and return it as a message;
        newer weights from ``poll_weights`` are loaded between env steps. None if ``stopping()`` meanwhile.

        The segment carries the oldest weight version any of its steps used; warm-up steps (``warm_up_steps``
        of uniformly random actions, at a fresh start) come first."""
        from ding_lite.worker.collector import leading_dim

        collector, t0 = self.collector, time.perf_counter()
        samples, sync_s, oldest, start_step = None, 0.0, self.version, collector.envstep
        while samples is None:
            if stopping():
                return None
            t_sync = time.perf_counter()
            got = poll_weights()
            if got is not None:
                self.load(*got)
            sync_s += time.perf_counter() - t_sync
            samples = (collector.step(random_action=True) if collector.envstep < self.spec.warm_up_steps
                       else collector.step())
        return {
            "kind": "samples", "rank": self.spec.rank, "version": oldest, "data": to_numpy(samples),
            "warm_up": start_step < self.spec.warm_up_steps,
            "n": leading_dim(samples), "env_steps": collector.envstep - start_step,
            "episodes": collector.episodes.pop_finished(),
            "timing": {"collect_s": time.perf_counter() - t0 - sync_s, "sync_s": sync_s, "wait_s": wait_s},
        }

    def close(self) -> None:
        self.collector.close()


def run_collector(endpoint: Endpoint, spec: WorkerSpec) -> None:
    """Collect with the newest weights and send every finished segment (``collector_env_num`` unrolls) at once.

    As IMPALA's actors do, a collector sends each segment as soon as it is complete, not a whole
    ``policy.collect.n_sample`` (which sets only the replay ratio here): smaller messages are fresher. Room for a
    segment is reserved before it is collected, so a collector that has to wait for the learner waits with nothing
    in hand and then collects with the newest weights. Weights are picked up between env steps.

    Synchronous collection (``parallel.sync``): a segment acts with one weight version throughout, and the next
    waits for a newer one, which the learner publishes once it has trained on the round of segments.
    """
    role = CollectorRole(spec)
    sync = spec.cfg.parallel.sync  # resolved (a bool) before any worker starts: resolve_sync
    poll_weights = (lambda: None) if sync else endpoint.poll_weights
    try:
        version = wait_for_weights(endpoint, role.policy.model)
        if version is None:
            return
        role.version = version
        fresh = True  # the weights in hand have acted no segment yet
        while True:
            t_wait = time.perf_counter()
            if not endpoint.reserve():
                return
            if sync and not fresh:
                version = wait_for_weights(endpoint, role.policy.model)  # only a version newer than the last one
                if version is None:
                    return
                role.version = version
            fresh = False
            message = role.segment(poll_weights, endpoint.stopping, time.perf_counter() - t_wait)
            if message is None or not endpoint.send(message):
                return
    finally:
        role.close()


def build_worker_env(spec: WorkerSpec, num_envs: int, role: str):
    """The worker's vector env. An env that cannot be built is bad input, not a crash: any exception becomes an
    ``EnvBuildError`` (a UserError), which stops the run with its cause instead of restarting the worker into the
    same failure (``parallel.max_restarts`` times)."""
    from ding_lite.envs import make_vector_env

    try:
        return make_vector_env(spec.cfg.env, num_envs, spec.env_seeds(num_envs), role=role)
    except UserError:
        raise
    except Exception as err:  # noqa: BLE001  (re-raised as the user's error, with its type and message)
        name = spec.cfg.env.env_id or spec.cfg.env.type
        raise EnvBuildError(f"env '{name}' could not be built in {spec.role} worker {spec.rank}: "
                            f"{type(err).__name__}: {err}") from err


class EvaluatorRole:
    """An evaluator worker: its policy and eval envs; scores one weight snapshot per ``evaluate``."""

    def __init__(self, spec: WorkerSpec) -> None:
        from ding_lite.worker import Evaluator

        prepare_worker(spec)
        cfg = spec.cfg
        self.policy = build_worker_policy(spec, "eval")
        eval_env = build_worker_env(spec, cfg.env.evaluator_env_num, "evaluator")
        section = cfg.policy.eval.evaluator  # video_dir: set by the learner to <run_dir>/videos when video_every
        video = Evaluator.video_for(cfg, spec.seed, section.video_dir or "") if section.video_every else None
        self.evaluator = Evaluator(eval_env, self.policy.eval_mode, cfg.env.n_evaluator_episode, section.eval_freq,
                                   video, section.video_every)

    def evaluate(self, train_iter: int, state: State) -> Dict[str, Any]:
        """Score the weights of ``train_iter``; returns the message for the learner."""
        self.policy.model.load_state_dict(state)
        t0 = time.perf_counter()
        result = self.evaluator.eval(train_iter)
        return {"kind": "eval", "train_iter": train_iter, "result": result, "eval_s": time.perf_counter() - t0}

    def close(self) -> None:
        self.evaluator.close()


def run_evaluator(endpoint: Endpoint, spec: WorkerSpec) -> None:
    """Evaluate each weight version the learner sends here (its version is the train iteration) and report."""
    role = EvaluatorRole(spec)
    try:
        while not endpoint.stopping():
            got = endpoint.poll_weights()
            if got is None:
                time.sleep(IDLE_SLEEP_S)
                continue
            if not endpoint.send(role.evaluate(*got)):
                return
    finally:
        role.close()


ROLES = {"collector": run_collector, "evaluator": run_evaluator}


def run_role(endpoint: Endpoint, spec: WorkerSpec) -> None:
    """Run ``spec.role``; if it raises, report the error to the learner (best effort), then re-raise it, so the
    worker exits with it and the learner restarts the worker naming the cause."""
    try:
        ROLES[spec.role](endpoint, spec)
    except BaseException as err:
        endpoint.send_error({"kind": "error", "role": spec.role, "rank": spec.rank,
                             "error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()})
        raise

