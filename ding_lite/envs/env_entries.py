"""The forms of an ENV_REGISTRY entry, each turned into a picklable zero-argument env maker (see ``entry_factory``).

1. A class with a ``factory(cfg)`` classmethod returning a zero-argument function that makes one env (``GymEnv``).
2. A class with a static or class method ``make(cfg) -> gymnasium.Env`` (a gymnasium.Env subclass too).
3. A gymnasium.Env subclass (or a function returning one), called with ``**env.kwargs`` and wrapped in
   ``TimeLimit(env.max_episode_steps)`` when that is set.

``factory`` and ``make`` get a ``role`` argument ('collector' or 'evaluator') when they take one. Every env an entry
makes is checked: anything but a gymnasium.Env is a UserError naming the entry and the form it is read as.
"""
import functools
import inspect
from typing import Any, Callable, Optional

import gymnasium as gym
from easydict import EasyDict

from ding_lite.utils.errors import UserError

FORMS = ("ding_lite takes one of: a class with a static or class method make(cfg) returning a gymnasium.Env; a class "
         "with a classmethod factory(cfg) returning a zero-argument function that makes one; a gymnasium.Env "
         "subclass, built with **env.kwargs")


def describe(entry: Any) -> str:
    """``module.QualName`` of an entry (or its repr)."""
    name = getattr(entry, "__qualname__", None)
    return f"{entry.__module__}.{name}" if name and getattr(entry, "__module__", None) else repr(entry)


def checked_env(env: Any, env_type: str, source: str) -> gym.Env:
    """``env`` if it is a gymnasium.Env, else a UserError saying that ``source`` (of ENV_REGISTRY entry
    ``env_type``) returned something else, and which forms ding_lite takes."""
    if isinstance(env, gym.Env):
        return env
    raise UserError(f"env type '{env_type}': {source} returned a {type(env).__module__}.{type(env).__qualname__}, "
                    f"not a gymnasium.Env; {FORMS}")


def make_checked(make: Callable[..., Any], env_type: str, source: str, *args: Any, **kwargs: Any) -> gym.Env:
    """``make(*args, **kwargs)``, checked to be a gymnasium.Env (module level, so its partials pickle)."""
    return checked_env(make(*args, **kwargs), env_type, source)


def make_env_class(entry: Callable[..., Any], env_type: str, kwargs: dict, max_episode_steps: Optional[int]) -> gym.Env:
    """``entry(**kwargs)`` (form 3), in ``TimeLimit(max_episode_steps)`` when that is set."""
    try:
        made = entry(**kwargs)
    except (TypeError, ValueError) as err:  # the env refused its arguments: the config's mistake, one line
        raise UserError(f"env type '{env_type}' refused env.kwargs={dict(kwargs)}: {type(err).__name__}: {err}") \
            from None
    env = checked_env(made, env_type, f"{describe(entry)}(**env.kwargs)")
    if max_episode_steps is not None:
        env = gym.wrappers.TimeLimit(env, max_episode_steps)
    return env


def _own_level(entry: type, name: str) -> Optional[int]:
    """How far down ``entry``'s MRO ``name`` is defined (0: in ``entry`` itself); None if nowhere."""
    for level, klass in enumerate(inspect.getmro(entry)):
        if name in vars(klass):
            return level
    return None


def method_form(entry: Any) -> Optional[str]:
    """'factory' or 'make': the method ding_lite calls on ``entry``, or None (form 3).

    The one defined lowest in the class hierarchy wins, so a subclass of ``GymEnv`` with its own ``make`` is made by
    that ``make``; on a gymnasium.Env subclass only a static or class method ``make`` counts (an instance method
    there is the env's own business).
    """
    if not isinstance(entry, type):
        return "factory" if hasattr(entry, "factory") else ("make" if hasattr(entry, "make") else None)
    levels = {name: _own_level(entry, name) for name in ("factory", "make")}
    if issubclass(entry, gym.Env) and levels["make"] is not None:
        raw = inspect.getattr_static(entry, "make")
        if not isinstance(raw, (staticmethod, classmethod)):
            levels["make"] = None
    found = [(level, name) for name, level in levels.items() if level is not None]
    return min(found)[1] if found else None  # a tie (GymEnv defines both): 'factory'


def _role_kwarg(fn: Callable[..., Any], role: str) -> dict:
    """``{'role': role}`` for a function that takes a ``role`` argument, else nothing."""
    return {"role": role} if "role" in inspect.signature(fn).parameters else {}


def _check_not_instance_method(entry: type, env_type: str) -> None:
    raw = inspect.getattr_static(entry, "make")
    if inspect.isfunction(raw) and next(iter(inspect.signature(raw).parameters), None) == "self":
        raise UserError(f"env type '{env_type}': {describe(entry)}.make(self, ...) is an instance method, but "
                        f"ding_lite calls make(cfg) on the class: make it a @staticmethod make(cfg) or a "
                        f"@classmethod make(cls, cfg)")


def entry_factory(entry: Any, cfg: EasyDict, role: str) -> Callable[[], gym.Env]:
    """A picklable zero-argument maker of one env of ENV_REGISTRY entry ``entry`` for the ``env`` section ``cfg``."""
    env_type = cfg.type
    form = method_form(entry)
    if form == "factory":
        make = entry.factory(cfg, **_role_kwarg(entry.factory, role))
        if not callable(make):
            raise UserError(f"env type '{env_type}': {describe(entry)}.factory(cfg) returned a "
                            f"{type(make).__name__}, not a zero-argument function that makes an env; {FORMS}")
        return functools.partial(make_checked, make, env_type, f"the function {describe(entry)}.factory(cfg) made")
    if form == "make":
        if isinstance(entry, type):
            _check_not_instance_method(entry, env_type)
        return functools.partial(make_checked, entry.make, env_type, f"{describe(entry)}.make(cfg)", cfg,
                                 **_role_kwarg(entry.make, role))
    if isinstance(entry, type) and not issubclass(entry, gym.Env):
        raise UserError(f"env type '{env_type}': {describe(entry)} is neither a gymnasium.Env subclass nor has a "
                        f"make or factory method; {FORMS}")
    if not callable(entry):
        raise UserError(f"env type '{env_type}': the registered {type(entry).__name__} is not callable; {FORMS}")
    try:  # wrong kwargs are the user's mistake: say so before any env is built
        inspect.signature(entry).bind(**cfg.kwargs)
    except TypeError as err:
        raise UserError(f"env.kwargs={dict(cfg.kwargs)} do not fit env type '{env_type}' ({err})") from None
    return functools.partial(make_env_class, entry, env_type, dict(cfg.kwargs), cfg.max_episode_steps)
