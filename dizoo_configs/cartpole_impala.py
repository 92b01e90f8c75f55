"""IMPALA on gymnasium CartPole-v1: reaches an evaluation mean of 475 (of 500) in well under 150k env steps.

Run it:  ding_lite -m serial -c dizoo_configs/cartpole_impala.py -s 0
"""
main_config = dict(
    exp_name="cartpole_impala",
    env=dict(
        env_id="CartPole-v1",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=475,
    ),
    policy=dict(
        cuda=False,
        unroll_len=16,
        model=dict(
            # Separate actor and critic networks: the value loss (returns up to ~100) would otherwise dominate the
            # clipped gradient of a shared encoder and destabilise the policy.
            share_encoder=False,
            encoder_hidden_size_list=[64, 64],
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
        ),
        learn=dict(
            # 8 updates of 32 unrolls per 16 new unrolls: each unroll is replayed ~16 times (max_use), and V-trace
            # corrects for the policy having moved on since it was collected.
            update_per_collect=8,
            batch_size=32,
            # 3e-3 with the KL penalty below: every update is pulled towards the behaviour policies of the unrolls
            # it replays, so the step size can be large early without the policy running away once CartPole is
            # solved. Without the penalty the config used 2e-4, and 10 seeds reached 475 and then fell back (final
            # IQM 254 at 100k env steps); with it, 10 of 10 stay at 500 (final IQM 500, median 13.7k env steps to
            # 475). benchmarks/studies/cartpole_stays_solved.py, docs/benchmarks.md.
            learning_rate=0.003,
            kl_weight=10.0,
            value_weight=0.5,
            entropy_weight=0.01,
            discount_factor=0.99,
            lambda_=1.0,
            rho_clip_ratio=1.0,
            c_clip_ratio=1.0,
            rho_pg_clip_ratio=1.0,
            grad_clip_type="clip_norm",
            clip_value=1.0,
            learner=dict(hook=dict(log_show_after_iter=100)),
        ),
        collect=dict(n_sample=16),
        eval=dict(evaluator=dict(eval_freq=50)),
        # Replay (type 'columnar': uniform with replacement among up to 1,000 unrolls, each drawn until its 16th
        # use), not the policy's default 'fifo' data flow: the settings and figures above were measured with it.
        other=dict(replay_buffer=dict(type="columnar", replay_buffer_size=1000, max_use=16)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    env_manager=dict(type="base"),
    policy=dict(type="impala"),
)
