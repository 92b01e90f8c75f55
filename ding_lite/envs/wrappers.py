"""``env.wrappers``: gymnasium wrappers named in the config, put around every env ding_lite makes.

An item is ``'module.path:Name'`` or ``dict(type='module.path:Name', kwargs=dict(...))``; ``Name`` is called as
``Name(env, **kwargs)`` and must return a ``gymnasium.Env``. The items wrap in order (the first is innermost) around
the env as ding_lite builds it: for type 'gym' what ``gymnasium.make`` returns (its ``TimeLimit`` included) or, for
Atari ids, the whole ``env.atari`` preprocessing; for an ENV_REGISTRY entry what it makes (a gymnasium.Env subclass
after its ``TimeLimit(env.max_episode_steps)``).

Wrappers are named by import path, not passed as objects, so an env factory stays picklable: each env process of the
'subprocess' manager imports the wrappers' modules itself. This module imports no torch (the ``ding_lite.envs``
package around it does).
"""
import functools
import importlib
import inspect
from typing import Any, Callable, List, Mapping, Sequence, Tuple

import gymnasium as gym

from ding_lite.utils.errors import ConfigError, UserError
from ding_lite.utils.suggest import did_you_mean

# (import path 'module:Name', kwargs): one item of env.wrappers, normalised.
WrapperItem = Tuple[str, dict]
FORMS = "'module.path:Name' or dict(type='module.path:Name', kwargs=dict(...))"


def parse_wrapper(item: Any, path: str) -> WrapperItem:
    """``(target, kwargs)`` of one ``env.wrappers`` item; a ConfigError naming ``path`` when it is malformed."""
    kwargs: Any = {}
    if isinstance(item, str):
        target = item
    elif isinstance(item, Mapping):
        unknown = sorted(str(k) for k in item if k not in ("type", "kwargs"))
        if unknown:
            raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)}; an item is {FORMS}")
        target, kwargs = item.get("type"), item.get("kwargs") or {}
        if not isinstance(kwargs, Mapping):
            raise ConfigError(f"{path}.kwargs={kwargs!r}: must be a dict of the wrapper's keyword arguments")
    else:
        raise ConfigError(f"{path}={item!r}: an item is {FORMS}, got {type(item).__name__}")
    module, _, name = target.partition(":") if isinstance(target, str) else ("", "", "")
    if not module or not name or ":" in name:
        raise ConfigError(f"{path}: {target!r} is not an import path 'module.path:Name', e.g. "
                          f"'gymnasium.wrappers:ClipReward' (a module, a colon, then the wrapper's name in it)")
    return target, dict(kwargs)


def resolve_wrapper(target: str, path: str) -> Callable[..., gym.Env]:
    """The wrapper ``target`` ('module:Name') names; a ConfigError naming ``path`` when it cannot be imported, is
    missing from its module (with a did-you-mean) or is not callable."""
    module_name, _, name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"{path}='{target}': cannot import module '{module_name}' ({err}); check the spelling, that "
                          f"its package is installed, and that its directory is on PYTHONPATH") from None
    wrapper = module
    for part in name.split("."):  # 'Outer.Inner' reaches a nested class
        if not hasattr(wrapper, part):
            names = [n for n in dir(wrapper) if not n.startswith("_")]
            raise ConfigError(f"{path}='{target}': '{module_name}' has no attribute '{name}'"
                              f"{did_you_mean(part, names)}")
        wrapper = getattr(wrapper, part)
    if not callable(wrapper):
        raise ConfigError(f"{path}='{target}' is a {type(wrapper).__name__}, not a wrapper: name a gymnasium.Wrapper "
                          f"class or a function called as Name(env, **kwargs)")
    return wrapper


def check_wrapper_kwargs(wrapper: Callable[..., Any], target: str, kwargs: Mapping, path: str) -> None:
    """A UserError (a ConfigError) naming the wrapper when ``kwargs`` do not fit ``wrapper(env, **kwargs)``."""
    try:
        signature = inspect.signature(wrapper)
    except (TypeError, ValueError):  # a builtin without a signature: its call will tell
        return
    try:
        signature.bind(None, **kwargs)
    except TypeError as err:
        raise ConfigError(f"{path}: kwargs {dict(kwargs)} do not fit the wrapper '{target}{signature}' ({err}); "
                          f"give its keyword arguments, the env aside") from None


def check_wrappers(items: Any, path: str = "env.wrappers") -> List[WrapperItem]:
    """Check every item of ``env.wrappers`` (form, import, callable, kwargs); return them as ``(target, kwargs)``."""
    if not isinstance(items, (list, tuple)):
        raise ConfigError(f"{path}={items!r}: must be a list of wrappers, each {FORMS}")
    parsed = []
    for i, item in enumerate(items):
        target, kwargs = parse_wrapper(item, f"{path}[{i}]")
        check_wrapper_kwargs(resolve_wrapper(target, f"{path}[{i}]"), target, kwargs, f"{path}[{i}]")
        parsed.append((target, kwargs))
    return parsed


def apply_wrappers(env: gym.Env, items: Sequence[WrapperItem], env_name: str) -> gym.Env:
    """``env`` wrapped by each ``(target, kwargs)`` in order; a wrapper that fails, or returns no gymnasium.Env, is
    a UserError naming it and the env (``env_name``)."""
    for i, (target, kwargs) in enumerate(items):
        where = f"env.wrappers[{i}]='{target}'"
        wrapper = resolve_wrapper(target, f"env.wrappers[{i}]")
        try:
            wrapped = wrapper(env, **kwargs)
        except Exception as err:  # the wrapper refuses this env (wrong space, bad argument): the config's mistake
            env.close()
            raise UserError(f"{where} cannot wrap the env of '{env_name}' ({env}): {type(err).__name__}: {err}") \
                from err
        if not isinstance(wrapped, gym.Env):
            raise UserError(f"{where} returned a {type(wrapped).__name__}, not a gymnasium.Env: a wrapper is called "
                            f"as Name(env, **kwargs) and returns the wrapped env")
        env = wrapped
    return env


def make_wrapped(make: Callable[[], gym.Env], items: Tuple[WrapperItem, ...], env_name: str) -> gym.Env:
    """One env of ``make`` inside the wrappers ``items`` (the target of ``wrapped_factory``'s partial)."""
    return apply_wrappers(make(), items, env_name)


def wrapped_factory(make: Callable[[], gym.Env], items: Any, env_name: str) -> Callable[[], gym.Env]:
    """``make`` itself when ``items`` (env.wrappers) is empty, else a picklable zero-argument maker of the wrapped
    env; the items are checked here (a ConfigError naming the bad one)."""
    if not items:
        return make
    parsed = check_wrappers(items)
    return functools.partial(make_wrapped, make, tuple(parsed), env_name)


def make_after_imports(modules: Tuple[str, ...], make: Callable[[], gym.Env]) -> gym.Env:
    """Import ``modules`` (``env.import_names``: their import registers the user's ids or classes), then make the env:
    in an env process of the 'subprocess' manager, which imports nothing of the main process's."""
    for module in modules:
        importlib.import_module(module)
    return make()


def factory_with_imports(make: Callable[[], gym.Env], modules: Sequence[str]) -> Callable[[], gym.Env]:
    """``make`` itself when ``modules`` is empty, else a picklable maker that imports them first."""
    if not modules:
        return make
    return functools.partial(make_after_imports, tuple(modules), make)
