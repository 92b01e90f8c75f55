"""PPO (Gaussian policy, state-independent log std) on gymnasium Pendulum-v1.

Pendulum never terminates: every episode is truncated at 200 steps, and GAE bootstraps from the true final
observation there. Each iteration collects 8 envs x 256 steps (2,048 env steps) and trains 10 epochs of 8 minibatches
of 256 steps. Measured on the 2-core VM (torch_threads=1), seeds 0, 1, 2: an evaluation mean of -200 at 71,680,
51,200 and 61,440 env steps, 16-25 s of training each.

Run it:  ding_lite -m serial -c dizoo_configs/pendulum_ppo.py -s 0
"""
main_config = dict(
    exp_name="pendulum_ppo",
    env=dict(
        env_id="Pendulum-v1",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-200,
    ),
    policy=dict(
        cuda=False,
        unroll_len=256,
        model=dict(
            share_encoder=False,
            encoder_hidden_size_list=[64, 64],
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
            activation="tanh",
            init_sigma=1.0,
        ),
        learn=dict(
            batch_size=8,
            epochs=10,
            minibatch_size=256,
            learning_rate=0.001,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
            discount_factor=0.9,
            gae_lambda=0.95,
            learner=dict(hook=dict(log_show_after_iter=10)),
        ),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=5)),
        other=dict(replay_buffer=dict(replay_buffer_size=8)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
