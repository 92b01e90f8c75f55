"""PPO on gymnasium CartPole-v1: reaches an evaluation mean of 475 (of 500) in well under 50k env steps.

Each iteration collects 8 envs x 32 steps (256 env steps), then trains 10 epochs of 4 minibatches of 64 steps on them.
Measured on the 2-core VM (torch_threads=1), seeds 0-9: 475 at a median of 7,680 env steps (2,560 to 15,360), 2-14 s
of training each (tests/learning/test_ppo_learning.py). Seed 0 run on to 50k env steps (stop_value off) scores 500 at
every evaluation from 30k on, after a dip to 140 at 25.6k.

Run it:  ding_lite -m serial -c dizoo_configs/cartpole_ppo.py -s 0
"""
main_config = dict(
    exp_name="cartpole_ppo",
    env=dict(
        env_id="CartPole-v1",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=475,
    ),
    policy=dict(
        cuda=False,
        unroll_len=32,
        model=dict(
            share_encoder=False,
            encoder_hidden_size_list=[64, 64],
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
            activation="tanh",
        ),
        learn=dict(
            batch_size=8,
            epochs=10,
            minibatch_size=64,
            learning_rate=0.001,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
            discount_factor=0.98,
            gae_lambda=0.8,
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
