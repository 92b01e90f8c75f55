"""Evaluate a checkpoint: ``ding_lite -m eval -c CONFIG --load-path PATH`` (``--video DIR``: and record an episode)."""
from typing import Any, Dict, List, Optional

from ding_lite.policy.base_policy import check_cuda
from ding_lite.utils import UserError, set_seed
from ding_lite.worker import Evaluator, load_checkpoint
from ding_lite.worker.checkpoint import check_checkpoint_fits, load_model_weights
from ding_lite.worker.video import EvalVideo

from .build import ConfigInput, build, compile_input


def eval_pipeline(input_cfg: ConfigInput, load_path: str, seed: Optional[int] = None, *, overrides: Optional[List[str]] = None,
                  n_episode: Optional[int] = None, video_dir: Optional[str] = None) -> Dict[str, Any]:
    """Load the model weights of ``load_path`` into the config's policy and evaluate it; returns the statistics.

    ``n_episode`` (default ``env.n_evaluator_episode``) must be a multiple of ``env.evaluator_env_num``. With
    ``video_dir`` one more episode, of a separate env seeded as evaluator env 0, is recorded there
    (``ding_lite/worker/video.py``); its path is ``result['video']``.
    """
    if n_episode is not None and (isinstance(n_episode, bool) or not isinstance(n_episode, int) or n_episode < 1):
        raise UserError(f"--episodes (n_episode)={n_episode!r}: must be a whole number >= 1")
    cfg = compile_input(input_cfg, seed, overrides)
    check_cuda(cfg.policy.cuda)  # before the checkpoint is read and any env is built
    seed = cfg.seed
    state = load_checkpoint(load_path)
    set_seed(seed)
    parts = build(cfg, seed, collect=False, enable_field=("eval",))
    check_checkpoint_fits(state, cfg.policy.type, cfg.policy.model, load_path, action="evaluate")
    load_model_weights(parts.policy.model, parts.policy.checkpoint_model_state(state["policy"]), load_path)
    episodes = n_episode or cfg.env.n_evaluator_episode
    if episodes % cfg.env.evaluator_env_num:
        raise UserError(f"--episodes {episodes} must be a multiple of env.evaluator_env_num="
                        f"{cfg.env.evaluator_env_num}")
    video = EvalVideo(cfg.env, seed, video_dir) if video_dir is not None else None
    evaluator = Evaluator(parts.evaluator_env, parts.policy.eval_mode, episodes, 1, video, video_every=1)
    try:
        train_iter, env_step = int(state["counters"]["train_iter"]), int(state["counters"]["env_step"])
        result = evaluator.eval(train_iter, env_step) if video is not None else evaluator.eval(train_iter)
    finally:
        evaluator.close()
    if evaluator.last_video is not None:
        result["video"] = evaluator.last_video
    result["seed"] = seed
    result["train_iter"] = int(state["counters"]["train_iter"])
    result["env_step"] = int(state["counters"]["env_step"])
    return result
