"""The serial pipeline: evaluate when due, collect, push, train; repeat until a stop condition."""
import math
import os
from typing import Any, Dict, List, Optional

import torch

from ding_lite.config import save_config_py
from ding_lite.policy import Policy
from ding_lite.utils import get_rng_state, set_rng_state, set_seed
from ding_lite.utils.file_io import atomic_write_json
from ding_lite.worker import (Evaluator, Learner, RunLogger, SampleCollector, Throughput, load_checkpoint,
                              save_checkpoint)

from .build import ConfigInput, build, build_buffer, compile_input, prepare_run_dir, run_dir_name


class _Run:
    """State of one serial run: the components, counters, and what it writes to its run directory."""

    def __init__(self, cfg, seed: int, run_dir: str, model, resume: bool, quiet: bool) -> None:
        self.cfg, self.run_dir, self.seed = cfg, run_dir, seed
        set_seed(seed)
        parts = build(cfg, seed, model)
        self.policy: Policy = parts.policy
        self.collector = SampleCollector(parts.collector_env, self.policy.collect_mode)
        self.evaluator = Evaluator(parts.evaluator_env, self.policy.eval_mode, cfg.env.n_evaluator_episode,
                                   cfg.policy.eval.evaluator.eval_freq)
        self.buffer = build_buffer(cfg, seed)
        self.learner = Learner(self.policy.learn_mode)
        self.best_return, self.last_return = -math.inf, None
        wall_offset = 0.0
        if resume:
            wall_offset = self._restore(os.path.join(run_dir, "ckpt", "ckpt_last.pth.tar"))
        else:
            os.makedirs(os.path.join(run_dir, "ckpt"))
            save_config_py(cfg, os.path.join(run_dir, "total_config.py"))
        self.logger = RunLogger(run_dir, os.path.basename(run_dir), quiet, wall_offset)

    # ---- checkpoints ---------------------------------------------------------------------------------------------
    def _state(self) -> Dict[str, Any]:
        return {
            "policy": self.policy.learn_mode.state_dict(),
            "counters": {
                "train_iter": self.learner.train_iter,
                "env_step": self.collector.envstep,
                "last_eval_iter": -1 if self.evaluator.last_eval_iter is None else self.evaluator.last_eval_iter,
                "best_return": self.best_return,
                "last_return": math.nan if self.last_return is None else self.last_return,
                "wall_time": self.logger.wall_time,
            },
            "rng": get_rng_state(),
        }

    def save(self, name: str) -> None:
        save_checkpoint(self._state(), os.path.join(self.run_dir, "ckpt", name))

    def _restore(self, path: str) -> float:
        state = load_checkpoint(path)
        self.policy.learn_mode.load_state_dict(state["policy"])
        counters = state["counters"]
        self.learner.train_iter = int(counters["train_iter"])
        self.collector.envstep = int(counters["env_step"])
        self.evaluator.last_eval_iter = None if counters["last_eval_iter"] < 0 else int(counters["last_eval_iter"])
        self.best_return = float(counters["best_return"])
        self.last_return = None if math.isnan(counters["last_return"]) else float(counters["last_return"])
        set_rng_state(state["rng"])
        # Env states are not checkpointed: start new episodes, seeded apart from the ones already played.
        self.collector.reset(seed=self.seed + self.collector.envstep)
        return float(counters["wall_time"])

    # ---- the loop ------------------------------------------------------------------------------------------------
    def evaluate(self) -> bool:
        """Evaluate, log, keep the best checkpoint; True when the stop value is reached."""
        result = self.evaluator.eval(self.learner.train_iter)
        self.last_return = result["return_mean"]
        self.logger.eval_row(self.learner.train_iter, self.collector.envstep, result)
        self.logger.info(f"eval @ env_step {self.collector.envstep}: return {result['return_mean']:.2f} "
                         f"+- {result['return_std']:.2f} over {result['episodes']} episodes")
        if result["return_mean"] > self.best_return:
            self.best_return = result["return_mean"]
            self.save("ckpt_best.pth.tar")
        stop_value = self.cfg.env.stop_value
        return stop_value is not None and result["return_mean"] >= stop_value

    def progress(self, throughput: Throughput) -> None:
        speed = throughput(self.collector.envstep, self.learner.train_iter)
        means = self.learner.pop_means() or {}
        self.logger.scalars("learner", means, self.learner.train_iter)
        self.logger.scalars("speed", speed, self.collector.envstep)
        eval_text = "-" if self.last_return is None else f"{self.last_return:.1f} (best {self.best_return:.1f})"
        self.logger.info(f"env_step {self.collector.envstep:,} | train_iter {self.learner.train_iter:,} | "
                         f"{speed['env_step_per_s']:,.0f} env steps/s | {speed['train_iter_per_s']:,.1f} it/s | "
                         f"eval {eval_text} | {self.logger.wall_time:.1f} s")

    def log_episodes(self) -> None:
        episodes = self.collector.episodes.pop_finished()
        if episodes:
            returns = [e["return"] for e in episodes]
            lengths = [e["length"] for e in episodes]
            self.logger.scalars("collector", {"episode_return": sum(returns) / len(returns),
                                              "episode_length": sum(lengths) / len(lengths)},
                                self.collector.envstep)

    def train(self, max_env_step: Optional[int], max_train_iter: Optional[int]) -> str:
        learn, hook = self.cfg.policy.learn, self.cfg.policy.learn.learner.hook
        n_sample = self.cfg.policy.collect.n_sample
        throughput = Throughput(self.collector.envstep, self.learner.train_iter)
        self.warm_up()
        while True:
            if self.evaluator.should_eval(self.learner.train_iter) and self.evaluate():
                return "stop_value"
            if max_env_step is not None and self.collector.envstep >= max_env_step:
                return "max_env_step"
            if max_train_iter is not None and self.learner.train_iter >= max_train_iter:
                return "max_train_iter"
            samples = self.collector.collect(n_sample)
            self.buffer.push(samples, self.collector.envstep, collect_iter=self.learner.train_iter)
            for _ in range(learn.update_per_collect):
                batch = self.buffer.sample(learn.batch_size, self.learner.train_iter)
                if batch is None:
                    break
                self.learner.train(batch)
                it = self.learner.train_iter
                if it % hook.log_show_after_iter == 0:
                    self.progress(throughput)
                if hook.save_ckpt_after_iter and it % hook.save_ckpt_after_iter == 0:
                    self.save(f"iteration_{it}.pth.tar")
                if max_train_iter is not None and it >= max_train_iter:
                    break
            self.log_episodes()

    def warm_up(self) -> None:
        """Fill the buffer with ``policy.random_collect_size`` env steps of uniformly random actions (policies that
        declare that key, e.g. SAC), once, at the start of a fresh run."""
        steps = self.cfg.policy.random_collect_size if "random_collect_size" in self.cfg.policy else 0
        if steps <= 0 or self.collector.envstep > 0:
            return
        unroll_len = self.policy.collect_mode.unroll_len
        n_sample = math.ceil(steps / (unroll_len * self.collector.num_envs)) * self.collector.num_envs
        self.buffer.push(self.collector.collect(n_sample, random_action=True), self.collector.envstep,
                         collect_iter=self.learner.train_iter)
        self.logger.info(f"warm-up: {self.collector.envstep:,} env steps of uniformly random actions")

    def finish(self, stop_reason: str) -> Dict[str, Any]:
        """Final evaluation (on a normal stop), ckpt_last and result.json."""
        normal = stop_reason in ("stop_value", "max_env_step", "max_train_iter")
        if normal and self.evaluator.last_eval_iter != self.learner.train_iter:
            self.evaluate()
        if self.cfg.policy.learn.learner.hook.save_ckpt_after_run:
            self.save("ckpt_last.pth.tar")
        result = {
            "stop_reason": stop_reason,
            "env_step": self.collector.envstep,
            "train_iter": self.learner.train_iter,
            "best_return": None if math.isinf(self.best_return) else self.best_return,
            "final_return": self.last_return,
            "wall_time": round(self.logger.wall_time, 3),
        }
        atomic_write_json(result, os.path.join(self.run_dir, "result.json"))
        self.logger.info(f"stopped ({stop_reason}) at env_step {result['env_step']:,}, train_iter "
                         f"{result['train_iter']:,}: final return {result['final_return']}, best "
                         f"{result['best_return']}, {result['wall_time']:.1f} s")
        return result

    def close(self) -> None:
        self.collector.close()
        self.evaluator.close()
        self.logger.close()


