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
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        stop_value=20,
    ),
    policy=dict(
        cuda=False,
        unroll_len=32,
        model=dict(encoder_type="nature_conv", share_encoder=True),
        learn=dict(
            # PPO's data flow and schedule (pong_ppo.py, CleanRL's Atari PPO): 32 unrolls of 32 steps per collection
            # (1,024 env steps from 8 envs), 16 updates of 8 unrolls (256 steps) after it, each unroll trained on 4
            # times ('fifo' below: never drawn twice in one batch, gone after its 4th use). The batch age (learner
            # updates since a sample's collection) is in the progress line. Issue 71's pilots chose these settings
            # (benchmarks/studies/pong_impala_fifo.py): on seed 10 they left Pong's flat start at ~600k env steps,
            # where the replay settings of the earlier results took 1.3-1.6M on seeds 0-2.
            update_per_collect=16,
            batch_size=8,
            learning_rate=0.00025,
            lr_scheduler=dict(type="linear", over="env_step", steps=2_500_000),
            value_weight=0.25,
            entropy_weight=0.01,
            discount_factor=0.99,
            lambda_=0.95,
            # V-trace's advantages normalised per batch, as PPO's; the clip keeps them from running away
            normalize_advantage=True,
            # (float) PPO's clip of pi / mu, mu the behaviour policy of the unroll (no target network, no KL term): on
            # this flow the pilot left the flat start at ~500k env steps on seed 10; RLlib's defaults (clip 0.4 against
            # a target network) stayed flat to 600k on the 8-update flow before it (docs/ppo.md#appo).
            clip_ratio=0.1,
            kl_weight=0.0,
            target_update_freq=0,
            grad_clip_type="clip_norm",
            clip_value=0.5,
            # bfloat16 convolutions where the CPU (AMX, AVX-512 BF16) or GPU runs them natively, else float32
            autocast="auto",
            learner=dict(hook=dict(log_show_after_iter=400, save_ckpt_after_iter=3200)),
        ),
        collect=dict(n_sample=32, autocast="auto"),
        # every 1,600 updates: about 100k env steps
        eval=dict(evaluator=dict(eval_freq=1600)),
        other=dict(replay_buffer=dict(type="fifo", replay_buffer_size=64, max_use=4)),
    ),
)
create_config = dict(env=dict(type="gym"), env_manager=dict(type="base"), policy=dict(type="appo"))
