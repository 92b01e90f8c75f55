"""DI-engine keys that mean nothing (or live elsewhere) in ding_lite, each with the reason and the fix.

A DI-engine user's dizoo config should run after only the edits these messages ask for, so a key that ding_lite does
not read must fail loudly with its reason instead of being silently ignored. The tables are consulted only for keys
that are *not* in the compiled defaults: once a component declares a key (say a policy that reads
``random_collect_size``), its entry here stops applying to that config.

``cfg_type`` keys are the one exception, dropped silently wherever they appear (see ``IGNORED_KEYS``): DI-engine writes
``cfg_type='...Dict'`` into every section of the ``total_config.py`` it saves, as a label of the config class. It is
not a setting, so there is nothing to fix, and refusing it would only make DI-engine's saved configs tedious to reuse.
"""
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple

import gymnasium as gym

# Keys removed from the user's config without a message, wherever they occur (see the module docstring).
IGNORED_KEYS = ("cfg_type",)

_RUN_LENGTH = ("has no effect in ding_lite: the length of a run is set by max_env_step / max_train_iter (arguments of "
               "serial_pipeline and the CLI) and env.stop_value; remove it")

def _priority_key(dest: str, what: str) -> str:
    return f"lives at policy.other.replay_buffer.{dest} in ding_lite ({what} of prioritised replay); move it there"


# DI-engine's prioritised-replay keys of policy.other.replay_buffer (its 'advanced' buffer and its newer
# PrioritizedReplayBuffer middleware) -> ding_lite's names in the same section, and what they are.
PRIORITY_KEYS: Dict[str, Tuple[str, str]] = {
    "alpha": ("priority_alpha", "the priority exponent alpha"),
    "priority_power_factor": ("priority_alpha", "the priority exponent alpha"),
    "beta": ("priority_beta", "the initial importance-sampling exponent beta"),
    "IS_weight_power_factor": ("priority_beta", "the initial importance-sampling exponent beta"),
    "anneal_step": ("priority_beta_anneal_steps", "the train iterations over which beta grows to 1"),
    "IS_weight_anneal_train_iter": ("priority_beta_anneal_steps", "the train iterations over which beta grows to 1"),
}
_BUFFER_NOOP = ("has no effect on ding_lite's columnar buffer (it has replay_buffer_size, max_use, max_staleness, "
                "the priority_* keys of prioritised replay and save_replay_buffer); remove it")
_NO_RENDER = "ding_lite does not render or record episodes; remove it"

