"""DQN on gymnasium CartPole-v1 with rl-baselines3-zoo's DQN hyperparameters for it (hyperparams/dqn.yml): Adam 2.3e-3,
batches of 64 from a 100k buffer, 1,000 random steps first, 128 updates every 256 env steps, the target network
refreshed between them, epsilon 1 -> 0.04 over the first 8,000 env steps (exploration_fraction 0.16 of 50k), two
hidden layers of 256, the Huber loss and gradient norm 10 (SB3's defaults). Double Q-learning off, as SB3's DQN.

Run it:  ding_lite -m serial -c dizoo_configs/cartpole_dqn.py -s 0
"""
main_config = dict(
    exp_name="cartpole_dqn",
    env=dict(
        env_id="CartPole-v1",
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=475,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=1000,
        model=dict(encoder_hidden_size_list=[256], head_hidden_size=256, head_layer_num=1),
        learn=dict(
            # 128 updates of 64 per 256 new transitions (SB3's train_freq 256, gradient_steps 128)
            update_per_collect=128,
            batch_size=64,
            learning_rate=0.0023,
            double=False,
            loss="huber",
            # SB3 copies the target every 10 env steps, which during its 256 steps of collection between the update
            # phases is once per phase: every 128 updates here.
            target_update_freq=128,
            grad_clip_type="clip_norm",
            clip_value=10.0,
            learner=dict(hook=dict(log_show_after_iter=1280)),
        ),
        collect=dict(n_sample=256, eps=dict(type="linear", start=1.0, end=0.04, decay=8000)),
        eval=dict(evaluator=dict(eval_freq=1280)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
create_config = dict(env=dict(type="gym"), env_manager=dict(type="base"), policy=dict(type="dqn"))
