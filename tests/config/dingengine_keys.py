"""Every dotted key of DI-engine 0.5.3's IMPALA, ACER and SAC configs, as data (no DI-engine file is copied here).

Compiled by reading DI-engine 0.5.3 (installed beside torch 2.13 as shared/reference/README explains):

* the class attribute ``config`` of ``IMPALAPolicy``, ``ACERPolicy``, ``SACPolicy`` and ``DiscreteSACPolicy`` and
  of their base class ``Policy`` ('default' below);
* the dizoo configs of those algorithms (main_config and create_config): classic_control/cartpole
  (cartpole_impala, cartpole_acer, cartpole_sac), classic_control/pendulum (pendulum_sac), box2d/lunarlander
  (lunarlander_impala, lunarlander_acer, lunarlander_cont_sac, lunarlander_discrete_sac), atari/config/serial/pong
  (pong_impala, pong_acer) and mujoco (ant_sac, halfcheetah_sac, hopper_sac, walker2d_sac).

A key of a sub-section ding_lite does not have at all (``policy.other.eps.start``) is listed as that section with its
DI-engine value. Keys whose value decides the outcome (env ids, env and policy types) have one row per value.

Each row: (dotted key, a DI-engine value, the ding_lite policy types it is compiled with, where it appears,
expected). ``expected`` is 'ok' (ding_lite takes it as it is), or what ding_lite's message and ``ding_lite port``
do: 'moved' (lives elsewhere), 'renamed' (a DI-engine name or id with a ding_lite one), 'no effect' (removed, with
the reason) or 'not supported' (what to do instead); a dict when it depends on the policy.
"""

POLICIES = ("impala", "acer", "sac", "discrete_sac")

