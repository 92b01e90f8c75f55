"""What the serial and the parallel run share: counters, checkpoints, evaluation records, the progress line and
result.json. The subclasses decide where env steps and evaluations come from."""
import math
import os
import shutil
import time
from typing import Any, Dict, Optional, Tuple

import torch
from easydict import EasyDict

from ding_lite.config import save_config_py
from ding_lite.policy import Policy
from ding_lite.utils import RunIOError, UserError, get_rng_state, set_rng_state
from ding_lite.utils.file_io import atomic_write_json, io_error
from ding_lite.utils.signals import deferred_interrupts
from ding_lite.worker import Learner, RunLogger, load_checkpoint, save_checkpoint
from ding_lite.envs.env_spec import spec_from_record
from ding_lite.worker.checkpoint import (check_checkpoint_fits, check_env_fits, checkpoint_counters, checkpoint_meta,
                                        error_summary, load_replay_buffer, save_replay_buffer)
from ding_lite.worker.trackers import TRACKERS_FILE

from .resume_config import resume_record, write_resume_record
from .run_dir import find_resume_checkpoint

NORMAL_STOPS = ("stop_value", "max_env_step", "max_train_iter")
RESUME_COUNTERS = ("train_iter", "env_step", "last_eval_iter", "best_return", "last_return", "wall_time")


def format_return(value: Optional[float]) -> str:
    """A return as the closing line prints it: two decimals, as the eval lines; '-' when no evaluation ran."""
    return "-" if value is None or math.isnan(value) else f"{value:.2f}"


def state_is_finite(tree: Any) -> bool:
    """No floating tensor or float in the nested ``tree`` (a policy state) holds a NaN or an infinity."""
    if isinstance(tree, dict):
        return all(state_is_finite(v) for v in tree.values())
    if isinstance(tree, (list, tuple)):
        return all(state_is_finite(v) for v in tree)
    if isinstance(tree, torch.Tensor):
        return not tree.is_floating_point() or bool(torch.isfinite(tree).all())
    if isinstance(tree, float):
        return math.isfinite(tree)
    return True


