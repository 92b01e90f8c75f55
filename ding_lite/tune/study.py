"""``ding_lite tune``: a hyperparameter search on Optuna over ordinary runs.

The study directory ``NAME/`` holds the base config every trial runs (``base_config.py``: the compiled config with
the user's ``--set``), the study database (``study.db``, SQLite, unless ``--storage`` names another SQLAlchemy URL),
one run directory per trial and seed (``trial_0003_seed0/``), the trials' logs (``logs/``), and the results:
``trials.csv`` (after every trial) and ``best_config.py``.

Interrupted trials: every running trial has a heartbeat in the database; a trial whose heartbeat stopped (its tune
process was killed) is marked FAIL and retried with the same parameters (``RetryFailedTrialCallback``) by the next
tune process on the study, which is how the same command continues after a ``kill -9``. A tune process that was only
stopped (Ctrl-Z, a suspended machine) for longer than the grace may find its trial taken over that way when it runs
again: it stops that trial's run, says so, and goes on with the study (:class:`TrialTakenOver`).
"""
import inspect
import os
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Sequence

from ding_lite.utils import UserError

from .space import Param, check_space
from .trial import METRICS, TrialFailed, last_error_line, metric_value, read_evals, run_result, run_seed, \
    trial_command

PRUNERS = ("median", "halving", "none")
HEARTBEAT_S = 2  # a running trial's heartbeat in the database
GRACE_S = 6  # a heartbeat older than this: the trial's tune process is gone
MAX_RETRY = 2  # an interrupted trial is retried this many times
MAX_FAILS_IN_A_ROW = 3  # trials of this process that failed one after the other: the study stops with the error
SQLITE_LOCK_WAIT_S = 60.0  # how long a write to a SQLite study waits for another process's lock before it fails


def shown_url(url: str) -> str:
    """A storage URL as printed: its password hidden."""
    try:
        from sqlalchemy.engine import make_url
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy reads: opening it says why
        return url


@dataclass
class TuneOptions:
    """What ``ding_lite tune`` was asked (the CLI's options)."""
    study_dir: str
    trials: int = 20
    jobs: int = 1
    env_step: Optional[int] = None
    seeds: Sequence[int] = (0,)
    metric: str = "final"
    direction: str = "maximize"
    pruner: str = "median"
    storage: Optional[str] = None
    sets: Sequence[str] = field(default_factory=tuple)
    startup_trials: int = 2
    warmup_steps: int = 0
    sampler_seed: Optional[int] = None


def check_options(opts: TuneOptions) -> None:
    """One line for each option out of range."""
    if opts.metric not in METRICS:
        raise UserError(f"--metric {opts.metric!r}: choose one of {', '.join(METRICS)}")
    if opts.direction not in ("maximize", "minimize"):
        raise UserError(f"--direction {opts.direction!r}: choose maximize or minimize")
    if opts.pruner not in PRUNERS:
        raise UserError(f"--pruner {opts.pruner!r}: choose one of {', '.join(PRUNERS)}")
    if opts.startup_trials < 0 or opts.warmup_steps < 0:
        raise UserError("--startup-trials and --warmup-steps must be 0 or more")
    if opts.trials < 1 or opts.jobs < 1:
        raise UserError(f"--trials {opts.trials} --jobs {opts.jobs}: both must be at least 1")
    cores = os.cpu_count() or 1
    if opts.jobs > cores:
        raise UserError(f"--jobs {opts.jobs}: this machine has {cores} cores; each job is a process with one torch "
                        f"thread, so at most --jobs {cores}")
    if len(set(opts.seeds)) != len(opts.seeds) or not opts.seeds:
        raise UserError(f"--seeds {','.join(map(str, opts.seeds))}: give distinct seeds")


def storage_url(url: Optional[str], study_dir: str) -> str:
    """``--storage``, or by default the SQLite file ``study_dir/study.db``."""
    return url or f"sqlite:///{os.path.abspath(os.path.join(study_dir, 'study.db'))}"