# Full dotted paths in main_config (or --set). '*' matches any one key. '{policy}' is replaced by the policy type and
# '{key}' by the last key of the path. Exact paths are checked before 'did you mean'; wildcards only when no valid key
# at that level is close to the given one.
MAIN_CONFIG_KEYS: Dict[str, str] = {
    # Keys that live somewhere else in ding_lite.
    "policy.collect.unroll_len": "lives at policy.unroll_len in ding_lite (DI-engine reads it in two places); move it "
                                 "there",
    "policy.eval.evaluator.n_episode": "lives at env.n_evaluator_episode in ding_lite; move it there",
    "policy.eval.evaluator.stop_value": "lives at env.stop_value in ding_lite; move it there",
    "env.frame_stack": "lives at env.atari.frame_stack in ding_lite (the section of DI-engine's Atari preprocessing, "
                       "which ding_lite applies to ale-py ids such as 'PongNoFrameskip-v4'); move it there",
    "policy.collect.n_episode": "ding_lite collects by samples (policy.collect.n_sample), not by episodes; use "
                                "policy.collect.n_sample instead",
    # Keys that have no effect.
    "policy.random_collect_size": "has no effect for policy '{policy}' in ding_lite (it collects no random warm-up "
                                  "data before training); remove it",
    "policy.transition_with_policy_data": "has no effect in ding_lite: the policy's _process_transition decides what a "
                                          "step stores; remove it",
    "policy.multi_agent": "ding_lite has no multi-agent support; remove it",
    "policy.command": "has no effect: ding_lite has no commander (DI-engine's epsilon/temperature schedules); remove it",
    "policy.learn.ignore_done": "has no effect in ding_lite: transitions carry gymnasium's terminated and truncated "
                                "flags separately, and value targets stop at termination and bootstrap through "
                                "truncation (time limits) on their own; remove it",
    "policy.learn.train_iterations": _RUN_LENGTH,
    "policy.learn.learner.train_iterations": _RUN_LENGTH,
    "policy.learn.multi_gpu": "has no effect: ding_lite trains on one device (policy.cuda); remove it",
    "policy.learn.learner.dataloader": "has no effect: ding_lite samples batches straight from its replay buffer; "
                                       "remove it",
    "policy.learn.learner.log_policy": "has no effect in ding_lite; remove it",
    "policy.learn.learner.hook.load_ckpt_before_run": "ding_lite loads checkpoints from the command line: use --resume "
                                                      "to continue a run, or -m eval --load-path CKPT to evaluate one; "
                                                      "remove it",
    "policy.collect.collector.collect_print_freq": "ding_lite prints one progress line every "
                                                   "policy.learn.learner.hook.log_show_after_iter iterations; remove it",
    "policy.collect.collector.deepcopy_obs": "has no effect: ding_lite copies observations into tensors; remove it",
    "policy.collect.collector.transform_obs": "has no effect: ding_lite always hands the policy tensors; remove it",
    "policy.eval.evaluator.render": _NO_RENDER,
    "policy.eval.evaluator.figure_path": _NO_RENDER,
    **{f"policy.other.replay_buffer.{key}": _priority_key(dest, what) for key, (dest, what) in PRIORITY_KEYS.items()},
    "policy.other.replay_buffer.deepcopy": _BUFFER_NOOP,
    "policy.other.replay_buffer.enable_track_used_data": _BUFFER_NOOP,
    "policy.other.replay_buffer.periodic_thruput_seconds": _BUFFER_NOOP,
    "policy.other.replay_buffer.thruput_controller": _BUFFER_NOOP,
    "policy.other.replay_buffer.monitor": _BUFFER_NOOP,
    "policy.other.replay_buffer.min_sample_ratio": _BUFFER_NOOP,
    "policy.other.replay_buffer.replay_buffer_start_size": _BUFFER_NOOP,
    "env.manager.shared_memory": "has no effect: ding_lite's env managers are gymnasium vector envs ('base' steps the "
                                 "envs in this process, 'subprocess' each in its own process) with no shared-memory "
                                 "option; remove it",
    "env.manager.episode_num": "has no effect: ding_lite's vector envs reset finished episodes on their own and the "
                               "evaluator counts episodes (env.n_evaluator_episode); remove it",
    "env.act_scale": "has no effect: ding_lite makes gymnasium envs as registered and maps actions onto the env's Box "
                     "by the policy's convention itself (SAC's tanh actions in [-1, 1] are rescaled to the bounds, as "
                     "act_scale=True does in DI-engine; the Gaussian actions of IMPALA, ACER, PPO and APPO are clipped to them, "
                     "and stored unclipped); remove it",
    "env.replay_path": _NO_RENDER,
    "env.env_wrapper": "has no effect: DI-engine's name for the wrapper set of its env ('atari_default' is the Atari "
                       "preprocessing that ding_lite applies to ale-py ids from env.atari; 'default' and "
                       "'mujoco_default' add only the episode-return bookkeeping that ding_lite's evaluator does "
                       "itself); remove it (gymnasium wrappers of your own go in env.wrappers)",
    "reward_model": "reward models are not supported in ding_lite; remove it",
    "world_model": "world models are not supported in ding_lite; remove it",
    # ACER keys of DI-engine, and keys of one policy given to another.
    "policy.learn.value_weight": "has no effect for policy '{policy}': its critic has its own optimiser and learning "
                                 "rate (policy.learn.learning_rate_critic / learning_rate_q); remove it",
    "policy.learn.lambda_": "has no effect for policy '{policy}' (DI-engine's ACER declares it but never reads it); "
                            "remove it",
    "policy.collect.discount_factor": "has no effect: DI-engine declares it, but its IMPALA and ACER read "
                                      "policy.learn.discount_factor only, as ding_lite does; remove it (set "
                                      "policy.learn.discount_factor)",
    "policy.collect.gae_lambda": "has no effect: V-trace (IMPALA) and Retrace (ACER) need no GAE, and DI-engine's "
                                 "IMPALA and ACER never read it either; remove it",
    "policy.learn.learning_rate": "has no effect for policy '{policy}', which has one learning rate per network: set "
                                  "policy.learn.learning_rate_actor / learning_rate_critic (ACER) or "
                                  "learning_rate_q / learning_rate_policy / learning_rate_alpha (SAC)",
    # SAC keys of DI-engine.
    "policy.learn.log_space": "has no effect: ding_lite always tunes alpha in log space; remove it",
    "policy.learn.init_w": "has no effect: ding_lite initialises its output layers itself; remove it",
    "policy.collect.collector_logit": "has no effect: SAC stores no behaviour logits; remove it",
    "policy.learn.reparameterization": "has no effect: ding_lite's SAC always uses the reparameterised squashed "
                                       "Gaussian; remove it",
    "policy.model.actor_head_type": "has no effect: ding_lite's SAC actor is always the reparameterised squashed "
                                    "Gaussian (DI-engine's 'reparameterization'); remove it",
    "policy.learn.value_network": "has no effect: ding_lite's SAC has no separate value network (the soft value comes "
                                  "from the target critics, as in the second SAC paper); remove it",
    "policy.collect.noise_sigma": "has no effect: SAC explores by sampling its own stochastic policy, with no added "
                                  "noise; remove it",
    # PPO keys of DI-engine: recompute_adv lives elsewhere (port_ppo.RENAMES moves it in a ppo port, as the others
    # renamed there); the rest have no ding_lite counterpart.
    "policy.recompute_adv": "lives at policy.learn.recompute_adv in ding_lite, an option of policy 'ppo' only (the "
                            "advantages recomputed with the current critic before each epoch after the first); move "
                            "it there (another policy: remove it)",
    "policy.learn.ppo_param_init": "not supported as a switch: ding_lite's models always initialise orthogonally "
                                   "(gain sqrt(2), policy output layer 0.01), as DI-engine's ppo_param_init does, but "
                                   "keep the Gaussian's log std at log(policy.model.init_sigma) where DI-engine sets "
                                   "-0.5 (init_sigma=0.6065); remove it",
    "policy.nstep_return": "not supported: ding_lite's ppo's value targets are GAE's returns, not n-step returns; "
                           "remove it",
    "policy.learn.kl_beta": "not supported: DI-engine's KL penalty in the loss; ding_lite's ppo bounds the update by "
                            "the clipped ratio and, optionally, policy.learn.target_kl (an early stop); remove it",
    "policy.learn.kl_type": "has no effect: DI-engine's estimator of the kl_beta penalty, which ding_lite does not "
                            "have (the approx_kl it logs is (r - 1) - log r); remove it",
    "policy.learn.pretrained_model_path": "not supported: DI-engine's KL regulariser against a pretrained policy; "
                                          "remove it",
    "policy.model.bound_type": "not supported: DI-engine's continuous PPO head squashes the Gaussian's mean with "
                               "tanh (mu = tanh(mu), inside [-1, 1]); ding_lite's ppo keeps a linear mean and clips "
                               "the sampled action to the env's bounds; remove it",
    "policy.collect.collector_env_num": "lives at env.collector_env_num in ding_lite (DI-engine copies it here); "
                                        "move it there",
    "policy.load_path": "not supported: DI-engine's policy loads its weights from this checkpoint before training; "
                        "ding_lite starts from scratch, or continues one of its own runs with --resume; remove it",
    # Keys of several DI-engine policies.
    "policy.nstep": "has no effect for policy '{policy}': its targets are fixed by the algorithm (IMPALA's V-trace "
                    "and ACER's Retrace over policy.unroll_len steps; SAC takes policy.nstep, its n-step soft "
                    "Bellman target); remove it",
    # Keys of DI-engine's Policy base class (every policy's default_config has them).
    "policy.multi_gpu": "has no effect: ding_lite trains on one device (policy.cuda); remove it",
    "policy.bp_update_sync": "has no effect: it synchronises gradients across GPUs in DI-engine, and ding_lite trains "
                             "on one device (policy.cuda); remove it",
    "policy.traj_len_inf": "has no effect: ding_lite's collector cuts every env's trajectory into policy.unroll_len "
                           "segments (and at episode ends) itself; remove it",
    "policy.learn.resume_training": "ding_lite resumes from the command line: --resume continues a run from its last "
                                    "checkpoint with env steps and train iterations intact; remove it",
    # Keys of DI-engine's dizoo configs for IMPALA, ACER and SAC (cartpole, pendulum, lunarlander, pong, mujoco).
    "policy.learn.unroll_len": "lives at policy.unroll_len in ding_lite (the length of the trajectory segments the "
                               "policy learns from); move it there",
    "policy.discount_factor": "has no effect for policy '{policy}': DI-engine's IMPALA, ACER and SAC read "
                              "policy.learn.discount_factor (as ding_lite does), not this DQN-style key; remove it "
                              "(set policy.learn.discount_factor)",
    "policy.collect.env_num": "has no effect: the number of collector envs is env.collector_env_num (DI-engine's "
                              "SAC does not read this key either); remove it",
    "policy.eval.env_num": "has no effect: the number of evaluator envs is env.evaluator_env_num (DI-engine's SAC "
                           "does not read this key either); remove it",
    "policy.collect.collector.type": "has no effect: ding_lite has one collector, which collects train samples "
                                     "(policy.collect.n_sample), like DI-engine's 'sample' collector; remove it",
    "policy.other.eps": "not supported: DI-engine's discrete SAC collects epsilon-greedy on this schedule; "
                        "ding_lite's SAC explores by sampling its own policy, with the entropy set by alpha "
                        "(policy.learn.alpha, auto_alpha, target_entropy_ratio); remove it",
    "policy.other.replay_buffer.sliced": "has no effect: DI-engine's deque buffer option to cut samples into "
                                         "unroll_len slices; ding_lite stores whole train samples (one unroll of "
                                         "policy.unroll_len steps each); remove it",
    "policy.model.agent_obs_shape": "not supported: a multi-agent model input of DI-engine (ding_lite has no "
                                    "multi-agent support, and reads policy.model.obs_shape from the env); remove it",
    "policy.model.global_obs_shape": "not supported: a multi-agent model input of DI-engine (ding_lite has no "
                                     "multi-agent support, and reads policy.model.obs_shape from the env); remove it",
    "env.norm_obs": "not supported in this form: DI-engine's MuJoCo env option for running observation "
                    "normalisation (off, use_norm=False, in every dizoo config); remove it, and for use_norm=True set "
                    "env.normalize_obs=True (ding_lite's running mean/std, kept with the policy)",
    "env.norm_reward": "not supported: DI-engine's MuJoCo env option for reward normalisation (off, use_norm=False, "
                       "in every dizoo config); ding_lite does not normalise rewards: remove it (to scale rewards, "
                       "list gymnasium.wrappers:NormalizeReward in env.wrappers)",
    "env.manager.reset_inplace": "has no effect: ding_lite's vector envs reset finished envs in place on their own; "
                                 "remove it",
    # Fallbacks for whole sections.
    "env.manager.*": "is not an option of ding_lite's env managers (gymnasium vector envs, chosen by env.manager.type "
                     "'base' or 'subprocess'); DI-engine's retry, timeout and reset options have no effect here; "
                     "remove it",
    "env.*": "unknown key; arguments of the env itself go under env.kwargs (passed to gymnasium.make), e.g. "
             "env.kwargs.{key}",
}

