"""SAC on MuJoCo HalfCheetah-v5 (needs gymnasium's mujoco extra: ``pip install "gymnasium[mujoco]"``). A long run, not
part of CI; docs/sac.md records the return per env step.

Run it:  ding_lite -m serial -c dizoo_configs/halfcheetah_sac.py -s 0
"""
main_config = dict(
    exp_name="halfcheetah_sac",
    env=dict(
        env_id="HalfCheetah-v5",
        collector_env_num=4,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=None,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=10000,
        model=dict(num_critics=2, actor_head_hidden_size=256, critic_head_hidden_size=256),
        learn=dict(
            # 2 updates per 4 env steps: half the usual update-to-data ratio, for a 2-core machine.
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
