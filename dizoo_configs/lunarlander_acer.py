"""ACER on gymnasium LunarLander-v3 (discrete actions; needs gymnasium's Box2D extra:
``pip install swig "gymnasium[box2d]"``). A long run: it is not part of CI. Measured: seeds 0, 1, 2 first reach an
evaluation mean >= 200 (5 episodes) at 269k, 339k and 423k env steps (about 2 minutes each on 2 CPU cores).

Run it:  ding_lite -m serial -c dizoo_configs/lunarlander_acer.py -s 0 --env-step 1000000
"""
main_config = dict(
    exp_name="lunarlander_acer",
    env=dict(
        env_id="LunarLander-v3",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=200,
    ),
    policy=dict(
        cuda=False,
        unroll_len=32,
        model=dict(
            share_encoder=False,
            encoder_hidden_size_list=[128, 128],
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
        ),
        learn=dict(
            # 8 updates of 16 unrolls per 8 new unrolls (256 env steps): each unroll is replayed ~16 times (max_use).
            update_per_collect=8,
            batch_size=16,
            learning_rate_actor=0.0005,
            learning_rate_critic=0.0005,
            entropy_weight=0.01,
            discount_factor=0.99,
            c_clip_ratio=10.0,
            trust_region=True,
            trust_region_value=0.3,
            target_theta=0.01,
            grad_clip_type="clip_norm",
            clip_value=10.0,
            learner=dict(hook=dict(log_show_after_iter=500)),
        ),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=200)),
        other=dict(replay_buffer=dict(replay_buffer_size=2000, max_use=16)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    env_manager=dict(type="base"),
    policy=dict(type="acer"),
)