# Top-level sections of a DI-engine create_config that ding_lite does not have.
CREATE_CONFIG_SECTIONS: Dict[str, str] = {
    "collector": "ding_lite has one collector, which collects train samples (policy.collect.n_sample); remove "
                 "create_config.collector",
    "reward_model": "reward models are not supported in ding_lite; remove it",
    "world_model": "world models are not supported in ding_lite; remove it",
    "model": "the model's type lives at create_config.policy.model.type (or main_config policy.model.type) in "
             "ding_lite; move it there",
}

# DI-engine replay buffer types: ding_lite's one buffer ('columnar') covers them.
DI_ENGINE_BUFFER_TYPES = ("naive", "advanced", "deque", "priority", "episode")

# DI-engine env manager types -> the ding_lite manager that does the same job.
DI_ENGINE_MANAGER_TYPES: Dict[str, str] = {"async_subprocess": "subprocess", "gym_vector": "base"}

# dizoo env types -> the gymnasium id to put in env.env_id.
DIZOO_ENV_IDS: Dict[str, str] = {
    "cartpole": "CartPole-v1",
    "pendulum": "Pendulum-v1",
    "lunarlander": "LunarLander-v3",
    "bipedalwalker": "BipedalWalker-v3",
    "mountain_car": "MountainCar-v0",
    "acrobot": "Acrobot-v1",
}


