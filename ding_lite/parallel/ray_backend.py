"""The Ray transport: collectors and the evaluator as Ray actors, driven by the learner through actor calls.

The learner asks, the actors answer. Each ``collect`` call returns one segment (an ObjectRef; or
``parallel.segments_per_call`` of them); the learner keeps at most ``parallel.queue_size`` calls under way, counting the finished ones it has not taken yet, and ``ray.wait``s on
them when it wants samples. That bound is the backpressure: a collector whose answer lies untaken gets no new call.
Weights go out as one ``ray.put`` per version, passed to the calls by reference inside a list (so Ray does not
resolve it), and an actor fetches a version only when it is newer than the one it has. There is no hub or other
helper actor: the learner's process is the only part a run cannot lose.

Synchronous collection (``parallel.sync``, on-policy policies such as PPO): each collector gets one call per weight
version, one segment acted with that version alone; the learner trains on the round of segments and publishes the
next version, which sends the next round of calls. ``queue_size`` does not apply.

An actor that dies (its process killed, its node lost) fails its calls; ``failed`` reports it and the transport
restarts it, and Ray places the new actor wherever a CPU is free. A worker still unplaced after
``PLACEMENT_REPORT_S`` is reported once, naming the resource it waits for (``placement_news``).
"""
import contextlib
import logging
import os
import pickle
import signal
import subprocess
import sys
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from ding_lite.torch_utils.tree import tree_leaves
from ding_lite.utils import UserError

from .ray_reaper import OWNER_ENV, new_token, start_reaper, stop_reaper
from .roles import CollectorRole, EvaluatorRole, State, WorkerKey, WorkerSpec, from_numpy, to_numpy
from .weights import cpu_state

PLACEMENT_REPORT_S = 10.0  # a worker not started by then is reported (once), with the resources it waits for
NEWS_POLL_S = 0.02  # while training, the learner looks for evaluator news and started workers at most this often
CPUS = {"collector": 1, "evaluator": 0}  # Ray CPUs each worker asks for
# Weights up to this size go inside each call instead of through the object store: fetching a stored object costs
# a collector 3-5 ms on a busy 2-core machine (its owner, the learner, must answer), an inline argument nothing.
# Segments up to this size come back as one pickled bytes object (``_packed``).
INLINE_WEIGHTS_BYTES = 96 * 1024  # under Ray's own limit for inline arguments (100 KiB)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise UserError("parallel.backend='ray' needs Ray: pip install 'ding_lite[ray]' (or pip install ray), or use "
                        "the default backend 'local' (--backend local)") from None
    return ray


def _node_id() -> str:
    import ray
    return ray.get_runtime_context().get_node_id()


def _state_of(weights: list) -> State:
    """The state dict a call carries: ``[bytes]`` (its arrays pickled, inline), or ``[ObjectRef]`` of the arrays
    (fetched here)."""
    import ray
    arrays = pickle.loads(weights[0]) if isinstance(weights[0], bytes) else ray.get(weights[0])
    return from_numpy(arrays)


def _packed(message: Dict[str, Any]) -> Any:
    """A small segment as one pickled ``bytes``: Ray sends a bytes object for about half the cost of a dict of
    NumPy arrays, whose every array it serialises as a buffer of its own (taking a CartPole segment: 0.14 against
    0.24 ms in the learner). A large one (uint8 frames) stays a dict: Ray writes its arrays into the object store
    without this extra copy, and the learner maps them from there."""
    size = sum(a.nbytes for a in tree_leaves(message["data"]) if isinstance(a, np.ndarray))
    return pickle.dumps(message, protocol=5) if size <= INLINE_WEIGHTS_BYTES else message


def unpacked(message: Any) -> Dict[str, Any]:
    """The message ``_packed`` made."""
    return pickle.loads(message) if isinstance(message, bytes) else message


