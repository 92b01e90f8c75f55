"""Is Ant-v5 what holds our SAC below Tianshou's Ant-v4 curve at 300k env steps? A suite file for
benchmarks/learning_suite.py: the shipped ant_sac.py (Tianshou's settings) on Ant-v4, the env Tianshou's published
Ant curve ran on, beside the same seed on Ant-v5 in mujoco_sac's runs.

v5 differs from v4 in what the agent sees and is paid: v5 observes the contact forces (105 numbers, 27 in v4 by
default; clipped to [-1, 1], about 2% of them non-zero under random actions), charges a contact cost (weight 5e-4),
and pays the healthy reward only while healthy. Seed 2, as the suite's finished run (1,357 at 300k on Ant-v5 against
the target 3,555), so that the pair differs only in the env.

    python benchmarks/learning_suite.py benchmarks/studies/ant_v4_env.py --jobs 1 \\
        --runs-dir ~/ding_lite_runs/ant_v4_env --results-dir benchmarks/studies/results
"""
TIANSHOU_ANT = "Tianshou SAC Ant-v4, IQM of 5 seeds"
TASKS = [
    dict(name="ant_v4", config="dizoo_configs/ant_sac.py", seeds=[2], env_step=300_000,
         checkpoints=[dict(env_step=100_000, target=255, source=f"{TIANSHOU_ANT}, its env_step 90k"),
                      dict(env_step=300_000, target=3_555, source=f"{TIANSHOU_ANT}, its env_step 290k")],
         anchors=[(TIANSHOU_ANT, 100_000, 255), (TIANSHOU_ANT, 300_000, 3_555)],
         sets=["env.env_id=Ant-v4"]),
]
