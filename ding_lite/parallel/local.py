"""The one-machine transport: spawned worker processes, weights in shared memory, one pipe per worker.

Each worker sends whole batches through its own pipe (one pickle per batch of ``n_sample`` samples, NumPy arrays in
one buffer each; never a pickle per transition). Flow control is by credit, shared by all collectors: they count the
batches reserved (before collecting them) and the learner the batches it has taken, and a collector that finds
``queue_size`` batches reserved or untaken waits before collecting another. The learner takes batches only when it can train on them, so the bound holds the
policy lag down however many collectors there are. Weights come
back through ``SharedWeights`` (shared memory, sequence lock), so a worker picks up a new version with one memory
copy and never waits for it.

A worker that dies in the middle of a message cannot hang the learner: the learner closes its copy of each pipe's
write end, so a dead writer reads as end-of-file.
"""
import multiprocessing
import signal
import time
from typing import Any, Dict, List, Optional, Tuple


from ding_lite.utils.parent_death import die_with_parent
from ding_lite.utils.start_method import process_context

from .roles import ROLES, State, WorkerKey, WorkerSpec, run_role
from .weights import SharedWeights

PARENT_CHECK_S = 0.5  # how often a worker checks that the learner process is still alive
SEND_WAIT_S = 0.0005


class Credits:
    """Sample batches reserved by each collector and taken by the learner; a collector may reserve while the total
    reserved and untaken is below ``limit``. Each counter has one writer (collector ``rank``, or the learner), so no lock is
    needed; two collectors sending at the same moment may exceed the limit by one batch each."""

    def __init__(self, ctx, n: int, limit: int) -> None:
        self.sent = ctx.RawArray("q", n)
        self.taken = ctx.RawArray("q", n)
        self.limit = limit

    def available(self) -> bool:
        return sum(self.sent) - sum(self.taken) < self.limit

    def reset(self, rank: int) -> None:
        """Forget a dead collector's batches (its pipe is discarded with them)."""
        self.sent[rank] = self.taken[rank] = 0


class LocalEndpoint:
    """A worker's end: the shared weights of its role, its pipe, the shared credits and the stop flag."""

    def __init__(self, weights: SharedWeights, conn, credits: Optional[Credits], stop, rank: int) -> None:
        self.weights, self.conn, self.credits, self.stop, self.rank = weights, conn, credits, stop, rank
        self._seen = -1
        self._next_parent_check = 0.0
        self._parent_gone = False

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_seen=-1, _next_parent_check=0.0, _parent_gone=False)
        return state

    def stopping(self) -> bool:
        if self.stop.value or self._parent_gone:
            return True
        now = time.monotonic()
        if now >= self._next_parent_check:
            self._next_parent_check = now + PARENT_CHECK_S
            parent = multiprocessing.parent_process()
            self._parent_gone = parent is not None and not parent.is_alive()
        return self._parent_gone

    def poll_weights(self) -> Optional[Tuple[int, State]]:
        got = self.weights.read_if_newer(self._seen)
        if got is not None:
            self._seen = got[0]
        return got

    def reserve(self) -> bool:
        while not self.credits.available():
            if self.stopping():
                return False
            time.sleep(SEND_WAIT_S)
        self.credits.sent[self.rank] += 1
        return True

    def send(self, message: Dict[str, Any]) -> bool:
        self.conn.send(message)
        return True

    def send_error(self, message: Dict[str, Any]) -> None:
        """Best effort, outside flow control: the worker is about to exit."""
        try:
            self.conn.send(message)
        except Exception:  # the learner may be gone; the exit code still tells
            pass


