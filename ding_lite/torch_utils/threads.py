"""How many CPU threads torch's matmuls get: ``torch_threads='auto'`` picks it from the network width and the cores.

The rule: one thread for networks narrower than ``WIDE`` units or matmuls of fewer than ``ROWS`` rows (a second
thread costs more in hand-off than it saves there); otherwise every core this process may use, up to
``MAX_AUTO_THREADS``. A conv encoder (a conv ``model.encoder_type``, or 'auto' on an image leaf of
``model.obs_space``) counts as wide: its convolutions are the bulk of the work.

The rule assumes free cores. On a shared machine torch's OpenMP threads spin-wait at every barrier while a busy
neighbour holds a core, and a second thread can make an update several times slower. So where the rule gives a
learner more than one thread, ``ThreadTuner`` decides in the run: it times updates on one thread, reads from
/proc/stat how many CPUs other processes leave idle, tries the rule's count only if that many are free, and keeps
the faster count (the fewer threads within 5%); it checks again after 5 s, backing off to 80 s while the answer
holds, and at once when updates become 1.5x slower than when chosen. ``available_cores`` also honours a cgroup CPU
quota (``cpu.max``), which containers set without changing the affinity mask. The measurements behind the rule and
the tuner: benchmarks/studies/threads_contention.py and benchmarks/studies/learner_costs.md#torch-threads-on-a-shared-machine.
"""
import collections
import math
import os
import statistics
import time
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Tuple

WIDE = 128  # units in the widest hidden layer from which a second thread pays
ROWS = 128  # rows per matmul (batch_size x unroll_len) from which a second thread pays
MAX_AUTO_THREADS = 4


def available_cores(cgroup_root: str = "/sys/fs/cgroup") -> int:
    """CPU cores this process may run on: its affinity mask (which job schedulers set), capped by a cgroup CPU quota
    (which containers set: ``docker --cpus=1`` leaves every core in the mask but throttles the process to one)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota(cgroup_root)
    return max(1, min(cores, math.floor(quota))) if quota is not None else cores


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> Optional[float]:
    """The cgroup's CPU quota in cores (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``), None
    where there is none or it cannot be read."""
    try:
        with open(os.path.join(root, "cpu.max")) as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(root, "cpu", "cpu.cfs_quota_us")) as f:
            quota = int(f.read())
        with open(os.path.join(root, "cpu", "cpu.cfs_period_us")) as f:
            period = int(f.read())
        return None if quota <= 0 or period <= 0 else quota / period
    except (OSError, ValueError):
        return None


def widest_layer(model_cfg: Mapping[str, Any]) -> int:
    """The largest hidden size named in a model section (keys containing 'hidden_size': an int or a list)."""
    widths = [0]
    for key, value in model_cfg.items():
        if "hidden_size" in str(key):
            values = value if isinstance(value, (list, tuple)) else [value]
            widths += [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    return max(widths)


def auto_threads(policy_cfg: Mapping[str, Any], cores: int) -> int:
    """The thread count ``torch_threads='auto'`` gives a learner on ``cores`` free cores (see the module doc)."""
    rows = int(policy_cfg["learn"]["batch_size"]) * int(policy_cfg["unroll_len"])
    from ding_lite.torch_utils.obs_encoder import has_conv  # lazy, like the module's torch import
    conv = has_conv(policy_cfg["model"].get("encoder_type", "mlp"), policy_cfg["model"].get("obs_space"))
    if (widest_layer(policy_cfg["model"]) < WIDE and not conv) or rows < ROWS:
        return 1
    return max(1, min(cores, MAX_AUTO_THREADS))


def worker_threads(setting) -> int:
    """A parallel collector's or evaluator's thread count: under 'auto' one (acting is one small forward at a time,
    and the cores go to the processes); a number is the user's choice."""
    return 1 if setting == "auto" else int(setting)


