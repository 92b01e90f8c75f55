"""Is Ant-v5 what holds our SAC below Tianshou's Ant-v4 curve at 300k env steps? A suite file for
benchmarks/learning_suite.py: the shipped ant_sac.py (Tianshou's settings) on Ant-v4, the env Tianshou's published
Ant curve ran on, beside the same seed on Ant-v5 in mujoco_sac's runs.

v5 differs from v4 in what the agent sees and is paid: v5 observes the contact forces (105 numbers, 27 in v4 by
default; clipped to [-1, 1], about 2% of them non-zero under random actions), charges a contact cost (weight 5e-4),
and pays the healthy reward only while healthy. Seed 2, as the suite's finished run (1,357 at 300k on Ant-v5 against
the target 3,555), so that the pair differs only in the env.

Measured (2026-11-29, the 2-core VM beside one other run, 79 min): 933 at 100k env steps and 2,298 at 300k (1,357 on
v5), the ten evaluations over 255k-300k averaging 1,822 (1,169 on v5): v5 holds it back by about a third; on v4 it is
inside Tianshou's 95% interval [1,743, 4,730] at 300k, below its IQM of 3,555 (docs/benchmarks.md).

    python benchmarks/learning_suite.py benchmarks/studies/ant_v4_env.py --jobs 1 \\
        --runs-dir ~/ding_lite_runs/ant_v4_env --results-dir benchmarks/studies/results
"""
import os
import runpy

# mujoco_sac's Ant task (its config, budget, targets and published markers), on Ant-v4 and seed 2 only
_SAC = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "suites", "mujoco_sac.py"))
TASKS = [dict(task, name="ant_v4", seeds=[2], sets=["env.env_id=Ant-v4"])
         for task in _SAC["TASKS"] if task["name"] == "ant"]