# dizoo envs whose 'solved' return differs from their gymnasium id's: (DI-engine's stop_value, ding_lite's, why).
# `ding_lite port` replaces exactly that stop_value.
DIZOO_STOP_VALUES: Dict[str, Tuple[float, float, str]] = {
    "cartpole": (195, 475, "DI-engine's dizoo CartPole is gym's CartPole-v0 (episodes end at 200 steps, solved at "
                           "195); CartPole-v1 runs 500 steps and is solved at 475"),
}

# dizoo env types that map to no single gymnasium id: what to do instead.
DIZOO_ENV_TYPES: Dict[str, str] = {
    "mujoco": "DI-engine's MuJoCo env (mujoco-py ids such as 'HalfCheetah-v3'); ding_lite makes gymnasium's MuJoCo "
              "envs by id: remove the env type (it defaults to 'gym') and set env.env_id to the -v5 id, e.g. "
              "'HalfCheetah-v5' (pip install \"gymnasium[mujoco]\")",
    "atari": "DI-engine's Atari env; ding_lite makes Atari envs by gymnasium id (ale-py: pip install -e "
             "\".[atari]\"), with DeepMind's preprocessing in env.atari (noop reset, frame skip 4, 84x84 grey frames, "
             "a 4-frame stack; episodic life and reward clipping for training only): remove the env type (it "
             "defaults to 'gym') and keep env.env_id, e.g. 'PongNoFrameskip-v4' (or ale-py's 'ALE/Pong-v5')",
}

