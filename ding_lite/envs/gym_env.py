"""Env creation: gymnasium ids (type 'gym') and user envs registered in ENV_REGISTRY.

Vector envs are made for a *role*: 'collector' (training) or 'evaluator'. Only Atari's training-only preprocessing
(``env.atari.episodic_life``, ``env.atari.clip_reward``) differs between them; see ``ding_lite/envs/atari.py``.
"""
import functools
import importlib
from typing import Any, Callable

import gymnasium as gym
from easydict import EasyDict

from ding_lite.utils import ENV_REGISTRY, Configurable, ConfigError, UserError
from ding_lite.utils.suggest import did_you_mean

from .atari import ATARI_MAKE_KWARGS, atari_factory, is_ale_env, make_atari_env, register_ale
from .env_entries import entry_factory, method_form
from .mask_source import MASK_SOURCES, mask_factory
from .envpool_manager import check_envpool_env
from .watchdog import check_step_timeout
from .wrappers import check_wrappers, factory_with_imports, wrapped_factory

# The roles a vector env is made for; only the collector's envs train (Atari's episodic life, reward clipping).
ROLES = ("collector", "evaluator")


class EnvConfig(Configurable):
    """The ``env`` section shared by every env type; an ENV_REGISTRY entry's ``config`` may add keys to it."""

    config = dict(
        # (str) Gymnasium id of the env, e.g. 'CartPole-v1' (any id in gymnasium's registry; for type 'gym').
        env_id=None,
        # (dict) Keyword arguments for gymnasium.make / the env class, e.g. dict(continuous=True). Free-form.
        kwargs=dict(),
        # (int) Override the env's time limit (TimeLimit truncation) in steps; None keeps the registered one. For
        # Atari ids: agent steps (env.atari.frame_skip frames each), on top of ALE's cap of 108,000 frames a game.
        max_episode_steps=None,
        # (int) Number of envs the collector steps in one vector env.
        collector_env_num=8,
        # (int) Number of envs the evaluator steps in one vector env.
        evaluator_env_num=5,
        # (int) Episodes per evaluation, split evenly over the evaluator envs (a fixed quota per env).
        n_evaluator_episode=5,
        # (float) Stop training once an evaluation's mean return reaches this; None never stops on return.
        stop_value=None,
        # (list) gymnasium wrappers around every env, first innermost: each 'module.path:Name' or
        # dict(type='module.path:Name', kwargs=dict(...)), called as Name(env, **kwargs). They wrap the env as made
        # (gymnasium.make's TimeLimit, Atari's preprocessing, an ENV_REGISTRY entry's env); the policy sees the
        # wrapped spaces. See docs/custom_env.md.
        wrappers=[],
        # (bool) Normalise the float observations (every float Box leaf) by running mean and variance, as SB3's
        # VecNormalize: the statistics travel with the policy (checkpoints, workers, -m eval) and are updated from
        # each batch of train samples, never by evaluation. See ding_lite/torch_utils/obs_norm.py.
        normalize_obs=False,
        # (float) With normalize_obs: normalised observations are clipped to [-normalize_obs_clip, normalize_obs_clip];
        # None: no clip.
        normalize_obs_clip=10.0,
        # (float) Seconds an env's step or reset may take before the run stops with a line naming the env, the call
        # and the env index (a hung env); a parallel worker whose env hangs is restarted like a crashed one. None:
        # no limit. See docs/reliability.md.
        step_timeout_s=60.0,
        # (bool) Before training, run the env checks of `ding_lite check-env` on one env made as the collector's
        # (1,000 random steps): errors stop the run with one line each and its fix, warnings are printed. See
        # docs/custom_env.md ("Checking an env").
        check=False,
        # (str) The key of a Dict observation that holds the action mask (1/True: the action is valid), for Discrete
        # (shape (n,)) and MultiDiscrete (sum(nvec), or a Tuple of one mask per head) actions. The mask is not an
        # input of the model: the policy masks its logits with it (IMPALA, APPO, PPO). '': no mask (a key of that name
        # is then an ordinary observation the model sees). See docs/custom_env.md.
        action_mask_key="action_mask",
        # (str) Where the env gives its action mask: 'obs' (a key of its Dict observation, env.action_mask_key),
        # 'method' (env.action_masks(), sb3-contrib MaskablePPO's convention) or 'info' (info['action_mask'],
        # PettingZoo's). 'method' and 'info' wrap each env (outside env.wrappers) to put the mask into the observation
        # under env.action_mask_key; a non-Dict observation becomes {'observation': obs, key: mask}. See
        # ding_lite/envs/mask_source.py and docs/custom_env.md.
        action_mask_from="obs",
    )
    free_form = ("kwargs",)

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        for key in ("collector_env_num", "evaluator_env_num", "n_evaluator_episode"):
            if cfg[key] < 1:
                raise ConfigError(f"{path}.{key}={cfg[key]}: must be at least 1")
        for key in ("collector_env_num", "evaluator_env_num"):
            if cfg[key] > MAX_ENVS:
                raise ConfigError(f"{path}.{key}={cfg[key]:,}: more than {MAX_ENVS:,} envs in one vector env (each a "
                                  f"live env, with the subprocess manager a process of its own); use at most "
                                  f"{MAX_ENVS:,}, or -m parallel with several collectors")
        steps = cfg.max_episode_steps
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
            raise ConfigError(f"{path}.max_episode_steps={steps!r}: must be a whole number >= 1 (the time limit of an "
                              f"episode, in env steps), or None for the env's own")
        if cfg.n_evaluator_episode % cfg.evaluator_env_num:
            raise ConfigError(
                f"{path}.n_evaluator_episode={cfg.n_evaluator_episode} is not a multiple of "
                f"{path}.evaluator_env_num={cfg.evaluator_env_num}: every eval env runs the same number of episodes "
                f"so short episodes do not bias the mean; make it a multiple"
            )
        check_wrappers(cfg.wrappers, f"{path}.wrappers")
        check_step_timeout(cfg.step_timeout_s, f"{path}.step_timeout_s")
        source = cfg.action_mask_from
        if source not in MASK_SOURCES:
            raise ConfigError(f"{path}.action_mask_from={source!r}: must be one of {', '.join(MASK_SOURCES)}"
                              f"{did_you_mean(str(source), MASK_SOURCES)}")
        if source != "obs" and not cfg.action_mask_key:
            raise ConfigError(f"{path}.action_mask_from={source!r} puts the mask into the observation under "
                              f"{path}.action_mask_key, which is empty; set a key (the default is 'action_mask')")
        clip = cfg.normalize_obs_clip
        if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or not clip > 0):
            raise ConfigError(f"{path}.normalize_obs_clip={clip!r}: must be a positive number, or None for no clip")


