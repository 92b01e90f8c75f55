"""What a pipeline checks after compiling its config and before it builds any env (one probe env aside, which reads
the env's spaces): so that a run that cannot work stops in seconds, not after minutes of env processes and a first
collection.

* ``policy.cuda`` without a CUDA device (``check_cuda``);
* the replay buffer against free memory (``check_buffer_memory``): the bytes of one train sample, made from the
  env's observation space through the policy's own collect hooks (forward, ``_process_transition``,
  ``_get_train_sample``), times ``replay_buffer_size``, as the columnar buffer allocates at its first push;
* the warm-up against the run's ``--env-step`` budget (``check_warm_up``);
* with ``env.check=True``, the checks of ``ding_lite check-env`` on one env (``check_env.check_before_run``).

Env ids, ``env.import_names`` and every config value are checked earlier, by ``compile_config``.
"""
import copy
import math
import os
import warnings
from typing import Any, List, Optional, Tuple

import gymnasium as gym
import numpy as np
import torch
from easydict import EasyDict
from gymnasium.vector.utils import create_empty_array

from ding_lite.data.buffer import flatten_tree
from ding_lite.envs import EnvSpec
from ding_lite.envs.obs_space import obs_to_tensor
from ding_lite.policy.base_policy import check_cuda
from ding_lite.torch_utils import tree_map, tree_stack
from ding_lite.utils import UserError

from .build import buffer_class, make_policy, probe_env
from .check_env import check_before_run
from .training_loop import warm_up_steps

# The replay buffer may take at most this share of the available memory (the run needs the rest: the model, its
# batches, the envs); above the lower share it is a warning.
MEMORY_REFUSE_SHARE = 0.9
MEMORY_WARN_SHARE = 0.5
BUFFER_SIZE_KEY = "policy.other.replay_buffer.replay_buffer_size"

SampleLayout = List[Tuple[str, Tuple[int, ...], torch.dtype]]  # (leaf name, per-sample shape, dtype)


def preflight(cfg: EasyDict, seed: int, max_env_step: Optional[int] = None, model: Optional[torch.nn.Module] = None,
              *, fresh: bool = True) -> EnvSpec:
    """The checks of a training run before its envs are built, in order of cost: the device, the warm-up against
    the budget (only for a ``fresh`` run: a resumed one has done its warm-up), with ``env.check`` the env checks
    (``check_env.check_before_run``), one probe env for the spaces (which fills the env-derived config values), then
    the replay buffer's memory. Returns the env's spec."""
    check_cuda(cfg.policy.cuda)
    if fresh:
        check_warm_up(cfg, max_env_step)
    check_before_run(cfg)
    spec, observation_space = probe_env(cfg, seed)
    check_buffer_memory(cfg, observation_space, model)
    return spec


# ---- the warm-up ------------------------------------------------------------------------------------------------
def env_steps_before_first_update(cfg: EasyDict) -> int:
    """Env steps a fresh serial run has collected when it starts the collection after which its first update can
    run: the warm-up (whole unrolls on every env), then collections of ``policy.collect.n_sample`` (rounded up to
    whole unrolls on every env) until the buffer holds ``policy.learn.batch_size`` samples. A run whose budget is at
    most this stops before its first update. (The parallel pipeline's collectors stream finer; about the same.)"""
    n_env, unroll = cfg.env.collector_env_num, cfg.policy.unroll_len
    per_collect = math.ceil(cfg.policy.collect.n_sample / n_env) * n_env
    warm = warm_up_steps(cfg)
    warm_samples = math.ceil(warm / (unroll * n_env)) * n_env if warm else 0
    collects = max(1, math.ceil((cfg.policy.learn.batch_size - warm_samples) / per_collect))
    return (warm_samples + (collects - 1) * per_collect) * unroll