def learner_tuner(setting) -> Optional["ThreadTuner"]:
    """What times a learner's updates: under 'auto', with torch set to more than one thread (by ``auto_threads``), a
    ``ThreadTuner`` between 1 and that count; otherwise None (a number is the user's choice, one thread is final)."""
    import torch
    threads = torch.get_num_threads()
    return ThreadTuner((1, threads)) if setting == "auto" and threads > 1 else None


def threads_description(setting) -> str:
    """The run's first log line's words on threads: what torch has now, or under 'auto' what the learner picks from."""
    import torch
    threads = torch.get_num_threads()
    if setting == "auto" and threads > 1:
        return f"1 or {threads} torch threads, whichever trains faster (torch_threads='auto')"
    return f"{threads} torch thread(s), torch_threads={setting!r}"


def cpu_counters() -> Optional[Tuple[int, float, float]]:
    """(CPUs this process may run on, CPU-seconds the machine has spent busy on them, CPU-seconds this process has
    used), both cumulative, from /proc/stat and times(2); None where /proc/stat cannot be read (not Linux)."""
    try:
        mask = os.sched_getaffinity(0)
        tick = os.sysconf("SC_CLK_TCK")
        busy = 0
        with open("/proc/stat") as f:
            for line in f:
                if not line.startswith("cpu"):
                    break
                name, *fields = line.split()
                if name == "cpu" or int(name[3:]) not in mask:
                    continue
                values = [int(x) for x in fields[:8]]  # user nice system idle iowait irq softirq steal
                busy += sum(values) - values[3] - values[4]
    except (AttributeError, OSError, ValueError):
        return None
    own = os.times()
    return len(mask), busy / tick, own.user + own.system


