"""Is APPO's KL penalty what holds it behind IMPALA on Pong? A suite file for benchmarks/learning_suite.py.

On the atari_appo suite (docs/ppo.md#appo) every IMPALA seed ended above both APPO seeds at 2.5M env steps, and
APPO's flat start lasted longer (entropy at ln 6 = 1.79 to about 1.6M env steps). pong_appo.py is pong_impala.py
with PPO's clipped surrogate on V-trace's advantages and a KL(mu || pi) penalty at ``kl_weight`` 1.0; with each
unroll used twice (``max_use`` 2) the clip hardly acts (``clip_fraction`` 0 to 1.4M env steps), so on these settings
the KL term is the difference between the two updates. RLlib's APPO leaves it off by default (``use_kl_loss=False``).
This task is pong_appo.py with ``kl_weight=0``, on a seed that is not one of the suites' (0-2), evaluated as the
config ships (2 greedy episodes: the pilot reads the flat start from the collector's returns and the entropy).

Measured: see the bottom of this docstring once the run has finished.

    python benchmarks/learning_suite.py benchmarks/studies/pong_appo_kl.py --jobs 1 \\
        --runs-dir ~/ding_lite_runs/pong_appo_pilot --results-dir benchmarks/studies/results
"""
TASKS = [
    dict(name="appo_kl0", config="dizoo_configs/pong_appo.py", seeds=[10], env_step=2_500_000,
         checkpoints=[dict(env_step=1_000_000),
                      dict(env_step=2_000_000, target=20, source="issue 45's bar: 20 within 8M frames (median)"),
                      dict(env_step=2_500_000)],
         reach=20, reach_within=2_000_000,
         sets=["env.manager.type=envpool", "env.manager.num_threads=1", "policy.learn.kl_weight=0.0"]),
]
