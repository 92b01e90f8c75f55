"""The Ray transport: the same worker roles as Ray actors, on a local Ray instance or a cluster.

A small hub actor stands where the local backend has shared memory and pipes: it holds the newest weights of each
role (as object references, so a weight set is stored once in Ray's object store however many actors fetch it), the
stop flag, the collectors' shared credits, and the messages not yet taken by the learner. Worker code is unchanged:
``RayEndpoint`` implements the same ``Endpoint`` as ``LocalEndpoint``, and polls the hub without waiting (a
request is kept in flight and read when ready).
"""
import logging
import os
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from ding_lite.utils import UserError

from .roles import State, WorkerKey, WorkerSpec, run_role
from .weights import cpu_state

POLL_EVERY_S = 0.01  # a worker asks the hub for news at most this often (the hub serves every worker)
SEND_WAIT_S = 0.001
NEWS_POLL_S = 0.05  # the learner asks for evaluator results at most this often while it is busy training


def _import_ray():
    try:
        import ray
    except ImportError:
        raise UserError("parallel.backend='ray' needs Ray: pip install 'ding_lite[ray]' (or pip install ray), or use "
                        "the default backend 'local' (--backend local)") from None
    return ray


class Hub:
    """The meeting point of the learner and its workers (a Ray actor; plain Python inside)."""

    def __init__(self, queue_size: int) -> None:
        self.weights: Dict[str, Tuple[int, list]] = {}
        self.stop = False
        self.queue_size = queue_size
        self.untaken: Dict[int, int] = {}  # collector rank -> batches reserved, not yet taken
        self.messages: Dict[WorkerKey, List[Dict[str, Any]]] = {}

    def publish(self, role: str, version: int, state_ref: list) -> None:
        self.weights[role] = (version, state_ref)

    def poll(self, role: str, seen: int) -> Tuple[bool, Optional[Tuple[int, list]]]:
        """(stop flag, (version, [state ref]) if newer than ``seen``)."""
        got = self.weights.get(role)
        return self.stop, (got if got is not None and got[0] > seen else None)

    def acquire(self, rank: int) -> bool:
        if sum(self.untaken.values()) >= self.queue_size:
            return False
        self.untaken[rank] = self.untaken.get(rank, 0) + 1
        return True

    def put(self, role: str, rank: int, message: Dict[str, Any]) -> None:
        self.messages.setdefault((role, rank), []).append(message)

    def take(self, samples: bool) -> List[Dict[str, Any]]:
        out = []
        for (role, rank), queue in self.messages.items():
            if queue and (samples or role != "collector"):
                out.extend(queue)
                if role == "collector":
                    self.untaken[rank] = max(0, self.untaken.get(rank, 0) - sum(m["kind"] == "samples" for m in queue))
                queue.clear()
        return out

    def forget(self, role: str, rank: int) -> None:
        """A worker is being replaced: drop its untaken batches and credits."""
        self.messages.pop((role, rank), None)
        if role == "collector":
            self.untaken[rank] = 0

    def request_stop(self) -> None:
        self.stop = True


class RayEndpoint:
    """A worker's end of the Ray transport (see ``roles.Endpoint``)."""

    def __init__(self, hub, role: str, rank: int) -> None:
        self.ray = _import_ray()
        self.hub, self.role, self.rank = hub, role, rank
        self._seen = -1
        self._stop = False
        self._news: Optional[Tuple[int, list]] = None
        self._pending = None
        self._next_poll = 0.0

    def _refresh(self) -> None:
        """Read the hub's answer if it is in, and keep one request in flight; at most every POLL_EVERY_S (a
        ``ray.wait`` costs tens of microseconds, too much for every env step)."""
        now = time.monotonic()
        if now < self._next_poll:
            return
        self._next_poll = now + POLL_EVERY_S
        if self._pending is not None:
            ready, _ = self.ray.wait([self._pending], timeout=0)
            if not ready:
                return
            self._stop, news = self.ray.get(self._pending)
            self._pending = None
            if news is not None and news[0] > self._seen:
                self._news = news
        if self._pending is None:
            self._pending = self.hub.poll.remote(self.role, self._seen)

    def stopping(self) -> bool:
        self._refresh()
        return self._stop

    def poll_weights(self) -> Optional[Tuple[int, State]]:
        self._refresh()
        if self._news is None:
            return None
        version, (ref,) = self._news
        self._news = None
        self._seen = version
        return version, self.ray.get(ref)

    def reserve(self) -> bool:
        while not self.ray.get(self.hub.acquire.remote(self.rank)):
            if self.stopping():
                return False
            time.sleep(SEND_WAIT_S)
        return True

    def send(self, message: Dict[str, Any]) -> bool:
        self.hub.put.remote(self.role, self.rank, message)
        return True

    def send_error(self, message: Dict[str, Any]) -> None:
        try:
            self.ray.get(self.hub.put.remote(self.role, self.rank, message), timeout=5)
        except Exception:  # the hub may be gone; the actor's failure still tells the learner
            pass


