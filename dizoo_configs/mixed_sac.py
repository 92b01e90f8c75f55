"""SAC on the mixed-action MixedTarget env (Tuple(Discrete(3), Box(2)), see ding_lite/envs/toy/mixed_target.py): the
continuous direction from the actor, the gear from the Boltzmann policy of a Q network that takes the direction as
input, with separate alphas and target entropies. Solved at an evaluation mean of -3.0.

Run it:  ding_lite -m serial -c dizoo_configs/mixed_sac.py -s 0
"""
main_config = dict(
    exp_name="mixed_sac",
    env=dict(
        collector_env_num=4,
        evaluator_env_num=5,
        n_evaluator_episode=20,
        stop_value=-3.0,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=2000,
        model=dict(num_critics=2, actor_head_hidden_size=128, critic_head_hidden_size=128),
        learn=dict(
            update_per_collect=4,
            batch_size=256,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=1e-3,
            discount_factor=0.9,
            target_entropy_ratio=0.3,
            learner=dict(hook=dict(log_show_after_iter=1000)),
        ),
        collect=dict(n_sample=4),
        eval=dict(evaluator=dict(eval_freq=500)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
create_config = dict(
    env=dict(type="mixed_target"),
    policy=dict(type="sac"),
)
