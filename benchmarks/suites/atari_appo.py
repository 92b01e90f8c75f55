"""APPO on Atari Pong beside IMPALA (issue 47): dizoo_configs/pong_appo.py (pong_impala.py's sizes, data flow and
schedule with PPO's clipped surrogate on V-trace's advantages) on atari_impala.py's Pong task: the same seeds, budget (2.5M env
steps, 10M frames), checkpoints, bar (a median of at most 8M frames to an evaluation of 20), published points and
run settings (10 greedy evaluation episodes on 5 envs; envpool's envs on one thread beside one torch thread), so that
the two suites' tables compare row for row."""
import os
import runpy

_IMPALA = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "atari_impala.py"))
TASKS = [dict(task, config="dizoo_configs/pong_appo.py") for task in _IMPALA["TASKS"] if task["name"] == "pong"]
