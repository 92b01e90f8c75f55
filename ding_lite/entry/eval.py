"""Evaluate a checkpoint: ``ding_lite -m eval -c CONFIG --load-path PATH`` (``--video DIR``: and record an episode)."""
from typing import Any, Dict, List, Optional

from ding_lite.config.defaults import model_type_defaults
from ding_lite.policy.base_policy import check_cuda
from ding_lite.run import load_checkpoint
from ding_lite.run.checkpoint import check_checkpoint_fits, check_env_fits, checkpoint_counters, load_model_weights
from ding_lite.utils import UserError, set_seed
from ding_lite.worker import Evaluator
from ding_lite.worker.eval_video import EvalVideo

from .build import ConfigInput, build, compile_input, probe_env_spec, start_process


def eval_episodes(cfg, n_episode: Optional[int]) -> int:
    """The episodes to evaluate (``n_episode``, default ``env.n_evaluator_episode``); fewer than
    ``env.evaluator_env_num`` use that many evaluator envs (the config is changed), more must be a multiple."""
    if n_episode is not None and (isinstance(n_episode, bool) or not isinstance(n_episode, int) or n_episode < 1):
        raise UserError(f"--episodes (n_episode)={n_episode!r}: must be a whole number >= 1")
    episodes = n_episode or cfg.env.n_evaluator_episode
    if episodes < cfg.env.evaluator_env_num:
        cfg.env.evaluator_env_num = episodes
    elif episodes % cfg.env.evaluator_env_num:
        raise UserError(f"--episodes {episodes} must be a multiple of env.evaluator_env_num="
                        f"{cfg.env.evaluator_env_num} (or fewer than it: then one env per episode); give "
                        f"--episodes {episodes - episodes % cfg.env.evaluator_env_num} or --set "
                        f"env.evaluator_env_num=N")
    return episodes


def eval_pipeline(input_cfg: ConfigInput, load_path: str, seed: Optional[int] = None, *, overrides: Optional[List[str]] = None,
                  n_episode: Optional[int] = None, video_dir: Optional[str] = None) -> Dict[str, Any]:
    """Load the model weights of ``load_path`` into the config's policy and evaluate it; returns the statistics.

    ``n_episode`` (default ``env.n_evaluator_episode``): fewer than ``env.evaluator_env_num`` run on that many envs,
    one episode each; more must be a multiple of it. The checkpoint is checked against the config (its model and
    its env's action space, from one probe env) before the evaluator envs are built; they are closed on every path.
    With ``video_dir`` one more episode, of a separate env seeded as evaluator env 0, is recorded there
    (``ding_lite/worker/eval_video.py``); its path is ``result['video']``.
    """
    cfg = compile_input(input_cfg, seed, overrides)
    start_process(cfg)
    check_cuda(cfg.policy.cuda)  # before the checkpoint is read and any env is built
    seed = cfg.seed
    episodes = eval_episodes(cfg, n_episode)
    state = load_checkpoint(load_path)
    counters = checkpoint_counters(state, load_path)
    spec = probe_env_spec(cfg, seed)  # one env, closed: the model's env-derived shapes, the action space
    check_checkpoint_fits(state, cfg.policy.type, cfg.policy.model, load_path, action="evaluate",
                          defaults=model_type_defaults(cfg.policy.model.type))
    check_env_fits(state, spec, load_path, cfg.env.env_id or cfg.env.type, action="evaluate")
    set_seed(seed)
    parts = build(cfg, seed, spec, collect=False, enable_field=("eval",))
    evaluator = None
    try:
        video = EvalVideo(cfg.env, seed, video_dir) if video_dir is not None else None
        evaluator = Evaluator(parts.evaluator_env, parts.policy.eval_mode, episodes, 1, video, video_every=1)
        load_model_weights(parts.policy.model, parts.policy.checkpoint_model_state(state["policy"]), load_path)
        train_iter, env_step = int(counters["train_iter"]), int(counters["env_step"])
        result = evaluator.eval(train_iter, env_step) if video is not None else evaluator.eval(train_iter)
    finally:
        if evaluator is not None:
            evaluator.close()
        else:
            parts.evaluator_env.close()
    if evaluator.last_video is not None:
        result["video"] = evaluator.last_video
    result["seed"] = seed
    result["train_iter"] = train_iter
    result["env_step"] = env_step
    return result
