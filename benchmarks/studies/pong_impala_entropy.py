"""Does IMPALA's entropy bonus hold Pong at its flat start? A suite file for benchmarks/learning_suite.py.

pong_impala.py's CPU seeds reached 20 at 8.3M and 11.5M frames (2.08M and 2.88M env steps; docs/atari.md), after
1.4-2M env steps in which the policy's entropy stayed at ln 6 = 1.79 (uniform over Pong's 6 actions) and the return
at -20. IMPALA's advantages are not normalised: with clipped rewards, one point every hundred or so steps and a
discount of 0.99 they are small early, so an entropy weight of 0.01 may hold the policy near uniform. (PPO on the same
game, with advantages normalised per minibatch and the same entropy weight, left -21 within 0.7M env steps: ppo.md.)
The same config with ``entropy_weight=0.001``, on a seed that is not one of the atari_impala suite's (0-2), so that
what is chosen here is not tuned on the seeds that suite reports; 2 evaluation episodes as the config ships (the
pilot reads the flat start from the collector's returns and the entropy, not from the evaluations).

Measured (2026-11-29, the 2-core VM beside two other training runs, 274 env steps/s; stopped at 1.20M env steps for
the runs it held back): **the entropy bonus is not what holds the flat start.** With a tenth of the weight the
policy's entropy stayed at 1.70-1.78 (per 100k env steps, to 1.1M; 1.78-1.79 with 0.01 on seed 0), the collector's
(reward-clipped) episode return at -20.2 to -20.5 through 1.1M (-19.7 over 1.1-1.2M), every evaluation -21. Policy
loss about 0.001 against a value loss of 0.03-0.04: the policy gradient itself is weak. Not a test of a faster config;
what stays to try is more optimiser steps per env step (PPO's pong_ppo.py takes one per 64 env steps and uses each
sample 4 times; pong_impala.py one per 320 and twice).

The second task, ``batch_16``, is that next thing at the same compute: batches of 16 unrolls and 4 updates per
collection (one optimiser step per 160 env steps instead of 320; each sample still used twice, max_use 2), the
entropy weight as shipped. Measured (2026-11-29, beside another training run, 300-400 env steps/s): the entropy left
ln 6 at about 1.0M env steps and the collector's return climbed from -19.4 (1.0M) to -5.8 (1.6M), where the two seeds
of the old settings were still at -20 (seed 1 left it at about 1.6M, seed 0 at about 2.1M); but it then stalled at
-3.6 to -1.7 over 1.6-1.9M and had not reached 20 at 2M, where seed 1 of the old settings had. Not shipped
(docs/atari.md#what-missed).

The third task, ``normalize_advantage``, is the other thing PPO does differently: each batch's V-trace advantages
normalised to mean 0 and std 1 before the policy loss (``policy.learn.normalize_advantage``), the batches and the
entropy weight as shipped. With them on the value scale, the policy's gradient is a small share of the shared
encoder's under one Adam step and one clipped norm (policy loss about 0.001 against a value loss of 0.03-0.04 in the
flat start, above); normalised, it is not. Measured (2026-12-06, seed 10, resumed across two sittings on one VM): flat as
the shipped settings to 1.35M env steps, then the policy collapsed to one action within about 100k env steps (entropy
1.50 to 0, gradient norm 0.5 to 500-1,200, collector return -21 from 1.45M to 2M): not shipped (docs/atari.md).

The fourth, ``autocast_bf16``, is not about the flat start: the shipped settings with the learner's forward in
bfloat16 (``policy.learn.autocast``; 2.3x less CPU per update on a CPU with AMX, docs/atari.md#learner-speed), to see
whether bfloat16 changes how Pong learns before a suite runs with it. Queued (2026-12-04): ``--only autocast_bf16``.

    python benchmarks/learning_suite.py benchmarks/studies/pong_impala_entropy.py --jobs 1 \\
        --runs-dir ~/ding_lite_runs/pong_impala_pilot --results-dir benchmarks/studies/results
"""
TASKS = [
    dict(name="entropy_0.001", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=2_000_000,
         checkpoints=[dict(env_step=500_000), dict(env_step=1_000_000), dict(env_step=1_500_000),
                      dict(env_step=2_000_000, target=20, source="issue 45's bar: 20 within 8M frames (median)")],
         reach=20, reach_within=2_000_000,
         # pong_impala.py's batches, pinned so that the task stays what it ran whatever the config ships later
         sets=["env.manager.type=envpool", "env.manager.num_threads=1", "policy.learn.entropy_weight=0.001",
               "policy.learn.batch_size=32", "policy.learn.update_per_collect=2"]),
    # 3M env steps since it missed 20 at 2M: where it reaches 20 tells whether it is slower than the old batches
    dict(name="batch_16", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=3_000_000,
         checkpoints=[dict(env_step=500_000), dict(env_step=1_000_000), dict(env_step=1_500_000),
                      dict(env_step=2_000_000, target=20, source="issue 45's bar: 20 within 8M frames (median)"),
                      dict(env_step=2_500_000), dict(env_step=3_000_000)],
         reach=20, reach_within=2_000_000,
         sets=["env.manager.type=envpool", "env.manager.num_threads=1", "policy.learn.batch_size=16",
               "policy.learn.update_per_collect=4"]),
    dict(name="normalize_advantage", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=2_000_000,
         checkpoints=[dict(env_step=500_000), dict(env_step=1_000_000), dict(env_step=1_500_000),
                      dict(env_step=2_000_000, target=20, source="issue 45's bar: 20 within 8M frames (median)")],
         reach=20, reach_within=2_000_000,
         sets=["env.manager.type=envpool", "env.manager.num_threads=1", "policy.learn.normalize_advantage=True",
               "policy.learn.batch_size=32", "policy.learn.update_per_collect=2"]),
    dict(name="autocast_bf16", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=2_500_000,
         checkpoints=[dict(env_step=1_000_000),
                      dict(env_step=2_000_000, target=20, source="issue 45's bar: 20 within 8M frames (median)"),
                      dict(env_step=2_500_000)],
         reach=20, reach_within=2_000_000,
         sets=["env.manager.type=envpool", "env.manager.num_threads=1", "policy.learn.autocast=bfloat16",
               "policy.learn.batch_size=32", "policy.learn.update_per_collect=2"]),
]
