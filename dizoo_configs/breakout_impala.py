"""IMPALA on Atari Breakout (ALE/Breakout-v5, ale-py: pip install -e ".[atari]") from uint8 frames, sized for a 2-core CPU.

The same agent as ``pong_impala.py`` (Nature-DQN conv encoder shared by actor and critic, 16 envs, unrolls of 20,
V-trace): Atari's standard settings carry from game to game. DeepMind preprocessing as there: episodic life and reward
clipping for the collector only, so evaluation returns are true game scores (bricks: 1 to 7 points each, 5 lives).
No fire reset, as in DeepMind's setup: the agent learns to press FIRE to serve, which a random policy does one step in
four. The evaluation is epsilon-greedy with epsilon 0.05, DeepMind's protocol: a purely greedy policy that has not
learned to fire plays each game to ALE's cap of 108,000 frames (27,000 agent steps), 105 s per evaluation here at the
start of a run, against 3 s with epsilon 0.05 (docs/atari.md#epsilon-greedy-evaluation).

Run it:  ding_lite -m serial -c dizoo_configs/breakout_impala.py -s 0
         ding_lite -m serial -c dizoo_configs/breakout_impala.py -s 0 --set env.manager.type=envpool \
             --set env.manager.num_threads=2                                (envpool's faster envs, if installed)
         ding_lite -m parallel -c dizoo_configs/breakout_impala.py -s 0  (1 collector on 2 cores)
See docs/atari.md for what it reaches in how many frames on this machine (measured with the envpool line).
"""
main_config = dict(
    exp_name="breakout_impala",
    # glibc keeps the learner's freed activations for reuse (docs/atari.md#learner-speed).
    keep_freed_memory=True,
    env=dict(
        env_id="ALE/Breakout-v5",
        collector_env_num=16,
        evaluator_env_num=2,
        n_evaluator_episode=2,
        # The IMPALA paper's shallow model reaches a few hundred after 200M frames; far beyond a CPU session.
        stop_value=400,
    ),
    policy=dict(
        cuda=False,
        unroll_len=20,
        model=dict(encoder_type="nature_conv", share_encoder=True),
        learn=dict(
            # 2 updates of 32 unrolls per 32 new unrolls from the 'columnar' replay below, as pong_impala.py.
            update_per_collect=2,
            batch_size=32,
            learning_rate=0.0003,
            value_weight=0.5,
            entropy_weight=0.01,
            discount_factor=0.99,
            lambda_=0.95,
            grad_clip_type="clip_norm",
            clip_value=0.5,
            learner=dict(hook=dict(log_show_after_iter=100, save_ckpt_after_iter=2000)),
        ),
        collect=dict(n_sample=32),
        # epsilon-greedy evaluation starts every game (see above); greedy: policy.eval.epsilon=0
        eval=dict(epsilon=0.05, evaluator=dict(eval_freq=500)),
        # Uniform replay ('columnar'), not IMPALA's default 'fifo' data flow: pong_impala.py's settings (Breakout has
        # not been run; issue 71's pilots of the fifo flow are in benchmarks/studies/pong_impala_fifo.py).
        other=dict(replay_buffer=dict(type="columnar", replay_buffer_size=2000, max_use=2)),
    ),
)
create_config = dict(env=dict(type="gym"), env_manager=dict(type="base"), policy=dict(type="impala"))
