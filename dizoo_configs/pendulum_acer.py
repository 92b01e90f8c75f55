"""Continuous ACER (Gaussian policy, stochastic dueling network critic) on gymnasium Pendulum-v1.

Pendulum never terminates: every episode is truncated at 200 steps, and Retrace bootstraps through the time limit.

Run it:  ding_lite -m serial -c dizoo_configs/pendulum_acer.py -s 0
"""
main_config = dict(
    exp_name="pendulum_acer",
    env=dict(
        env_id="Pendulum-v1",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-200,
    ),
    policy=dict(
        cuda=False,
        unroll_len=16,
        model=dict(
            encoder_hidden_size_list=[128, 128],
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
            sigma_type="conditioned",
            init_sigma=1.0,
            sdn_n_samples=5,
        ),
        learn=dict(
            update_per_collect=8,
            batch_size=32,
            learning_rate_actor=0.0005,
            learning_rate_critic=0.001,
            entropy_weight=0.0,
            discount_factor=0.95,
            c_clip_ratio=10.0,
            trust_region=True,
            trust_region_value=1.0,
            target_theta=0.01,
            use_q_opc=True,
            grad_clip_type="clip_norm",
            clip_value=10.0,
            learner=dict(hook=dict(log_show_after_iter=500)),
        ),
        collect=dict(n_sample=16),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    env_manager=dict(type="base"),
    policy=dict(type="acer"),
)
