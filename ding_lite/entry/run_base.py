"""What the serial and the parallel run share: counters, checkpoints, evaluation records, the progress line and
result.json. The subclasses decide where env steps and evaluations come from."""
import math
import os
from typing import Any, Dict, Optional

from easydict import EasyDict

from ding_lite.config import save_config_py
from ding_lite.policy import Policy
from ding_lite.utils import get_rng_state, set_rng_state
from ding_lite.utils.file_io import atomic_write_json
from ding_lite.worker import Learner, RunLogger, load_checkpoint, save_checkpoint

NORMAL_STOPS = ("stop_value", "max_env_step", "max_train_iter")


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

    # ---- what subclasses provide ---------------------------------------------------------------------------------
    env_step: int
    last_eval_iter: Optional[int]

    def extra_counters(self) -> Dict[str, Any]:
        """Counters a subclass checkpoints besides the common ones (numbers only)."""
        return {}

    def load_extra_counters(self, counters: Dict[str, Any]) -> None:
        """Restore what ``extra_counters`` saved (a checkpoint of the other pipeline may lack them)."""

    # ---- opening: a fresh run directory or a resumed one ---------------------------------------------------------
    def open(self, resume: bool, quiet: bool) -> None:
        """Restore from ckpt_last (``resume``) or create ``ckpt/`` and total_config.py; then start the logger."""
        wall_offset = 0.0
        if resume:
            wall_offset = self._restore(self._last_ckpt())
        else:
            os.makedirs(os.path.join(self.run_dir, "ckpt"))
            save_config_py(self.cfg, os.path.join(self.run_dir, "total_config.py"))
        self.logger = RunLogger(self.run_dir, os.path.basename(self.run_dir), quiet, wall_offset)

    # ---- checkpoints ---------------------------------------------------------------------------------------------
    def _last_ckpt(self) -> str:
        return os.path.join(self.run_dir, "ckpt", "ckpt_last.pth.tar")

    def state(self, policy_state: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """The checkpoint: policy state (the current one unless given), counters and RNG states."""
        return {
            "policy": self.policy.learn_mode.state_dict() if policy_state is None else policy_state,
            "counters": {
                "train_iter": self.learner.train_iter,
                "env_step": self.env_step,
                "last_eval_iter": -1 if self.last_eval_iter is None else self.last_eval_iter,
                "best_return": self.best_return,
                "last_return": math.nan if self.last_return is None else self.last_return,
                "wall_time": self.logger.wall_time,
                **self.extra_counters(),
            },
            "rng": get_rng_state(),
        }

    def save(self, name: str, policy_state: Optional[Dict[str, Any]] = None) -> None:
        save_checkpoint(self.state(policy_state), os.path.join(self.run_dir, "ckpt", name))

    def _restore(self, path: str) -> float:
        state = load_checkpoint(path)
        self.policy.learn_mode.load_state_dict(state["policy"])
        counters = state["counters"]
        self.learner.train_iter = int(counters["train_iter"])
        self.env_step = int(counters["env_step"])
        self.last_eval_iter = None if counters["last_eval_iter"] < 0 else int(counters["last_eval_iter"])
        self.best_return = float(counters["best_return"])
        self.last_return = None if math.isnan(counters["last_return"]) else float(counters["last_return"])
        self.load_extra_counters(counters)
        set_rng_state(state["rng"])
        return float(counters["wall_time"])

    # ---- evaluation records, progress, the result ----------------------------------------------------------------
    def record_eval(self, train_iter: int, env_step: int, result: Dict[str, float],
                    policy_state: Optional[Dict[str, Any]] = None) -> bool:
        """Log an evaluation of the weights of ``train_iter`` (``policy_state``, default the current ones), keep
        ckpt_best; True when the stop value is reached."""
        self.last_return = result["return_mean"]
        self.logger.eval_row(train_iter, env_step, result)
        self.logger.info(f"eval @ env_step {env_step:,} (train_iter {train_iter:,}): return {result['return_mean']:.2f} "
                         f"+- {result['return_std']:.2f} over {result['episodes']} episodes")
        if result["return_mean"] > self.best_return:
            self.best_return = result["return_mean"]
            self.save("ckpt_best.pth.tar", policy_state)
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

    def write_result(self, stop_reason: str, **extra: Any) -> Dict[str, Any]:
        """ckpt_last (if configured) and result.json; prints the closing line."""
        if self.cfg.policy.learn.learner.hook.save_ckpt_after_run:
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
        self.logger.info(f"stopped ({stop_reason}) at env_step {result['env_step']:,}, train_iter "
                         f"{result['train_iter']:,}: final return {result['final_return']}, best "
                         f"{result['best_return']}, {result['wall_time']:.1f} s")
        return result
