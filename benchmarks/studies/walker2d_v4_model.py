"""Is Walker2d-v5 harder early than the v3 env Tianshou's published SAC curve ran on? A suite file for
benchmarks/learning_suite.py: the shipped walker2d_sac.py (Tianshou's settings) on Walker2d-v5 with v4's model
(``xml_file='walker2d.xml'``: the right foot's friction 0.9, as in v3 and v4; v5's model gives both feet 1.9),
seeds 2 and 3 (the suite's), 100k env steps, beside the same seeds on v5's own model in mujoco_sac's runs.
Measured (2026-11-29, the 2-core VM beside two other training runs, 48 min each): 943 and 1,052 at 100k with v4's
model against 685 and 660 with v5's; means over the evaluations at 60k-100k 826 against 564. Tianshou's mean at the
same env steps is 844.

    python benchmarks/learning_suite.py benchmarks/studies/walker2d_v4_model.py --jobs 2 \\
        --results-dir benchmarks/studies/results
"""
TASKS = [
    dict(name="walker2d_v4_model", config="dizoo_configs/walker2d_sac.py", seeds=[2, 3], env_step=100_000,
         checkpoints=[dict(env_step=50_000),
                      dict(env_step=100_000, target=844, source="Tianshou SAC v3, mean of 10 seeds, its env_step 90k")],
         anchors=[("Tianshou SAC v3, mean of 10 seeds", 100_000, 844),
                  ("Tianshou SAC v3, mean of 10 seeds", 110_000, 1_305)],
         sets=["env.kwargs.xml_file=walker2d.xml"]),
]
