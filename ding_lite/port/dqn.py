"""``ding_lite port`` of DI-engine's DQN configs (policy type ``'dqn'``: cartpole_dqn_config.py, pong_dqn_config.py...).

DI-engine 0.5.3's DQN (ding/policy/dqn.py) places two settings elsewhere and has defaults and fixed behaviour that
differ from ding_lite's dqn; this pass rewrites them before the key-by-key walk of ``porter.py`` (which would
otherwise remove ``policy.discount_factor`` and ``policy.other.eps`` as keys of other policies):

* ``policy.discount_factor`` is ``policy.learn.discount_factor``; ``policy.other.eps`` (its epsilon-greedy schedule
  over env steps, 'exp' or 'linear', the same formulas) is ``policy.collect.eps``;
* its defaults that differ from ding_lite's (``DEFAULTS``) are written where the config leaves them unset;
* what it always does, with no key (``FIXED``): the MSE TD loss (``q_nstep_td_error``'s ``nn.MSELoss``), no gradient
  clipping, no random warm-up (its ``random_collect_size`` defaults to none), double Q-learning (ding_lite's default
  too);
* its model has a dueling head by default, whose streams have one hidden layer as wide as the encoder's output
  (``head_hidden_size`` = the last of ``encoder_hidden_size_list``);
* ``learn.target_theta`` never acts in DI-engine's DQN: its default config always holds ``target_update_freq``,
  which ``_init_learn`` takes first, so the port removes it (ding_lite would take it and update softly).
"""
from typing import Any

from .tree import entry_at, path_of, set_value, take

# DI-engine path -> ding_lite path: the same setting in another section.
RENAMES = {
    "policy.discount_factor": "policy.learn.discount_factor",
    "policy.other.eps": "policy.collect.eps",
}
# ding_lite path -> (DI-engine's default, its key): written when the DI-engine config leaves the key unset.
DEFAULTS = {
    "policy.learn.discount_factor": (0.97, "discount_factor"),
    "policy.learn.learning_rate": (0.001, "learn.learning_rate"),
    "policy.learn.update_per_collect": (3, "learn.update_per_collect"),
    "policy.learn.target_update_freq": (100, "learn.target_update_freq"),
    "policy.collect.n_sample": (8, "collect.n_sample"),
    "policy.collect.eps": (dict(type="exp", start=0.95, end=0.1, decay=10000), "other.eps"),
    "policy.other.replay_buffer.replay_buffer_size": (10000, "other.replay_buffer.replay_buffer_size"),
    "policy.model.dueling": (True, "model.dueling"),
}
# ding_lite path -> (value, why): DI-engine's DQN behaves so whatever its config says.
FIXED = {
    "policy.learn.loss": ("mse", "DI-engine's DQN takes the mean squared TD error (q_nstep_td_error's nn.MSELoss)"),
    "policy.learn.grad_clip_type": (None, "DI-engine's DQN does not clip gradients"),
    "policy.random_collect_size": (0, "DI-engine's DQN collects no random warm-up unless random_collect_size is set"),
}


def port_dqn(port: Any) -> None:
    """Rewrite the DI-engine DQN settings of ``port.main`` as ding_lite's dqn takes them (module docstring)."""
    for source, dest in RENAMES.items():
        if entry_at(port.main, path_of(dest)) is not None:
            continue  # ding_lite's own key is set: the walk reports the DI-engine one
        value = take(port, source)
        if value is not None:
            set_value(port, dest, value.to_plain() if hasattr(value, "to_plain") else value,
                      f"moved {source} -> {dest}: ding_lite's place for it", f"moved    {source} -> {dest}")
    theta = take(port, "policy.learn.target_theta",
                 "removed policy.learn.target_theta: DI-engine's DQN never uses it (its default target_update_freq "
                 "takes precedence); ding_lite would update the target softly with it")
    if theta is not None:
        port.changes.append("removed  policy.learn.target_theta (unused by DI-engine's DQN)")
    for dest, (value, key) in DEFAULTS.items():
        if entry_at(port.main, path_of(dest)) is None:
            set_value(port, dest, value, f"set {dest}={value}: DI-engine's default of {key}, which this config "
                                         f"leaves unset (ding_lite's default differs)",
                      f"set      {dest}={value} (DI-engine's default)")
    for dest, (value, why) in FIXED.items():
        if entry_at(port.main, path_of(dest)) is None:
            set_value(port, dest, value, f"set {dest}={value!r}: {why}", f"set      {dest}={value!r} ({why})")


def carry_head(port: Any) -> None:
    """``policy.model.head_hidden_size``: DI-engine's head is as wide as the encoder's output (the last of
    ``encoder_hidden_size_list``, set by then: ``carry.carry_model``)."""
    sizes = entry_at(port.main, ("policy", "model", "encoder_hidden_size_list"))
    if entry_at(port.main, ("policy", "model", "head_hidden_size")) is not None or sizes is None:
        return
    if isinstance(sizes.value, (list, tuple)) and sizes.value:
        width = sizes.value[-1]
        set_value(port, "policy.model.head_hidden_size", width,
                  f"set policy.model.head_hidden_size={width}: DI-engine's DQN head is as wide as its encoder's output "
                  f"(the last of encoder_hidden_size_list)", f"set      policy.model.head_hidden_size={width} "
                                                             f"(DI-engine's head width)")
