"""DQN on gymnasium LunarLander-v3 (pip install "gymnasium[box2d]") with rl-baselines3-zoo's tuned DQN
hyperparameters for LunarLander-v2 (hyperparams/dqn.yml): Adam 6.3e-4, batches of 128 from a 50k buffer, no random
warm-up, 4 updates every 4 env steps (train_freq 4, gradient_steps -1), the target network copied every 250 env steps,
epsilon 1 -> 0.1 over the first 12,000 env steps (exploration_fraction 0.12 of 100k), two hidden layers of 256, the
Huber loss and gradient norm 10 (SB3's defaults). Double Q-learning off, as SB3's DQN. rl-zoo's budget: 100k env
steps. Solved: an evaluation mean of 200.

Run it:  ding_lite -m serial -c dizoo_configs/lunarlander_dqn.py -s 0 --env-step 100000
"""
main_config = dict(
    exp_name="lunarlander_dqn",
    env=dict(
        env_id="LunarLander-v3",
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        stop_value=200,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=0,
        model=dict(encoder_hidden_size_list=[256], head_hidden_size=256, head_layer_num=1),
        learn=dict(
            # one update per env step, in groups of 4 after every 4 new transitions (SB3's train_freq 4,
            # gradient_steps -1)
            update_per_collect=4,
            batch_size=128,
            learning_rate=0.00063,
            discount_factor=0.99,
            double=False,
            loss="huber",
            # SB3 copies the target every 250 env steps: at one update per env step, every 250 updates
            target_update_freq=250,
            grad_clip_type="clip_norm",
            clip_value=10.0,
            learner=dict(hook=dict(log_show_after_iter=2500)),
        ),
        collect=dict(n_sample=4, eps=dict(type="linear", start=1.0, end=0.1, decay=12000)),
        eval=dict(evaluator=dict(eval_freq=5000)),
        other=dict(replay_buffer=dict(replay_buffer_size=50000)),
    ),
)
create_config = dict(env=dict(type="gym"), env_manager=dict(type="base"), policy=dict(type="dqn"))
