"""``ding_lite port`` of DI-engine's on-policy PPO configs (policy type ``'ppo'``, the ``onppo`` files of dizoo).

DI-engine 0.5.3's PPO (ding/policy/ppo.py) names and places some settings differently, and counts others in other
units; this pass rewrites those before the key-by-key walk of ``port.py`` (which would otherwise keep
``learn.batch_size`` with the wrong meaning, and remove ``collect.discount_factor`` as IMPALA's no-op):

* its samples are single steps (``collect.unroll_len=1``) and ``collect.n_sample`` counts env steps per collection;
  ding_lite's ppo trains on one unroll per env: ``unroll_len = ceil(n_sample / collector_env_num)`` and
  ``collect.n_sample = learn.batch_size = replay_buffer_size = collector_env_num`` (one collection, one update);
* ``learn.batch_size`` is a minibatch of steps (``learn.minibatch_size``), ``learn.epoch_per_collect`` the epochs,
  ``collect.discount_factor`` / ``collect.gae_lambda`` live under ``learn``, ``grad_clip_value`` is ``clip_value``
  and ``adv_norm`` is ``normalize_advantage`` (both per minibatch);
* DI-engine always clips the value loss with ``clip_ratio`` (ppo_value_error, use_value_clip=True): the port sets
  ``learn.value_clip`` to it; its defaults that differ from ding_lite's (``DEFAULTS``) are written where unset.

``learn.value_norm`` means the same in both (the critic learns the returns divided by their running std) and
keeps its name; ``recompute_adv`` (the advantages recomputed with the current critic before the epochs; DI-engine
also before the first, with the critic that collected) is ding_lite's ``learn.recompute_adv``, and DI-engine's default
of True is written where unset. Its keys with no ding_lite counterpart (ppo_param_init, ...) are compat table
entries, ported by the walk like any other. ``learn.lr_scheduler=dict(epoch_num, min_lr_lambda)`` is kept: ding_lite reads
that form as DI-engine steps it (a linear decay per learner iteration, ding_lite/torch_utils/lr_schedule.py).
"""
import math
from typing import Any

from .tree import entry_at, path_of, set_value, take

# DI-engine path -> ding_lite path: the same setting under another name or in another section.
RENAMES = {
    "policy.learn.epoch_per_collect": "policy.learn.epochs",
    "policy.learn.batch_size": "policy.learn.minibatch_size",
    "policy.learn.grad_clip_value": "policy.learn.clip_value",
    "policy.learn.adv_norm": "policy.learn.normalize_advantage",
    "policy.collect.discount_factor": "policy.learn.discount_factor",
    "policy.collect.gae_lambda": "policy.learn.gae_lambda",
    "policy.recompute_adv": "policy.learn.recompute_adv",
}
# DI-engine's PPO defaults that ding_lite's ppo cannot follow (compat.MAIN_CONFIG_KEYS says why, per key).
UNFOLLOWED_DEFAULTS = {"policy.learn.ppo_param_init": True}
# ding_lite path -> (DI-engine's default, its key): written when the DI-engine config leaves the key unset.
DEFAULTS = {
    "policy.learn.epochs": (10, "learn.epoch_per_collect"),
    "policy.learn.minibatch_size": (64, "learn.batch_size"),
    "policy.learn.learning_rate": (3e-4, "learn.learning_rate"),
    "policy.learn.entropy_weight": (0.0, "learn.entropy_weight"),
    # the same running std of the returns (scale only) in both; DI-engine's default is on
    "policy.learn.value_norm": (True, "learn.value_norm"),
    # the advantages recomputed with the current critic before each epoch after the first (DI-engine: every epoch)
    "policy.learn.recompute_adv": (True, "recompute_adv"),
}
DI_ENGINE_CLIP_RATIO = 0.2