# DI-engine policy type names that are not registered in ding_lite -> the ding_lite name of the same algorithm.
DI_ENGINE_POLICY_TYPES: Dict[str, str] = {
    # DI-engine 0.5.3 registers discrete SAC as 'discrete_sac'; its lunarlander_discrete_sac config says this.
    "sac_discrete": "discrete_sac",
}

# DI-engine policy types of the PPO family that port refuses -> (what such a config is, with its article; why ding_lite
# has no counterpart). The refusal names DI-engine's on-policy PPO config of the same env (type 'ppo'), which ports.
PORT_UNMAPPED_POLICY_TYPES: Dict[str, Tuple[str, str]] = {
    "ppo_offpolicy": ("an off-policy PPO", "DI-engine's PPO that trains on samples replayed from a buffer; ding_lite's "
                                           "ppo is on-policy (each collection is trained on for its epochs, then "
                                           "dropped)"),
    "ppo_stdim": ("an ST-DIM PPO", "PPO with an auxiliary ST-DIM (InfoNCE) representation loss on its encoder; "
                                   "ding_lite's ppo has no auxiliary loss, and ported key by key the file would "
                                   "silently train plain PPO"),
    "ppo_pg": ("a critic-free PPO-PG", "DI-engine's PPO without a critic (the clipped objective on episode returns); "
                                       "ding_lite's ppo learns a critic for GAE advantages, a different algorithm"),
}
# ding_lite's policy for the plain config of a PPO-family variant (what a refusal tells the user to port instead).
PORT_PLAIN_POLICY: Dict[str, str] = {"ppo_offpolicy": "ppo", "ppo_stdim": "ppo", "ppo_pg": "ppo"}

# dizoo env types with no gymnasium id that ding_lite can make -> what the env is; port refuses their configs.
DIZOO_NON_GYMNASIUM_ENVS: Dict[str, str] = {
    "procgen": "dizoo's wrapper of OpenAI's Procgen games, from the procgen package for gym 0.x",
    "rocket": "dizoo's own rocket-recycling env, not registered with gymnasium",
    "gym_hybrid": "dizoo's wrapper of the gym-hybrid package for gym 0.x, with a parametrised action space",
    "bitflip": "dizoo's own bit-flipping env (the HER paper's), not registered with gymnasium",
    "gfootball": "dizoo's wrapper of Google Research Football, from the gfootball package",
    "stocks-v0": "dizoo's wrapper of the gym-anytrading package's stock-trading env, for gym 0.x",
}

