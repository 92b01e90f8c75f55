"""Does IMPALA leave Pong's flat start sooner on fresh data? A suite file for benchmarks/learning_suite.py.

Issue 71's hypotheses, each a 600k-env-step pilot of ``pong_impala.py`` on seed 10 (not one of the atari suites'
seeds 0-2), envpool, one core each, two at a time; the read-out is the collector's (reward-clipped) return slope and
the policy's entropy (ln 6 = 1.79 is uniform over Pong's actions), not the 2-episode evaluations.

1. ``fifo_b16``: the data flow. The 'fifo' buffer (each unroll trained on exactly ``max_use`` = 2 times, in the 4
   updates after its collection: batch age 0-3 updates) with batches of 16 unrolls x 4 updates per 32 new unrolls,
   the loss as shipped. The same batches with the replay buffer (uniform with replacement among up to 2,000 unrolls,
   pong_impala_entropy.py's ``batch_16``) left the flat start at about 1.0M env steps.
2. ``fifo_b16_balance``: the loss balance on top: the value term 0.25 x MSE (``value_weight`` 0.25 on the mean
   squared error, as the IMPALA paper's code, RLlib and CleanRL weigh it) and V-trace's advantages normalised per
   batch (``normalize_advantage``), with the entropy weight 0.01 then on the same scale as CleanRL's.

Measured (2026-12-07, Intel Xeon with AMX, 2 cores, the two side by side at one core each, 382 env steps/s each,
26 min): **neither left the flat start within 600k env steps.** Batch age 1.5 mean, 3 max in both (the fifo flow as
designed). Collector return per 100k env steps, fifo_b16: -20.3, -20.3, -20.2, -20.6, -20.2, -20.4 (entropy 1.79,
1.79, 1.78, 1.76, 1.78, 1.78); fifo_b16_balance: -20.3, -20.4, -20.2, -20.3, -20.3, -20.6 (entropy 1.77, 1.74, 1.67,
1.75, 1.72, 1.65); every evaluation -21. Fresh data alone at this optimisation rate (one Adam step per 160 env
steps) does not shorten the flat start within 600k, with or without the loss balance; the replay buffer's batch_16
(pong_impala_entropy.py) left it at about 1.0M, past this budget, so the two are not told apart here.

3. ``fifo_u8_k4_balance``: more optimisation per env step, at PPO's intensity: each unroll trained on 4 times
   (``max_use`` 4), 8 updates of 16 unrolls per 32 new ones (one Adam step per 80 env steps, batches of 320 steps;
   pong_ppo.py: one per 64, batches of 256, each sample 4 times), with 2.'s loss balance.
4. ``fifo_u8_k4_balance_bf16``: 3. with the learner's forward in bfloat16 (``policy.learn.autocast``), on a CPU with
   AMX: whether it learns as float32 does, and how much sooner it gets there.
5. ``fifo_t64_k4_balance_bf16``: 4. with unrolls of 64 steps (V-trace's targets over 64 steps, as PPO's GAE runs over
   its 128): 16 unrolls per collection (1,024 env steps), 8 updates of 8 unrolls (512 steps), each unroll 4 times:
   the same optimisation per env step as 3. and 4.
Measured for 3.-5. (2026-12-07, the same VM, two at a time; collector return per 100k env steps, entropy):
3. fifo_u8_k4_balance (float32, 165-300 env steps/s beside the test suite): -20.1, -20.5, -20.5, -20.4 to 350k, where it
was stopped for the next pilots (entropy 1.67, 1.39, 1.40, 1.64); 4. fifo_u8_k4_balance_bf16 (266-345 env steps/s):
-20.2, -20.4, -20.5, -20.5, -20.5, -20.4 to 600k (entropy 1.75, 1.74, 1.47, 1.55, 1.49, 1.67), every evaluation -21;
5. fifo_t64_k4_balance_bf16: -20.4, -20.5, -20.6 per 200k (entropy 1.64, 1.55, 1.03), final evaluation -20.
**None left the flat start within 600k env steps**: more optimisation per env step (4 uses, one Adam step per 80 env
steps), 64-step unrolls and bfloat16 did not shorten it at this budget (PPO's pong_ppo.py leaves -21 within 0.7M).
Float32 and bfloat16 cannot be told apart while neither learns. The encoder's gradient norm per loss term (4.): the value
term's 0.36, 0.34, 0.30 per 100k against the policy term's 0.08, 0.05, 0.08 (4-6x) in the first 300k env steps, then
about equal (0.20 against 0.21 to 0.19 against 0.24); the entropy term's 0.004-0.05; the total is clipped at 0.5. 6. appo_u8_k4: -20.3, -20.5, -20.4 per 200k, final evaluation -20: the same.
Next: longer pilots (1.5M env steps) of 4. and 6. on a machine held longer, and the loss terms' balance on the encoder.

6. ``appo_u8_k4``: APPO (its RLlib defaults: clip 0.4, no KL term, a target network refreshed every 8 updates, once per
   collection) on 3.'s data flow and loss balance, with 4.'s bfloat16 learner.

7. ``impala_ppo_flow``: IMPALA on pong_ppo.py's data flow and schedule, to tell the algorithm from the settings:
   8 envs x 32-step unrolls, 32 unrolls per collection (1,024 env steps), 16 updates of 8 unrolls (256 steps) per
   collection, each unroll 4 times (PPO's 4 epochs x 4 minibatches), learning rate 2.5e-4 annealed linearly to 0 over
   2.5M env steps, value 0.25 x MSE, entropy 0.01 on normalised advantages; 1M env steps.
8. ``appo_ppo_flow``: APPO on 7.'s flow with PPO's clip (0.1) against the behaviour policy (no target network, no KL
   term): the nearest APPO gets to pong_ppo.py, whose evaluations are -21 to 0.41M, -11.8 at 0.61M, 0.6 at 1.02M.
   If 8. leaves the flat start with PPO and 7. does not, the clipped surrogate is what IMPALA lacks at this
   optimisation rate; if neither does, the difference is in V-trace's targets and advantages against GAE's.
9. ``impala_ppo_flow_raw``: 7. with V-trace's advantages as they are (``normalize_advantage`` False).
10. ``ppo_control``: pong_ppo.py itself on the same seed, envpool and bfloat16: the curve 7.-9. are read against.
Measured for 7.-9. (2026-12-07, a 2-core AMD EPYC VM with AVX512-BF16, two runs at a time at one core each,
320-450 env steps/s; collector return per 100k env steps, entropy):
7. impala_ppo_flow **collapsed to one action**: entropy 1.18, 0.76, 0.39, 0.01 at 0-300k, the return -20.4, -20.8,
-21.0, -21.0; stopped at 357k. Normalised V-trace advantages used 4 times without a clip run away (as the
normalize_advantage task of pong_impala_entropy.py did at 1.4M on the shipped flow).
8. appo_ppo_flow, seed 10: **left the flat start at about 500k env steps**: -20.5, -20.4, -20.2, -20.6, -20.5, -20.0,
-19.3, -17.7, -14.3, -11.2 at 0-900k (entropy 1.73 to 1.70 to 500k, then 1.69, 1.50, 1.44, 1.33); the 2-episode
evaluations from 750k swing between -21 and -1; batch age 7.5 mean, 15 max (PPO's own: 16 minibatches per collection).
9. impala_ppo_flow_raw: **left it at about 600k**: -20.1, -20.2, -20.3, -20.2, -20.0, -20.0, -19.3, -18.1, -17.3,
-9.6 at 0-900k (entropy 1.77-1.78 to 500k, then 1.70, 1.63, 1.57, 1.54); final evaluation -20.5, best -5.0.
So PPO's data flow and schedule (4 uses, 16 small updates per collection, the annealed rate, the value weight 0.25)
halve the flat start on this seed for both algorithms, against 1.3-1.6M for the shipped settings on seeds 0-2 and
about 1.0M for pong_impala_entropy.py's batch_16 on seed 10; IMPALA takes them only with raw advantages.

    python benchmarks/learning_suite.py benchmarks/studies/pong_impala_fifo.py --jobs 2 \\
        --runs-dir /tmp/runs/pong_impala_fifo --results-dir benchmarks/studies/results
"""
_BASE = ["env.manager.type=envpool", "env.manager.num_threads=1", "policy.other.replay_buffer.type=fifo",
         "policy.other.replay_buffer.replay_buffer_size=256", "policy.other.replay_buffer.max_use=2",
         "policy.learn.batch_size=16", "policy.learn.update_per_collect=4"]
