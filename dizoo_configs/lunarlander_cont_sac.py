"""SAC on LunarLanderContinuous (gymnasium 1.x: LunarLander-v3 with continuous=True; needs gymnasium's box2d extra:
``pip install "gymnasium[box2d]"``). A long run, not part of CI; docs/sac.md records the return per env step.

Run it:  ding_lite -m serial -c dizoo_configs/lunarlander_cont_sac.py -s 0
"""
main_config = dict(
    exp_name="lunarlander_cont_sac",
    env=dict(
        env_id="LunarLander-v3",
        kwargs=dict(continuous=True),
        collector_env_num=4,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        stop_value=250,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=10000,
        model=dict(num_critics=2, actor_head_hidden_size=128, critic_head_hidden_size=128),
        learn=dict(
            # 2 updates per 4 env steps (one per collector env and step would double the wall time).
            update_per_collect=2,
            batch_size=256,
            learning_rate_q=7e-4,
            learning_rate_policy=7e-4,
            learning_rate_alpha=7e-4,
            target_theta=0.01,
            discount_factor=0.99,
            learner=dict(hook=dict(log_show_after_iter=2000)),
        ),
        collect=dict(n_sample=4),
        eval=dict(evaluator=dict(eval_freq=2500)),
        other=dict(replay_buffer=dict(replay_buffer_size=300000)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    policy=dict(type="sac"),
)
