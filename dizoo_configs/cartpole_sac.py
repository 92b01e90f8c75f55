"""Discrete SAC on gymnasium CartPole-v1 (DI-engine's ``discrete_sac``): the actor's softmax policy, exact
expectations over the two actions, twin critics, and a target entropy of half of log 2.

Run it:  ding_lite -m serial -c dizoo_configs/cartpole_sac.py -s 0
"""
main_config = dict(
    exp_name="cartpole_sac",
    env=dict(
        env_id="CartPole-v1",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=475,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=1000,
        model=dict(num_critics=2, actor_head_hidden_size=64, critic_head_hidden_size=64),
        learn=dict(
            # One update per env step (8 envs x 1 step per collection).
            update_per_collect=8,
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=1e-3,
            target_theta=0.01,
            discount_factor=0.99,
            target_entropy_ratio=0.5,
            learner=dict(hook=dict(log_show_after_iter=1000)),
        ),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=500)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    policy=dict(type="discrete_sac"),
)
