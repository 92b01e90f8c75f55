"""Turning a compiled config into live components: envs, the policy (with env-derived model shapes), the buffer."""
import re
from dataclasses import dataclass, replace
from typing import Optional, Sequence, Tuple, Union

import gymnasium as gym
import torch
from easydict import EasyDict

from ding_lite.config import compile_config
from ding_lite.envs import EnvSpec, env_factory, make_vector_env
from ding_lite.envs.env_spec import action_space_record
from ding_lite.envs.action_adapter import check_action_bounds
from ding_lite.envs.watchdog import watched_call
from ding_lite.envs.obs_space import obs_shape_of
from ding_lite.policy import Policy
from ding_lite.policy.action_mask import mask_space_problem, strip_mask_space
from ding_lite.torch_utils.obs_norm import mark_normalized, normalized_leaves
from ding_lite.torch_utils.process_settings import apply_process_settings
from ding_lite.torch_utils.threads import auto_threads, available_cores
from ding_lite.utils.seed import env_seeds
from ding_lite.utils import BUFFER_REGISTRY, POLICY_REGISTRY, ConfigError, UserError

ConfigInput = Union[dict, Tuple[dict, dict]]


def resolve_env_spaces(cfg: EasyDict, spec: EnvSpec) -> None:
    """Fill ``policy.action_space`` ('auto') and the model's obs/action shapes from the env; check given ones, and
    that the policy can act in the env's Box bounds (``check_action_bounds``: before any training)."""
    policy = cfg.policy
    check_action_bounds(spec, getattr(POLICY_REGISTRY.get(policy.type), "action_bound", "clip"),
                        cfg.env.env_id or cfg.env.type)
    if policy.action_space == "auto":
        policy.action_space = spec.action_space_type
    elif policy.action_space != spec.action_space_type:
        raise ConfigError(f"policy.action_space='{policy.action_space}' but env '{cfg.env.env_id or cfg.env.type}' "
                          f"has a {spec.action_space_type} action space; set policy.action_space='auto'")
    spec = resolve_action_mask(cfg, spec)
    env_facts = {
        "obs_shape": spec.obs_shape,
        "obs_space": observation_space(cfg, spec),
        "action_shape": spec.model_action_shape,
        "action_space": spec.action_space_type,
    }
    for key, value in env_facts.items():
        if key not in policy.model:
            continue
        given = policy.model[key]
        if given is None:
            policy.model[key] = value
        elif _as_list(given) != _as_list(value):
            raise ConfigError(f"policy.model.{key}={given!r} does not match the env's {value!r}; remove it to use "
                              f"the env's")


def resolve_action_mask(cfg: EasyDict, spec: EnvSpec) -> EnvSpec:
    """An env whose Dict observation has ``env.action_mask_key``: fill ``policy.action_mask_key`` and return the spec
    the model takes, the observation without the mask (:mod:`ding_lite.policy.action_mask`); a policy that does not
    support masks, or an action space that takes none, is a ConfigError naming the key."""
    key = cfg.env.get("action_mask_key")
    space = spec.obs_space
    if not key or not space or space.get("space") != "dict" or key not in space["spaces"]:
        return spec
    env = cfg.env.env_id or cfg.env.type
    policy = cfg.policy
    if not getattr(POLICY_REGISTRY.get(policy.type), "supports_action_mask", False):
        raise ConfigError(f"env '{env}' gives an action mask (obs[{key!r}], env.action_mask_key) and policy "
                          f"'{policy.type}' does not support action masks (IMPALA, APPO, PPO, ACER and discrete SAC "
                          f"do); use one of those, or set env.action_mask_key='' to feed the mask to the model as an "
                          f"observation")
    if spec.action_space_type not in ("discrete", "multi_discrete"):
        raise ConfigError(f"env '{env}' gives an action mask (obs[{key!r}], env.action_mask_key) but its action "
                          f"space is {spec.action_space_type}; masks apply to Discrete and MultiDiscrete actions: set "
                          f"env.action_mask_key=''")
    problem = mask_space_problem(space["spaces"][key], spec)
    if problem:
        raise ConfigError(f"env '{env}': the action mask obs[{key!r}] (env.action_mask_key) {problem}")
    rest = strip_mask_space(space, key)
    if not rest["spaces"]:
        raise ConfigError(f"env '{env}': the Dict observation holds only the action mask obs[{key!r}]; add an "
                          f"observation beside it")
    if "action_mask_key" in policy:
        policy.action_mask_key = key
    return replace(spec, obs_space=rest, obs_shape=obs_shape_of(rest))


