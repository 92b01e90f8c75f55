"""ACER on gymnasium CartPole-v1: reaches an evaluation mean of 475 (of 500) well within 150k env steps.

Run it:  ding_lite -m serial -c dizoo_configs/cartpole_acer.py -s 0
"""
main_config = dict(
    exp_name="cartpole_acer",
    env=dict(
        env_id="CartPole-v1",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=475,
    ),
    policy=dict(
        cuda=False,
        unroll_len=16,
        model=dict(
            share_encoder=False,
            encoder_hidden_size_list=[64, 64],
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
        ),
        learn=dict(
            update_per_collect=8,
            batch_size=32,
            learning_rate_actor=0.0005,
            learning_rate_critic=0.0005,
            entropy_weight=0.01,
            discount_factor=0.99,
            c_clip_ratio=10.0,
            trust_region=True,
            trust_region_value=1.0,
            target_theta=0.01,
            grad_clip_type="clip_norm",
            clip_value=1.0,
            learner=dict(hook=dict(log_show_after_iter=100)),
        ),
        collect=dict(n_sample=16),
        eval=dict(evaluator=dict(eval_freq=50)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    env_manager=dict(type="base"),
    policy=dict(type="acer"),
)