class RayCollector:
    """A collector actor: ``setup`` builds its policy and envs; each ``collect`` call returns one segment."""

    def setup(self, spec: WorkerSpec) -> str:
        """Build the worker; returns the id of the node it runs on."""
        self.role = CollectorRole(spec)
        self._idle_since = time.perf_counter()
        return _node_id()

    def collect(self, version: int, weights: list, n: int = 1) -> Any:
        """``n`` segments acted with weight ``version`` (``weights``: see ``RayBackend._weights_ref``): one packed
        message, or a list of ``n``."""
        t0 = time.perf_counter()
        fetch_s = 0.0
        if version != self.role.version:
            state = _state_of(weights)
            fetch_s = time.perf_counter() - t0
            self.role.load(version, state)
        sync_s = time.perf_counter() - t0
        messages = []
        for i in range(n):
            message = self.role.segment(wait_s=t0 - self._idle_since if i == 0 else 0.0)
            message["timing"]["sync_s"] = sync_s if i == 0 else 0.0
            message["timing"]["fetch_s"] = fetch_s if i == 0 else 0.0
            messages.append(_packed(message))
        self._idle_since = time.perf_counter()
        return messages[0] if n == 1 else messages

    def close(self) -> None:
        self.role.close()


class RayEvaluator:
    """The evaluator actor: ``setup`` builds it; each ``evaluate`` call scores one weight snapshot."""

    def setup(self, spec: WorkerSpec) -> str:
        self.role = EvaluatorRole(spec)
        return _node_id()

    def evaluate(self, train_iter: int, weights: list) -> Dict[str, Any]:
        return self.role.evaluate(train_iter, _state_of(weights))

    def close(self) -> None:
        self.role.close()


def failure_reason(err: BaseException) -> str:
    """``'<ErrorType>: message'`` of what a Ray call raised: the worker's own exception when its code raised (so a
    ``UserError`` keeps its name), else how the actor was lost."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {str(cause).splitlines()[0][:300] if str(cause) else ''}".rstrip(": ")
    text = str(err).strip().splitlines()
    detail = next((line.strip() for line in text if "died" in line or "lost" in line or "killed" in line),
                  text[0].strip() if text else "")
    return f"{type(err).__name__}: {detail[:300]}"


def _user_paths() -> List[str]:
    """The learner's import paths outside the Python installation (the cwd, a config's directory, ...)."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return [p for p in sys.path if p and os.path.isdir(p)
            and not any(os.path.realpath(p).startswith(prefix) for prefix in prefixes)]


class _Worker:
    """The learner's record of one actor."""

    def __init__(self, actor, spec: WorkerSpec, setup_ref) -> None:
        self.actor, self.spec, self.setup_ref = actor, spec, setup_ref
        self.node: Optional[str] = None  # set when its setup returned: it runs
        self.started = time.monotonic()
        self.calls: List[Any] = []  # collect/evaluate calls under way or finished and not taken
        self.reported = False  # its placement was reported
        self.dead = False
        self.called_version: Optional[int] = None  # synchronous collection: the version of its last collect call


