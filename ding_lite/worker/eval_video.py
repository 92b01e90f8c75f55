"""Videos of evaluation episodes: ``ding_lite -m eval ... --video DIR`` and, during training,
``policy.eval.evaluator.video_every`` (see docs/videos.md).

One separate env, made with ``render_mode='rgb_array'`` (the ``env`` section's kwargs plus that one) and seeded as
evaluator env 0 is, plays one episode with the policy's eval mode after the evaluation it belongs to; the evaluation
itself is unchanged and no slower. Every step's ``env.render()`` frame goes straight to the writer, so a long Atari
game is never held in memory; the file is named after the run's env step and the episode's return,
``eval_envstep{N}_return{R:.1f}.mp4``.

Why imageio: gymnasium's own ``RecordVideo`` writes through moviepy, a large extra dependency that drags its own
ffmpeg lookup; imageio is small, well kept, and with imageio-ffmpeg (whose wheel ships a static ffmpeg binary, so no
system ffmpeg is needed) it streams frames into an H.264 MP4. Where no ffmpeg can be found, imageio writes a GIF with
pillow (an imageio dependency) instead, so a video is written either way. Both come with
``pip install "ding_lite[video]"``.
"""
import copy
import os
from typing import Any, Callable, Optional

import numpy as np
from easydict import EasyDict
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from ding_lite.envs import GymEnv, env_factory
from ding_lite.envs.obs_space import obs_to_tensor
from ding_lite.policy.base_policy import EvalMode
from ding_lite.utils import UserError
from ding_lite.utils.seed import env_seeds

from .collector import env_action_adapter

VIDEO_EXTRA = 'pip install "ding_lite[video]"'
DEFAULT_FPS = 30
ATARI_FPS = 60  # NTSC frames per second of the console


def ffmpeg_available() -> bool:
    """Whether imageio can write MP4: imageio-ffmpeg is installed and finds an ffmpeg binary (its own or the
    system's)."""
    try:
        import imageio_ffmpeg
        return bool(imageio_ffmpeg.get_ffmpeg_exe())
    except (ImportError, RuntimeError, OSError):
        return False


def check_imageio() -> None:
    """A UserError naming the install command when imageio is missing."""
    try:
        import imageio  # noqa: F401
    except ImportError:
        raise UserError(f"videos of evaluation episodes need imageio: {VIDEO_EXTRA}") from None


class VideoWriter:
    """Frames (H x W x 3 uint8) streamed to ``<stem>.mp4`` (imageio-ffmpeg) or, without ffmpeg, ``<stem>.gif``."""

    def __init__(self, stem: str, fps: float) -> None:
        import imageio.v2 as imageio
        self.ext = ".mp4" if ffmpeg_available() else ".gif"
        self.path = stem + self.ext
        if self.ext == ".mp4":
            # macro_block_size=2: H.264 (yuv420p) needs even sides; a larger block would rescale CartPole's 600x400.
            self._writer = imageio.get_writer(self.path, format="FFMPEG", fps=fps, macro_block_size=2)
        else:
            self._writer = imageio.get_writer(self.path, format="GIF", mode="I", duration=1000.0 / fps, loop=0)
        self.frames = 0

    def append(self, frame: Any) -> None:
        self._writer.append_data(np.asarray(frame, dtype=np.uint8))
        self.frames += 1

    def close(self) -> None:
        self._writer.close()


def unused_path(stem: str, ext: str) -> str:
    """``stem + ext``, or ``stem_2 + ext``, ``stem_3 + ext``, ... when taken: a video is never overwritten."""
    path, n = stem + ext, 1
    while os.path.exists(path):
        n += 1
        path = f"{stem}_{n}{ext}"
    return path


def render_env_config(env_cfg: EasyDict) -> EasyDict:
    """The ``env`` section of the recording env: ``env.kwargs`` with ``render_mode='rgb_array'``."""
    cfg = copy.deepcopy(env_cfg)
    cfg.kwargs = dict(cfg.kwargs or {}, render_mode="rgb_array")
    return cfg