_K4 = ["env.manager.type=envpool", "env.manager.num_threads=1", "policy.other.replay_buffer.type=fifo",
       "policy.other.replay_buffer.replay_buffer_size=256", "policy.other.replay_buffer.max_use=4",
       "policy.learn.batch_size=16", "policy.learn.update_per_collect=8", "policy.learn.value_weight=0.25",
       "policy.learn.entropy_weight=0.01", "policy.learn.normalize_advantage=True"]
_CHECKPOINTS = [dict(env_step=200_000), dict(env_step=400_000), dict(env_step=600_000)]

TASKS = [
    dict(name="fifo_b16", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=600_000,
         checkpoints=_CHECKPOINTS, sets=_BASE + ["policy.learn.value_weight=0.5", "policy.learn.entropy_weight=0.01",
                                                 "policy.learn.normalize_advantage=False"]),
    dict(name="fifo_b16_balance", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=600_000,
         checkpoints=_CHECKPOINTS, sets=_BASE + ["policy.learn.value_weight=0.25", "policy.learn.entropy_weight=0.01",
                                                 "policy.learn.normalize_advantage=True"]),
    dict(name="fifo_u8_k4_balance", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=600_000,
         checkpoints=_CHECKPOINTS, sets=_K4),
    dict(name="fifo_u8_k4_balance_bf16", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=600_000,
         checkpoints=_CHECKPOINTS, sets=_K4 + ["policy.learn.autocast=bfloat16"]),
    dict(name="fifo_t64_k4_balance_bf16", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=600_000,
         checkpoints=_CHECKPOINTS, sets=[s for s in _K4 if not s.startswith("policy.learn.batch_size=")] + [
             "policy.learn.autocast=bfloat16", "policy.unroll_len=64", "policy.collect.n_sample=16",
             "policy.learn.batch_size=8"]),
    dict(name="appo_u8_k4", config="dizoo_configs/pong_appo.py", seeds=[10], env_step=600_000,
         checkpoints=_CHECKPOINTS, sets=_K4 + ["policy.learn.clip_ratio=0.4", "policy.learn.kl_weight=0.0",
                                               "policy.learn.target_update_freq=8", "policy.learn.autocast=bfloat16"]),
]

