"""``ding_lite check-env ENV`` and ``env.check=True``: the env checker (``ding_lite/envs/check*.py``) on the env a run
builds, from its compiled ``env`` section through ``env_factory`` (``env.wrappers``, ``env.max_episode_steps`` and
Atari's preprocessing included).

ENV is a config file (``.py`` with main_config, as ``-c`` takes), a gymnasium id (``'CartPole-v1'``,
``'minigrid:MiniGrid-Empty-5x5-v0'``), ``'module:Name'`` naming a ``gymnasium.Env`` class or another ENV_REGISTRY
form (built with ``env.kwargs`` as a registered type is), or a registered env type (``'goal_grid'``).
"""
import copy
import importlib
import os
import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple

import gymnasium as gym
from easydict import EasyDict

from ding_lite.config import compile_config, read_config_file
from ding_lite.envs import env_factory
from ding_lite.envs.check import Finding, error, format_report, has_errors
from ding_lite.envs.check_run import DEFAULT_STEPS, check_env
from ding_lite.envs.check_mask import MASK_KEY
from ding_lite.utils import ENV_REGISTRY, POLICY_REGISTRY, UserError

# A bare env needs some policy to compile a config around it; only its env section is used.
STAND_IN_POLICY = "impala"


def env_type_of(target: str) -> Optional[str]:
    """The ENV_REGISTRY type of a ``'module:Name'`` that names an object in its module (registered under
    ``'module:Name'`` when it is not registered yet) or of a registered type; None for a gymnasium id."""
    from ding_lite.config.defaults import import_builtins
    import_builtins()
    module_name, _, name = target.partition(":")
    if not name:
        return target if target in ENV_REGISTRY and target != "gym" else None
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise UserError(f"'{target}': cannot import module '{module_name}' ({err}); check its spelling and that it "
                        f"is installed or in the directory you run from") from None
    for part in name.split("."):
        if not hasattr(obj, part):
            return None  # 'package:Env-v0': gymnasium's form of an id that the module's import registers
        obj = getattr(obj, part)
    known = next((key for key in ENV_REGISTRY.keys() if ENV_REGISTRY.get(key) is obj), None)
    if known is None:
        ENV_REGISTRY.register(target, obj)
        known = target
    return known


def target_config(target: str, overrides: Sequence[str] = (), seed: Optional[int] = None) -> EasyDict:
    """The compiled config whose env section ``target`` names (module docstring), ``overrides`` on top."""
    if target.endswith(".py"):
        return compile_config(read_config_file(target), overrides=list(overrides), seed=seed)
    env_type = env_type_of(target)
    main = dict(env=dict(env_id=None if env_type else target))
    create = dict(env=dict(type=env_type or "gym"), policy=dict(type=STAND_IN_POLICY))
    return compile_config((main, create), overrides=list(overrides), seed=seed)


def env_maker(env_cfg: EasyDict) -> Callable[[], gym.Env]:
    """Makes one env of ``env_cfg`` as a run's collector does (``env_factory``, built at the first call)."""
    factory: List[Callable[[], gym.Env]] = []

    def make() -> gym.Env:
        if not factory:
            factory.append(env_factory(env_cfg))
        return factory[0]()
    return make


def check_config_env(cfg: EasyDict, steps: int = DEFAULT_STEPS, bound: Optional[str] = None) -> List[Finding]:
    """The checks on the env of a compiled config, with its seed and ``env.step_timeout_s``."""
    key = cfg.env.get("action_mask_key")  # a renamed key; the default leaves the env's action_mask_key attribute
    return check_env(env_maker(cfg.env), steps=steps, seed=cfg.seed, bound=bound,
                     step_timeout_s=cfg.env.get("step_timeout_s"), mask_key=None if key == MASK_KEY else key)


def policy_bound(cfg: EasyDict) -> str:
    """How the config's policy reaches Box bounds ('clip' or 'rescale'; ``ActionAdapter``)."""
    return getattr(POLICY_REGISTRY.get(cfg.policy.type), "action_bound", "clip")


def env_title(cfg: EasyDict) -> str:
    wrappers = [w if isinstance(w, str) else w.get("type") for w in cfg.env.wrappers]
    name = cfg.env.env_id or f"type '{cfg.env.type}'"
    return f"{name}{', wrappers: ' + ', '.join(map(str, wrappers)) if wrappers else ''}"


def config_findings(cfg: EasyDict) -> List[Finding]:
    """What a run of the config would refuse about its env before training (``probe_env``): the policy's action
    space and model shapes against the env's, and the policy's Box bounds."""
    from .build import probe_env
    try:
        probe_env(copy.deepcopy(cfg), cfg.seed)
    except UserError as err:
        message, _, fix = str(err).partition("; ")
        return [error("config", message, fix or "change the config key it names")]
    return []


def check_target(target: str, steps: int = DEFAULT_STEPS, seed: Optional[int] = None,
                 overrides: Sequence[str] = ()) -> Tuple[str, bool]:
    """``ding_lite check-env``: the report on the env ``target`` names, and whether it has no errors."""
    if not os.path.exists(target) and target.endswith(".py"):
        raise UserError(f"config file '{target}' not found (ENV is a .py config file, a gymnasium id or "
                        f"'module:Name')")
    cfg = target_config(target, overrides, seed)
    bound = policy_bound(cfg) if target.endswith(".py") else None
    findings = check_config_env(cfg, steps, bound)
    if target.endswith(".py") and not has_errors(findings):
        findings += config_findings(cfg)
    title = f"check-env {target}: {env_title(cfg)}; {steps} random steps, seed {cfg.seed}"
    return format_report(title, findings), not has_errors(findings)


def check_before_run(cfg: EasyDict) -> None:
    """``env.check=True``: the same checks on the run's env before training; errors stop the run (a UserError with
    the report's lines), warnings are Python warnings."""
    if not cfg.env.check:
        return
    findings = check_config_env(cfg, bound=policy_bound(cfg))
    for f in findings:
        if f.level == "warning":
            warnings.warn(f"env.check: {f.line()}", stacklevel=2)
    if has_errors(findings):
        lines = "\n".join(f"  {f.line()}" for f in findings if f.level == "error")
        raise UserError(f"env.check=True: the env '{cfg.env.env_id or cfg.env.type}' failed its check, so the run "
                        f"did not start:\n{lines}\n(`ding_lite check-env CONFIG` prints the whole report; "
                        f"env.check=False skips the check)")