def video_fps(env_cfg: EasyDict, metadata: dict) -> float:
    """Frames per second: the env's ``render_fps``, else 30; an Atari game under the preprocessing plays at real
    speed: the console's 60 frames a second over ``env.atari.frame_skip`` (one frame is rendered per agent step)."""
    if env_cfg.type == "gym" and GymEnv._atari(env_cfg):
        return ATARI_FPS / max(1, int(env_cfg.atari.frame_skip))
    fps = metadata.get("render_fps") or DEFAULT_FPS
    return float(fps)


class EvalVideo:
    """Records one episode of a separate ``render_mode='rgb_array'`` env into ``video_dir`` per ``record`` call.

    The env is made at the first ``record`` and reset with evaluator env 0's seed (``env_seeds(seed, 'evaluator',
    ...)[0]``) as ``make_vector_env`` resets it; each recording then starts with an unseeded reset, as each
    ``Evaluator.eval`` does: so the video of ``-m eval`` shows the episode evaluator env 0 plays first, the same one
    for a deterministic env and policy (during training, the first evaluation's).
    """

    def __init__(self, env_cfg: EasyDict, seed: int, video_dir: str) -> None:
        check_imageio()
        self.env_cfg = render_env_config(env_cfg)
        self.seed = env_seeds(seed, "evaluator", env_cfg.evaluator_env_num)[0]
        self.video_dir = video_dir
        self.env: Optional[SyncVectorEnv] = None
        self._env_action: Optional[Callable] = None
        self.last_path: Optional[str] = None
        self.last_return: Optional[float] = None

    def _make_env(self, policy: EvalMode) -> SyncVectorEnv:
        name = self.env_cfg.env_id or self.env_cfg.type
        try:
            # NEXT_STEP: the env that ends the episode is not reset in the same step, so its last frame renders.
            env = SyncVectorEnv([env_factory(self.env_cfg, "evaluator")], autoreset_mode=AutoresetMode.NEXT_STEP)
        except (UserError, TypeError) as err:
            raise UserError(f"a video needs env '{name}' made with render_mode='rgb_array' (added to env.kwargs), "
                            f"which failed: {err}") from None
        env.reset(seed=[self.seed])
        frame = env.call("render")[0]
        if not (isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[-1] in (3, 4)):
            env.close()
            raise UserError(f"a video needs env '{name}' to return an RGB array from render() under "
                            f"render_mode='rgb_array'; it returned {type(frame).__name__}"
                            f"{getattr(frame, 'shape', '')}")
        self._env_action = env_action_adapter(env, policy.action_bound)
        return env

    def record(self, policy: EvalMode, env_step: Optional[int], train_iter: Optional[int] = None) -> str:
        """Play one episode with ``policy`` (eval mode), write it; returns the file's path (also ``last_path``). The
        file is named by ``env_step``, or where that is unknown (the parallel pipeline's evaluator worker) by
        ``train_iter``: ``eval_iter<N>_return<R>``."""
        if self.env is None:
            self.env = self._make_env(policy)  # first reset with the seed, as make_vector_env does
        obs = self.env.reset()[0]  # as Evaluator.eval's reset: an unseeded one
        os.makedirs(self.video_dir, exist_ok=True)
        if env_step is not None or train_iter is None:
            step_text = "envstep" + ("NA" if env_step is None else str(int(env_step)))
        else:
            step_text = f"iter{int(train_iter)}"
        partial = os.path.join(self.video_dir, f".eval_{step_text}.partial")
        writer = VideoWriter(partial, video_fps(self.env_cfg, self.env.envs[0].metadata or {}))
        total = 0.0
        try:
            writer.append(self.env.call("render")[0][..., :3])
            policy.reset(None)
            done = False
            while not done:
                action = self._env_action(policy.forward(obs_to_tensor(obs))["action"])
                obs, reward, terminated, truncated, _ = self.env.step(action)
                total += float(reward[0])
                done = bool(terminated[0] or truncated[0])
                writer.append(self.env.call("render")[0][..., :3])
        finally:
            writer.close()
        stem = os.path.join(self.video_dir, f"eval_{step_text}_return{total:.1f}")
        path = unused_path(stem, writer.ext)
        os.replace(writer.path, path)
        self.last_path, self.last_return = path, total
        return path

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None
