"""The serial pipeline: the training loop with an in-process transport (collector and evaluator in this process)."""
from typing import Any, List, Optional

import torch

from ding_lite.envs.env_spec import action_space_record
from ding_lite.policy import Policy
from ding_lite.utils import set_seed
from ding_lite.worker.in_process_transport import InProcessTransport

from .build import ConfigInput, build, check_budget, start_process
from .preflight import preflight
from .resume_config import pipeline_config
from ding_lite.run.run_dir import run_dir_name
from .training_loop import TrainingRun, run_training


def serial_pipeline(input_cfg: ConfigInput, seed: Optional[int] = None, env_setting: Any = None,
                    model: Optional[torch.nn.Module] = None, max_train_iter: Optional[int] = None,
                    max_env_step: Optional[int] = None, *, overrides: Optional[List[str]] = None,
                    exp_name: Optional[str] = None, resume: bool = False, quiet: bool = False,
                    trust_config: bool = False) -> Policy:
    """Train ``input_cfg`` (main_config or (main_config, create_config)) in ``<exp_name>_seed<seed>``.

    ``seed`` defaults to the config's ``seed`` (0 unless set). Returns the trained policy. ``overrides`` are
    ``--set`` strings or a dict of dotted keys. ``resume`` continues the run from its most advanced readable
    checkpoint, with the run's own config (its total_config.py, read as literals; ``input_cfg`` only names the run)
    and ``overrides`` on top (``resume_config.py``); ``trust_config`` lets it import the modules the run's config
    names that ``input_cfg`` does not. The run holds its directory's lock throughout. Ctrl-C stops the run cleanly (SIGTERM too): a last
    checkpoint and result.json are written, then KeyboardInterrupt propagates.

    Before any env is built (one probe env aside), ``preflight`` checks the device, the warm-up against
    ``max_env_step`` and the replay buffer against free memory.
    """
    if env_setting is not None:
        raise NotImplementedError("env_setting is not used by ding_lite: envs come from the config's env section")
    check_budget(max_env_step, max_train_iter)
    cfg, record = pipeline_config(input_cfg, seed, overrides, exp_name, resume, trust_config)
    start_process(cfg)
    seed = cfg.seed
    spec = preflight(cfg, seed, max_env_step, model, fresh=not resume)
    run_dir = run_dir_name(cfg.exp_name, seed)

    def make_run() -> TrainingRun:
        set_seed(seed)
        parts = build(cfg, seed, spec, model)
        transport = InProcessTransport(cfg, parts.policy, parts.collector_env, parts.evaluator_env, seed,
                                       run_dir)
        run = TrainingRun(cfg, seed, run_dir, parts.policy, transport)
        run.action_space_record = action_space_record(spec)
        run.resume_record = record
        return run

    run, _ = run_training(run_dir, resume, quiet, make_run, max_env_step, max_train_iter)
    return run.policy
