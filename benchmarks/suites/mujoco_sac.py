"""SAC on four MuJoCo tasks (gymnasium's v5 envs) at the standard ratio, one update per env step: 3 seeds x 300k env
steps each, the 10k-step random warm-up counted (issue 45 item 2). Hours per run at one torch thread: two at a time on a
2-core machine (``--jobs 2``), all twelve at once on a machine with the cores.

Targets: the mean of Tianshou's SAC benchmark (examples/mujoco/benchmark/<Env>-v3/sac/test_rew_10seeds.csv: 10 seeds,
the test return of 10 episodes) at the same real env steps. Tianshou's env_step leaves out its 10k-step warm-up, so
its env_step E is E + 10k real env steps: the target at our 100k is its mean at env_step 90k, at our 300k its mean at
290k. Its rounder figures, at env_step 100k and 300k (110k and 310k real), are drawn too. (Until 2026-11-29 the targets
were those rounder figures, 10k real env steps later than our checkpoints.)

Ant's target is Tianshou's Ant-v4 benchmark instead (docs/_static/js/mujoco/benchmark/Ant-v4/results.json, Tianshou
2.0, 2025-11-30: 5 seeds, rliable's IQM, the same SAC settings), as v3's Ant is easier early. Its trainer also counts
env steps from 0 after 10k random ones (``start_timesteps=10000``), so the targets are its IQM at env_step 90k (255)
and 290k (3,555); its figures at 100k and 300k (301 and 3,014, the targets until 2026-11-29) are drawn.

The v3 and v4 tasks are not v5's (v5 fixes contact forces and some observations, and gives Walker2d's right foot the
left one's friction): close, not equal. The configs run Tianshou's settings (learning rates 1e-3, alpha 0.2 fixed: its
benchmark's), seeds 2, 3 and 4.
"""
TIANSHOU = "Tianshou SAC v3, mean of 10 seeds"
# Seeds 0 and 1 of HalfCheetah compared the configs' earlier settings (SB3's and CleanRL's) with Tianshou's, which the
# configs ship since: the table reports seeds none of that choice saw.
SEEDS = [2, 3, 4]
TIANSHOU_ANT = "Tianshou SAC Ant-v4, IQM of 5 seeds"


def sac_task(name: str, config: str, same_steps: tuple, later: tuple, source: str) -> dict:
    """A task at 300k env steps with checkpoints at 100k and 300k: the targets are the published figures at the same
    real env steps (``same_steps``, its env_step 90k and 290k); its figures at env_step 100k and 300k (``later``,
    drawn at 110k and 310k) are markers."""
    return dict(name=name, config=config, seeds=SEEDS, env_step=300_000,
                checkpoints=[dict(env_step=100_000, target=same_steps[0], source=f"{source}, its env_step 90k"),
                             dict(env_step=300_000, target=same_steps[1], source=f"{source}, its env_step 290k")],
                anchors=[(source, 100_000, same_steps[0]), (source, 110_000, later[0]),
                         (source, 300_000, same_steps[1]), (source, 310_000, later[1])])


TASKS = [
    sac_task("halfcheetah", "dizoo_configs/halfcheetah_sac.py", (6_213, 9_150), (6_515, 9_059), TIANSHOU),
    sac_task("hopper", "dizoo_configs/hopper_sac.py", (1_766, 3_165), (2_613, 3_388), TIANSHOU),
    sac_task("walker2d", "dizoo_configs/walker2d_sac.py", (844, 3_583), (1_305, 3_387), TIANSHOU),
    sac_task("ant", "dizoo_configs/ant_sac.py", (255, 3_555), (301, 3_014), TIANSHOU_ANT),
]
