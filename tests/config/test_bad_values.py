"""Config values that used to end in a gymnasium traceback, or were accepted, are one line naming the key and the fix
(issue 72, item 7)."""
import os

import pytest

from entry_helpers import CARTPOLE, SMALL, assert_user_error


@pytest.mark.parametrize("args,fragments", [
    (["--set", "env.max_episode_steps=0"], ["env.max_episode_steps=0: must be a whole number >= 1"]),
    (["--set", "env.max_episode_steps=-1"], ["env.max_episode_steps=-1: must be a whole number >= 1"]),
    (["--set", "env.collector_env_num=100000"], ["env.collector_env_num=100,000: more than 4,096 envs"]),
    (["--set", "env.evaluator_env_num=5000", "--set", "env.n_evaluator_episode=5000"],
     ["env.evaluator_env_num=5,000: more than 4,096 envs"]),
    (["-s", "-1"], ["seed=-1: must be in [0, 2**32)", "-s 1"]),
    (["--set", "seed=4294967296"], ["seed=4294967296: must be in [0, 2**32)"]),
])
def test_a_bad_value_is_one_line_and_nothing_runs(args, fragments, cli, in_tmp):
    res = cli("-m", "serial", "-c", CARTPOLE, "-q", "--env-step", "600", *SMALL, *args)
    assert_user_error(res, *fragments)
    assert os.listdir(in_tmp) == []  # refused before a run directory exists


def test_the_largest_seed_runs(cli, in_tmp):
    res = cli("-m", "serial", "-c", CARTPOLE, "-q", "--env-step", "300", *SMALL, "-s", str(2 ** 32 - 1))
    assert res.exit_code == 0, res.output


def test_a_model_too_large_for_memory_is_one_line_naming_its_size_keys(cli, in_tmp):
    """A hidden size of 1e7: the allocator refuses a 1e14-element weight (400 TB, past a 47-bit address space, so
    also where memory is overcommitted); that is one line, not its traceback."""
    res = cli("-m", "serial", "-c", CARTPOLE, "-q", "--env-step", "600", *SMALL,
              "--set", "policy.model.encoder_hidden_size_list=[10000000, 10000000]")
    assert_user_error(res, "the model (policy.model.type='vac') is too large for this machine's memory",
                      "policy.model.encoder_hidden_size_list=[10000000, 10000000]", "make it smaller")
    assert os.listdir(in_tmp) == []
