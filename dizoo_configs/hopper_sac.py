"""SAC on MuJoCo Hopper-v5 at the standard update-to-data ratio (needs gymnasium's mujoco extra: ``pip install
"gymnasium[mujoco]"``). A long run, not part of CI: benchmarks/suites/mujoco_sac.py trains it for 300k env steps
beside Tianshou's published curve.

The settings of Tianshou's SAC benchmark, the published curve the suite stands beside (its mujoco_sac.py defaults, which
its benchmark script runs): one collector env, one env step and one update of batch 256 per pass (``n_sample=1``,
``update_per_collect=1``: ding_lite's loop allows ``update_per_collect`` updates per ``n_sample`` env steps), after 10k
env steps of uniformly random actions; [256, 256] networks, actor and critic learning rates 1e-3, a fixed entropy
coefficient alpha = 0.2, gamma 0.99, tau 0.005. The SB3 zoo and CleanRL tables (at 1M env steps) use learning rates 3e-4
and automatic entropy tuning instead: ``--set policy.learn.learning_rate_q=3e-4 --set
policy.learn.learning_rate_policy=3e-4 --set policy.learn.auto_alpha=True`` (HalfCheetah seeds 0 and 1 at 100k env
steps: 5,328 / 4,903 that way, 6,400 / 5,530 with these; docs/benchmarks.md). 4 envs with ``n_sample=4,
update_per_collect=4`` have the same ratio and batch the actor's forward passes, but act on weights up to 3 updates old;
one env is the protocol the published numbers used, so the comparison holds it fixed. Evaluation: 10 deterministic
episodes every 5k updates, i.e. every 5k env steps once the warm-up is done (10k, 15k, ..., 100k, ..., 300k).

Hopper's 11 observations range from unit-scale angles to velocities of 10 and more; ``--set env.normalize_obs=True``
normalises them with running statistics, which led over 3 seeds at 60k env steps at the half ratio
(docs/custom_env.md#observation-normalisation). The published runs do not normalise, so this config does not either.

Run it:  ding_lite -m serial -c dizoo_configs/hopper_sac.py -s 0 --env-step 300000 --set torch_threads=1

Half the ratio (2 updates per 4 env steps, with 4 envs: the shipped setting before issue 45) costs half the updates
per env step, so it covers env steps up to twice as fast, and learns less per env step (HalfCheetah at 60k env steps:
most seeds 2,500-3,300 that way; one seed at the full ratio, 4 envs, 3,850 already at 52.5k; issue 45):
         ding_lite -m serial -c dizoo_configs/hopper_sac.py -s 0 --set env.collector_env_num=4 \
             --set policy.collect.n_sample=4 --set policy.learn.update_per_collect=2
"""
main_config = dict(
    exp_name="hopper_sac",
    env=dict(
        env_id="Hopper-v5",
        collector_env_num=1,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=None,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=10000,
        model=dict(num_critics=2, actor_head_hidden_size=256, critic_head_hidden_size=256),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            alpha=0.2,
            auto_alpha=False,
            target_theta=0.005,
            discount_factor=0.99,
            learner=dict(hook=dict(log_show_after_iter=5000)),
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=5000)),
        # The buffer goes into every ckpt_last (about 50 MB at 300k transitions), so that a resumed run (the
        # benchmark suite's, across sittings) trains on what it had collected, as an uninterrupted one does.
        other=dict(replay_buffer=dict(replay_buffer_size=1000000, save_replay_buffer=True)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    policy=dict(type="sac"),
)