# gym ids of DI-engine's dizoo configs -> the gymnasium 1.x id of the same env.
DI_ENGINE_ENV_IDS: Dict[str, str] = {
    "LunarLander-v2": "LunarLander-v3",
    "CarRacing-v2": "CarRacing-v3",
    "Taxi-v3": "Taxi-v4",  # v4 fixes only the optional is_rainy and fickle_passenger, both off by default
    "LunarLanderContinuous-v2": "LunarLanderContinuous-v3",
    "BipedalWalker-v2": "BipedalWalker-v3",
    "Ant-v3": "Ant-v5",
    "HalfCheetah-v3": "HalfCheetah-v5",
    "Hopper-v3": "Hopper-v5",
    "Walker2d-v3": "Walker2d-v5",
    "Humanoid-v3": "Humanoid-v5",
    "Swimmer-v3": "Swimmer-v5",
    **{f"{name}-v2": f"{name}-v5" for name in ("Ant", "HalfCheetah", "Hopper", "Walker2d", "Humanoid", "Swimmer",
                                               "Reacher", "InvertedPendulum", "InvertedDoublePendulum",
                                               "HumanoidStandup", "Pusher")},
}
# An id the installed gymnasium does not register yet while it registers the old one (Taxi-v4 came with gymnasium
# 1.4; setup.py allows 1.1): the old id is the current one there, and stays.
DI_ENGINE_ENV_IDS = {old: new for old, new in DI_ENGINE_ENV_IDS.items()
                     if new in gym.registry or old not in gym.registry}
# Of those, the mujoco-py ids that gymnasium still registers, only to fail when made: refused with the -v5 id.
MUJOCO_PY_ENV_IDS = tuple(k for k in DI_ENGINE_ENV_IDS
                          if k.endswith(("-v2", "-v3")) and DI_ENGINE_ENV_IDS[k].endswith("-v5"))

# Values of known keys that DI-engine accepts and ding_lite does not, with the reason and the fix: (path, value).
MAIN_CONFIG_VALUES: Dict[Tuple[str, Any], str] = {
    ("policy.model.action_space", "reparameterization"):
        "DI-engine's name for SAC's reparameterised Gaussian actor, which ding_lite's SAC always uses; ding_lite "
        "reads the action space from the env: remove it",
    **{("env.env_id", old): (f"a mujoco-py env, which gymnasium 1.x registers only to say it moved to "
                             f"gymnasium-robotics; use the current MuJoCo env env.env_id='{new}' (pip install "
                             f"\"gymnasium[mujoco]\"; its observation can differ, so drop policy.model.obs_shape)"
                             if old in MUJOCO_PY_ENV_IDS else
                             f"the gym 0.25 id DI-engine 0.5.3 uses; gymnasium 1.x has this env as '{new}': use "
                             f"env.env_id='{new}'")
       for old, new in DI_ENGINE_ENV_IDS.items()},
}
# How `ding_lite port` applies the MAIN_CONFIG_KEYS entries. An entry is removed (its message becomes the comment),
# except: a key in PORT_MOVES is moved to the path given (where the user has not set that path already; if they
# have, theirs wins and the key is removed), and a key in PORT_TODO is left for the user as a `# TODO(port):` comment
# unless its value is the 'off' value given there (so removing it changes nothing).
PORT_MOVES: Dict[str, str] = {
    "policy.collect.unroll_len": "policy.unroll_len",
    "policy.learn.unroll_len": "policy.unroll_len",
    "policy.eval.evaluator.n_episode": "env.n_evaluator_episode",
    "policy.eval.evaluator.stop_value": "env.stop_value",
    "env.frame_stack": "env.atari.frame_stack",
    "policy.collect.collector_env_num": "env.collector_env_num",
    "policy.recompute_adv": "policy.learn.recompute_adv",
    **{f"policy.other.replay_buffer.{key}": f"policy.other.replay_buffer.{dest}"
       for key, (dest, _) in PRIORITY_KEYS.items()},
}
_NEVER = object()  # an 'off' value no config has: the key is always left as a TODO
PORT_TODO: Dict[str, Any] = {
    "policy.collect.n_episode": _NEVER,
    "policy.multi_agent": False,
    "env.norm_obs": {"use_norm": False},
    "env.norm_reward": {"use_norm": False},
    "policy.learn.ppo_param_init": False,
    "policy.nstep_return": False,
    "policy.learn.kl_beta": 0.0,
    "policy.learn.pretrained_model_path": None,
    "policy.model.bound_type": None,
    "policy.load_path": None,
    "reward_model": _NEVER,
    "world_model": _NEVER,
}


