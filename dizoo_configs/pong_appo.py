"""APPO on Atari Pong (ALE/Pong-v5, ale-py: pip install -e ".[atari]"): pong_impala.py's sizes and settings (so the two
compare) with PPO's clipped surrogate on V-trace's advantages (docs/ppo.md#appo).

DeepMind preprocessing (env.atari defaults: noop reset, frame skip 4, 84x84 grey, 4-frame stack; episodic life and
reward clipping for the collector only, so evaluation returns are true game scores, -21 to 21). The Nature-DQN conv
encoder is shared by actor and critic, as in the IMPALA paper's shallow model.

Run it:  ding_lite -m serial -c dizoo_configs/pong_appo.py -s 0
         ding_lite -m serial -c dizoo_configs/pong_appo.py -s 0 --set env.manager.type=envpool \
             --set env.manager.num_threads=2                                (envpool's faster envs, if installed)
         ding_lite -m parallel -c dizoo_configs/pong_appo.py -s 0      (1 collector on 2 cores)
See docs/ppo.md#appo for what it reached beside IMPALA.
"""
main_config = dict(
    exp_name="pong_appo",
    # glibc keeps the learner's freed activations for reuse instead of new zero-filled pages every update (about
    # 1.8x the updates/s on a 2-core CPU; docs/atari.md#learner-speed).
    keep_freed_memory=True,
    env=dict(
        env_id="ALE/Pong-v5",
        collector_env_num=16,
        evaluator_env_num=2,
        n_evaluator_episode=2,
        stop_value=20,
    ),
    policy=dict(
        cuda=False,
        unroll_len=20,
        model=dict(encoder_type="nature_conv", share_encoder=True),
        learn=dict(
            # 2 updates of 32 unrolls per 32 new unrolls, drawn uniformly with replacement among up to 2,000 unrolls
            # (the 'columnar' replay below, each unroll removed at its second draw): what docs/atari.md's results
            # ran with. The batch age (learner updates since a sample's collection) is in the progress line.
            update_per_collect=2,
            batch_size=32,
            learning_rate=0.0003,
            value_weight=0.5,
            entropy_weight=0.01,
            discount_factor=0.99,
            lambda_=0.95,
            # (float) PPO's clip of pi / mu, mu the behaviour policy of the replayed unroll; with the KL penalty and
            # without a target network: APPO's defaults when docs/ppo.md's Pong runs were made (RLlib's are now).
            clip_ratio=0.2,
            kl_weight=1.0,
            target_update_freq=0,
            grad_clip_type="clip_norm",
            clip_value=0.5,
            learner=dict(hook=dict(log_show_after_iter=100, save_ckpt_after_iter=2000)),
        ),
        collect=dict(n_sample=32),
        eval=dict(evaluator=dict(eval_freq=500)),
        # Uniform replay ('columnar'), not IMPALA's default 'fifo' data flow: the settings the published runs used
        # (issue 71's pilots of the fifo flow are in benchmarks/studies/pong_impala_fifo.py).
        other=dict(replay_buffer=dict(type="columnar", replay_buffer_size=2000, max_use=2)),
    ),
)
create_config = dict(env=dict(type="gym"), env_manager=dict(type="base"), policy=dict(type="appo"))