def _process_main(endpoint: LocalEndpoint, spec: WorkerSpec) -> None:
    """Entry point of a spawned worker: run its role; on an error, tell the learner, then exit with it. The worker
    dies with the learner even while stuck in an env's step (``die_with_parent``)."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the learner, which stops every worker
    try:
        run_role(endpoint, spec)
    finally:
        endpoint.conn.close()


class _Worker:
    def __init__(self, process, reader) -> None:
        self.process, self.reader = process, reader
        self.broken: Optional[str] = None  # why its pipe stopped working
        self.error: Optional[str] = None  # the error it reported

    def exit_reason(self) -> str:
        if self.error:
            return self.error
        code = self.process.exitcode
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return self.broken or f"exited with code {code}"


class LocalBackend:
    """Starts, feeds, watches and stops the worker processes of one parallel run on this machine."""

    name = "local"

    def __init__(self, collector_num: int, queue_size: int, template: State) -> None:
        self._ctx = process_context(preload=[__name__])
        self._stop = self._ctx.RawValue("b", 0)
        self._weights = {role: SharedWeights(template, self._ctx) for role in ROLES}
        self._credits = Credits(self._ctx, collector_num, queue_size)
        self._workers: Dict[WorkerKey, _Worker] = {}

    # ---- the learner's side of the transport --------------------------------------------------------------------
    def start(self, spec: WorkerSpec) -> int:
        """Start (or restart) the worker ``(spec.role, spec.rank)``; returns its pid."""
        key = (spec.role, spec.rank)
        old = self._workers.pop(key, None)
        if old is not None:
            _stop_process(old.process, 0.0)
            old.reader.close()
        reader, writer = self._ctx.Pipe(duplex=False)
        credits = None
        if spec.role == "collector":
            credits = self._credits
            credits.reset(spec.rank)
        endpoint = LocalEndpoint(self._weights[spec.role], writer, credits, self._stop, spec.rank)
        process = self._ctx.Process(target=_process_main, args=(endpoint, spec), name=f"ding_lite-{spec.role}-{spec.rank}")
        process.start()
        writer.close()  # only the worker writes; a dead worker then reads as EOF instead of a hang
        self._workers[key] = _Worker(process, reader)
        return process.pid

    def publish(self, version: int, state: State) -> None:
        """New collector weights; collectors pick them up at their next env step."""
        self._weights["collector"].write(version, state)

    def request_eval(self, train_iter: int, state: State) -> None:
        """Weights for the evaluator to score (it reports ``train_iter`` with the result)."""
        self._weights["evaluator"].write(train_iter, state)

    def poll(self, timeout: float = 0.0, samples: bool = True) -> List[Dict[str, Any]]:
        """Every message waiting from the workers (from the evaluator only, unless ``samples``); waits up to
        ``timeout`` seconds for the first one. Unread sample batches hold their collector back (its credit)."""
        deadline = time.monotonic() + timeout
        while True:
            messages = []
            for (role, rank), worker in self._workers.items():
                if samples or role != "collector":
                    self._drain(worker, rank, messages)
            if messages or time.monotonic() >= deadline:
                return messages
            time.sleep(0.0005)

    def _drain(self, worker: _Worker, rank: int, out: List[Dict[str, Any]]) -> None:
        if worker.broken:
            return
        try:
            while worker.reader.poll():
                message = worker.reader.recv()
                if message["kind"] == "samples":
                    self._credits.taken[rank] += 1
                elif message["kind"] == "error":
                    worker.error = message["error"]
                out.append(message)
        except (EOFError, OSError) as err:
            worker.broken = f"its pipe closed ({type(err).__name__})"

    def failed(self) -> List[Tuple[WorkerKey, str]]:
        """Workers that ended (crashed, were killed) while the run goes on, with the reason."""
        if self._stop.value:
            return []
        out = []
        for key, worker in self._workers.items():
            if not worker.process.is_alive():
                self._drain(worker, key[1], [])  # its last words: the error it reported
                out.append((key, worker.exit_reason()))
        return out

    def pids(self) -> Dict[WorkerKey, int]:
        return {key: w.process.pid for key, w in self._workers.items()}

    def shutdown(self, timeout: float = 3.0) -> None:
        """Ask every worker to stop; after ``timeout`` s terminate (then kill) the ones still running."""
        self._stop.value = 1
        deadline = time.monotonic() + timeout
        while any(w.process.is_alive() for w in self._workers.values()) and time.monotonic() < deadline:
            self.poll()  # keep reading so no worker is stuck sending
            time.sleep(0.01)
        for worker in self._workers.values():
            _stop_process(worker.process, 0.0)
            worker.reader.close()
        self._workers.clear()


def _stop_process(process, grace: float) -> None:
    process.join(grace)
    if process.is_alive():
        process.terminate()
        process.join(2.0)
    if process.is_alive():
        process.kill()
        process.join(2.0)
