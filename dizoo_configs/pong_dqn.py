"""DQN on Atari Pong (ALE/Pong-v5, ale-py: pip install -e ".[atari]") with rl-baselines3-zoo's Atari DQN
hyperparameters (hyperparams/dqn.yml, 'atari'; CleanRL's dqn_atari.py uses the same but for a 1M buffer and 80k
warm-up steps): the Nature-DQN conv encoder on 4 stacked 84x84 grey frames, Adam 1e-4, batches of 32 from a 100k
buffer, 100k env steps of random actions first, one update every 4 env steps, the target network copied every 1,000
env steps, epsilon 1 -> 0.01 over the first 1M env steps, the Huber loss and gradient norm 10 (SB3's defaults).
Double Q-learning off, as SB3's and CleanRL's DQN. rl-zoo's budget: 10M env steps (40M frames).

DeepMind preprocessing (env.atari defaults: noop reset, frame skip 4, 84x84 grey, 4-frame stack; episodic life and
reward clipping for the collector only, so evaluation returns are true game scores, -21 to 21).

Run it:  ding_lite -m serial -c dizoo_configs/pong_dqn.py -s 0 --set env.manager.type=envpool
The replay buffer holds 100k transitions of two uint8 frame stacks each (obs and next_obs): 5.6 GB, allocated at
its first push; a run refuses a buffer that does not fit the machine's memory.
"""
main_config = dict(
    exp_name="pong_dqn",
    env=dict(
        env_id="ALE/Pong-v5",
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        stop_value=20,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=100_000,
        model=dict(encoder_type="nature_conv"),
        learn=dict(
            # one update per 4 env steps (SB3's train_freq 4, gradient_steps 1)
            update_per_collect=1,
            batch_size=32,
            learning_rate=0.0001,
            discount_factor=0.99,
            double=False,
            loss="huber",
            # SB3 copies the target every 1,000 env steps: at one update per 4 env steps, every 250 updates
            target_update_freq=250,
            grad_clip_type="clip_norm",
            clip_value=10.0,
            autocast="auto",
            learner=dict(hook=dict(log_show_after_iter=5000, save_ckpt_after_iter=25000)),
        ),
        collect=dict(n_sample=4, autocast="auto", eps=dict(type="linear", start=1.0, end=0.01, decay=1_000_000)),
        # every 25,000 updates: 100k env steps
        eval=dict(evaluator=dict(eval_freq=25000)),
        other=dict(replay_buffer=dict(replay_buffer_size=100_000)),
    ),
)
create_config = dict(env=dict(type="gym"), env_manager=dict(type="base"), policy=dict(type="dqn"))