class RayBackend:
    """Starts, feeds, watches and stops the workers of one parallel run as Ray actors."""

    name = "ray"

    def __init__(self, pcfg, template: State) -> None:
        ray = self.ray = _import_ray()
        self._owns_ray = not ray.is_initialized()
        self._reaper = _init_ray(ray, pcfg) if self._owns_ray else None
        self.queue_size = pcfg.queue_size
        self.segments_per_call = pcfg.segments_per_call
        self.sync = bool(pcfg.sync)  # resolved (a bool) by config.parallel.resolve_sync
        self._classes = {"collector": ray.remote(RayCollector), "evaluator": ray.remote(RayEvaluator)}
        self._workers: Dict[WorkerKey, _Worker] = {}
        self._failures: List[Tuple[WorkerKey, str]] = []
        self._weights: Optional[Tuple[int, list]] = None  # newest (version, [ref])
        self._eval_request: Optional[Tuple[int, list]] = None  # newest (train_iter, [ref]) not sent yet
        self._eval_sent: Optional[Tuple[int, list]] = None  # the one the evaluator is scoring
        self.placements: Dict[str, List[str]] = {}  # worker -> the node ids it ran on, in order
        self._news: List[str] = []  # lines for the run's log (placements)
        self._stopped = False
        self._next_news = 0.0
        self._early: Dict[WorkerKey, Any] = {}  # actors created by ``prestart``, not set up yet

    def prestart(self, counts: Dict[str, int]) -> None:
        """Create the actors of ``counts`` (role -> how many) now, before their specs exist: each process starts and
        imports ding_lite and torch while the learner builds its own parts; ``start`` then only sets them up."""
        for role, n in counts.items():
            for rank in range(n):
                self._early[(role, rank)] = self._new_actor(role)

    def _new_actor(self, role: str):
        options: Dict[str, Any] = dict(num_cpus=CPUS[role], max_restarts=0, max_concurrency=1)
        if role == "collector":
            options["scheduling_strategy"] = "SPREAD"
        return self._classes[role].options(**options).remote()

    # ---- workers -------------------------------------------------------------------------------------------------
    def start(self, spec: WorkerSpec) -> None:
        """Start (or replace) the actor ``(spec.role, spec.rank)``; collectors spread over the nodes."""
        key = (spec.role, spec.rank)
        old = self._workers.pop(key, None)
        if old is not None:
            self._kill(old)
        actor = self._early.pop(key, None) or self._new_actor(spec.role)
        self._workers[key] = _Worker(actor, spec, actor.setup.remote(spec))

    def _kill(self, worker: _Worker) -> None:
        worker.dead = True
        try:
            self.ray.kill(worker.actor, no_restart=True)
        except Exception:  # already gone
            pass

    def live(self, role: str) -> int:
        """Workers of ``role`` that are running (set up, not failed)."""
        return sum(1 for (r, _), w in self._workers.items() if r == role and w.node is not None and not w.dead)

    def _fail(self, key: WorkerKey, worker: _Worker, err: BaseException) -> None:
        if not worker.dead:
            worker.dead = True
            self._failures.append((key, failure_reason(err)))

    def _check_setups(self) -> None:
        pending = {w.setup_ref: (k, w) for k, w in self._workers.items() if w.node is None and not w.dead}
        if not pending:
            return
        ready, _ = self.ray.wait(list(pending), num_returns=len(pending), timeout=0)
        for ref in ready:
            key, worker = pending[ref]
            try:
                worker.node = self.ray.get(ref)
            except Exception as err:  # noqa: BLE001  (the role's error, or the actor lost while starting)
                self._fail(key, worker, err)
                continue
            name = f"{key[0]}{key[1]}"
            self.placements.setdefault(name, []).append(worker.node)
            self._news.append(f"{key[0]} {key[1]} started on node {worker.node[:12]}")
            if key[0] == "evaluator":
                self._submit_eval()

    def placement_news(self) -> List[str]:
        """Lines for the log since the last call: workers started, and workers still unplaced after
        ``PLACEMENT_REPORT_S`` with the resource they wait for (reported once each)."""
        now = time.monotonic()
        for (role, rank), worker in self._workers.items():
            if worker.node is None and not worker.dead and not worker.reported \
                    and now - worker.started >= PLACEMENT_REPORT_S:
                worker.reported = True
                need = CPUS[role]
                free = self.ray.available_resources().get("CPU", 0.0)
                total = self.ray.cluster_resources().get("CPU", 0.0)
                if free < need:
                    self._news.append(
                        f"{role} {rank} cannot be placed: it needs {need} CPU and the Ray cluster has {free:g} of "
                        f"{total:g} CPUs free; the run goes on with {self.live(role)} {role}(s) and starts it when "
                        f"a CPU frees up (add a node, or lower parallel.collector_num)")
                else:
                    self._news.append(f"{role} {rank} has not started after {now - worker.started:.0f} s "
                                      f"(the cluster has {free:g} CPUs free: still building its env?)")
        news, self._news = self._news, []
        return news

    # ---- weights and evaluations ---------------------------------------------------------------------------------
    def publish(self, version: int, state: State) -> None:
        """New collector weights: a CPU copy now; put into Ray's object store (once) when a call first needs it,
        so versions no collector is asked to use cost no ``ray.put``."""
        self._weights = (version, cpu_state(state))
        self._submit()

    def _weights_ref(self) -> Tuple[int, list]:
        """``(version, [weights])`` for a call: the state dict's NumPy arrays pickled into one bytes object when they
        are small (it travels inside the call, as Ray sends any small argument; one bytes object costs a call 0.14
        ms to send against 0.33 for the dict of arrays, measured on 2 otherwise idle CPU cores), else one ``ray.put``
        of them per version (the reference goes in the list, so Ray does not fetch it for the call; the actor fetches
        it only when newer)."""
        version, weights = self._weights
        if not isinstance(weights, list):  # NumPy arrays: Ray reads them without a copy (torch tensors: ~5x slower)
            arrays = to_numpy(weights)
            small = sum(a.nbytes for a in arrays.values()) <= INLINE_WEIGHTS_BYTES
            weights = [pickle.dumps(arrays, protocol=5) if small else self.ray.put(arrays)]
            self._weights = (version, weights)
        return version, weights

    def request_eval(self, train_iter: int, state: State) -> None:
        """Weights for the evaluator to score (answered through ``poll``; a newer request replaces one not sent)."""
        self._eval_request = (train_iter, [self.ray.put(to_numpy(cpu_state(state)))])  # evaluations are rare
        self._submit_eval()

    def _submit_eval(self) -> None:
        worker = self._workers.get(("evaluator", 0))
        if self._eval_request is None or worker is None or worker.node is None or worker.dead or worker.calls:
            return
        worker.calls.append(worker.actor.evaluate.remote(*self._eval_request))
        self._eval_sent, self._eval_request = self._eval_request, None

    def _submit(self) -> None:
        """Keep ``queue_size`` collect calls under way (finished and untaken ones count), spread over the running
        collectors, fewest first."""
        if self._weights is None:
            return
        collectors = [w for (role, _), w in self._workers.items()
                      if role == "collector" and w.node is not None and not w.dead]
        if not collectors:
            return
        if self.sync:  # one call per collector and version: the round the learner trains on next (module docstring)
            for worker in collectors:
                if not worker.calls and worker.called_version != self._weights[0]:
                    worker.called_version = self._weights[0]
                    worker.calls.append(worker.actor.collect.remote(*self._weights_ref(), 1))
            return
        under_way = sum(len(w.calls) for w in collectors)
        while under_way < self.queue_size:
            worker = min(collectors, key=lambda w: len(w.calls))
            worker.calls.append(worker.actor.collect.remote(*self._weights_ref(), self.segments_per_call))
            under_way += 1

    # ---- messages ------------------------------------------------------------------------------------------------
    def poll(self, timeout: float = 0.0, samples: bool = True) -> List[Dict[str, Any]]:
        """Finished segments (only if ``samples``; waiting up to ``timeout`` s for one) and evaluation results.
        Segments left untaken keep their collectors without a new call (backpressure)."""
        now = time.monotonic()
        out: List[Dict[str, Any]] = []
        if now >= self._next_news:  # each check is a ray.wait (tens of microseconds): not at every call
            self._next_news = now + NEWS_POLL_S
            self._check_setups()
            self._take(("evaluator",), 0.0, out)
        if samples:
            self._take(("collector",), timeout, out)
            self._submit()
        return out

    def _take(self, roles: Tuple[str, ...], timeout: float, out: List[Dict[str, Any]]) -> None:
        owners = {ref: (k, w) for k, w in self._workers.items() if k[0] in roles and not w.dead for ref in w.calls}
        if not owners:
            if timeout:
                time.sleep(timeout)
            return
        refs = list(owners)
        # one ray.wait: every call finished by now, or (none yet) the first to finish within the timeout
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout, fetch_local=False)
        if ready and len(refs) > 1:
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0, fetch_local=False)
        for ref in ready:
            key, worker = owners[ref]
            if worker.dead:
                continue
            worker.calls.remove(ref)
            try:
                answer = self.ray.get(ref)  # one segment's message, or a list (segments_per_call > 1)
                out.extend(unpacked(m) for m in (answer if isinstance(answer, list) else [answer]))
                if key[0] == "evaluator":
                    self._eval_sent = None
            except Exception as err:  # noqa: BLE001  (the role raised, or the actor died)
                self._fail(key, worker, err)
        if "evaluator" in roles:
            self._submit_eval()

    def failed(self) -> List[Tuple[WorkerKey, str]]:
        """Workers lost since the last call (their error, or how the actor died); the transport restarts them."""
        if self._stopped:
            return []
        self._check_setups()
        failures, self._failures = self._failures, []
        for key, _ in failures:
            worker = self._workers.get(key)
            if worker is not None:
                worker.calls.clear()
            if key[0] == "evaluator" and self._eval_request is None:  # its successor is asked the same
                self._eval_request, self._eval_sent = self._eval_sent, None
        return failures

    # ---- the end -------------------------------------------------------------------------------------------------
    def shutdown(self, timeout: float = 3.0) -> None:
        """Kill every actor of the run (their envs close with their processes). The run's own Ray instance lives on
        until ``release``, so that the run's last evaluation and result.json do not wait for its teardown."""
        if self._stopped:
            return
        self._stopped = True
        actors = [w.actor for w in self._workers.values()] + list(self._early.values())
        self._workers.clear()
        self._early.clear()
        for actor in actors:
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # already gone
                pass

    def release(self) -> None:
        """End the run's own Ray instance (after ``shutdown``); an instance the run connected to stays."""
        self.shutdown()
        if self._owns_ray and self.ray.is_initialized():
            self._owns_ray = False
            self.ray.shutdown()
        if self._reaper is not None:
            stop_reaper(self._reaper)
            self._reaper = None


