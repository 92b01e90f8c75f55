"""SAC on MuJoCo Hopper-v5 with observation normalisation (needs gymnasium's mujoco extra:
``pip install "gymnasium[mujoco]"``). A long run, not part of CI.

The settings of ``halfcheetah_sac.py`` (2 updates per 4 env steps, [256, 256] networks, batch 256), a 5k-step
warm-up, and ``env.normalize_obs=True``: over 3 seeds and 60k env steps the normalised runs led from 30k env steps
on (docs/custom_env.md#observation-normalisation, benchmarks/learning_curves.py).

Run it:  ding_lite -m serial -c dizoo_configs/hopper_sac.py -s 0
"""
main_config = dict(
    exp_name="hopper_sac",
    env=dict(
        env_id="Hopper-v5",
        collector_env_num=4,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=None,
        # Hopper's 11 observations range from unit-scale angles to velocities of 10 and more.
        normalize_obs=True,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=5000,
        model=dict(num_critics=2, actor_head_hidden_size=256, critic_head_hidden_size=256),
        learn=dict(
            update_per_collect=2,
            batch_size=256,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            target_theta=0.005,
            discount_factor=0.99,
            learner=dict(hook=dict(log_show_after_iter=2000)),
        ),
        collect=dict(n_sample=4),
        eval=dict(evaluator=dict(eval_freq=2500)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000000)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    policy=dict(type="sac"),
)
