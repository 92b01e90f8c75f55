"""The shipped CartPole IMPALA config (dizoo_configs/cartpole_impala.py) made small for the runner's smoke suite:
no early stop (so a run always goes to its budget), 4 collector envs, and an evaluation of 2 episodes every 10
train iterations, so a budget of a few thousand env steps gives several eval.csv rows in seconds."""
import copy
import os
import runpy

_shipped = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir,
                                       "dizoo_configs", "cartpole_impala.py"))
main_config = copy.deepcopy(_shipped["main_config"])
main_config["exp_name"] = "cartpole_impala_smoke"
main_config["env"].update(collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2, stop_value=None)
main_config["policy"]["eval"] = dict(evaluator=dict(eval_freq=10))
create_config = copy.deepcopy(_shipped["create_config"])