def open_storage(url: Optional[str], study_dir: str) -> Any:
    """The study's storage: ``url`` (any SQLAlchemy URL: sqlite:///..., postgresql://...) or SQLite in
    ``study_dir``, with heartbeats so that interrupted trials are found and retried."""
    import optuna
    from optuna import storages
    from optuna.storages import RDBStorage
    url = storage_url(url, study_dir)
    kwargs: Dict[str, Any] = dict(heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S)
    retry = getattr(storages, "RetryHeartbeatStaleTrialCallback", None) or storages.RetryFailedTrialCallback
    retry = retry(max_retry=MAX_RETRY)
    names = inspect.signature(RDBStorage.__init__).parameters
    kwargs["heartbeat_stale_trial_callback" if "heartbeat_stale_trial_callback" in names
           else "failed_trial_callback"] = retry
    sqlite = url.startswith("sqlite")
    if sqlite:  # several processes on one file: wait for its lock rather than fail; transactions begun by us
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": SQLITE_LOCK_WAIT_S, "isolation_level": None}}
    try:
        storage = RDBStorage(url, **kwargs)
    except (ImportError, optuna.exceptions.StorageInternalError, ValueError) as err:
        raise locked_database(err, url) or UserError(f"--storage {url}: cannot open it: {err}") from None
    if sqlite:
        serialise_transactions(storage.engine)
    return storage


def locked_database(err: BaseException, url: str) -> Optional[UserError]:
    """One line for SQLite's "database is locked" anywhere in ``err``'s chain (Optuna wraps SQLAlchemy's error, which
    wraps SQLite's): another process held the study file's lock for SQLITE_LOCK_WAIT_S, as a tune process stopped
    inside a write does (Ctrl-Z, a suspended machine); None for any other error."""
    seen: Optional[BaseException] = err
    while seen is not None:
        if "database is locked" in str(seen):
            return UserError(f"{shown_url(url)}: another process held the study database's lock for "
                             f"{SQLITE_LOCK_WAIT_S:g} s (a tune process on this study stopped with Ctrl-Z, or "
                             f"suspended? resume it with fg, or end it); then run the same command again to continue "
                             f"the study (trials this process left running are retried)")
        seen = seen.__cause__ or seen.__context__
    return None


def serialise_transactions(engine: Any) -> None:
    """Every transaction on a SQLite storage takes the database's write lock when it begins (``BEGIN IMMEDIATE``).

    Optuna hands a WAITING trial (an enqueued one, or the retry of an interrupted one) to one worker by reading its
    state and then setting it to RUNNING. SQLite ignores the read's ``FOR UPDATE``, and pysqlite begins a transaction
    only at the first write, so two threads (``--jobs``) or two tune processes could both read WAITING and both run
    the trial: in 4 threads asking for 40 enqueued trials, 2 to 7 were handed out twice. The second run then failed on
    the first one's run-directory lock, marking the trial failed, and the first died telling its result ("Cannot
    tell a FAIL trial"). With the lock taken at BEGIN, the read and the write are one step. (PostgreSQL and MySQL
    honour FOR UPDATE: their storages are left as they are.) SQLAlchemy's recipe for SQLite transactions."""
    from sqlalchemy import event
    event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))


def make_pruner(name: str, startup_trials: int, warmup_steps: int = 0) -> Any:
    """Optuna's pruner for ``--pruner``: the median one prunes nothing before ``startup_trials`` trials finished,
    nor at a report before ``warmup_steps`` env steps."""
    import optuna
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=startup_trials, n_warmup_steps=warmup_steps)
    if name == "halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    return optuna.pruners.NopPruner()


def counts(study: Any) -> Dict[str, int]:
    """Trials of the study by state name (COMPLETE, PRUNED, FAIL, RUNNING, WAITING)."""
    out: Dict[str, int] = {}
    for t in study.get_trials(deepcopy=False):
        out[t.state.name] = out.get(t.state.name, 0) + 1
    return out


def taken(study: Any) -> int:
    """Trials that count towards --trials: finished (complete or pruned) or running. Waiting ones (enqueued, or the
    retry of an interrupted trial) run first, in the place of new ones."""
    c = counts(study)
    return sum(c.get(s, 0) for s in ("COMPLETE", "PRUNED", "RUNNING"))


class TrialTakenOver(TrialFailed):
    """This process's trial was declared interrupted by another tune process (or another thread of this one): its
    heartbeat was more than GRACE_S late, as when the process was stopped, and the trial is retried with its
    parameters there. Optuna then refuses every write to the trial, and the final ``tell`` with a ``ValueError``
    that :func:`run_study` catches."""