def port_action(pattern: str) -> str:
    """'moved', 'not supported' or 'no effect': what the MAIN_CONFIG_KEYS entry ``pattern`` means for a port."""
    if pattern in PORT_MOVES:
        return "moved"
    if pattern in PORT_TODO or MAIN_CONFIG_KEYS[pattern].startswith("not supported"):
        return "not supported"
    return "no effect"


def is_off(pattern: str, value: Any) -> bool:
    """Whether ``value`` of the PORT_TODO entry ``pattern`` is its 'off' value (removing the key changes nothing)."""
    off = PORT_TODO.get(pattern, _NEVER)
    return off is not _NEVER and value == off


def value_reason(path: Sequence[str], value: Any) -> Optional[str]:
    """The reason and fix for a DI-engine value of a known key (``MAIN_CONFIG_VALUES``), or None."""
    dotted = ".".join(str(k) for k in path)
    try:
        return MAIN_CONFIG_VALUES.get((dotted, value))
    except TypeError:  # an unhashable value (a list, a dict) is no DI-engine value of these keys
        return None


def _matches(pattern: Sequence[str], path: Sequence[str]) -> bool:
    return len(pattern) == len(path) and all(p in ("*", k) for p, k in zip(pattern, path))


def main_key_pattern(path: Sequence[str], wildcard: bool) -> Optional[str]:
    """The ``MAIN_CONFIG_KEYS`` entry that matches the dotted ``path``, or None.

    ``wildcard=False`` looks at exact entries only, ``wildcard=True`` at the '*' fallbacks only.
    """
    path = [str(k) for k in path]
    for pattern in MAIN_CONFIG_KEYS:
        parts = pattern.split(".")
        if ("*" in parts) == wildcard and _matches(parts, path):
            return pattern
    return None


# (policy type, DI-engine key) -> the reason and fix where that policy reads the key elsewhere (before
# MAIN_CONFIG_KEYS, whose entry is about the other policies).
POLICY_KEY_PLACES: Dict[Tuple[str, str], str] = {
    ("dqn", "policy.discount_factor"): "DI-engine's DQN key for gamma; ding_lite's dqn reads "
                                       "policy.learn.discount_factor: move it there (`ding_lite port` does)",
    ("dqn", "policy.other.eps"): "DI-engine's place for DQN's epsilon-greedy schedule; ding_lite's dqn reads "
                                 "policy.collect.eps (the same 'exp' and 'linear' schedules over env steps): move it "
                                 "there (`ding_lite port` does)",
}


def main_key_reason(path: Sequence[str], policy_type: Optional[str], wildcard: bool) -> Optional[str]:
    """The reason and fix for the unknown key ``path`` of main_config, from ``POLICY_KEY_PLACES`` and
    ``MAIN_CONFIG_KEYS``, or None.

    ``wildcard=False`` looks at exact entries only, ``wildcard=True`` at the '*' fallbacks only.
    """
    pattern = main_key_pattern(path, wildcard)
    if pattern is None:
        return None
    if not wildcard and (str(policy_type), pattern) in POLICY_KEY_PLACES:
        return POLICY_KEY_PLACES[(str(policy_type), pattern)]
    return MAIN_CONFIG_KEYS[pattern].replace("{policy}", str(policy_type)).replace("{key}", str(path[-1]))


def di_engine_modules(names: Iterable[str]) -> list:
    """The modules in ``names`` that belong to DI-engine (``ding.*``, ``dizoo.*``), which ding_lite cannot use."""
    return [n for n in names or [] if isinstance(n, str) and n.split(".")[0] in ("ding", "dizoo")]