def observation_space(cfg: EasyDict, spec: EnvSpec) -> dict:
    """``policy.model.obs_space``: the env's observation space, its float leaves marked for normalisation when
    ``env.normalize_obs`` is on (the policy reads the marks; ``ding_lite/torch_utils/obs_norm.py``)."""
    if not cfg.env.normalize_obs:
        return spec.obs_space
    if "obs_space" not in cfg.policy.model:
        raise ConfigError(f"env.normalize_obs=True needs a model that takes obs_space (the policy reads which leaves "
                          f"to normalise from policy.model.obs_space); model '{cfg.policy.model.type}' has no such "
                          f"argument: add obs_space=None to its constructor, or set env.normalize_obs=False")
    marked = mark_normalized(spec.obs_space, cfg.env.normalize_obs_clip)
    if not normalized_leaves(marked):
        raise ConfigError(f"env.normalize_obs=True but env '{cfg.env.env_id or cfg.env.type}' has no float Box "
                          f"observation to normalise (its space: {spec.obs_space}); set env.normalize_obs=False")
    return marked


def _as_list(x) -> list:
    """A config value as comparable plain data: a scalar as a one-item list (``4`` matches ``[4]``), tuples as
    lists, dicts (EasyDicts) as dicts, recursively."""
    def plain(v):
        if isinstance(v, dict):
            return {k: plain(w) for k, w in v.items()}
        return [plain(w) for w in v] if isinstance(v, (list, tuple)) else v
    x = plain(x)
    return x if isinstance(x, list) else [x]


@dataclass
class Components:
    cfg: EasyDict
    collector_env: Optional[gym.vector.VectorEnv]
    evaluator_env: gym.vector.VectorEnv
    spec: EnvSpec
    policy: Policy


def make_policy(policy_cfg: EasyDict, model: Optional[torch.nn.Module] = None,
                enable_field: Sequence[str] = ("learn", "collect", "eval")) -> Policy:
    """The registered policy of ``policy_cfg`` (its model built unless ``model`` is given); a model too large for
    the machine's memory is one line naming its size keys (``model_memory_error``), not torch's allocator error."""
    try:
        return POLICY_REGISTRY.get(policy_cfg.type)(policy_cfg, model=model, enable_field=enable_field)
    except (RuntimeError, MemoryError) as err:
        explained = model_memory_error(policy_cfg.model, err)
        if explained is None:
            raise
        raise explained from None


def model_memory_error(model: EasyDict, err: BaseException) -> Optional[ConfigError]:
    """One line for a model too large to allocate (torch's allocator error or a MemoryError while the policy builds
    its networks), naming the model's size keys; None for any other error."""
    text = str(err)
    if not isinstance(err, MemoryError) and "can't allocate memory" not in text and "not enough memory" not in text:
        return None
    asked = re.search(r"allocate (\d+) bytes", text)
    size = f" (one tensor of {int(asked.group(1)) / 2 ** 30:,.1f} GiB)" if asked else ""
    keys = ", ".join(f"policy.model.{k}={v}" for k, v in model.items() if "size" in k or "hidden" in k) or "its settings"
    return ConfigError(f"the model (policy.model.type={model.type!r}) is too large for this machine's memory{size}: "
                       f"{keys}; make it smaller")


def build(cfg: EasyDict, seed: int, spec: Optional[EnvSpec] = None, model: Optional[torch.nn.Module] = None,
          collect: bool = True, enable_field: Sequence[str] = ("learn", "collect", "eval")) -> Components:
    """Create the vector envs (each env seeded by ``env_seeds``: collector rank 0, evaluator rank 0) and the policy.
    ``spec``: the probe env's (``probe_env``, as the pipelines' preflight makes it), whose shapes are in ``cfg``
    already: the vector envs must have the same spaces (a ConfigError names both where they differ). None: the
    env-derived config values are filled from the vector envs' spaces here. A failure on the way closes the envs
    already made."""
    collector_env = (make_vector_env(cfg.env, cfg.env.collector_env_num,
                                     env_seeds(seed, "collector", cfg.env.collector_env_num)) if collect else None)
    evaluator_env = None
    try:
        evaluator_env = make_vector_env(cfg.env, cfg.env.evaluator_env_num,
                                        env_seeds(seed, "evaluator", cfg.env.evaluator_env_num), role="evaluator")
        built = [EnvSpec.from_spaces(env.single_observation_space, env.single_action_space)
                 for env in (collector_env, evaluator_env) if env is not None]
        if spec is None:
            spec = built[0]
            resolve_env_spaces(cfg, spec)
        for other in built:
            check_same_spaces(spec, other, cfg)
        policy = make_policy(cfg.policy, model, enable_field)
    except BaseException:
        for env in (evaluator_env, collector_env):
            if env is not None:
                env.close()
        raise
    return Components(cfg, collector_env, evaluator_env, spec, policy)