def serial_pipeline(input_cfg: ConfigInput, seed: Optional[int] = None, env_setting: Any = None,
                    model: Optional[torch.nn.Module] = None, max_train_iter: Optional[int] = None,
                    max_env_step: Optional[int] = None, *, overrides: Optional[List[str]] = None,
                    exp_name: Optional[str] = None, resume: bool = False, quiet: bool = False) -> Policy:
    """Train ``input_cfg`` (main_config or (main_config, create_config)) in ``<exp_name>_seed<seed>``.

    ``seed`` defaults to the config's ``seed`` (0 unless set). Returns the trained policy. ``overrides`` are ``--set`` strings or a dict of dotted keys. Ctrl-C stops the run
    cleanly: a last checkpoint and result.json are written, then KeyboardInterrupt propagates.
    """
    if env_setting is not None:
        raise NotImplementedError("env_setting is not used by ding_lite: envs come from the config's env section")
    cfg = compile_input(input_cfg, seed, overrides, exp_name)
    seed = cfg.seed
    run_dir = run_dir_name(cfg.exp_name, seed)
    prepare_run_dir(run_dir, resume)
    run = _Run(cfg, seed, run_dir, model, resume, quiet)
    try:
        run.logger.info(f"{'resuming' if resume else 'starting'} {cfg.policy.type} on "
                        f"{cfg.env.env_id or cfg.env.type} in {os.path.abspath(run_dir)}")
        try:
            stop_reason = run.train(max_env_step, max_train_iter)
        except KeyboardInterrupt:
            run.finish("interrupted")
            raise
        except Exception as err:
            # Keep what was learnt (and make the run resumable) before the error propagates unchanged.
            run.finish(f"error: {type(err).__name__}")
            raise
        run.finish(stop_reason)
    finally:
        run.close()
    return run.policy
