"""The parallel pipeline's evaluations on an env of known returns (``scripted_returns_env``): the evaluator worker's
and the final one in the learner process, each env contributing exactly its quota (serial: tests/worker/
test_evaluator.py)."""
from entry_helpers import read_eval_csv, read_result
from scripted_returns_env import ENV_TYPE, assert_stats, expected_evals, row_stats

from ding_lite.entry import parallel_pipeline
from ding_lite.utils.seed import env_seeds


def test_parallel_eval_csv_has_the_exact_statistics(in_tmp):
    """eval_freq is out of reach: the worker evaluates the first weights, the learner process the final ones."""
    main = dict(exp_name="scripted", env=dict(collector_env_num=2, evaluator_env_num=3, n_evaluator_episode=6),
                policy=dict(cuda=False, unroll_len=4, learn=dict(update_per_collect=1, batch_size=4),
                            eval=dict(evaluator=dict(eval_freq=10_000))),
                parallel=dict(collector_num=1))
    create = dict(env=dict(type=ENV_TYPE, import_names=["scripted_returns_env"]), policy=dict(type="impala"))
    parallel_pipeline((main, create), seed=0, max_train_iter=4, quiet=True)
    run = in_tmp / "scripted_seed0"
    _, rows = read_eval_csv(run)
    assert [int(row["train_iter"]) for row in rows] == [0, 4]
    worker, final = env_seeds(0, "evaluator", 3), env_seeds(0, "evaluator", 3, rank=1)
    assert len({s % 3 for s in worker}) == 3 and len({s % 3 for s in final}) == 2  # fast and slow envs in both
    assert_stats(row_stats(rows[0]), expected_evals(worker, 2, 1)[0], "the evaluator worker's")
    assert_stats(row_stats(rows[1]), expected_evals(final, 2, 1)[0], "the final evaluation's")
    result = read_result(run)
    assert result["final_return"] == float(rows[1]["return_mean"])
    assert result["best_return"] == max(float(row["return_mean"]) for row in rows)
