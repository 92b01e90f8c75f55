"""IMPALA on Atari Breakout (ALE/Breakout-v5, ale-py: pip install -e ".[atari]") from uint8 frames, sized for a 2-core CPU.

The same agent as ``pong_impala.py`` (Nature-DQN conv encoder shared by actor and critic, 8 envs, unrolls of 32,
V-trace, its data flow and schedule): Atari's standard settings carry from game to game. DeepMind preprocessing as there: episodic life and reward
clipping for the collector only, so evaluation returns are true game scores (bricks: 1 to 7 points each, 5 lives).
No fire reset, as in DeepMind's setup: the agent learns to press FIRE to serve, which a random policy does one step in
four. The evaluation is epsilon-greedy with epsilon 0.05, DeepMind's protocol: a purely greedy policy that has not
learned to fire plays each game to ALE's cap of 108,000 frames (27,000 agent steps), 105 s per evaluation here at the
start of a run, against 3 s with epsilon 0.05 (docs/atari.md#epsilon-greedy-evaluation); that was 2 episodes, this
config evaluates 10.

Run it:  ding_lite -m serial -c dizoo_configs/breakout_impala.py -s 0
         ding_lite -m serial -c dizoo_configs/breakout_impala.py -s 0 --set env.manager.type=envpool \
             --set env.manager.num_threads=2                                (envpool's faster envs, if installed)
         ding_lite -m parallel -c dizoo_configs/breakout_impala.py -s 0  (1 collector on 2 cores)
Not run yet with these settings: docs/atari.md says what has been measured.
"""
main_config = dict(
    exp_name="breakout_impala",
    # glibc keeps the learner's freed activations for reuse (docs/atari.md#learner-speed).
    keep_freed_memory=True,
    env=dict(
        env_id="ALE/Breakout-v5",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        # The IMPALA paper's shallow model reaches a few hundred after 200M frames; far beyond a CPU session.
        stop_value=400,
    ),
    policy=dict(
        cuda=False,
        unroll_len=32,
        model=dict(encoder_type="nature_conv", share_encoder=True),
        learn=dict(
            # pong_impala.py's data flow and schedule (PPO's: 16 updates of 8 unrolls of 32 steps per 32 new unrolls,
            # each unroll trained on 4 times from the 'fifo' buffer below), the learning rate annealed over the
            # Breakout suite's budget of 6M env steps. Breakout has not been run with them (docs/atari.md).
            update_per_collect=16,
            batch_size=8,
            learning_rate=0.00025,
            lr_scheduler=dict(type="linear", over="env_step", steps=6_000_000),
            value_weight=0.25,
            entropy_weight=0.01,
            discount_factor=0.99,
            lambda_=0.95,
            normalize_advantage=False,
            grad_clip_type="clip_norm",
            clip_value=0.5,
            autocast="auto",
            learner=dict(hook=dict(log_show_after_iter=400, save_ckpt_after_iter=3200)),
        ),
        collect=dict(n_sample=32, autocast="auto"),
        # epsilon-greedy evaluation starts every game (see above); greedy: policy.eval.epsilon=0. Every 3,200
        # updates: about 200k env steps.
        eval=dict(epsilon=0.05, evaluator=dict(eval_freq=3200)),
        other=dict(replay_buffer=dict(type="fifo", replay_buffer_size=64, max_use=4)),
    ),
)
create_config = dict(env=dict(type="gym"), env_manager=dict(type="base"), policy=dict(type="impala"))