def check_warm_up(cfg: EasyDict, max_env_step: Optional[int]) -> None:
    """A warm-up (``policy.random_collect_size``) at or above the run's ``max_env_step`` is capped to half the budget,
    with a warning that gives both numbers (the config records the cap, total_config.py with it); a budget that
    still ends before the first update is a warning too. Never a run that trains 0 iterations without a word."""
    if max_env_step is None:
        return
    warm = warm_up_steps(cfg)
    if warm and warm >= max_env_step:
        capped = max_env_step // 2
        cfg.policy.random_collect_size = capped
        warnings.warn(f"policy.random_collect_size={warm:,} (env steps of random actions before the first update) is "
                      f"not below the run's budget --env-step {max_env_step:,} (max_env_step): the run would stop "
                      f"before its first update. The warm-up is capped to {capped:,} env steps, half the budget, for "
                      f"this run (total_config.py records it). To keep the full warm-up, give --env-step more than "
                      f"{warm:,}; to choose a shorter one, --set policy.random_collect_size=N", stacklevel=2)
    first = env_steps_before_first_update(cfg)
    if max_env_step <= first:
        warm = warm_up_steps(cfg)
        warnings.warn(f"the run's budget --env-step {max_env_step:,} (max_env_step) ends before its first update: it "
                      f"must collect more than {first:,} env steps first ("
                      + (f"a warm-up of {warm:,} random env steps, then " if warm else "")
                      + f"policy.learn.batch_size={cfg.policy.learn.batch_size} train samples of "
                      f"policy.unroll_len={cfg.policy.unroll_len} steps, from {cfg.env.collector_env_num} collector "
                      f"envs), so it would train 0 iterations; give a larger --env-step", stacklevel=2)


# ---- the replay buffer's memory ---------------------------------------------------------------------------------
def train_sample_layout(cfg: EasyDict, observation_space: gym.Space,
                        model: Optional[torch.nn.Module] = None) -> SampleLayout:
    """The leaves of one train sample of ``cfg``'s policy, as the replay buffer stores them: made from a zero
    observation of ``observation_space`` through the policy's collect hooks (no env is stepped), so whatever a policy
    stores (unrolls in 'full' or 'compact' obs storage, logits, transitions) is what is measured. The policy is a
    CPU copy in collect mode only (``model``, if given, is copied); torch's random state is left as it was."""
    policy_cfg = copy.deepcopy(cfg.policy)
    policy_cfg.cuda = False
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        policy = make_policy(policy_cfg, copy.deepcopy(model), ("collect",))
        mode = policy.collect_mode
        obs = _all_valid(obs_to_tensor(create_empty_array(observation_space, n=1, fn=np.zeros)),
                         policy_cfg.get("action_mask_key"))
        output = tree_map(lambda x: x.cpu() if isinstance(x, torch.Tensor) else x, mode.forward(obs))
        timestep = {"next_obs": obs_to_tensor(create_empty_array(observation_space, n=1, fn=np.zeros)),
                    "reward": torch.zeros(1), "terminated": torch.zeros(1, dtype=torch.bool),
                    "truncated": torch.zeros(1, dtype=torch.bool)}
        transition = mode.process_transition(obs, output, timestep)
        samples = None
        for _ in range(1000):  # a policy may hold steps back before its first samples (SAC's n-step returns)
            samples = mode.get_train_sample(tree_stack([transition] * mode.unroll_len))
            if samples is not None:
                break
    return [(".".join(map(str, path)), tuple(x.shape[1:]), x.dtype) for path, x in flatten_tree(samples)]


def leaf_bytes(shape: Tuple[int, ...], dtype: torch.dtype) -> int:
    return int(np.prod(shape, dtype=np.int64)) * torch.empty((), dtype=dtype).element_size()


