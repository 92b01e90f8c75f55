"""A training run's checkpoints (``TrainingRun`` in ``training_loop.py`` holds one ``RunCheckpoints``): what a
checkpoint holds, when one is written, and how ``--resume`` restores a run's counters (``RunCounters``) from one.

A checkpoint is a plain dict (``ding_lite.run.checkpoint``): ``meta`` (the policy type, its model keys and the env's
action space, checked when it is loaded), ``policy`` (the learn mode's state), ``counters`` and ``rng``. It is never
written with non-finite weights, so the file on disk is always the last good one.
"""
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from easydict import EasyDict

from ding_lite.config.defaults import model_type_defaults
from ding_lite.envs.env_spec import spec_from_record
from ding_lite.policy import Policy
from ding_lite.run import RunLogger, save_checkpoint
from ding_lite.run.checkpoint import (check_checkpoint_fits, check_env_fits, checkpoint_counters, checkpoint_meta,
                                      error_summary, resume_replay_buffer, save_replay_buffer, state_is_finite)
from ding_lite.utils import UserError, get_rng_state, set_rng_state
from ding_lite.worker import Learner

from ding_lite.run.run_dir import best_return_on_disk

RESUME_COUNTERS = ("train_iter", "env_step", "last_eval_iter", "best_return", "last_return", "wall_time")


@dataclass
class RunCounters:
    """What a run counts beside the learner's ``train_iter``; a checkpoint holds them and a resume restores them."""
    env_step: int = 0
    last_eval_iter: Optional[int] = None  # the train_iter of the last evaluation (None: none yet)
    best_return: float = -math.inf
    last_return: Optional[float] = None
    version: int = 0  # of the weights last published to the actors


class RunCheckpoints:
    """A run's checkpoints: the state it saves, the periodic and final saves, and the restore a resume starts with.
    It reads and (on a restore) sets the run's ``counters`` and the learner's ``train_iter``."""

    def __init__(self, cfg: EasyDict, run_dir: str, policy: Policy, learner: Learner, counters: RunCounters,
                 buffer: Any = None, action_space_record: Optional[Dict[str, Any]] = None) -> None:
        self.cfg, self.run_dir, self.policy, self.learner = cfg, run_dir, policy, learner
        self.counters, self.buffer, self.action_space_record = counters, buffer, action_space_record
        self.logger: Optional[RunLogger] = None  # the run's, once it starts (after a restore: it needs the wall time)
        self.buffer_note: Optional[str] = None  # what a restore did with the saved buffer content, for the log
        self._next_last_save = math.inf

    @property
    def _hook(self):
        return self.cfg.policy.learn.learner.hook

    def start_clock(self, logger: RunLogger) -> None:
        """Log to ``logger`` and start the clock of the periodic ckpt_last (``save_ckpt_last_every_s``)."""
        self.logger = logger
        self._next_last_save = time.monotonic() + self._hook.save_ckpt_last_every_s

    def state(self, policy_state: Optional[Dict[str, Any]] = None,
              at: Optional[Tuple[int, int]] = None) -> Dict[str, Any]:
        """The checkpoint: policy state (the current one unless given), counters (``at=(train_iter, env_step)`` of
        a given policy state), RNG states, and what model it holds (``meta``, checked when it is loaded)."""
        c = self.counters
        train_iter, env_step = at if at is not None else (self.learner.train_iter, c.env_step)
        return {
            "meta": {**checkpoint_meta(self.cfg.policy.type, self.cfg.policy.model),
                     **({"env": self.action_space_record} if self.action_space_record else {})},
            "policy": self.policy.learn_mode.state_dict() if policy_state is None else policy_state,
            "counters": {
                "train_iter": train_iter,
                "env_step": env_step,
                "last_eval_iter": -1 if c.last_eval_iter is None else c.last_eval_iter,
                "best_return": c.best_return,
                "last_return": math.nan if c.last_return is None else c.last_return,
                "wall_time": self.logger.wall_time,
                "weight_version": c.version,
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
        return bool(self.cfg.policy.other.replay_buffer.get("save_replay_buffer")) and self.buffer is not None

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

    def restore(self, path: str, state: Dict[str, Any]) -> float:
        """Load checkpoint ``state`` (read from ``path``) into the policy, the counters, the RNGs and (if saved) the
        buffer, after checking it fits this config and env; returns the wall time the run had reached."""
        policy = self.cfg.policy
        check_checkpoint_fits(state, policy.type, policy.model, path, action="resume from",
                              defaults=model_type_defaults(policy.model.type))
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
        c = self.counters
        c.env_step = int(counters["env_step"])
        c.last_eval_iter = None if counters["last_eval_iter"] < 0 else int(counters["last_eval_iter"])
        c.last_return = None if math.isnan(counters["last_return"]) else float(counters["last_return"])
        c.version = int(counters.get("weight_version", 0))  # older checkpoints may lack it
        set_rng_state(state["rng"])
        c.best_return = max(float(counters["best_return"]), best_return_on_disk(self.run_dir, path))
        if self.buffer is not None:
            self.buffer_note = resume_replay_buffer(self.buffer, self.cfg.policy.other.replay_buffer, counters,
                                                     os.path.dirname(os.path.abspath(path)))
        return float(counters["wall_time"])