class ThreadTuner:
    """Under ``torch_threads='auto'``, a learner's thread count chosen by timing its updates (see the module doc).

    ``run(fn, *args)`` runs one update at the thread count the tuner picks and times it. ``choices`` are the thread
    counts to try (1 and the rule's count). A check times ``probe_updates`` updates at each count, fewest threads first
    (and those for at least ``min_window_s``); a count of n > 1 is tried only if the CPUs that other processes left
    free during that time (``counters``, by default ``cpu_counters``) are at least n - 0.5, and its turn ends at the
    first update ``abort`` times slower than the best so far. The first update at a count is not timed (warm-up).
    ``set_threads``, ``clock`` and ``counters`` are torch.set_num_threads, time.perf_counter and ``cpu_counters``
    unless given (tests give fakes)."""

    def __init__(self, choices: Sequence[int], set_threads: Optional[Callable[[int], None]] = None,
                 clock: Callable[[], float] = time.perf_counter,
                 counters: Optional[Callable[[], Optional[Tuple[int, float, float]]]] = cpu_counters,
                 probe_updates: int = 3, min_window_s: float = 0.25, recheck_s: float = 5.0,
                 max_recheck_s: float = 80.0, slowdown: float = 1.5, abort: float = 2.0, margin: float = 1.05) -> None:
        self.choices = sorted(set(int(c) for c in choices))
        if not self.choices or self.choices[0] < 1:
            raise ValueError(f"thread counts must be >= 1, got {list(choices)}")
        if set_threads is None:
            import torch
            set_threads = torch.set_num_threads
        self._set_threads, self._clock, self._counters = set_threads, clock, counters or (lambda: None)
        self.probe_updates, self.min_window_s = probe_updates, min_window_s
        self.recheck_s, self.max_recheck_s = recheck_s, max_recheck_s
        self.slowdown, self.abort, self.margin = slowdown, abort, margin
        self.current = self.choices[0]
        self.updates: Dict[int, int] = {c: 0 for c in self.choices}  # updates run at each thread count
        self.probes = 0  # checks made; the latest ones' medians (s per update), free CPUs and choices:
        self.decisions: Deque[Dict[str, Any]] = collections.deque(maxlen=100)
        self._applied: Optional[int] = None
        self._warm: set = set()
        self._interval = recheck_s
        self._next_check = math.inf
        self._baseline = math.inf
        self._recent: List[float] = []
        self._start_probe()
        self.apply()  # everything before the first check (evaluation, collection) runs on the fewest threads

    def apply(self) -> None:
        """Set torch's threads to the current choice (at creation, and after other code changed them)."""
        self._set_threads(self.current)
        self._applied = self.current

    @property
    def probing(self) -> bool:
        return bool(self._queue)

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        threads = self._threads_for_next_update()
        if threads != self._applied:
            self._set_threads(threads)
            self._applied = threads
        start = self._clock()
        out = fn(*args, **kwargs)
        self._record(threads, self._clock() - start)
        return out

    # ---- a check -------------------------------------------------------------------------------------------------
    def _start_probe(self) -> None:
        self._queue = list(self.choices)  # fewest threads first: never the catastrophe, and they set the bar
        self._gated: set = set()  # counts above the fewest that the free CPUs let this check try
        self._times: Dict[int, List[float]] = {c: [] for c in self.choices}
        self._free: Optional[float] = None
        self._window = (self._clock(), self._counters())

    def _free_cpus(self) -> Optional[float]:
        """CPUs that other processes left idle since the check began (None where that cannot be read)."""
        (t0, before), after = self._window, self._counters()
        elapsed = self._clock() - t0
        if before is None or after is None or elapsed <= 0:
            return None
        others = (after[1] - before[1]) - (after[2] - before[2])  # busy CPU-seconds not ours
        return max(0.0, after[0] - max(0.0, others) / elapsed)

    def _threads_for_next_update(self) -> int:
        while self._queue:
            threads = self._queue[0]
            if threads == self.choices[0] or self._times[threads] or threads in self._gated:
                return threads
            self._free = self._free_cpus()  # the first update of a count above the fewest: is there room for it?
            if self._free is None or self._free >= threads - 0.5:
                self._gated.add(threads)
                return threads
            self._queue.pop(0)  # busy: not tried (this costs nothing, so it does not delay the next check)
            if not self._queue:
                self._decide()
        return self.current

    def _record(self, threads: int, seconds: float) -> None:
        self.updates[threads] += 1
        if self._queue:
            others = [statistics.median(t) for c, t in self._times.items() if t and c != threads]
            losing = bool(others) and seconds > self.abort * min(others)
            if threads not in self._warm:  # thread pool start-up, first allocations: not the steady state, so the
                self._warm.add(threads)    # update is repeated, unless it lost clearly even so
                if not losing:
                    return
            self._times[threads].append(seconds)
            enough = len(self._times[threads]) >= self.probe_updates and (
                threads != self.choices[0] or self._clock() - self._window[0] >= self.min_window_s)
            if losing or enough:
                self._queue.pop(0)
                if not self._queue:
                    self._decide()
            return
        self._recent = (self._recent + [seconds])[-self.probe_updates:]
        contended = (self.current > self.choices[0] and len(self._recent) == self.probe_updates
                     and statistics.median(self._recent) > self.slowdown * self._baseline)
        if self._clock() >= self._next_check or contended:
            self._start_probe()

    def _decide(self) -> None:
        medians = {c: statistics.median(t) for c, t in self._times.items() if t}
        best = min(medians.values())
        chosen = min(c for c, m in medians.items() if m <= best * self.margin)  # fewer threads on a near tie
        tried_more = any(c > self.choices[0] for c in medians)
        if self.probes and chosen == self.current and tried_more:
            self._interval = min(2 * self._interval, self.max_recheck_s)  # the answer holds: check less often
        else:  # a change, or nothing tried but the fewest threads (which costs nothing)
            self._interval = self.recheck_s
        self.current, self._baseline, self._recent = chosen, medians[chosen], []
        self._next_check = self._clock() + self._interval
        self.probes += 1
        self.decisions.append({"medians_s": medians, "free_cpus": self._free, "threads": chosen})
