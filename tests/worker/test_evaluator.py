"""The evaluator's statistics on an env of known returns (``scripted_returns_env``): each env contributes exactly its
quota of episodes, each episode its own return, whether episodes end terminated or truncated; directly, and through
the serial pipeline's eval.csv and result.json (the parallel pipeline's: tests/parallel/test_parallel_evaluator.py)."""
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from entry_helpers import read_eval_csv, read_result
from scripted_returns_env import ENV_TYPE, ScriptedReturns, assert_stats, expected_evals, row_stats, stats

from ding_lite.entry import serial_pipeline
from ding_lite.envs import EnvConfig, make_vector_env
from ding_lite.policy.base_policy import EvalMode
from ding_lite.utils import UserError
from ding_lite.utils.seed import env_seeds
from ding_lite.worker import Evaluator

# Envs seeded 0, 1, 2 (fast, middling, slow), 2 episodes each: the returns of episodes 1 and 2 (episode 0 is the
# reset that made the vector env) and, next evaluation, of the episodes after those the envs played meanwhile: env 0
# finished 7 episodes (1-7) and env 1 finished 3 (1-3) in the 15 steps env 2 took for its 2, so they start at 9, 5, 4.
#   env 0: (length, reward) (2, 2), (3, 3) -> 4, 9      next: (1, 10), (2, 11) -> 10, 22
#   env 1: (4, 3), (5, 4)             -> 12, 20         next: (5, 7), (3, 8)   -> 35, 24
#   env 2: (7, 4), (8, 5)             -> 28, 40         next: (7, 7), (8, 8)   -> 49, 64
HAND_RETURNS = ([4, 9, 12, 20, 28, 40], [10, 22, 35, 24, 49, 64])


def scripted_cfg():
    cfg = EnvConfig.default_config()
    cfg.update(type=ENV_TYPE, manager=dict(type="base"))
    return cfg


def zero_action() -> EvalMode:
    """An eval mode that always plays action 0 (the scripted env ignores it)."""
    return EvalMode(forward=lambda obs: {"action": torch.zeros(obs.shape[0], dtype=torch.int64)},
                    reset=lambda env_ids: None)


def test_each_env_contributes_its_quota_of_exact_returns():
    evaluator = Evaluator(make_vector_env(scripted_cfg(), 3, seed=0), zero_action(), n_episode=6, eval_freq=1)
    try:
        for hand in HAND_RETURNS:
            assert_stats(evaluator.eval(0), stats(hand))
    finally:
        evaluator.close()
    assert [stats(h) for h in HAND_RETURNS] == expected_evals([0, 1, 2], 2, 2)  # the oracle of the pipeline tests


def test_a_fast_env_contributes_no_more_than_its_quota():
    """One episode each: the fast env (seed 0) finishes 7 episodes while the slow one plays its first."""
    evaluator = Evaluator(make_vector_env(scripted_cfg(), 3, seed=0), zero_action(), n_episode=3, eval_freq=1)
    try:
        assert_stats(evaluator.eval(0), stats([4, 12, 28]))
    finally:
        evaluator.close()


def test_next_step_autoreset_is_refused():
    """In NEXT_STEP mode the step after an episode end is a reset (action ignored, reward 0): the evaluator takes
    only the SAME_STEP vector envs that make_vector_env builds."""
    venv = SyncVectorEnv([ScriptedReturns] * 2, autoreset_mode=AutoresetMode.NEXT_STEP)
    with pytest.raises(UserError, match="SAME_STEP"):
        Evaluator(venv, zero_action(), n_episode=2, eval_freq=1)
    venv.close()
    assert make_vector_env(scripted_cfg(), 2, seed=0).metadata["autoreset_mode"] == AutoresetMode.SAME_STEP


def test_serial_eval_csv_and_result_have_the_exact_statistics(in_tmp):
    """Every evaluation of a serial run (eval_freq=1: several on the same envs, which go on from where the last one
    left them) in eval.csv, and best/final return in result.json."""
    main = dict(exp_name="scripted", env=dict(collector_env_num=2, evaluator_env_num=3, n_evaluator_episode=6),
                policy=dict(cuda=False, unroll_len=4, learn=dict(update_per_collect=1, batch_size=4),
                            eval=dict(evaluator=dict(eval_freq=1))))
    create = dict(env=dict(type=ENV_TYPE), policy=dict(type="impala"))
    serial_pipeline((main, create), seed=0, max_train_iter=3, quiet=True)
    run = in_tmp / "scripted_seed0"
    _, rows = read_eval_csv(run)
    seeds = env_seeds(0, "evaluator", 3)
    assert len({s % 3 for s in seeds}) == 3  # a fast, a middling and a slow env
    want = expected_evals(seeds, 2, len(rows))
    assert len(rows) >= 3 and len({w["return_mean"] for w in want}) == len(want)  # every evaluation differs
    for i, (row, w) in enumerate(zip(rows, want)):
        assert_stats(row_stats(row), w, f"row {i}")
    result = read_result(run)
    assert result["final_return"] == want[-1]["return_mean"]
    assert result["best_return"] == max(w["return_mean"] for w in want)