_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"
# Ray's switch for clusters of several machines on macOS and Windows; "0" makes a node take the loopback address
SINGLE_MACHINE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


class _QuietTokenNotice(logging.Filter):
    """Drops Ray's notice that a new local instance uses token authentication (its default), printed on every
    run's private instance; Ray's other warnings pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Token authentication is enabled")


@contextlib.contextmanager
def _loopback_node(ray) -> Iterator[None]:
    """Within the block, a Ray instance started here takes the loopback address as its node IP, so its GCS, raylet,
    agents and workers listen on 127.0.0.1 only. Ray does so for its single-machine clusters (``ENABLE_RAY_CLUSTER``
    off, as on macOS and Windows); on Linux it would use the address of the network interface, and its servers then
    listen on every interface (``::``). ``ray.init(_node_ip_address='127.0.0.1')`` does not help: Ray replaces a
    loopback address with that of the interface. The flag is read once, when ray is imported: it is set for the
    block, in the environment (for the processes the instance starts) and in the imported module."""
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    before = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    if constants is not None:
        constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if constants is not None:
            constants.ENABLE_RAY_CLUSTER = before


def _init_ray(ray, pcfg) -> Optional[subprocess.Popen]:
    """Connect to ``parallel.ray_address``, or start a private local instance (``address='local'``: never another
    cluster running on this machine), bound to the loopback address (``_loopback_node``) and, with Ray >= 2.59,
    with token authentication on; a private instance comes with its reaper (returned; ``ray_reaper.py``), which
    kills the instance's processes when this process releases it or dies. Ray's ``init`` installs its own SIGTERM
    handler (exit 15 without a word); the handlers in place before it are put back, so SIGTERM and Ctrl-C stop the
    run as under the local backend."""
    kwargs: Dict[str, Any] = dict(include_dashboard=False, logging_level=logging.WARNING)
    environ = {}
    private = pcfg.ray_address is None
    if private:  # a CPU for every collector, whatever this machine has
        kwargs.update(address="local", num_cpus=max(os.cpu_count() or 1, pcfg.collector_num + 1))
        # The learner's import paths reach the workers through the environment their raylet inherits, not a
        # runtime_env: a worker with a runtime_env cannot be one of the Python processes Ray starts ahead, so
        # every actor would wait for a fresh one (about 0.6 s more per actor on 2 cores).
        paths = _user_paths() + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        token = new_token()
        environ = {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)), SINGLE_MACHINE_ENV: "0", OWNER_ENV: token}
    else:
        kwargs.update(address=pcfg.ray_address)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    before = {key: os.environ.get(key) for key in environ}
    os.environ.update(environ)
    quiet = _QuietTokenNotice() if private else None
    if quiet is not None:
        logging.getLogger(_TOKEN_LOGGER).addFilter(quiet)
    reaper = start_reaper(token) if private else None  # first: a learner killed during init leaves nothing either
    try:
        with _loopback_node(ray) if private else contextlib.nullcontext():
            ray.init(**kwargs)
    except BaseException as err:
        if reaper is not None:
            stop_reaper(reaper)
        if not isinstance(err, ConnectionError):
            raise
        raise UserError(f"parallel.ray_address={pcfg.ray_address!r}: cannot connect to a Ray cluster there ({err}); "
                        f"start one with `ray start --head`, or leave ray_address=None for a private local Ray "
                        f"instance") from None
    finally:
        if quiet is not None:
            logging.getLogger(_TOKEN_LOGGER).removeFilter(quiet)
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)
    return reaper