def available_memory() -> Tuple[int, str]:
    """Bytes of memory this process can still use, and where the number comes from: /proc/meminfo's MemAvailable
    (or free physical pages from ``os.sysconf``), lowered to a cgroup's limit less its usage (a container's)."""
    found: List[Tuple[int, str]] = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append((int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"))
                    break
    except (OSError, ValueError, IndexError):
        pass
    if not found:
        try:
            found.append((os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "free physical pages"))
        except (ValueError, OSError, AttributeError):
            pass
    cgroup = cgroup_headroom()
    if cgroup is not None:
        found.append(cgroup)
    if not found:
        return 0, "unknown"
    return min(found)


def cgroup_headroom() -> Optional[Tuple[int, str]]:
    """(limit - usage, description) of this process's memory cgroup when it has a limit; None otherwise. The page
    cache the cgroup could drop (inactive files) counts as free."""
    candidates = []
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                parts = line.strip().split(":", 2)
                if len(parts) == 3 and parts[0] == "0" and parts[1] == "":
                    candidates.append(("/sys/fs/cgroup" + parts[2].rstrip("/"), "memory.max", "memory.current",
                                       "inactive_file"))
    except OSError:
        pass
    candidates += [("/sys/fs/cgroup", "memory.max", "memory.current", "inactive_file"),
                   ("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")]
    for directory, limit_file, usage_file, inactive_key in candidates:
        try:
            with open(os.path.join(directory, limit_file)) as f:
                limit_text = f.read().strip()
            with open(os.path.join(directory, usage_file)) as f:
                usage = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if limit_text == "max" or int(limit_text) >= 1 << 60:
            return None  # no limit
        inactive = 0
        try:
            with open(os.path.join(directory, "memory.stat")) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == inactive_key:
                        inactive = int(value)
        except (OSError, ValueError):
            pass
        return max(0, int(limit_text) - usage + inactive), f"the memory cgroup's limit less its usage ({directory})"
    return None


def format_bytes(n: float) -> str:
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n} TB"


def check_buffer_memory(cfg: EasyDict, observation_space: gym.Space, model: Optional[torch.nn.Module] = None,
                        available: Optional[Tuple[int, str]] = None) -> Optional[int]:
    """The replay buffer's bytes at ``replay_buffer_size`` (its class's ``nbytes_for``; a buffer type without it is
    not checked: None) against ``available`` (default ``available_memory()``): a UserError above
    ``MEMORY_REFUSE_SHARE`` of it, a warning above ``MEMORY_WARN_SHARE``; both name the key, the bytes, the memory
    and the size that fits. Returns the estimate."""
    buffer_cfg = cfg.policy.other.replay_buffer
    nbytes_for = getattr(buffer_class(cfg), "nbytes_for", None)
    if nbytes_for is None:
        return None
    layout = train_sample_layout(cfg, observation_space, model)
    capacity = buffer_cfg.replay_buffer_size
    need = nbytes_for(capacity, [(shape, dtype) for _, shape, dtype in layout])
    free, source = available_memory() if available is None else available
    if free <= 0 or need <= MEMORY_WARN_SHARE * free:
        return need
    per_slot = nbytes_for(1, [(shape, dtype) for _, shape, dtype in layout])
    fits = max(1, int(MEMORY_WARN_SHARE * free // per_slot))
    leaves = sorted(layout, key=lambda leaf: -leaf_bytes(leaf[1], leaf[2]))
    described = ", ".join(f"{name} {shape} {str(dtype).replace('torch.', '')}" for name, shape, dtype in leaves[:4])
    unroll = cfg.policy.unroll_len
    what = (f"unrolls of policy.unroll_len={unroll} env steps" if unroll > 1 else "transitions")
    text = (f"{BUFFER_SIZE_KEY}={capacity:,}: the replay buffer needs {format_bytes(need)} ({capacity:,} train samples, "
            f"{what}, of {format_bytes(per_slot)} each: {described}{', ...' if len(leaves) > 4 else ''}), and "
            f"{format_bytes(free)} of memory is available ({source})")
    if need > MEMORY_REFUSE_SHARE * free:
        raise UserError(f"{text}; the buffer allocates all of it at its first push, and ding_lite refuses a buffer "
                        f"above {MEMORY_REFUSE_SHARE:.0%} of the available memory. Set {BUFFER_SIZE_KEY}={fits:,} or "
                        f"less (half the available memory), e.g. --set {BUFFER_SIZE_KEY}={fits}, or free memory")
    warnings.warn(f"{text}: more than {MEMORY_WARN_SHARE:.0%} of it, which leaves little for the rest of the run; "
                  f"{BUFFER_SIZE_KEY}={fits:,} would fit in half", stacklevel=2)
    return need


def _all_valid(obs: Any, key: Optional[str]) -> Any:
    """A zero observation with its action mask (``key``) all ones: a zero mask allows no action."""
    if key is None or not isinstance(obs, dict) or key not in obs:
        return obs
    return {**obs, key: tree_map(torch.ones_like, obs[key])}