class RoleActor:
    """Runs one worker role (a Ray actor; the same role functions as the local backend's processes)."""

    def run(self, hub, spec: WorkerSpec) -> None:
        run_role(RayEndpoint(hub, spec.role, spec.rank), spec)


def _user_paths() -> List[str]:
    """The learner's import paths outside the Python installation (the cwd, a config's directory, ...)."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return [p for p in sys.path if p and os.path.isdir(p)
            and not any(os.path.realpath(p).startswith(prefix) for prefix in prefixes)]


class RayBackend:
    """Starts, feeds, watches and stops the workers of one parallel run as Ray actors."""

    name = "ray"

    def __init__(self, pcfg, template: State) -> None:
        ray = self.ray = _import_ray()
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            kwargs: Dict[str, Any] = dict(include_dashboard=False, logging_level=logging.WARNING)
            if pcfg.ray_address is None:  # a local instance with a CPU for every collector and the learner
                kwargs.update(num_cpus=max(os.cpu_count() or 1, pcfg.collector_num + 1),
                              runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(_user_paths())}})
            try:
                ray.init(address=pcfg.ray_address, **kwargs)
            except ConnectionError as err:
                raise UserError(f"parallel.ray_address={pcfg.ray_address!r}: cannot connect to a Ray cluster there "
                                f"({err}); start one with `ray start --head`, or leave ray_address=None for a local "
                                f"Ray instance") from None
        self._hub = ray.remote(num_cpus=0)(Hub).remote(pcfg.queue_size)
        self._actor_cls = ray.remote(RoleActor)
        self._workers: Dict[WorkerKey, Tuple[Any, Any]] = {}  # key -> (actor, future of its run)
        self._errors: Dict[WorkerKey, str] = {}
        self._stopped = False
        self._next_news_poll = 0.0

    def start(self, spec: WorkerSpec) -> None:
        key = (spec.role, spec.rank)
        old = self._workers.pop(key, None)
        if old is not None:
            self.ray.kill(old[0])
        self._errors.pop(key, None)
        self.ray.get(self._hub.forget.remote(*key))
        actor = self._actor_cls.options(num_cpus=1 if spec.role == "collector" else 0,
                                        name=None).remote()
        self._workers[key] = (actor, actor.run.remote(self._hub, spec))

    def _publish(self, role: str, version: int, state: State) -> None:
        self._hub.publish.remote(role, version, [self.ray.put(cpu_state(state))])

    def publish(self, version: int, state: State) -> None:
        self._publish("collector", version, state)

    def request_eval(self, train_iter: int, state: State) -> None:
        self._publish("evaluator", train_iter, state)

    def poll(self, timeout: float = 0.0, samples: bool = True) -> List[Dict[str, Any]]:
        deadline = time.monotonic() + timeout
        if not samples and timeout == 0.0:  # only evaluator news is wanted: a round trip at most every 50 ms
            if deadline < self._next_news_poll:
                return []
            self._next_news_poll = deadline + NEWS_POLL_S
        while True:
            messages = self.ray.get(self._hub.take.remote(samples))
            for message in messages:
                if message["kind"] == "error":
                    self._errors[(message["role"], message["rank"])] = message["error"]
            if messages or time.monotonic() >= deadline:
                return messages
            time.sleep(0.002)

    def failed(self) -> List[Tuple[WorkerKey, str]]:
        if self._stopped:
            return []
        futures = {future: key for key, (_, future) in self._workers.items()}
        ready, _ = self.ray.wait(list(futures), num_returns=len(futures), timeout=0)
        out = []
        for future in ready:
            key = futures[future]
            try:
                self.ray.get(future)
                reason = "its actor returned"
            except Exception as err:  # RayTaskError (the role raised) or RayActorError (the actor died)
                reason = self._errors.get(key) or f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
            out.append((key, reason))
        return out

    def shutdown(self, timeout: float = 3.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            self._hub.request_stop.remote()
            futures = [future for _, future in self._workers.values()]
            if futures:
                self.ray.wait(futures, num_returns=len(futures), timeout=timeout)
            for actor, _ in self._workers.values():
                self.ray.kill(actor)
            self.ray.kill(self._hub)
        finally:
            self._workers.clear()
            if self._owns_ray:
                self.ray.shutdown()