MAIN_KEYS = [
    ("exp_name", "cartpole_impala_seed0", POLICIES, "all dizoo configs", "ok"),
    ("env.collector_env_num", 8, POLICIES, "all dizoo configs", "ok"),
    ("env.evaluator_env_num", 8, POLICIES, "all dizoo configs", "ok"),
    ("env.n_evaluator_episode", 8, POLICIES, "all dizoo configs", "ok"),
    ("env.stop_value", 195, POLICIES, "all dizoo configs", "ok"),
    ("env.env_id", "LunarLander-v2", ("impala", "acer", "discrete_sac"), "lunarlander", "renamed"),
    ("env.env_id", "LunarLanderContinuous-v2", ("sac",), "lunarlander", "renamed"),
    ("env.env_id", "Ant-v3", ("sac",), "mujoco", "renamed"),
    ("env.env_id", "HalfCheetah-v3", ("sac",), "mujoco", "renamed"),
    ("env.env_id", "Hopper-v3", ("sac",), "mujoco", "renamed"),
    ("env.env_id", "Walker2d-v3", ("sac",), "mujoco", "renamed"),
    ("env.env_id", "PongNoFrameskip-v4", ("impala", "acer"), "pong", "ok"),
    ("env.act_scale", True, ("sac",), "pendulum lunarlander", "no effect"),
    ("env.frame_stack", 4, ("impala", "acer"), "pong", "moved"),
    ("env.norm_obs", dict(use_norm=False), ("sac",), "mujoco", "not supported"),
    ("env.norm_reward", dict(use_norm=False), ("sac",), "mujoco", "not supported"),
    ("env.manager.shared_memory", False, ("sac",), "mujoco", "no effect"),
    ("env.manager.reset_inplace", True, ("sac",), "mujoco", "no effect"),
    ("policy.type", "impala", ("impala",), "default", "ok"),
    ("policy.cuda", False, POLICIES, "all dizoo configs, default", "ok"),
    ("policy.on_policy", False, POLICIES, "default", "ok"),
    ("policy.priority", False, POLICIES, "pong pendulum, default", "ok"),
    ("policy.priority_IS_weight", False, POLICIES, "default", "ok"),
    ("policy.action_space", "discrete", ("impala",), "default", "ok"),
    ("policy.unroll_len", 32, ("impala", "acer"), "cartpole lunarlander pong, default", "ok"),
    ("policy.multi_gpu", False, POLICIES, "default (Policy)", "no effect"),
    ("policy.bp_update_sync", True, POLICIES, "default (Policy)", "no effect"),
    ("policy.traj_len_inf", False, POLICIES, "default (Policy)", "no effect"),
    ("policy.transition_with_policy_data", True, ("impala", "sac", "discrete_sac"), "default", "no effect"),
    ("policy.multi_agent", False, ("sac", "discrete_sac"), "cartpole lunarlander, default", "not supported"),
    ("policy.random_collect_size", 1000, ("impala", "sac", "discrete_sac"), "lunarlander cartpole pendulum mujoco, "
     "default", {"impala": "no effect", "sac": "ok", "discrete_sac": "ok"}),
    ("policy.nstep", 3, ("acer",), "lunarlander", "no effect"),
    ("policy.discount_factor", 0.99, ("acer",), "lunarlander", "no effect"),
    ("policy.command", {}, ("sac", "discrete_sac"), "cartpole lunarlander mujoco", "no effect"),
    ("policy.model.obs_shape", 4, POLICIES[:2] + ("discrete_sac",), "all dizoo configs but pong's", "ok"),
    ("policy.model.obs_shape", 3, ("sac",), "pendulum", "ok"),
    ("policy.model.obs_shape", [4, 84, 84], ("impala", "acer"), "pong (compiles; made, it must match the env)",
     "ok"),
    ("policy.model.action_shape", 2, ("impala", "acer", "discrete_sac"), "all dizoo configs", "ok"),
    ("policy.model.action_shape", 1, ("sac",), "pendulum", "ok"),
    ("policy.model.encoder_hidden_size_list", [64, 64], ("impala", "acer"), "cartpole lunarlander pong", "ok"),
    ("policy.model.actor_head_hidden_size", 128, POLICIES, "cartpole pendulum lunarlander pong mujoco", "ok"),
    ("policy.model.critic_head_hidden_size", 128, POLICIES, "cartpole pendulum lunarlander pong mujoco", "ok"),
    ("policy.model.actor_head_layer_num", 2, ("impala", "acer"), "pong", "ok"),
    ("policy.model.critic_head_layer_num", 2, ("impala", "acer"), "pong", "ok"),
    ("policy.model.twin_critic", True, ("sac", "discrete_sac"), "cartpole pendulum lunarlander mujoco, default",
     "ok"),
    ("policy.model.action_space", "reparameterization", ("sac",), "pendulum lunarlander mujoco, default",
     "no effect"),
    ("policy.model.agent_obs_shape", 8, ("discrete_sac",), "lunarlander", "not supported"),
    ("policy.model.global_obs_shape", 8, ("discrete_sac",), "lunarlander", "not supported"),
    ("policy.learn.update_per_collect", 4, POLICIES, "all dizoo configs, default", "ok"),
    ("policy.learn.batch_size", 16, POLICIES, "all dizoo configs, default", "ok"),
    ("policy.learn.learning_rate", 0.0005, ("impala",), "cartpole lunarlander pong, default", "ok"),
    ("policy.learn.value_weight", 0.5, ("impala", "acer"), "cartpole lunarlander pong, default",
     {"impala": "ok", "acer": "no effect"}),
    ("policy.learn.entropy_weight", 0.0001, ("impala", "acer"), "cartpole lunarlander pong, default", "ok"),
    ("policy.learn.discount_factor", 0.9, POLICIES, "all dizoo configs, default", "ok"),
    ("policy.learn.lambda_", 0.95, ("impala", "acer"), "cartpole lunarlander pong, default",
     {"impala": "ok", "acer": "no effect"}),
    ("policy.learn.rho_clip_ratio", 1.0, ("impala",), "cartpole lunarlander pong, default", "ok"),
    ("policy.learn.c_clip_ratio", 10, ("impala", "acer"), "cartpole lunarlander pong, default", "ok"),
    ("policy.learn.rho_pg_clip_ratio", 1.0, ("impala",), "cartpole lunarlander pong, default", "ok"),
    ("policy.learn.grad_clip_type", "clip_norm", ("impala",), "lunarlander pong", "ok"),
    ("policy.learn.grad_clip_type", None, ("impala", "acer"), "default", "ok"),
    ("policy.learn.clip_value", 0.5, ("impala",), "lunarlander pong, default", "ok"),
    ("policy.learn.clip_value", None, ("acer",), "default", "ok"),
    ("policy.learn.optim", "adam", ("impala",), "default", "ok"),
    ("policy.learn.unroll_len", 32, ("acer",), "default", "moved"),
    ("policy.learn.trust_region", True, ("acer",), "cartpole pong, default", "ok"),
    ("policy.learn.trust_region_value", 1.0, ("acer",), "default", "ok"),
    ("policy.learn.learning_rate_actor", 0.0005, ("acer",), "cartpole lunarlander pong, default", "ok"),
    ("policy.learn.learning_rate_critic", 0.0005, ("acer",), "cartpole lunarlander pong, default", "ok"),
    ("policy.learn.target_theta", 0.005, ("acer", "sac", "discrete_sac"), "cartpole pendulum lunarlander mujoco, "
     "default", "ok"),
    ("policy.learn.learning_rate_q", 0.001, ("sac", "discrete_sac"), "cartpole pendulum lunarlander mujoco, "
     "default", "ok"),
    ("policy.learn.learning_rate_policy", 0.001, ("sac", "discrete_sac"), "cartpole pendulum lunarlander mujoco, "
     "default", "ok"),
    ("policy.learn.learning_rate_alpha", 0.0003, ("sac", "discrete_sac"), "cartpole pendulum lunarlander mujoco, "
     "default", "ok"),
    ("policy.learn.alpha", 0.2, ("sac", "discrete_sac"), "cartpole lunarlander mujoco, default", "ok"),
    ("policy.learn.auto_alpha", True, ("sac", "discrete_sac"), "cartpole pendulum lunarlander mujoco, default",
     "ok"),
    ("policy.learn.target_entropy", None, ("sac", "discrete_sac"), "default", "ok"),
    ("policy.learn.ignore_done", True, ("sac", "discrete_sac"), "cartpole pendulum lunarlander mujoco, default",
     "ok"),
    ("policy.learn.log_space", True, ("sac", "discrete_sac"), "default", "no effect"),
    ("policy.learn.init_w", 0.003, ("sac", "discrete_sac"), "default", "no effect"),
    ("policy.learn.reparameterization", True, ("sac",), "mujoco", "no effect"),
    ("policy.learn.resume_training", False, POLICIES, "default (Policy)", "no effect"),
    ("policy.collect", {}, ("impala",), "default", "ok"),
    ("policy.collect.n_sample", 16, POLICIES, "all dizoo configs, default", "ok"),
    ("policy.collect.unroll_len", 1, ("sac", "discrete_sac"), "cartpole lunarlander mujoco, default", "moved"),
    ("policy.collect.unroll_len", 32, ("acer",), "default", "moved"),
    ("policy.collect.discount_factor", 0.9, ("impala", "acer"), "cartpole lunarlander pong, default",
     "no effect"),
    ("policy.collect.gae_lambda", 0.95, ("impala", "acer"), "cartpole lunarlander, default", "no effect"),
    ("policy.collect.collector_logit", False, ("sac", "discrete_sac"), "default", "no effect"),
    ("policy.collect.env_num", 8, ("discrete_sac",), "cartpole lunarlander", "no effect"),
    ("policy.collect.collector.type", "sample", ("acer",), "default", "no effect"),
    ("policy.collect.collector.collect_print_freq", 1000, ("impala", "acer"), "cartpole lunarlander pong, default",
     "no effect"),
    ("policy.eval", {}, ("impala", "sac", "discrete_sac"), "mujoco, default", "ok"),
    ("policy.eval.env_num", 5, ("discrete_sac",), "cartpole lunarlander", "no effect"),
    ("policy.eval.evaluator.eval_freq", 200, POLICIES, "cartpole pendulum lunarlander pong, default", "ok"),
    ("policy.other.replay_buffer.replay_buffer_size", 1000, POLICIES, "all dizoo configs, default", "ok"),
    ("policy.other.replay_buffer.max_use", 16, ("impala", "acer"), "cartpole, default", "ok"),
    ("policy.other.replay_buffer.sliced", False, ("impala",), "lunarlander pong", "no effect"),
    ("policy.other.eps", dict(type="exp", start=0.95, end=0.1, decay=50000), ("discrete_sac",),
     "cartpole lunarlander", "not supported"),
]

