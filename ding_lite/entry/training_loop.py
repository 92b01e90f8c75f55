"""The training loop, written once for the serial and the parallel pipeline: they differ only in their transport
(``ding_lite.worker.transport``), i.e. where samples come from and where weights and evaluations go.

One pass of the loop: evaluate when due (``policy.eval.evaluator.eval_freq`` train iterations; in place for the
serial pipeline, on a snapshot of the weights for the parallel one), check the stop rules, take in samples when the
update allowance is used up, then train. The replay ratio is the same in both pipelines: every
``policy.collect.n_sample`` samples that arrive allow ``policy.learn.update_per_collect`` updates of
``policy.learn.batch_size``; warm-up samples (``policy.random_collect_size`` env steps of uniformly random actions,
at the start of a fresh run) fill the buffer and allow none. An update that finds no batch is not made up later.

The run's own state (counters, evaluation records, result.json) lives in ``TrainingRun`` too; its checkpoints in
``run_checkpoints.py``.
"""
import collections
import contextlib
import copy
import math
import os
import time
from typing import Any, Callable, Dict, Optional, Tuple

from easydict import EasyDict

from ding_lite.config import save_config_py
from ding_lite.data.sum_tree import FAST_EXTRA_HINT
from ding_lite.policy import Policy
from ding_lite.run import RunLogger, Throughput
from ding_lite.torch_utils.threads import learner_tuner
from ding_lite.utils import RunIOError, UserError
from ding_lite.utils.file_io import atomic_write_json, io_error
from ding_lite.utils.signals import deferred_interrupts, stop_signals_as_interrupts
from ding_lite.worker import Learner
from ding_lite.worker.train_step import train_on_sample
from ding_lite.worker.transport import Arrival, Transport

from .build import build_buffer
from .resume_config import resume_record, write_resume_record
from .run_checkpoints import RunCheckpoints, RunCounters
from ding_lite.run.run_dir import STOP_REQUEST, acquire_run_dir, last_good_checkpoint, remove_fresh_outputs, resumable, stop_request

SUPERVISE_EVERY_S = 0.1
PENDING_EVAL_TIMEOUT_S = 60.0
VERSIONS_KEPT = 10_000  # weight version -> train_iter entries kept (to date the samples collected with them)
NORMAL_STOPS = ("stop_value", "max_env_step", "max_train_iter")


def format_return(value: Optional[float]) -> str:
    """A return as the closing line prints it: two decimals, as the eval lines; '-' when no evaluation ran."""
    return "-" if value is None or math.isnan(value) else f"{value:.2f}"


def warm_up_steps(cfg: EasyDict) -> int:
    """``policy.random_collect_size`` for policies that declare it (SAC), else 0."""
    return cfg.policy.random_collect_size if "random_collect_size" in cfg.policy else 0


