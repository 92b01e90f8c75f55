"""ACER on Atari Pong (ALE/Pong-v5, ale-py: pip install -e ".[atari]") from uint8 frames, sized for a 2-core CPU.

The ACER paper's Atari agent at a CPU's scale: unrolls of 20 steps, one conv network (Nature-DQN encoder) shared by
the policy and the Q head, Retrace with c = 10, the efficient trust region (delta = 1) around an average policy that
tracks the actor with weight 0.01, entropy 0.01, discount 0.99. The paper replays each unroll about 4 times from a
large buffer on 16 CPU threads; here each unroll is used twice (max_use 2) from 2,000 unrolls (40k steps), as in
``pong_impala.py``, because on 2 cores the learner, not the envs, sets the pace.

Run it:  ding_lite -m serial -c dizoo_configs/pong_acer.py -s 0
         ding_lite -m serial -c dizoo_configs/pong_acer.py -s 0 --set env.manager.type=envpool \
             --set env.manager.num_threads=2                                (envpool's faster envs, if installed)
         ding_lite -m parallel -c dizoo_configs/pong_acer.py -s 0        (1 collector on 2 cores)
See docs/atari.md for what it reaches in how many frames on this machine (measured with the envpool line).
"""
main_config = dict(
    exp_name="pong_acer",
    # glibc keeps the learner's freed activations for reuse (docs/atari.md#learner-speed).
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
        # The encoder belongs to the critic's optimiser; both optimisers use the same step size.
        model=dict(encoder_type="nature_conv", share_encoder=True),
        learn=dict(
            update_per_collect=2,
            batch_size=32,
            learning_rate_actor=0.0003,
            learning_rate_critic=0.0003,
            entropy_weight=0.01,
            discount_factor=0.99,
            c_clip_ratio=10.0,
            trust_region=True,
            trust_region_value=1.0,
            target_theta=0.01,
            grad_clip_type="clip_norm",
            clip_value=0.5,
            learner=dict(hook=dict(log_show_after_iter=100, save_ckpt_after_iter=2000)),
        ),
        collect=dict(n_sample=32),
        eval=dict(evaluator=dict(eval_freq=500)),
        other=dict(replay_buffer=dict(replay_buffer_size=2000, max_use=2)),
    ),
)
create_config = dict(env=dict(type="gym"), env_manager=dict(type="base"), policy=dict(type="acer"))