def registry_id(env_id: str) -> str:
    """The id in gymnasium's registry of ``env_id``: without a 'module:' prefix ('minigrid:MiniGrid-Empty-5x5-v0')."""
    return env_id.partition(":")[2] if ":" in env_id else env_id


def import_env_module(env_id: str, path: str = "env.env_id") -> None:
    """Import the module of a 'module:id' env id, as ``gymnasium.make`` will (its import registers the id); a
    ConfigError naming ``path`` when it cannot be imported."""
    module = env_id.partition(":")[0] if ":" in env_id else None
    if not module:
        return
    try:
        importlib.import_module(module)
    except ImportError as err:
        raise ConfigError(f"{path}='{env_id}': cannot import module '{module}' ({err}); the part before ':' names "
                          f"the module whose import registers the id: check its spelling and that it is installed") \
            from None


def check_env_id(env_id: Any, path: str = "env.env_id") -> None:
    """Raise a ConfigError unless ``env_id`` names an env in gymnasium's registry (ale-py's Atari ids are registered
    here when first asked for; without ale-py they are a UserError naming the install command).

    An id registered by another package works once that package is imported: through ``env.import_names``
    (imported before the check) or gymnasium's own 'module:id' form, whose module is imported here."""
    if not isinstance(env_id, str) or not env_id:
        raise ConfigError(f"{path} must name a gymnasium env id such as 'CartPole-v1', got {env_id!r}")
    import_env_module(env_id, path)
    name = registry_id(env_id)
    register_ale(name)
    if name not in gym.registry:
        raise ConfigError(
            f"{path}='{env_id}': unknown gymnasium env id{did_you_mean(name, gym.registry.keys())} "
            f"(gymnasium {gym.__version__} knows {len(gym.registry)} ids; list them with "
            f"`python -c \"import gymnasium; print(sorted(gymnasium.registry))\"`; an id of another package needs "
            f"that package in env.import_names, or the id written as 'package:id')"
        )