def check_same_spaces(probed: EnvSpec, built: EnvSpec, cfg: EasyDict) -> None:
    """The vector env's spaces (``built``) are the probe env's the config was resolved from (``probed``)."""
    if (probed.obs_space, action_space_record(probed)) != (built.obs_space, action_space_record(built)):
        raise ConfigError(f"env '{cfg.env.env_id or cfg.env.type}' with env.manager.type={cfg.env.manager.type!r}: "
                          f"its vector env's spaces ({built.obs_space}, {action_space_record(built)}) differ from a "
                          f"single env's ({probed.obs_space}, {action_space_record(probed)}), which the config's "
                          f"model shapes were filled from; use env.manager.type='base' or make the two agree")


def buffer_class(cfg: EasyDict) -> type:
    """The replay buffer class a run builds: ``policy.other.replay_buffer.type``'s, or with ``policy.priority`` the
    columnar buffer with priorities (data/prioritized.py)."""
    buffer_cfg = cfg.policy.other.replay_buffer
    if cfg.policy.get("priority"):
        from ding_lite.data.prioritized import PrioritizedReplayBuffer
        if buffer_cfg.type != "columnar":
            raise ConfigError(f"policy.priority=True needs policy.other.replay_buffer.type='columnar' (the buffer "
                              f"with priorities), got {buffer_cfg.type!r}; remove the type or set priority=False")
        return PrioritizedReplayBuffer
    return BUFFER_REGISTRY.get(buffer_cfg.type)


def build_buffer(cfg: EasyDict, seed: int):
    """The learner's replay buffer; with ``policy.cuda`` its sampled batches are pinned (page-locked), so that their
    copy to the GPU is asynchronous. A CPU-only run pins nothing (and a user buffer need not know the option)."""
    pin = {"pin_memory": True} if cfg.policy.cuda else {}
    cls = buffer_class(cfg)
    if cfg.policy.get("priority"):
        pin["IS_weight"] = cfg.policy.priority_IS_weight
    return cls(cfg.policy.other.replay_buffer, seed=seed, **pin)


def compile_input(input_cfg: ConfigInput, seed: Optional[int], overrides=None, exp_name: Optional[str] = None) -> EasyDict:
    """Compile main_config or (main_config, create_config) for one seed. Pure: the process-wide settings
    (``torch_threads``, ``matmul_precision``, ``keep_freed_memory``) take effect when a run starts
    (:func:`start_process`)."""
    return compile_config(input_cfg, overrides=overrides, seed=seed, exp_name=exp_name)


def start_process(cfg: EasyDict, free_cores: Optional[int] = None) -> None:
    """Apply the run's process-wide settings in this process, once, as the run starts: ``torch_threads`` (for
    'auto', as for a learner with ``free_cores`` cores, default every core this process may use),
    ``matmul_precision`` and ``keep_freed_memory``."""
    apply_process_settings(cfg, torch_threads(cfg, available_cores() if free_cores is None else free_cores))


def probe_env(cfg: EasyDict, seed: int) -> Tuple[EnvSpec, gym.Space]:
    """Make one env of ``cfg.env`` (in this process) to read its spaces, fill the env-derived config values, and
    close it; returns the spec and the env's observation space."""
    name, timeout = cfg.env.env_id or cfg.env.type, cfg.env.step_timeout_s
    with watched_call(timeout, name, "__init__"):
        env = env_factory(cfg.env)()
    try:
        with watched_call(timeout, name, "reset"):
            env.reset(seed=seed)
        observation_space = env.observation_space
        spec = EnvSpec.from_spaces(observation_space, env.action_space)
    finally:
        with watched_call(timeout, name, "close"):
            env.close()
    resolve_env_spaces(cfg, spec)
    return spec, observation_space


def probe_env_spec(cfg: EasyDict, seed: int) -> EnvSpec:
    """``probe_env``'s spec only."""
    return probe_env(cfg, seed)[0]


def check_budget(max_env_step: Optional[int], max_train_iter: Optional[int]) -> None:
    """``--env-step`` and ``--train-iter`` are totals: non-negative integers (or None for no limit)."""
    for flag, value in (("--env-step (max_env_step)", max_env_step), ("--train-iter (max_train_iter)", max_train_iter)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise UserError(f"{flag}={value!r}: must be a whole number >= 0 (a total for the run, counted from its "
                            f"start)")


def torch_threads(cfg: EasyDict, free_cores: int) -> int:
    """The thread count of ``cfg.torch_threads``: the number itself, or for 'auto' the choice of ``auto_threads``
    for a learner with ``free_cores`` cores to itself."""
    if cfg.torch_threads == "auto":
        return auto_threads(cfg.policy, free_cores)
    return int(cfg.torch_threads)