class Objective:
    """Runs one trial: its parameters sampled, one run per seed, the value the mean of the seeds' metric."""

    def __init__(self, opts: TuneOptions, space: Sequence[Param], base_config: str) -> None:
        self.opts, self.space, self.base_config = opts, space, base_config
        self.taken_over: list = []  # numbers of this process's trials that another process took over
        os.makedirs(os.path.join(opts.study_dir, "logs"), exist_ok=True)

    def __call__(self, trial: Any) -> float:
        import optuna
        try:
            return self._run(trial)
        except optuna.exceptions.UpdateFinishedTrialError:  # a write to a trial another process marked failed
            self.taken_over.append(trial.number)
            raise TrialTakenOver(f"trial {trial.number} was taken over by another tune process") from None

    def _run(self, trial: Any) -> float:
        import optuna
        opts = self.opts
        values = {p.path: p.suggest(trial) for p in self.space}
        name = os.path.join(opts.study_dir, f"trial_{trial.number:04d}")
        stride = opts.env_step or 0
        scores, env_steps, run_dirs = [], 0, []
        t0 = time.monotonic()
        for k, seed in enumerate(opts.seeds):
            run_dir = f"{name}_seed{seed}"
            run_dirs.append(run_dir)
            trial.set_user_attr("run_dirs", run_dirs)
            log = os.path.join(opts.study_dir, "logs", f"{os.path.basename(run_dir)}.txt")

            def on_eval(evals: Dict[str, Any], k: int = k) -> bool:
                if k and not stride:  # no env-step budget: only the first seed's steps are comparable
                    return False
                trial.report(metric_value(evals, opts.metric), k * stride + int(evals["env_step"][-1]))
                return trial.should_prune()

            code, pruned = run_seed(trial_command(self.base_config, name, seed, opts.env_step, values, opts.sets),
                                    run_dir, log, on_eval)
            result = run_result(run_dir)
            env_steps += int(result.get("env_step", 0))
            trial.set_user_attr("env_step", env_steps)
            trial.set_user_attr("wall_time_s", round(time.monotonic() - t0, 2))
            if pruned:
                trial.set_user_attr("stop_reason", result.get("stop_reason", "pruned"))
                raise optuna.TrialPruned()
            if code != 0:
                line = last_error_line(log)
                trial.set_user_attr("error", line)
                raise TrialFailed(f"trial {trial.number} seed {seed}: the run exited with status {code}: {line} "
                                  f"(log: {log})")
            evals = read_evals(run_dir)
            if evals is None:
                raise TrialFailed(f"trial {trial.number} seed {seed}: the run wrote no evaluation (log: {log})")
            scores.append(metric_value(evals, opts.metric))
        return float(sum(scores) / len(scores))


def run_study(config: Any, space: Sequence[Param], opts: TuneOptions, say: Callable[[str], None] = print) -> Any:
    """Run (or continue) the study of ``config`` over ``space``; returns the Optuna study. ``say`` prints the
    progress lines and the table."""
    try:
        return _run_study(config, space, opts, say)
    except Exception as err:  # a storage error from any of Optuna's calls: one line if it is a held lock
        locked = locked_database(err, storage_url(opts.storage, opts.study_dir))
        if locked is None:
            raise
        raise locked from None