def port_ppo(port: Any) -> None:
    """Rewrite the DI-engine PPO settings of ``port.main`` as ding_lite's ppo takes them (module docstring)."""
    for source, dest in RENAMES.items():
        if entry_at(port.main, path_of(dest)) is not None:
            continue  # ding_lite's own key is set: the walk reports the DI-engine one
        value = take(port, source)  # one comment per change: at the new place
        if value is not None:
            set_value(port, dest, value, f"moved {source} -> {dest}: ding_lite's name and place for it",
                 f"moved    {source} -> {dest}")
    _carry_collection(port)
    clip = entry_at(port.main, ("policy", "learn", "clip_ratio"))
    clip = clip.value if clip is not None else DI_ENGINE_CLIP_RATIO
    if entry_at(port.main, ("policy", "learn", "value_clip")) is None:
        set_value(port, "policy.learn.value_clip", clip,
             f"set policy.learn.value_clip={clip}: DI-engine's PPO always clips the value loss with clip_ratio",
             f"set      policy.learn.value_clip={clip} (DI-engine clips the value loss with clip_ratio)")
    for dest, (value, key) in DEFAULTS.items():
        if entry_at(port.main, path_of(dest)) is None:
            set_value(port, dest, value, f"set {dest}={value}: DI-engine's default of {key}, which this config leaves "
                                    f"unset (ding_lite's default differs)",
                 f"set      {dest}={value} (DI-engine's default)")
    unset = [f"{k.split('.')[-1]}={v}" for k, v in UNFOLLOWED_DEFAULTS.items() if entry_at(port.main, path_of(k)) is None]
    if unset:
        port.change(port.main.child("policy"),
                    f"note: DI-engine's PPO defaults {', '.join(unset)}, which this config leaves on; ding_lite's ppo "
                    f"has no such options (docs/porting_from_dingengine.md, PPO), so the port learns without them",
                    f"note     DI-engine's defaults {', '.join(unset)} have no ding_lite counterpart")


def _carry_collection(port: Any) -> None:
    """DI-engine's n_sample steps per collection -> one unroll of ceil(n_sample / envs) steps per env."""
    unroll = take(port, "policy.collect.unroll_len",
                   "removed policy.collect.unroll_len: DI-engine's PPO samples are single steps (GAE runs over each "
                   "env's trajectory); ding_lite's ppo trains on whole unrolls, of policy.unroll_len steps (below)")
    if unroll is not None:
        port.changes.append("removed  policy.collect.unroll_len")
    n_sample = entry_at(port.main, ("policy", "collect", "n_sample"))
    env_num = entry_at(port.main, ("env", "collector_env_num"))
    values = [e.value if e is not None else None for e in (n_sample, env_num)]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        port.todo(port.main.child("policy"), "policy.unroll_len: DI-engine's PPO collects policy.collect.n_sample env "
                                             "steps per collection over env.collector_env_num envs, which this config "
                                             "does not both set; set policy.unroll_len (steps per env per "
                                             "collection) and policy.collect.n_sample = learn.batch_size = "
                                             "other.replay_buffer.replay_buffer_size = collector_env_num")
        return
    steps, envs = values
    unroll_len = math.ceil(steps / envs)
    why = (f"DI-engine's PPO collects n_sample={steps} env steps per collection, {unroll_len} per env with "
           f"collector_env_num={envs}; ding_lite's ppo trains once per collection on one unroll of policy.unroll_len "
           f"steps per env, so n_sample, learn.batch_size and the buffer count {envs} unrolls")
    set_value(port, "policy.unroll_len", unroll_len, f"set policy.unroll_len={unroll_len}: {why}",
         f"set      policy.unroll_len={unroll_len} ({steps} steps per collection over {envs} envs)")
    for dest in ("policy.collect.n_sample", "policy.learn.batch_size", "policy.other.replay_buffer.replay_buffer_size"):
        set_value(port, dest, envs, f"set {dest}={envs}: one unroll per env (policy.unroll_len)",
             f"set      {dest}={envs} (unrolls per collection)")
