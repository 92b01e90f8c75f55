"""Atari (ALE) envs through gymnasium, with the DeepMind preprocessing configured by ``env.atari``.

What one env of ``env.env_id='ALE/Pong-v5'`` (or DI-engine's 'PongNoFrameskip-v4') is, innermost first:

1. ale-py's ``AtariEnv`` made with ``frameskip=1`` (this preprocessing skips frames itself; ALE's own skip would skip
   twice), ``repeat_action_probability`` and ``full_action_space`` from ``env.atari``, and ALE's cap of 108,000 frames
   per game (30 minutes of play; the game is then *truncated*), as in ALE v5 and DeepMind's setup.
2. ``AtariPreprocess``: noop reset (1 to ``noop_max`` no-ops after a reset), frame skip (the action is repeated
   ``frame_skip`` frames and the rewards summed), the max of the last two frames' pixels (Atari sprites flicker),
   greyscale, and an area-average resize to ``screen_size`` x ``screen_size``. The same steps as gymnasium's
   ``AtariPreprocessing``, which needs OpenCV; this one resizes with numpy (within one grey level of OpenCV's
   INTER_AREA), so the ``atari`` extra is ale-py alone.
3. ``gymnasium.wrappers.TimeLimit(env.max_episode_steps)`` when that is set: it counts agent steps (one per
   ``env.step``), not frames, and truncates the game.
4. ``EpisodicLife`` (collector envs only, ``episodic_life``): a lost life ends the *training* episode with
   ``terminated=True``, so value targets do not bootstrap across it, but the game is not reset: the reset that follows
   (a vector env's autoreset) continues the same game with one no-op step. Only a game over or a truncation resets it.
5. ``gymnasium.wrappers.FrameStackObservation(frame_stack)``: the last ``frame_stack`` frames, oldest first, newest
   last, shape ``(frame_stack, screen_size, screen_size)`` uint8; after a reset every slot holds the first frame.
6. ``gymnasium.wrappers.ClipReward(-1, 1)`` (collector envs only, ``clip_reward``): Atari rewards are integers, so
   this is the sign of the reward, as in DeepMind's setup.

Evaluator envs never get 4 or 6: evaluation reports the true game score over whole games.

Nothing here imports torch, so the env processes of the 'subprocess' manager stay light (beyond ding_lite's import).
"""
import functools
import re
from math import gcd
from typing import Any, Callable, Dict, Optional

import gymnasium as gym
import numpy as np

# Ids that name ale-py envs before ale-py has registered them: its own 'ALE/<Game>-v5' and gym's
# '<Game>NoFrameskip-v4' (the id of DI-engine's dizoo Atari configs; ale-py registers it too).
ALE_ID = re.compile(r"^ALE/|NoFrameskip-v4$")
ALE_ENTRY_POINT = "ale_py.env:AtariEnv"
ATARI_INSTALL = 'pip install -e ".[atari]"'
# ALE's cap on one game, in frames (DeepMind's 30 minutes at 60 frames/s; ALE v5's max_num_frames_per_episode).
MAX_FRAMES_PER_GAME = 108_000
# The gymnasium.make kwargs env.atari sets: giving them in env.kwargs too is refused (say, frameskip=4 there would skip
# 4 x frame_skip frames per step).
ATARI_MAKE_KWARGS = {"frameskip": "frame_skip", "repeat_action_probability": "repeat_action_probability",
                     "full_action_space": "full_action_space", "max_num_frames_per_episode": None}


def looks_like_ale_id(env_id: Any) -> bool:
    """Whether ``env_id`` names an ale-py env by its form ('ALE/...', '...NoFrameskip-v4'), registered or not."""
    return isinstance(env_id, str) and bool(ALE_ID.search(env_id))


def register_ale(env_id: Any) -> None:
    """Register ale-py's envs with gymnasium if ``env_id`` names one and they are not registered yet.

    Done lazily, so ding_lite works without ale-py until an Atari id is asked for; without ale-py that is a UserError
    that names the install command.
    """
    if not looks_like_ale_id(env_id) or env_id in gym.registry:
        return
    try:
        import ale_py
    except ImportError:
        from ding_lite.utils import UserError
        raise UserError(f"env.env_id='{env_id}' is an Atari env, which needs ale-py (it ships the game ROMs): "
                        f"{ATARI_INSTALL}") from None
    gym.register_envs(ale_py)