def _run_study(config: Any, space: Sequence[Param], opts: TuneOptions, say: Callable[[str], None]) -> Any:
    check_options(opts)
    import optuna
    from ding_lite.config import compile_config, save_config_py

    from .results import best_line, write_results

    check_space(config, space)
    base = compile_config(config, overrides=list(opts.sets))
    os.makedirs(opts.study_dir, exist_ok=True)
    base_path = os.path.join(opts.study_dir, "base_config.py")
    fresh_path = base_path + ".new"
    save_config_py(base, fresh_path)
    if os.path.exists(base_path) and open(base_path).read() != open(fresh_path).read():
        os.remove(fresh_path)
        raise UserError(f"{base_path}: the study was started with another config or --set; continue it with the "
                        f"same ones, or start a new study (--study NAME)")
    os.replace(fresh_path, base_path)

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # a failed trial is our progress line, not a traceback
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    storage = open_storage(opts.storage, opts.study_dir)
    study_name = os.path.basename(os.path.normpath(opts.study_dir))
    sampler = optuna.samplers.TPESampler(seed=opts.sampler_seed, n_startup_trials=max(2, min(10, opts.trials // 3)))
    pruner = make_pruner(opts.pruner, opts.startup_trials, opts.warmup_steps)
    study = optuna.create_study(study_name=study_name, storage=storage, direction=opts.direction, sampler=sampler,
                                pruner=pruner, load_if_exists=True)
    described = {"space": [str(p) for p in space], "metric": opts.metric, "seeds": list(opts.seeds),
                 "env_step": opts.env_step}
    for key, value in described.items():
        known = study.user_attrs.get(key)
        if known is None:
            study.set_user_attr(key, value)
        elif known != value:
            raise UserError(f"study '{study_name}' was started with {key} {known}, not {value}: continue it with the "
                            f"same options, or start a new study (--study NAME)")
    if counts(study).get("RUNNING"):  # are they running elsewhere, or interrupted? a heartbeat tells in GRACE_S
        say(f"{counts(study)['RUNNING']} trial(s) marked running: waiting {GRACE_S} s for their heartbeats")
        time.sleep(GRACE_S + 1)
        optuna.storages.fail_stale_trials(study)
    lock = threading.Lock()
    fails: list = []  # this process's trials that failed in a row (their error lines)

    def after_trial(study: Any, trial: Any) -> None:
        with lock:
            if trial.state.name == "FAIL":
                fails.append(trial.user_attrs.get("error", "no error line"))
                if len(fails) >= MAX_FAILS_IN_A_ROW:
                    study.stop()
            else:
                fails.clear()
            c = counts(study)
            done = c.get("COMPLETE", 0) + c.get("PRUNED", 0)
            value = "-" if trial.value is None else f"{trial.value:.4g}"
            say(f"trial {done} of {opts.trials} (#{trial.number} {trial.state.name.lower()}, value {value}, "
                f"{trial.user_attrs.get('wall_time_s', 0):.1f} s) | {best_line(study)} | pruned "
                f"{c.get('PRUNED', 0)}, failed {c.get('FAIL', 0)}"
                + (f" | {trial.user_attrs['error']}" if "error" in trial.user_attrs else ""))
            write_results(study, opts.study_dir)
            if taken(study) >= opts.trials:
                study.stop()

    left = opts.trials - taken(study)
    if left > 0:
        say(f"study {study_name} ({opts.study_dir}): {left} trial(s) to run of {opts.trials}, {min(opts.jobs, left)} "
            f"at a time; {opts.metric} return, {opts.direction}; storage {shown_url(getattr(storage, 'url', ''))}")
        objective = Objective(opts, space, os.path.abspath(base_path))
        while left > 0:
            try:
                study.optimize(objective, n_trials=None, n_jobs=min(opts.jobs, left), callbacks=[after_trial],
                               catch=(TrialFailed,), gc_after_trial=False)
                break
            except ValueError as err:  # Optuna's "Cannot tell a FAIL trial": one of ours was taken over
                if not str(err).startswith("Cannot tell a FAIL"):
                    raise
                which = ", ".join(map(str, objective.taken_over))
                objective.taken_over.clear()
                say(f"{f'trial {which}' if which else 'a trial of this process'} was declared interrupted by another "
                    f"tune process (no heartbeat for {GRACE_S} s: this process was stopped, or starved of CPU) and is "
                    f"retried there with its parameters; its run, if still going, was stopped, and this process goes "
                    f"on with the study")
            if len(fails) >= MAX_FAILS_IN_A_ROW:
                break
            left = opts.trials - taken(study)
        if len(fails) >= MAX_FAILS_IN_A_ROW:
            write_results(study, opts.study_dir)
            raise UserError(f"{len(fails)} trials failed in a row, the last with: {fails[-1]} (each run's output is "
                            f"in {os.path.join(opts.study_dir, 'logs')}/; trials.csv lists them)")
    else:
        say(f"study {study_name}: its {opts.trials} trials have run")
    table = write_results(study, opts.study_dir, best_config=True)
    say(table)
    from .plots import plot_study
    for path in plot_study(study, opts.study_dir):
        say(path)
    return study