CREATE_KEYS = [
    ("create_config.env.type", "cartpole", ("impala", "acer", "discrete_sac"), "cartpole", "renamed"),
    ("create_config.env.type", "pendulum", ("sac",), "pendulum", "renamed"),
    ("create_config.env.type", "lunarlander", POLICIES, "lunarlander", "renamed"),
    ("create_config.env.type", "mujoco", ("sac",), "mujoco", "renamed"),
    ("create_config.env.type", "atari", ("impala", "acer"), "pong", "renamed"),
    ("create_config.env.import_names", ["dizoo.classic_control.cartpole.envs.cartpole_env"], POLICIES,
     "every dizoo config (its env module)", "no effect"),
    ("create_config.env_manager.type", "base", POLICIES, "cartpole pendulum mujoco", "ok"),
    ("create_config.env_manager.type", "subprocess", POLICIES, "lunarlander pong mujoco", "ok"),
    ("create_config.policy.type", "impala", ("impala",), "cartpole lunarlander pong", "ok"),
    ("create_config.policy.type", "acer", ("acer",), "cartpole lunarlander pong", "ok"),
    ("create_config.policy.type", "sac", ("sac",), "pendulum lunarlander mujoco", "ok"),
    ("create_config.policy.type", "discrete_sac", ("discrete_sac",), "cartpole", "ok"),
    ("create_config.policy.type", "sac_discrete", ("discrete_sac",), "lunarlander", "renamed"),
    ("create_config.policy.import_names", ["ding.policy.sac"], ("sac",), "mujoco", "no effect"),
    ("create_config.replay_buffer.type", "naive", ("impala", "acer", "sac"), "lunarlander mujoco", "no effect"),
]

ALL_KEYS = MAIN_KEYS + CREATE_KEYS
