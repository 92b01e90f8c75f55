"""PPO on Atari Pong at issue 47's budget: one seed, 2.5M env steps (10M frames; frame skip 4), with CleanRL's Atari
PPO settings (dizoo_configs/pong_ppo.py) and envpool's envs on one thread (the runs share a 2-core machine with
others). The bar: an evaluation mean of 20 (10 greedy episodes) within 10M frames. CleanRL's published PPO reaches
20.4 after 10M env steps (40M frames, 3 seeds), drawn beyond this budget's end; the IMPALA suite (atari_impala.py)
reached 20 at 8.3M frames on this machine."""
TASKS = [
    dict(name="pong", config="dizoo_configs/pong_ppo.py", seeds=[0], env_step=2_500_000,
         checkpoints=[dict(env_step=1_000_000), dict(env_step=2_000_000),
                      dict(env_step=2_500_000, target=20, source="issue 47's bar: 20 within 10M frames")],
         anchors=[("CleanRL PPO (ppo_atari.py), 3 seeds", 10_000_000, 20.4)],
         reach=20, reach_within=2_500_000,
         sets=["env.manager.type=envpool", "env.manager.num_threads=1"]),
]
