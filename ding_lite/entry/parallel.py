"""The parallel pipeline: the training loop with a worker transport. Collector processes (or Ray actors) stream
train samples to this process, the learner, which owns the replay buffer and trains while they collect; an
evaluator worker scores snapshots of the weights.

The loop and its replay ratio are the serial pipeline's (``training_loop``): every ``policy.collect.n_sample``
samples that arrive allow ``policy.learn.update_per_collect`` updates. The learner never waits for a collector
unless it has used up that allowance (or the buffer cannot fill a batch); a collector waits only when
``parallel.queue_size`` of its batches are unread. Weights go back versioned every ``parallel.weight_sync_freq``
train iterations, and collectors pick up the newest between env steps. V-trace and ACER's truncated importance
weights correct for the lag; SAC is off-policy anyway.
"""
from typing import Any, Dict, List, Optional

import torch
from easydict import EasyDict

from ding_lite.config import config_imports
from ding_lite.config.parallel import default_collector_num, resolve_sync
from ding_lite.envs.env_spec import action_space_record
from ding_lite.parallel.worker_transport import WorkerTransport, prepare_backend
from ding_lite.torch_utils.threads import available_cores
from ding_lite.utils import POLICY_REGISTRY, set_seed

from .build import ConfigInput, check_budget, start_process
from .preflight import preflight
from .resume_config import pipeline_config
from ding_lite.run.run_dir import run_dir_name
from .training_loop import TrainingRun, run_training


def resolve_parallel(cfg: EasyDict) -> None:
    """Fill ``parallel.collector_num`` (None: cores - 1), ``queue_size`` (None: collector_num) and ``sync`` (None:
    the policy's on_policy flag; ``resolve_sync``), so total_config.py records what ran."""
    if cfg.parallel.collector_num is None:
        cfg.parallel.collector_num = default_collector_num()
    if cfg.parallel.queue_size is None:
        cfg.parallel.queue_size = cfg.parallel.collector_num
    resolve_sync(cfg)


def parallel_pipeline(input_cfg: ConfigInput, seed: Optional[int] = None, model: Optional[torch.nn.Module] = None,
                      max_train_iter: Optional[int] = None, max_env_step: Optional[int] = None, *,
                      overrides: Optional[List[str]] = None, exp_name: Optional[str] = None, resume: bool = False,
                      quiet: bool = False, trust_config: bool = False) -> Dict[str, Any]:
    """Train ``input_cfg`` with ``parallel.collector_num`` collector processes (or Ray actors) feeding a learner in
    this process; the run directory ``<exp_name>_seed<seed>`` is the serial pipeline's, and so are its lock,
    ``resume`` (the run's own config, with ``overrides`` on top) and ``trust_config``. Returns result.json's
    content. Ctrl-C or SIGTERM stop every worker, write ckpt_last and
    result.json, then KeyboardInterrupt propagates.
    """
    check_budget(max_env_step, max_train_iter)
    cfg, record = pipeline_config(input_cfg, seed, overrides, exp_name, resume, trust_config)
    resolve_parallel(cfg)
    # 'auto': the learner gets the cores that the collectors and the evaluator leave free (at least one)
    start_process(cfg, max(1, available_cores() - cfg.parallel.collector_num - 1))
    seed = cfg.seed
    spec = preflight(cfg, seed, max_env_step, model, fresh=not resume)  # before any worker or env
    run_dir = run_dir_name(cfg.exp_name, seed)

    def make_run() -> TrainingRun:
        # Ray's instance and actor processes start first, so that they come up while the learner builds
        backend = prepare_backend(cfg.parallel)
        try:
            set_seed(seed)
            policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, model=model, enable_field=("learn", "eval"))
            transport = WorkerTransport(cfg, seed, policy, config_imports(cfg), model_given=model is not None,
                                        run_dir=run_dir, backend=backend)
            run = TrainingRun(cfg, seed, run_dir, policy, transport)
        except BaseException:
            if backend is not None:
                backend.release()
            raise
        run.action_space_record = action_space_record(spec)
        run.resume_record = record
        return run

    _, result = run_training(run_dir, resume, quiet, make_run, max_env_step, max_train_iter)
    return result