# Envs one vector env may hold (env.collector_env_num, env.evaluator_env_num): a bound on a typo (100000), well above
# the env counts of any shipped config (16) and of envpool's Atari batches.
MAX_ENVS = 4096


@ENV_REGISTRY.register("gym")
class GymEnv(EnvConfig):
    """Any env registered in gymnasium, made with ``gymnasium.make(env.env_id, **env.kwargs)``; Atari (ale-py) ids get
    the DeepMind preprocessing of ``env.atari`` (docs/atari.md)."""

    config = dict(
        # (dict) DeepMind's Atari preprocessing. Applies to ale-py ids only ('ALE/Pong-v5', or DI-engine's
        # 'PongNoFrameskip-v4'; needs pip install -e ".[atari]"); other envs ignore it. Observations are uint8
        # (frame_stack, screen_size, screen_size), newest frame last. See docs/atari.md.
        atari=dict(
            # (bool) Apply the preprocessing below. False makes the ALE env as gymnasium.make does (210x160 RGB
            # frames, the id's own frame skip and sticky actions; the keys below are then ignored).
            preprocess=True,
            # (int) After a reset, a random number in [1, noop_max] of no-op frames (varied starts); 0: none.
            noop_max=30,
            # (int) Frames per agent step: the action repeats, rewards add up, the observation is the pixel-wise
            # max of the last two frames. The ALE env itself is made with frameskip=1 (ALE v5 ids skip 4 on their
            # own: that would skip twice).
            frame_skip=4,
            # (int) Frames are greyscale and resized (area average) to screen_size x screen_size.
            screen_size=84,
            # (int) Observations stack the last frame_stack frames: shape (frame_stack, screen_size, screen_size).
            frame_stack=4,
            # (bool) Collector envs only: a lost life ends the training episode (terminated=True, so value targets
            # stop there) while the game goes on; the game resets only on game over. Evaluator envs never use it.
            episodic_life=True,
            # (bool) Collector envs only: rewards clipped to [-1, 1] (their sign). Evaluator envs never clip, so
            # evaluation returns are true game scores.
            clip_reward=True,
            # (float) Sticky actions: the probability that the ALE repeats the previous action on a frame. 0.0 is
            # the DeepMind / IMPALA setting (and DI-engine's NoFrameskip-v4 ids); 0.25 is Machado et al.'s (ALE v5's
            # default).
            repeat_action_probability=0.0,
            # (bool) All 18 Atari actions instead of the game's minimal set (False, as in the IMPALA paper).
            full_action_space=False,
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        super().check_config(cfg, path)
        check_env_id(cfg.env_id, f"{path}.env_id")
        if cls._atari(cfg):
            cls._check_atari(cfg, path)
        if cfg.manager.type == "envpool":
            if cfg.wrappers:
                raise ConfigError(f"{path}.wrappers: the 'envpool' manager steps envpool's own batched envs, which "
                                  f"gymnasium wrappers cannot wrap; use env manager 'base' or 'subprocess', or drop "
                                  f"{path}.wrappers")
            if cfg.action_mask_from != "obs":
                raise ConfigError(f"{path}.action_mask_from={cfg.action_mask_from!r}: the 'envpool' manager steps "
                                  f"envpool's own batched envs, which ding_lite cannot wrap; use env manager 'base' "
                                  f"or 'subprocess'")
            check_envpool_env(cfg, path)

    @staticmethod
    def _check_atari(cfg: EasyDict, path: str) -> None:
        atari = cfg.atari
        for key, low in (("noop_max", 0), ("frame_skip", 1), ("screen_size", 1), ("frame_stack", 1)):
            if atari[key] < low:
                raise ConfigError(f"{path}.atari.{key}={atari[key]}: must be at least {low}")
        if not 0.0 <= atari.repeat_action_probability <= 1.0:
            raise ConfigError(f"{path}.atari.repeat_action_probability={atari.repeat_action_probability}: must be "
                              f"in [0, 1]")
        for key, atari_key in ATARI_MAKE_KWARGS.items():
            if key in cfg.kwargs:
                where = f"set {path}.atari.{atari_key} instead" if atari_key else "the preprocessing sets it"
                raise ConfigError(f"{path}.kwargs.{key}={cfg.kwargs[key]!r}: {path}.atari (preprocess=True) "
                                  f"controls this ALE option; {where}")

    @staticmethod
    def _make_kwargs(cfg: EasyDict) -> dict:
        kwargs = dict(cfg.kwargs)
        if cfg.max_episode_steps is not None:
            kwargs["max_episode_steps"] = cfg.max_episode_steps
        return kwargs

    @staticmethod
    def _atari(cfg: EasyDict) -> bool:
        return is_ale_env(registry_id(cfg.env_id)) and bool(cfg.atari.preprocess)

    @classmethod
    def factory(cls, cfg: EasyDict, role: str = "collector") -> Callable[[], gym.Env]:
        """``partial(gymnasium.make, env_id, **kwargs)``, after one probe env made here with clear errors.

        The factory references gymnasium only, so a spawned env process (the 'subprocess' manager) imports
        gymnasium, not ding_lite and torch: a much faster start. (Atari's preprocessing is ding_lite's
        ``envs.atari.make_atari_env``, whose process imports ding_lite.)
        """
        cls.make(cfg, role).close()
        if cls._atari(cfg):
            return atari_factory(cfg.env_id, cfg.atari, cfg.kwargs, cfg.max_episode_steps, role == "collector")
        return functools.partial(gym.make, cfg.env_id, **cls._make_kwargs(cfg))

    @classmethod
    def make(cls, cfg: EasyDict, role: str = "collector") -> gym.Env:
        """One env of ``cfg``; gymnasium's errors become ``UserError`` messages that name the fix."""
        register_ale(cfg.env_id)
        kwargs = cls._make_kwargs(cfg)
        try:
            if cls._atari(cfg):
                return make_atari_env(cfg.env_id, cfg.atari, cfg.kwargs, cfg.max_episode_steps, role == "collector")
            return gym.make(cfg.env_id, **kwargs)
        except gym.error.DependencyNotInstalled as err:
            raise UserError(f"env.env_id='{cfg.env_id}' needs an extra: {err}") from None
        except gym.error.Error as err:
            check_env_id(cfg.env_id)  # an unknown id gets the message with suggestions
            raise UserError(f"env.env_id='{cfg.env_id}': gymnasium cannot make it: {err}") from None
        except TypeError as err:
            raise UserError(f"env.kwargs={dict(cfg.kwargs)} do not fit '{cfg.env_id}': {err}") from None


def env_factory(cfg: EasyDict, role: str = "collector") -> Callable[[], gym.Env]:
    """A picklable zero-argument function making one env of ``cfg`` (an ``env`` section with ``type``): what vector
    envs take, here and in the env processes of the 'subprocess' manager.

    ENV_REGISTRY entries are one of (``ding_lite/envs/env_entries.py``): a class with a ``factory(cfg)`` classmethod
    returning such a function (like ``GymEnv``); a class with a static or class method ``make(cfg) ->
    gymnasium.Env``; a gymnasium.Env subclass, constructed with ``**env.kwargs``. A ``factory`` or ``make`` that
    takes a ``role`` argument gets it: 'collector' (training envs) or 'evaluator'. ``env.wrappers`` wrap the env
    each of them makes (``ding_lite/envs/wrappers.py``), and ``env.action_mask_from`` 'method' or 'info' one more
    wrapper around those (``ding_lite/envs/mask_source.py``); ``env.import_names`` are imported before the env is made,
    in whichever process makes it.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    entry = ENV_REGISTRY.get(cfg.type)
    if method_form(entry) == "factory" and getattr(entry.factory, "__func__", None) is GymEnv.factory.__func__:
        make = entry.factory(cfg, role)  # gymnasium.make itself: the env processes need not import ding_lite
    else:
        make = entry_factory(entry, cfg, role)
    name = cfg.env_id or cfg.type
    make = wrapped_factory(make, cfg.wrappers, name)
    make = mask_factory(make, cfg.action_mask_from, cfg.action_mask_key, name)
    return factory_with_imports(make, cfg.get("import_names") or [])  # set by compile_config beside the type
