"""SAC on gymnasium Pendulum-v1 (never terminates; every episode is truncated at 200 steps).

Run it:  ding_lite -m serial -c dizoo_configs/pendulum_sac.py -s 0
"""
main_config = dict(
    exp_name="pendulum_sac",
    env=dict(
        env_id="Pendulum-v1",
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-200,
    ),
    policy=dict(
        cuda=False,
        # 200 env steps of uniformly random actions before the first update.
        random_collect_size=200,
        model=dict(
            num_critics=2,
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=1e-3,
            # Faster-moving target critics than the usual 0.005: Pendulum's value scale is small and the reward dense.
            target_theta=0.02,
            discount_factor=0.99,
            learner=dict(hook=dict(log_show_after_iter=1000)),
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=500)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    policy=dict(type="sac"),
)
