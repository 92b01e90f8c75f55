"""Env creation: gymnasium ids (type 'gym') and user envs registered in ENV_REGISTRY."""
import functools
import inspect
from typing import Any, Callable

import gymnasium as gym
from easydict import EasyDict

from ding_lite.utils import ENV_REGISTRY, Configurable, ConfigError, UserError
from ding_lite.utils.suggest import did_you_mean


class EnvConfig(Configurable):
    """The ``env`` section shared by every env type; an ENV_REGISTRY entry's ``config`` may add keys to it."""

    config = dict(
        # (str) Gymnasium id of the env, e.g. 'CartPole-v1' (any id in gymnasium's registry; for type 'gym').
        env_id=None,
        # (dict) Keyword arguments for gymnasium.make / the env class, e.g. dict(continuous=True). Free-form.
        kwargs=dict(),
        # (int) Override the env's time limit (TimeLimit truncation) in steps; None keeps the registered one.
        max_episode_steps=None,
        # (int) Number of envs the collector steps in one vector env.
        collector_env_num=8,
        # (int) Number of envs the evaluator steps in one vector env.
        evaluator_env_num=5,
        # (int) Episodes per evaluation, split evenly over the evaluator envs (a fixed quota per env).
        n_evaluator_episode=5,
        # (float) Stop training once an evaluation's mean return reaches this; None never stops on return.
        stop_value=None,
    )
    free_form = ("kwargs",)

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        for key in ("collector_env_num", "evaluator_env_num", "n_evaluator_episode"):
            if cfg[key] < 1:
                raise ConfigError(f"{path}.{key}={cfg[key]}: must be at least 1")
        if cfg.n_evaluator_episode % cfg.evaluator_env_num:
            raise ConfigError(
                f"{path}.n_evaluator_episode={cfg.n_evaluator_episode} is not a multiple of "
                f"{path}.evaluator_env_num={cfg.evaluator_env_num}: every eval env runs the same number of episodes "
                f"so short episodes do not bias the mean; make it a multiple"
            )


def check_env_id(env_id: Any, path: str = "env.env_id") -> None:
    """Raise a ConfigError unless ``env_id`` names an env in gymnasium's registry."""
    if not isinstance(env_id, str) or not env_id:
        raise ConfigError(f"{path} must name a gymnasium env id such as 'CartPole-v1', got {env_id!r}")
    if env_id not in gym.registry:
        raise ConfigError(
            f"{path}='{env_id}': unknown gymnasium env id{did_you_mean(env_id, gym.registry.keys())} "
            f"(gymnasium {gym.__version__} knows {len(gym.registry)} ids; list them with "
            f"`python -c \"import gymnasium; print(sorted(gymnasium.registry))\"`)"
        )


@ENV_REGISTRY.register("gym")
class GymEnv(EnvConfig):
    """Any env registered in gymnasium, made with ``gymnasium.make(env.env_id, **env.kwargs)``."""

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        super().check_config(cfg, path)
        check_env_id(cfg.env_id, f"{path}.env_id")

    @staticmethod
    def _make_kwargs(cfg: EasyDict) -> dict:
        kwargs = dict(cfg.kwargs)
        if cfg.max_episode_steps is not None:
            kwargs["max_episode_steps"] = cfg.max_episode_steps
        return kwargs

    @classmethod
    def factory(cls, cfg: EasyDict) -> Callable[[], gym.Env]:
        """``partial(gymnasium.make, env_id, **kwargs)``, after one probe env made here with clear errors.

        The factory references gymnasium only, so a spawned env process (the 'subprocess' manager) imports
        gymnasium, not ding_lite and torch: a much faster start.
        """
        cls.make(cfg).close()
        return functools.partial(gym.make, cfg.env_id, **cls._make_kwargs(cfg))

    @classmethod
    def make(cls, cfg: EasyDict) -> gym.Env:
        """One env of ``cfg``; gymnasium's errors become ``UserError`` messages that name the fix."""
        kwargs = cls._make_kwargs(cfg)
        try:
            return gym.make(cfg.env_id, **kwargs)
        except gym.error.DependencyNotInstalled as err:
            raise UserError(f"env.env_id='{cfg.env_id}' needs an extra: {err}") from None
        except gym.error.Error as err:
            check_env_id(cfg.env_id)  # an unknown id gets the message with suggestions
            raise UserError(f"env.env_id='{cfg.env_id}': gymnasium cannot make it: {err}") from None
        except TypeError as err:
            raise UserError(f"env.kwargs={dict(cfg.kwargs)} do not fit '{cfg.env_id}': {err}") from None


def env_factory(cfg: EasyDict) -> Callable[[], gym.Env]:
    """A zero-argument function making one env of ``cfg`` (an ``env`` section with ``type``): what vector envs take.

    ENV_REGISTRY entries are either classes with a ``factory(cfg)`` classmethod (like ``GymEnv``) or gymnasium.Env
    subclasses, constructed with ``**env.kwargs``.
    """
    entry = ENV_REGISTRY.get(cfg.type)
    if hasattr(entry, "factory"):
        return entry.factory(cfg)

    try:  # wrong kwargs are the user's mistake: say so before any env is built
        inspect.signature(entry).bind(**cfg.kwargs)
    except TypeError as err:
        raise UserError(f"env.kwargs={dict(cfg.kwargs)} do not fit env type '{cfg.type}' ({err})") from None

    def _make() -> gym.Env:
        env = entry(**cfg.kwargs)
        if cfg.max_episode_steps is not None:
            env = gym.wrappers.TimeLimit(env, cfg.max_episode_steps)
        return env

    return _make
