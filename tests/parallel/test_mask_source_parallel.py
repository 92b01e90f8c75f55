"""Action masks through the parallel pipeline: a collector process acts under the mask, the learner's buffer and the
evaluator process get it, with the mask from ``env.action_masks()`` (``env.action_mask_from='method'``, the env
wrapped in each collector's and the evaluator's own process). MaskedPick (mask_method_env.py) logs every invalid
action to a file, from whichever process takes it, and raises (a crashed collector would be restarted: the file and
the restart count tell)."""
from entry_helpers import read_result

from ding_lite.entry import parallel_pipeline


def test_parallel_run_never_takes_an_invalid_action(in_tmp):
    log = in_tmp / "invalid"
    main = dict(exp_name="pick", torch_threads=1,
                env=dict(kwargs=dict(invalid_log=str(log)), collector_env_num=4, evaluator_env_num=1,
                         n_evaluator_episode=1, action_mask_from="method"),
                policy=dict(unroll_len=8, learn=dict(batch_size=8), collect=dict(n_sample=4),
                            eval=dict(evaluator=dict(eval_freq=10))))
    create = dict(env=dict(type="masked_pick", import_names=["mask_method_env"]), policy=dict(type="impala"))
    result = parallel_pipeline((main, create), 0, max_env_step=1000, overrides={"parallel.collector_num": 1},
                               quiet=True)
    assert not log.exists(), log.read_text()
    assert result["stop_reason"] == "max_env_step" and result["train_iter"] > 0
    assert result["parallel"]["restarts"] == {}
    assert read_result(in_tmp / "pick_seed0")["best_return"] == 20.0  # the evaluator's episode: every step valid
