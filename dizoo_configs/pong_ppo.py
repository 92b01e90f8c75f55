"""PPO on Atari Pong (ALE/Pong-v5, ale-py: pip install -e ".[atari]") with CleanRL's Atari PPO settings
(ppo_atari.py): 8 envs x 128 steps per update (1,024 env steps), 4 epochs of 4 minibatches of 256 steps, learning
rate 2.5e-4 annealed linearly to 0 (here over 2.5M env steps, the 10M frames of issue 47's budget, where CleanRL's
anneals over its 10M env steps), clip 0.1 on the ratio and on the value, entropy 0.01, value loss weight 0.5,
gradient norm clipped at 0.5, gamma 0.99, GAE lambda 0.95, advantages normalised per minibatch.

DeepMind preprocessing (env.atari defaults: noop reset, frame skip 4, 84x84 grey, 4-frame stack; episodic life and
reward clipping for the collector only, so evaluation returns are true game scores, -21 to 21). The Nature-DQN conv
encoder is shared by actor and critic, as in CleanRL's. Evaluation: 10 greedy episodes every 100 updates (102k env
steps); the run stops when their mean reaches 20.

Run it:  ding_lite -m serial -c dizoo_configs/pong_ppo.py -s 0 --env-step 2500000
         ding_lite -m serial -c dizoo_configs/pong_ppo.py -s 0 --env-step 2500000 --set env.manager.type=envpool \
             --set env.manager.num_threads=1                               (envpool's faster envs, if installed)
See docs/ppo.md#pong for what it reached and how fast.
"""
main_config = dict(
    exp_name="pong_ppo",
    # glibc keeps the learner's freed activations for reuse instead of new zero-filled pages every update
    # (docs/atari.md#learner-speed).
    keep_freed_memory=True,
    env=dict(
        env_id="ALE/Pong-v5",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        stop_value=20,
    ),
    policy=dict(
        cuda=False,
        unroll_len=128,
        model=dict(encoder_type="nature_conv", share_encoder=True),
        learn=dict(
            batch_size=8,  # one 128-step unroll per env
            epochs=4,
            minibatch_size=256,
            learning_rate=0.00025,
            lr_scheduler=dict(type="linear", over="env_step", steps=2_500_000),
            clip_ratio=0.1,
            value_clip=0.1,
            value_weight=0.5,
            entropy_weight=0.01,
            discount_factor=0.99,
            gae_lambda=0.95,
            normalize_advantage=True,
            grad_clip_type="clip_norm",
            clip_value=0.5,
            learner=dict(hook=dict(log_show_after_iter=50, save_ckpt_after_iter=200)),
        ),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(replay_buffer_size=8)),
    ),
)
create_config = dict(env=dict(type="gym"), env_manager=dict(type="base"), policy=dict(type="ppo"))