_PPO_FLOW = ["env.manager.type=envpool", "env.manager.num_threads=1", "env.collector_env_num=8",
             "policy.unroll_len=32", "policy.collect.n_sample=32", "policy.other.replay_buffer.type=fifo",
             "policy.other.replay_buffer.replay_buffer_size=64", "policy.other.replay_buffer.max_use=4",
             "policy.learn.batch_size=8", "policy.learn.update_per_collect=16", "policy.learn.learning_rate=0.00025",
             "policy.learn.lr_scheduler={'type': 'linear', 'over': 'env_step', 'steps': 2500000}",
             "policy.learn.value_weight=0.25", "policy.learn.entropy_weight=0.01",
             "policy.learn.normalize_advantage=True", "policy.learn.autocast=bfloat16",
             "policy.collect.autocast=bfloat16"]
_1M = [dict(env_step=n) for n in (200_000, 400_000, 600_000, 800_000, 1_000_000)]
TASKS += [
    dict(name="impala_ppo_flow", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=1_000_000,
         checkpoints=_1M, sets=_PPO_FLOW),
    dict(name="appo_ppo_flow", config="dizoo_configs/pong_appo.py", seeds=[10, 11], env_step=1_000_000,
         checkpoints=_1M, sets=_PPO_FLOW + ["policy.learn.clip_ratio=0.1", "policy.learn.kl_weight=0.0",
                                            "policy.learn.target_update_freq=0"]),
    dict(name="impala_ppo_flow_raw", config="dizoo_configs/pong_impala.py", seeds=[10], env_step=1_000_000,
         checkpoints=_1M, sets=[s for s in _PPO_FLOW if "normalize_advantage" not in s]
         + ["policy.learn.normalize_advantage=False"]),
    dict(name="ppo_control", config="dizoo_configs/pong_ppo.py", seeds=[10], env_step=1_000_000, checkpoints=_1M,
         sets=["env.manager.type=envpool", "env.manager.num_threads=1", "policy.learn.autocast=bfloat16",
               "policy.collect.autocast=bfloat16"]),
]
