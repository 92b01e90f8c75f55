"""Does the networks' initialisation hold our SAC below Tianshou's Ant curve at 300k env steps? A suite file for
benchmarks/learning_suite.py: the shipped ant_sac.py on Ant-v5 with ``policy.model.init=torch`` (nn.Linear's own init,
which Tianshou's SAC keeps) beside the same seed with ding_lite's default ``init=orthogonal`` in mujoco_sac's runs.

Tianshou's SAC and ours share every setting of ant_sac.py (docs/benchmarks.md) but one structural choice: ding_lite
starts its linear layers orthogonal (gain sqrt(2) in hidden layers, 0.01 in the actor's output, zero biases), Tianshou,
SB3 and CleanRL with PyTorch's default (uniform in +-1/sqrt(fan_in)): weights about 2.4x smaller in the 256-wide hidden
layers, so the initial Q values and action means are far smaller. Ours climbed to 1,357-1,513 at 300k on three seeds
(target 3,555). Seed 2, as the suite's finished run (1,357), so that the pair differs only in the init.

Result (2026-11-29, 98 min): 478 at 100k and 683 at 300k env steps; the evaluations over 255k-300k average 1,263
against 1,169 with the orthogonal init: no lift beyond one seed's noise (docs/benchmarks.md).

    python benchmarks/learning_suite.py benchmarks/studies/ant_torch_init.py --jobs 1 \\
        --runs-dir ~/ding_lite_runs/ant_torch_init --results-dir benchmarks/studies/results
"""
import os
import runpy

# mujoco_sac's Ant task (its config, budget, targets and published markers), with nn.Linear's init and seed 2 only
_SAC = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "suites", "mujoco_sac.py"))
TASKS = [dict(task, name="ant_torch_init", seeds=[2], sets=list(task.get("sets", [])) + ["policy.model.init=torch"])
         for task in _SAC["TASKS"] if task["name"] == "ant"]