def is_ale_env(env_id: Any) -> bool:
    """Whether ``env_id`` is registered as an ale-py env (after ``register_ale``)."""
    spec = gym.registry.get(env_id) if isinstance(env_id, str) else None
    return spec is not None and spec.entry_point == ALE_ENTRY_POINT


def area_weights(src: int, dst: int) -> np.ndarray:
    """The ``(dst, src)`` matrix of an area-average resize from ``src`` to ``dst`` pixels (OpenCV's INTER_AREA when
    shrinking): output pixel j averages the input over ``[j * src / dst, (j + 1) * src / dst)``, partial pixels
    weighted by their overlap."""
    scale = src / dst
    weights = np.zeros((dst, src), dtype=np.float64)
    for j in range(dst):
        lo, hi = j * scale, (j + 1) * scale
        for i in range(int(np.floor(lo)), min(src, int(np.ceil(hi)))):
            weights[j, i] = max(0.0, min(hi, i + 1) - max(lo, i)) / scale
    return weights


class AreaResize:
    """Area-average resize of a ``(height, width)`` uint8 image to ``(size, size)``, in numpy (no OpenCV).

    The weight matrix of a resize from n to m pixels is block diagonal, ``gcd(n, m)`` equal blocks of
    ``(m/g, n/g)``, so each direction is one small batched matmul (about 20 us for 210x160 -> 84x84).
    """

    def __init__(self, height: int, width: int, size: int) -> None:
        self.height, self.width, self.size = height, width, size
        self.row_blocks = gcd(height, size)
        self.rows = area_weights(height // self.row_blocks, size // self.row_blocks).astype(np.float32)
        self.col_blocks = gcd(width, size)
        self.cols_t = area_weights(width // self.col_blocks, size // self.col_blocks).T.astype(np.float32).copy()

    def __call__(self, image: np.ndarray) -> np.ndarray:
        x = image.reshape(self.row_blocks, self.height // self.row_blocks, self.width).astype(np.float32)
        rows = np.matmul(self.rows, x)  # (row_blocks, size / row_blocks, width): size rows
        out = rows.reshape(-1, self.width // self.col_blocks) @ self.cols_t
        return np.rint(out.reshape(self.size, self.size)).astype(np.uint8)


class AtariPreprocess(gym.Wrapper):
    """Noop reset, frame skip with the max over the last two frames, greyscale, resize to ``screen_size``.

    The steps and defaults of gymnasium's ``AtariPreprocessing`` (Machado et al. 2018; DeepMind's Nature DQN), with
    two differences: the resize is numpy's (``AreaResize``; no OpenCV needed), and when a game ends inside a frame
    skip the observation is the true last screen (gymnasium's wrapper returns the frames of the step before).
    ``step``'s ``info`` is the ALE's (``lives``, ``episode_frame_number``, ``frame_number``) from the last frame.
    """

    def __init__(self, env: gym.Env, noop_max: int = 30, frame_skip: int = 4, screen_size: int = 84) -> None:
        super().__init__(env)
        if frame_skip > 1 and getattr(env.unwrapped, "_frameskip", None) != 1:
            raise ValueError("make the ALE env with frameskip=1: this wrapper skips frames itself")
        if noop_max > 0 and env.unwrapped.get_action_meanings()[0] != "NOOP":
            raise ValueError("noop reset needs action 0 to be NOOP")
        self.noop_max, self.frame_skip = noop_max, frame_skip
        height, width = self.ale.getScreenDims()
        self._frames = np.zeros((2, height, width), dtype=np.uint8)  # the last two frames of a step
        self._resize = AreaResize(height, width, screen_size)
        self.observation_space = gym.spaces.Box(0, 255, (screen_size, screen_size), dtype=np.uint8)

    @property
    def ale(self):
        return self.env.unwrapped.ale

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        _, info = self.env.reset(seed=seed, options=options)
        noops = int(self.env.unwrapped.np_random.integers(1, self.noop_max + 1)) if self.noop_max > 0 else 0
        for _ in range(noops):
            _, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # (no game ends within 30 no-ops; kept for safety)
                _, info = self.env.reset()
        self.ale.getScreenGrayscale(self._frames[1])
        return self._resize(self._frames[1]), info

    def step(self, action):
        total, frames = 0.0, self._frames
        for t in range(self.frame_skip):
            _, reward, terminated, truncated, info = self.env.step(action)
            total += reward
            if terminated or truncated:
                break
            if t == self.frame_skip - 2:
                self.ale.getScreenGrayscale(frames[0])
        self.ale.getScreenGrayscale(frames[1])
        if self.frame_skip > 1 and t == self.frame_skip - 1:  # a full skip: pool the last two frames
            frame = np.maximum(frames[0], frames[1])
        else:  # no skip, or the game ended inside the skip: its last screen
            frame = frames[1]
        return self._resize(frame), total, terminated, truncated, info


class EpisodicLife(gym.Wrapper):
    """A lost life ends the training episode (``terminated=True``); the game goes on after the reset that follows.

    DeepMind's end-of-life signal (OpenAI Baselines' ``EpisodicLifeEnv``): value targets stop at a lost life, which
    helps the value estimate, while the agent still plays whole games. Under gymnasium's vector envs the
    ``terminated=True`` makes the vector env reset this env at once (SAME_STEP autoreset); that reset, right after a
    lost life (and only then), continues the game with one no-op step instead of starting a new game. A game over, a
    truncation, a seeded reset or any other reset starts a new game (with its noop reset). ``info['lives']`` is the
    ALE's lives count.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._lives = 0
        self._life_lost = False  # the last step lost a life and the game is not over: the next reset continues it

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = self.env.unwrapped.ale.lives()
        # lives > 0: some games (Qbert) sit at 0 lives for a few frames before the game over; that one ends the game.
        life_lost = 0 < lives < self._lives
        self._life_lost = life_lost and not (terminated or truncated)
        self._lives = lives
        return obs, reward, terminated or life_lost, truncated, info

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        if self._life_lost and seed is None and not options:
            self._life_lost = False
            obs, _, terminated, truncated, info = self.env.step(0)
            if not (terminated or truncated):
                self._lives = self.env.unwrapped.ale.lives()
                return obs, info
        self._life_lost = False
        obs, info = self.env.reset(seed=seed, options=options)
        self._lives = self.env.unwrapped.ale.lives()
        return obs, info


def atari_make_kwargs(atari: Dict[str, Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """``gymnasium.make``'s kwargs for the ALE env under the preprocessing: env.kwargs plus what env.atari sets."""
    made = dict(kwargs)
    made.setdefault("obs_type", "ram")  # the wrapper reads the screen from the ALE: the env's own obs is not used
    made.update(frameskip=1 if atari["frame_skip"] > 1 else atari["frame_skip"],
                repeat_action_probability=float(atari["repeat_action_probability"]),
                full_action_space=bool(atari["full_action_space"]),
                max_num_frames_per_episode=MAX_FRAMES_PER_GAME)
    return made


def make_atari_env(env_id: str, atari: Dict[str, Any], kwargs: Dict[str, Any], max_episode_steps: Optional[int],
                   train: bool) -> gym.Env:
    """One preprocessed Atari env (the module docstring lists the wrappers). ``train``: a collector env, which gets
    ``episodic_life`` and ``clip_reward`` as configured; evaluator envs (``train=False``) never get them."""
    register_ale(env_id)
    env = gym.make(env_id, **atari_make_kwargs(atari, kwargs))
    env = AtariPreprocess(env, noop_max=atari["noop_max"], frame_skip=atari["frame_skip"],
                          screen_size=atari["screen_size"])
    if max_episode_steps is not None:
        env = gym.wrappers.TimeLimit(env, max_episode_steps)
    if train and atari["episodic_life"]:
        env = EpisodicLife(env)
    env = gym.wrappers.FrameStackObservation(env, atari["frame_stack"])
    if train and atari["clip_reward"]:
        env = gym.wrappers.ClipReward(env, -1.0, 1.0)
    return env


def atari_factory(env_id: str, atari: Dict[str, Any], kwargs: Dict[str, Any], max_episode_steps: Optional[int],
                  train: bool) -> Callable[[], gym.Env]:
    """A picklable zero-argument maker of ``make_atari_env(...)`` (what vector envs and env processes take)."""
    return functools.partial(make_atari_env, env_id, dict(atari), dict(kwargs), max_episode_steps, train)