class RunBase:
    """State of one training run in ``run_dir``. Subclasses set ``policy``, ``learner``, ``buffer`` and implement
    the ``env_step`` and ``last_eval_iter`` properties before calling ``open``."""

    cfg: EasyDict
    policy: Policy
    learner: Learner
    logger: RunLogger

    def __init__(self, cfg: EasyDict, seed: int, run_dir: str) -> None:
        self.cfg, self.seed, self.run_dir = cfg, seed, run_dir
        self.best_return, self.last_return = -math.inf, None
        # The env's action space as plain data (``ding_lite.envs.env_spec.action_space_record``), saved in every
        # checkpoint's ``meta['env']`` so that ``ding_lite.load`` acts in env units without building an env.
        self.action_space_record: Optional[Dict[str, Any]] = None
        # A resumed run: its overrides and the -c keys not applied (``resume_config.resume_record``), recorded with
        # the rewritten total_config.py once the checkpoint is restored.
        self.resume_record: Optional[Dict[str, Any]] = None
        self.result: Optional[Dict[str, Any]] = None  # result.json's content, once written

    # ---- what subclasses provide ---------------------------------------------------------------------------------
    env_step: int
    last_eval_iter: Optional[int]

    def extra_counters(self) -> Dict[str, Any]:
        """Counters a subclass checkpoints besides the common ones (numbers only)."""
        return {}

    def load_extra_counters(self, counters: Dict[str, Any]) -> None:
        """Restore what ``extra_counters`` saved (a checkpoint of the other pipeline may lack them)."""

    # ---- opening: a fresh run directory or a resumed one ---------------------------------------------------------
    def open(self, resume_from: Optional[Tuple[str, Dict[str, Any]]], quiet: bool) -> None:
        """Restore from ``resume_from`` (the checkpoint's path and state, see ``find_resume_checkpoint``; then
        total_config.py is rewritten with the config resumed and the resume recorded, ``resume_config.py``) or create
        ``ckpt/`` and total_config.py; then start the logger and the periodic ckpt_last clock."""
        wall_offset, resume_at = 0.0, None
        if resume_from is not None:
            wall_offset = self._restore(*resume_from)
            resume_at = (self.learner.train_iter, self.env_step,
                         -1 if self.last_eval_iter is None else self.last_eval_iter)
            # total_config.py says what this resume runs (the run's config and its overrides), recorded beside it
            write_resume_record(self.run_dir, self.cfg, self.resume_record or resume_record(None, []),
                                resume_from[0], self.learner.train_iter, self.env_step)
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
                self._remove_fresh_outputs()
            raise
        if resume_from is not None:
            self.logger.info(f"resuming from {resume_from[0]} (train_iter {self.learner.train_iter:,}, env_step "
                             f"{self.env_step:,})")
            if getattr(self, "_buffer_note", None):
                self.logger.info(self._buffer_note)
        self._next_last_save = time.monotonic() + self._hook.save_ckpt_last_every_s

    def _remove_fresh_outputs(self) -> None:
        """Remove what ``open`` and the logger wrote in a fresh run directory (nothing else was there: the lock's
        checks saw to that), so a fresh run that failed to open can be started again without --resume."""
        for name in ("ckpt", "log"):
            shutil.rmtree(os.path.join(self.run_dir, name), ignore_errors=True)
        for name in ("total_config.py", "eval.csv", TRACKERS_FILE):
            try:
                os.remove(os.path.join(self.run_dir, name))
            except OSError:
                pass

    # ---- checkpoints ---------------------------------------------------------------------------------------------
    @property
    def _hook(self):
        return self.cfg.policy.learn.learner.hook

    def state(self, policy_state: Optional[Dict[str, Any]] = None,
              at: Optional[Tuple[int, int]] = None) -> Dict[str, Any]:
        """The checkpoint: policy state (the current one unless given), counters (``at=(train_iter, env_step)`` of
        a given policy state), RNG states, and what model it holds (``meta``, checked when it is loaded)."""
        train_iter, env_step = at if at is not None else (self.learner.train_iter, self.env_step)
        return {
            "meta": {**checkpoint_meta(self.cfg.policy.type, self.cfg.policy.model),
                     **({"env": self.action_space_record} if self.action_space_record else {})},
            "policy": self.policy.learn_mode.state_dict() if policy_state is None else policy_state,
            "counters": {
                "train_iter": train_iter,
                "env_step": env_step,
                "last_eval_iter": -1 if self.last_eval_iter is None else self.last_eval_iter,
                "best_return": self.best_return,
                "last_return": math.nan if self.last_return is None else self.last_return,
                "wall_time": self.logger.wall_time,
                **self.extra_counters(),
            },
            "rng": get_rng_state(),
        }

    def save(self, name: str, policy_state: Optional[Dict[str, Any]] = None,
             at: Optional[Tuple[int, int]] = None) -> bool:
        """Write checkpoint ``name``, unless its state holds a NaN or infinity (weights broken by a non-finite
        update): that is logged and the file on disk, the last good one, is kept. True when written."""
        state = self.state(policy_state, at)
        if not state_is_finite(state["policy"]):
            self.logger.info(f"not writing ckpt/{name}: the policy state holds non-finite values; the last good "
                             f"checkpoint is kept")
            return False
        save_checkpoint(state, os.path.join(self.run_dir, "ckpt", name))
        if name == "ckpt_last.pth.tar" and self._saves_buffer():  # the buffer's content beside it (opt-in)
            save_replay_buffer(self.buffer, state["counters"], os.path.join(self.run_dir, "ckpt"))
        return True

    def _saves_buffer(self) -> bool:
        return bool(self.cfg.policy.other.replay_buffer.get("save_replay_buffer")) and hasattr(self, "buffer")

    def after_update(self) -> None:
        """Checkpoints due after a train iteration: iteration_<N> every ``save_ckpt_after_iter``; ckpt_last every
        ``save_ckpt_last_after_iter`` iterations or ``save_ckpt_last_every_s`` seconds, whichever comes first (so a
        killed run loses at most that much)."""
        it, hook = self.learner.train_iter, self._hook
        if hook.save_ckpt_after_iter and it % hook.save_ckpt_after_iter == 0:
            self.save(f"iteration_{it}.pth.tar")
        by_iter = hook.save_ckpt_last_after_iter and it % hook.save_ckpt_last_after_iter == 0
        by_time = hook.save_ckpt_last_every_s and time.monotonic() >= self._next_last_save
        if by_iter or by_time:
            self.save("ckpt_last.pth.tar")
            self._next_last_save = time.monotonic() + hook.save_ckpt_last_every_s

    def _restore(self, path: str, state: Dict[str, Any]) -> float:
        policy = self.cfg.policy
        check_checkpoint_fits(state, policy.type, policy.model, path, action="resume from")
        counters = checkpoint_counters(state, path, RESUME_COUNTERS)
        if self.action_space_record:  # the env this run built: the checkpoint's actions must mean the same there
            check_env_fits(state, spec_from_record(self.action_space_record), path,
                           self.cfg.env.env_id or self.cfg.env.type, action="resume from")
        try:
            self.policy.learn_mode.load_state_dict(state["policy"])
        except (RuntimeError, ValueError, KeyError, TypeError) as err:
            raise UserError(f"cannot resume from checkpoint '{path}': it does not fit this config's policy "
                            f"'{policy.type}' (was it trained with another config?): {type(err).__name__}: "
                            f"{error_summary(err, 300, all_lines=True)}") from None
        self.learner.train_iter = int(counters["train_iter"])
        self.env_step = int(counters["env_step"])
        self.last_eval_iter = None if counters["last_eval_iter"] < 0 else int(counters["last_eval_iter"])
        self.best_return = float(counters["best_return"])
        self.last_return = None if math.isnan(counters["last_return"]) else float(counters["last_return"])
        self.load_extra_counters(counters)
        set_rng_state(state["rng"])
        self.best_return = max(self.best_return, self._best_on_disk(path))
        if self._saves_buffer():
            self._buffer_note = load_replay_buffer(self.buffer, counters, os.path.dirname(os.path.abspath(path)))
        return float(counters["wall_time"])

    def _best_on_disk(self, resumed: str) -> float:
        """The return of ckpt_best.pth.tar: it stays the best policy seen even when it is newer than the checkpoint
        resumed from (a killed run's evaluation after its last ckpt_last), so a worse one never replaces it."""
        best = os.path.join(self.run_dir, "ckpt", "ckpt_best.pth.tar")
        if os.path.abspath(best) == os.path.abspath(resumed) or not os.path.isfile(best):
            return -math.inf
        try:
            return float(load_checkpoint(best)["counters"]["best_return"])
        except (UserError, KeyError, TypeError, ValueError):
            return -math.inf

    # ---- evaluation records, progress, the result ----------------------------------------------------------------
    def record_eval(self, train_iter: int, env_step: int, result: Dict[str, float],
                    policy_state: Optional[Dict[str, Any]] = None) -> bool:
        """Log an evaluation of the weights of ``train_iter`` (``policy_state``, default the current ones), keep
        ckpt_best (with the counters of those weights); True when the stop value is reached."""
        self.last_return = result["return_mean"]
        self.logger.eval_row(train_iter, env_step, result)
        self.logger.info(f"eval @ env_step {env_step:,} (train_iter {train_iter:,}): return {result['return_mean']:.2f} "
                         f"+- {result['return_std']:.2f} over {result['episodes']} episodes")
        if result["return_mean"] > self.best_return:
            self.best_return = result["return_mean"]
            self.save("ckpt_best.pth.tar", policy_state, at=(train_iter, env_step))
        stop_value = self.cfg.env.stop_value
        return stop_value is not None and result["return_mean"] >= stop_value

    def eval_text(self) -> str:
        return "-" if self.last_return is None else f"{self.last_return:.1f} (best {self.best_return:.1f})"

    def log_episodes(self, episodes, env_step: int) -> None:
        """Mean return and length of finished collector episodes, in TensorBoard under ``collector/``."""
        if episodes:
            returns = [e["return"] for e in episodes]
            lengths = [e["length"] for e in episodes]
            self.logger.scalars("collector", {"episode_return": sum(returns) / len(returns),
                                              "episode_length": sum(lengths) / len(lengths)}, env_step)

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
            kept = self.last_good_checkpoint()
            return type(err)(f"{str(err).rstrip('.')}. The run stopped; "
                             + (f"its last good checkpoint is {kept}: fix the cause, then continue with --resume."
                                if kept else "it had written no checkpoint yet."))
        return err

    def last_good_checkpoint(self) -> Optional[str]:
        """The checkpoint ``--resume`` would continue from, with its counters; None if none can be read."""
        try:
            path, state, _ = find_resume_checkpoint(self.run_dir)
            counters = state["counters"]
            return f"{path} (train_iter {int(counters['train_iter']):,}, env_step {int(counters['env_step']):,})"
        except (UserError, KeyError, TypeError, ValueError):
            return None

    def write_result(self, stop_reason: str, save_last: bool = True, **extra: Any) -> Dict[str, Any]:
        """ckpt_last (if configured and ``save_last``) and result.json; prints the closing line. A stop signal that
        arrives meanwhile takes effect once both are written (``deferred_interrupts``), so they always agree."""
        with deferred_interrupts():
            if save_last and self._hook.save_ckpt_after_run:
                self.save("ckpt_last.pth.tar")
            result = {
                "stop_reason": stop_reason,
                "env_step": self.env_step,
                "train_iter": self.learner.train_iter,
                "best_return": None if math.isinf(self.best_return) else self.best_return,
                "final_return": self.last_return,
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