class TrainingRun:
    """One training run in ``run_dir``: the learner, its replay buffer and the loop, fed by ``transport``; its
    counters, evaluation records and result.json; its checkpoints (saving, restoring) in ``self.checkpoints``."""

    buffer: Any
    learner: Learner
    logger: Optional[RunLogger]
    checkpoints: RunCheckpoints

    def __init__(self, cfg: EasyDict, seed: int, run_dir: str, policy: Policy, transport: Transport) -> None:
        self.cfg, self.seed, self.run_dir = cfg, seed, run_dir
        self.policy, self.transport = policy, transport
        self.logger = None
        self.counters = RunCounters()
        # The env's action space as plain data (``ding_lite.envs.env_spec.action_space_record``), saved in every
        # checkpoint's ``meta['env']`` so that ``ding_lite.load`` acts in env units without building an env.
        self.action_space_record: Optional[Dict[str, Any]] = None
        # A resumed run: its overrides and the -c keys not applied (``resume_config.resume_record``), recorded with
        # the rewritten total_config.py once the checkpoint is restored.
        self.resume_record: Optional[Dict[str, Any]] = None
        self.result: Optional[Dict[str, Any]] = None  # result.json's content, once written
        # Updates the samples received so far allow, times n_sample: whole numbers, so that a synchronous round of
        # segments of e.g. 0.1 collection each adds up to exactly one update (ten 0.1s in floats give 0.999...).
        self._budget = 0
        self._eval_pending: Optional[tuple] = None  # (train_iter, env_step, policy state) being evaluated
        self._stop_value_reached = False
        self._time: Dict[str, float] = collections.defaultdict(float)  # train, wait, ingest, publish
        self._version_iter: Dict[int, int] = {}
        # Age of the samples trained on since the last progress line, in learner updates (train_iter at sampling minus
        # the train_iter of the weights that collected them): [sum of batch means, batches, max].
        self._age = [0.0, 0, 0]
        self._age_run = [0.0, 0, 0]  # the same over the whole run (this process), for result.json

    # ---- start ---------------------------------------------------------------------------------------------------
    def start(self, resume_from: Optional[Tuple[str, Dict[str, Any]]], quiet: bool) -> None:
        """Build the buffer and learner, open the run directory (fresh or resumed), start the transport's actors
        and release them with the first weights."""
        self.buffer = build_buffer(self.cfg, self.seed)
        self.learner = Learner(self.policy.learn_mode, check_finite=self.cfg.policy.learn.learner.check_finite,
                               threads=learner_tuner(self.cfg.torch_threads))
        self.checkpoints = RunCheckpoints(self.cfg, self.run_dir, self.policy, self.learner, self.counters,
                                          self.buffer, self.action_space_record)
        self.open(resume_from, quiet)
        self._version_iter = {self.counters.version: self.learner.train_iter}
        self._start_at = (self.counters.env_step, self.learner.train_iter, self.logger.wall_time)
        # The state dict's tensors alias the parameters (training updates them in place): built once, read often.
        self._weights = self.policy.model.state_dict()
        warm_up = warm_up_steps(self.cfg) if self.counters.env_step == 0 else 0
        precision = getattr(self.policy, "precision_note", None)  # which forward passes run in bfloat16
        self.logger.info(f"{'resuming' if resume_from else 'starting'} {self.cfg.policy.type} on "
                         f"{self.cfg.env.env_id or self.cfg.env.type} in {os.path.abspath(self.run_dir)}: "
                         f"{self.transport.description}" + (f"; {precision()}" if precision else ""))
        if getattr(self.buffer, "compiled", True) is False:
            self.logger.info("prioritised replay on the sum tree's NumPy path (numba is not installed): "
                             f"{FAST_EXTRA_HINT} samples ~2x faster")
        self.transport.launch(self.counters.env_step, warm_up, self.logger)
        self.transport.publish(self.counters.version, self._weights)
        if warm_up:
            self.logger.info(f"warm-up: {warm_up:,} env steps of uniformly random actions first")
        self.receive(0.0, samples=False)  # what is ready already (the serial warm-up), before the first evaluation

    def open(self, resume_from: Optional[Tuple[str, Dict[str, Any]]], quiet: bool) -> None:
        """Restore from ``resume_from`` (the checkpoint's path and state, see ``find_resume_checkpoint``; then
        total_config.py is rewritten with the config resumed and the resume recorded, ``resume_config.py``) or create
        ``ckpt/`` and total_config.py; then start the logger and the periodic ckpt_last clock."""
        wall_offset, resume_at = 0.0, None
        if resume_from is not None:
            with contextlib.suppress(FileNotFoundError):  # a stop asked of the run before: not of this resume
                os.remove(os.path.join(self.run_dir, STOP_REQUEST))
            wall_offset = self.checkpoints.restore(*resume_from)
            resume_at = (self.learner.train_iter, self.counters.env_step,
                         -1 if self.counters.last_eval_iter is None else self.counters.last_eval_iter)
            # total_config.py says what this resume runs (the run's config and its overrides), recorded beside it
            write_resume_record(self.run_dir, self.cfg, self.resume_record or resume_record(None, []),
                                resume_from[0], self.learner.train_iter, self.counters.env_step)
        else:
            try:
                os.makedirs(os.path.join(self.run_dir, "ckpt"))
            except OSError as err:
                raise io_error(err, "create the checkpoint directory", os.path.join(self.run_dir, "ckpt")) from None
            save_config_py(self.cfg, os.path.join(self.run_dir, "total_config.py"))
        try:
            self.logger = RunLogger(self.run_dir, os.path.basename(self.run_dir), quiet, wall_offset, resume_at,
                                    self.cfg)
        except BaseException:  # e.g. a tracker that cannot start: a fresh run leaves nothing, so it can start again
            if resume_from is None:
                remove_fresh_outputs(self.run_dir)
            raise
        if resume_from is not None:
            self.logger.info(f"resuming from {resume_from[0]} (train_iter {self.learner.train_iter:,}, env_step "
                             f"{self.counters.env_step:,})")
            if self.checkpoints.buffer_note:
                self.logger.info(self.checkpoints.buffer_note)
        self.checkpoints.start_clock(self.logger)

    # ---- the loop ------------------------------------------------------------------------------------------------
    def train(self, max_env_step: Optional[int], max_train_iter: Optional[int]) -> str:
        """Run until a stop rule holds, or a ``STOP_REQUEST`` file in the run directory asks; returns the reason."""
        self.throughput = Throughput(self.counters.env_step, self.learner.train_iter)
        self.logger.start_progress(max_env_step, self.counters.env_step)
        self._last_progress = time.perf_counter()
        next_supervise = 0.0
        while True:
            self.maybe_evaluate()
            if self._stop_value_reached:
                return "stop_value"
            if max_env_step is not None and self.counters.env_step >= max_env_step:
                return "max_env_step"
            if max_train_iter is not None and self.learner.train_iter >= max_train_iter:
                return "max_train_iter"
            # Take samples only when the allowance of updates is used up: samples left untaken hold a parallel
            # collector back (backpressure), which bounds the policy lag.
            hungry = self._budget < self.cfg.policy.collect.n_sample
            self.receive(0.002 if hungry else 0.0, samples=hungry)
            if self._stop_value_reached:  # an evaluation that came back meanwhile
                return "stop_value"
            if time.monotonic() >= next_supervise:
                requested = stop_request(self.run_dir)
                if requested is not None:
                    return requested
                self.transport.supervise(self.counters.env_step)
                next_supervise = time.monotonic() + SUPERVISE_EVERY_S
            self.update(max_train_iter)

    def receive(self, timeout: float, samples: bool) -> None:
        t0 = time.perf_counter()
        arrivals, evals = self.transport.receive(timeout, samples)
        t1 = time.perf_counter()
        self._time["ingest_s" if arrivals or evals else "wait_s"] += t1 - t0
        for arrival in arrivals:
            self._ingest(arrival)
        for train_iter, result in evals:
            self._on_eval(train_iter, result)
        self._time["ingest_s"] += time.perf_counter() - t1

    def _ingest(self, arrival: Arrival) -> None:
        self.counters.env_step += arrival.env_steps
        self.log_episodes(arrival.episodes, self.counters.env_step)
        if arrival.data is None:  # dropped by the transport (too stale)
            return
        collect_iter = self._version_iter.get(arrival.version, self.learner.train_iter)
        self.buffer.push(arrival.data, self.counters.env_step, collect_iter=collect_iter)
        self.policy.update_obs_stats(arrival.data)
        if not arrival.warm_up:
            self._budget += self.cfg.policy.learn.update_per_collect * arrival.n

    def update(self, max_train_iter: Optional[int]) -> None:
        """Up to ``update_per_collect`` updates of the allowance; weights published, progress and checkpoints.

        A synchronous transport (``sync``) gets the weights once the allowance is used up, not every
        ``weight_sync_freq`` updates: its actors wait for them, and act the next round with them alone (after an
        update that found no batch too, or they would wait for ever)."""
        learn, hook = self.cfg.policy.learn, self.cfg.policy.learn.learner.hook
        n_sample, sync = self.cfg.policy.collect.n_sample, self.transport.sync
        t0, published = time.perf_counter(), self._time["publish_s"]
        attempted = False
        for _ in range(min(self._budget // n_sample, learn.update_per_collect)):
            self.learner.env_step = self.counters.env_step  # for a learning-rate schedule over env steps
            attempted = True
            if train_on_sample(self.buffer, learn.batch_size, self.learner.train_iter, self.learner.train) is None:
                self._budget = 0
                break
            self._budget -= n_sample
            self._count_age(getattr(self.buffer, "last_batch_age", None))
            it = self.learner.train_iter
            if not sync and it % self.transport.weight_sync_freq == 0:
                self._publish()
            if it % hook.log_show_after_iter == 0:
                self.progress()
            self.checkpoints.after_update()
            if max_train_iter is not None and it >= max_train_iter:
                break
        if sync and attempted and self._budget < n_sample:  # also after no batch: the actors wait for a version
            self._publish()
        self._time["train_s"] += time.perf_counter() - t0 - (self._time["publish_s"] - published)

    def _count_age(self, age: Optional[Tuple[float, int]]) -> None:
        if age is not None:
            for acc in (self._age, self._age_run):
                acc[0] += age[0]
                acc[1] += 1
                acc[2] = max(acc[2], age[1])

    def batch_age(self) -> Optional[Dict[str, float]]:
        """Mean and max age (learner updates) of the samples trained on since the last call; None when none were."""
        total, batches, oldest = self._age
        self._age = [0.0, 0, 0]
        return None if batches == 0 else {"batch_age_mean": total / batches, "batch_age_max": oldest}

    def _publish(self) -> None:
        t0 = time.perf_counter()
        self.counters.version += 1
        self._version_iter[self.counters.version] = self.learner.train_iter
        self._version_iter.pop(self.counters.version - VERSIONS_KEPT, None)
        self.transport.publish(self.counters.version, self._weights)
        self._time["publish_s"] += time.perf_counter() - t0

    # ---- evaluation ----------------------------------------------------------------------------------------------
    def maybe_evaluate(self) -> None:
        """Evaluate the current weights when due and no evaluation is under way (one at a time)."""
        it = self.learner.train_iter
        due = self.counters.last_eval_iter is None or it - self.counters.last_eval_iter >= self.cfg.policy.eval.evaluator.eval_freq
        if not due or self._eval_pending is not None:
            return
        if self.transport.evaluates_in_place:  # recorded as done once it is: an interrupted one is redone on resume
            result = self.transport.request_eval(it, self._weights)
            self.counters.last_eval_iter = it
            self.record_eval(it, self.counters.env_step, result)
        else:  # keep the weights evaluated: they become ckpt_best if they score best
            self.counters.last_eval_iter = it
            self._eval_pending = (it, self.counters.env_step, copy.deepcopy(self.policy.learn_mode.state_dict()))
            self.transport.request_eval(it, self._weights)

    def _on_eval(self, train_iter: int, result: Dict[str, float]) -> None:
        pending = self._eval_pending
        if pending is None or train_iter != pending[0]:
            return  # an answer to a request since replaced (after an evaluator restart)
        self._eval_pending = None
        self.record_eval(pending[0], pending[1], result, pending[2])

    def await_eval(self, timeout: float) -> None:
        """Let an evaluation under way finish and be recorded (up to ``timeout`` s), so none is lost at a stop."""
        deadline = time.monotonic() + timeout
        while self._eval_pending is not None and time.monotonic() < deadline:
            self.receive(0.01, samples=False)
            self.transport.supervise(self.counters.env_step)

    def record_eval(self, train_iter: int, env_step: int, result: Dict[str, float],
                    policy_state: Optional[Dict[str, Any]] = None) -> None:
        """Log an evaluation of the weights of ``train_iter`` (``policy_state``, default the current ones), keep
        ckpt_best (with the counters of those weights); the run stops once it reaches ``env.stop_value``."""
        self.counters.last_return = result["return_mean"]
        self.logger.eval_row(train_iter, env_step, result)
        self.logger.info(f"eval @ env_step {env_step:,} (train_iter {train_iter:,}): return {result['return_mean']:.2f} "
                         f"+- {result['return_std']:.2f} over {result['episodes']} episodes")
        if result["return_mean"] > self.counters.best_return:
            self.counters.best_return = result["return_mean"]
            self.checkpoints.save("ckpt_best.pth.tar", policy_state, at=(train_iter, env_step))
        stop_value = self.cfg.env.stop_value
        if stop_value is not None and result["return_mean"] >= stop_value:
            self._stop_value_reached = True

    def eval_text(self) -> str:
        return "-" if self.counters.last_return is None else f"{self.counters.last_return:.1f} (best {self.counters.best_return:.1f})"

    def log_episodes(self, episodes, env_step: int) -> None:
        """Mean return and length of finished collector episodes, in TensorBoard under ``collector/``."""
        if episodes:
            returns = [e["return"] for e in episodes]
            lengths = [e["length"] for e in episodes]
            self.logger.scalars("collector", {"episode_return": sum(returns) / len(returns),
                                              "episode_length": sum(lengths) / len(lengths)}, env_step)

    # ---- progress and the end ------------------------------------------------------------------------------------
    def progress(self) -> None:
        now = time.perf_counter()
        dt, self._last_progress = max(now - self._last_progress, 1e-9), now
        speed = self.throughput(self.counters.env_step, self.learner.train_iter)
        self.logger.scalars("learner", self.learner.pop_means() or {}, self.learner.train_iter, axis="train_iter")
        self.logger.scalars("speed", speed, self.counters.env_step)
        age = self.batch_age()
        self.logger.scalars("buffer", {"size": len(self.buffer), **(age or {})}, self.counters.env_step)
        age_text = "" if age is None else f" | age {age['batch_age_mean']:.1f}/{age['batch_age_max']}"
        rates, detail, short = self.transport.progress(dt, self.counters.env_step)
        self.logger.progress(f"env_step {self.counters.env_step:,} | train_iter {self.learner.train_iter:,} | "
                             f"{speed['env_step_per_s']:,.0f} env steps/s{rates} | "
                             f"{speed['train_iter_per_s']:,.1f} it/s{detail}{age_text} | eval {self.eval_text()} | "
                             f"{self.logger.wall_time:.1f} s", self.counters.env_step,
                             f"train_iter {self.learner.train_iter:,}, {speed['train_iter_per_s']:,.1f} it/s{short}, "
                             f"eval {self.eval_text()}")

    def summary(self) -> Dict[str, Any]:
        """What the transport adds to result.json, given the run's speeds and where the learner's time went."""
        env_step0, train_iter0, wall0 = getattr(self, "_start_at", (self.counters.env_step, 0, 0.0))
        wall = max(self.logger.wall_time - wall0, 1e-9)
        return self.transport.summary({
            "env_step_per_s": round((self.counters.env_step - env_step0) / wall, 1),
            "train_iter_per_s": round((self.learner.train_iter - train_iter0) / wall, 1),
            "learner_time_s": {k: round(v, 3) for k, v in self._time.items()},
            "run_s": round(wall, 3),
        })

    def finish(self, stop_reason: str) -> Dict[str, Any]:
        """Record an evaluation under way, stop the actors, evaluate the final weights (on a normal stop that did not
        come from an evaluation), then ckpt_last and result.json."""
        if stop_reason in NORMAL_STOPS:
            self.await_eval(PENDING_EVAL_TIMEOUT_S)
        self.transport.stop()
        it = self.learner.train_iter
        if stop_reason in NORMAL_STOPS and stop_reason != "stop_value" and self.counters.last_eval_iter != it:
            # done once it completed: a ckpt_last written on an interrupt inside it says it did not, and --resume
            # (at the budget already) runs it then
            result = self.transport.evaluate_now(it)
            self.counters.last_eval_iter = it
            self.record_eval(it, self.counters.env_step, result)
        summary = self.summary()
        explain = getattr(self.transport, "bottleneck_line", None)
        line = explain(summary) if explain is not None else None
        if line:
            self.logger.info(line)
        # learner updates between the weights that collected a trained-on sample and the update (this process's)
        total, batches, oldest = self._age_run
        summary["batch_age"] = {"mean": round(total / batches, 3), "max": oldest} if batches else None
        return self.write_result(stop_reason, **summary)

    def end_after(self, err: BaseException) -> BaseException:
        """Close a run whose loop or ``finish`` raised ``err``, unless its result.json is written already: stop the
        actors, then write ckpt_last and result.json, with stop_reason 'interrupted' for a stop signal (Ctrl-C,
        SIGTERM) and 'error: <type>' for an error (``fail``). A signal that arrives meanwhile takes effect
        afterwards. Returns the exception to raise."""
        if self.result is not None:
            return err
        with deferred_interrupts():
            if isinstance(err, KeyboardInterrupt):
                self.finish("interrupted")
                return err
            self.transport.stop()
            return self.fail(err, **self.summary())

    def fail(self, err: Exception, **extra: Any) -> Exception:
        """Close a run that raised ``err``: keep what was learnt (ckpt_last, unless the weights are broken or the
        disk refuses it) and write result.json, best effort. Returns the error to raise: ``err``, or for a user
        error (a non-finite value, a full disk, a bad env) a copy that also names the checkpoint to go back to."""
        reason = f"error: {type(err).__name__}"
        try:
            self.write_result(reason, save_last=not isinstance(err, RunIOError), **extra)
        except RunIOError as io_err:
            if not isinstance(err, RunIOError):
                self.logger.info(f"could not record the failure: {io_err}")
        if isinstance(err, UserError):  # a cause the user can fix: say where to continue from
            kept = last_good_checkpoint(self.run_dir)
            return type(err)(f"{str(err).rstrip('.')}. The run stopped; "
                             + (f"its last good checkpoint is {kept}: fix the cause, then continue with --resume."
                                if kept else "it had written no checkpoint yet."))
        return err

    def write_result(self, stop_reason: str, save_last: bool = True, **extra: Any) -> Dict[str, Any]:
        """ckpt_last (if configured and ``save_last``) and result.json; prints the closing line. A stop signal that
        arrives meanwhile takes effect once both are written (``deferred_interrupts``), so they always agree."""
        with deferred_interrupts():
            if save_last and self.cfg.policy.learn.learner.hook.save_ckpt_after_run:
                self.checkpoints.save("ckpt_last.pth.tar")
            result = {
                "stop_reason": stop_reason,
                "env_step": self.counters.env_step,
                "train_iter": self.learner.train_iter,
                "best_return": None if math.isinf(self.counters.best_return) else self.counters.best_return,
                "final_return": self.counters.last_return,
                "wall_time": round(self.logger.wall_time, 3),
                **extra,
            }
            atomic_write_json(result, os.path.join(self.run_dir, "result.json"))
            self.result = result
            self.logger.stop_reason = stop_reason  # the status the trackers close with
            self.logger.info(f"stopped ({stop_reason}) at env_step {result['env_step']:,}, train_iter "
                             f"{result['train_iter']:,}: final return {format_return(result['final_return'])}, best "
                             f"{format_return(result['best_return'])}, {result['wall_time']:.1f} s")
        return result

    def close(self) -> None:
        self.transport.close()
        if self.logger is not None:
            self.logger.close()


def run_training(run_dir: str, resume: bool, quiet: bool, make_run: Callable[[], TrainingRun],
                 max_env_step: Optional[int], max_train_iter: Optional[int]) -> Tuple[TrainingRun, Dict[str, Any]]:
    """Train the run ``make_run()`` builds in ``run_dir``, holding the directory's lock throughout; returns the run
    and result.json's content.

    Ctrl-C and SIGTERM stop it cleanly, also during the final evaluation: the actors stop, ckpt_last and result.json
    are written, then KeyboardInterrupt propagates. Any other error first keeps what was learnt (``TrainingRun.fail``).
    """
    lock = acquire_run_dir(run_dir, resume)
    run = None
    try:
        resume_from = resumable(run_dir) if resume else None
        with stop_signals_as_interrupts():
            run = make_run()
            try:
                run.start(resume_from, quiet)
                stop_reason = run.train(max_env_step, max_train_iter)
                return run, run.finish(stop_reason)
            except (KeyboardInterrupt, Exception) as err:
                if run.logger is None:  # nothing written yet
                    raise
                while True:  # a signal that cuts in before the closing writes is the reason to close with
                    try:
                        to_raise = run.end_after(err)
                        break
                    except KeyboardInterrupt as signal_err:
                        if run.result is not None:
                            raise
                        err = signal_err
                if isinstance(to_raise, KeyboardInterrupt):
                    raise to_raise
                raise to_raise from None
    finally:
        if run is not None:
            run.close()
        lock.release(remove_if_unused=True)
