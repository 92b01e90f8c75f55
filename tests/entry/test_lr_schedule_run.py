"""Learning-rate schedules in runs (issue 31 item 4): the training loop (shared by the serial and parallel
pipelines) hands the learner the run's env steps, so a schedule over env_step follows what has arrived; a run
resumed with --resume continues the schedule where a straight run would be."""
import pytest

from ding_lite.config import read_config_file
from ding_lite.entry import serial_pipeline
from ding_lite.torch_utils.lr_schedule import lr_multiplier

from entry_helpers import CARTPOLE, SMALL_DICT, load_ckpt, read_result
from test_training_loop import ScriptedTransport, arrival, train, unrolls  # noqa: F401  (unrolls: a fixture)

BASE_LR = read_config_file(CARTPOLE)[0]["policy"]["learn"]["learning_rate"]  # the config's rate, whatever it is


def test_the_loop_sets_each_update_rate_from_the_env_steps_arrived_so_far(tmp_path, unrolls, monkeypatch):  # noqa: F811
    seen = []  # (train_iter, env_step) at each update
    from ding_lite.policy.base_policy import Policy
    original = Policy._set_learn_counters

    def spy(self, train_iter, env_step):
        seen.append((train_iter, env_step))
        original(self, train_iter, env_step)

    monkeypatch.setattr(Policy, "_set_learn_counters", spy)
    # 8 unrolls of 16 steps (128 env steps) per arrival, each buying 4 updates; the rate falls over 512 env steps
    schedule = dict(type="linear", over="env_step", steps=512, min_lr_ratio=0.0)
    transport = ScriptedTransport([[arrival(unrolls)] for _ in range(6)], {0: (1.0, 0)})
    run, res, _ = train(tmp_path, transport, max_train_iter=20, **{"policy.learn.lr_scheduler": schedule})
    assert res["train_iter"] == 20
    assert seen == [(it, 128 * (it // 4 + 1)) for it in range(20)]
    optimizer = run.policy._optimizers()[0]
    assert optimizer.param_groups[0]["lr"] == pytest.approx(BASE_LR * lr_multiplier("linear", 640, 512, 0.0))
    assert optimizer.param_groups[0]["lr"] == 0.0  # past steps: min_lr_ratio=0


def _run(exp_name, env_step, resume=False):
    overrides = {**SMALL_DICT, "exp_name": exp_name, "env.stop_value": 10_000,  # never stops on its return
                 "policy.learn.lr_scheduler": dict(type="cosine", over="env_step", steps=4000, min_lr_ratio=0.1)}
    serial_pipeline(read_config_file(CARTPOLE), 0, max_env_step=env_step, overrides=overrides, quiet=True,
                    resume=resume)
    run = f"{exp_name}_seed0"
    return read_result(run), load_ckpt(f"{run}/ckpt/ckpt_last.pth.tar")


def test_resume_continues_the_schedule_where_a_straight_run_is(in_tmp):
    straight, straight_ckpt = _run("straight", 2048)
    first, first_ckpt = _run("resumed", 1024)
    resumed, resumed_ckpt = _run("resumed", 2048, resume=True)
    assert first["env_step"] < straight["env_step"] == resumed["env_step"]
    # (train_iter may differ: the replay buffer is not in the checkpoint, so the resumed run skips the updates that
    # find too few samples; a schedule over env_step does not depend on it)
    lr = lambda ckpt: ckpt["policy"]["optimizer"]["param_groups"][0]["lr"]  # noqa: E731
    assert lr(first_ckpt) < BASE_LR  # the first part decayed the rate ...
    assert lr(resumed_ckpt) < lr(first_ckpt)  # ... and the resumed run carried on from there
    assert lr(resumed_ckpt) == lr(straight_ckpt)
    # the rate of the last update: base times the multiplier at the env steps it saw (the updates of the last
    # collection run before the loop sees max_env_step)
    m = lr_multiplier("cosine", straight["env_step"], 4000, 0.1)
    assert lr(straight_ckpt) == pytest.approx(BASE_LR * m, rel=1e-12)


def test_a_parallel_run_schedules_over_the_env_steps_that_reached_the_learner(in_tmp):
    from ding_lite.entry import parallel_pipeline
    overrides = {**SMALL_DICT, "env.stop_value": 10_000, "parallel.collector_num": 1,
                 "policy.learn.lr_scheduler": dict(type="linear", over="env_step", steps=4000, min_lr_ratio=0.1)}
    result = parallel_pipeline(read_config_file(CARTPOLE), 0, max_env_step=3000, overrides=overrides, quiet=True)
    lr = load_ckpt("cartpole_impala_seed0/ckpt/ckpt_last.pth.tar")["policy"]["optimizer"]["param_groups"][0]["lr"]
    # the last update's rate: base times 1 - 0.9 e / 4000 for the env steps e it saw, 0 < e <= the run's total
    env_step_seen = (1 - lr / BASE_LR) / 0.9 * 4000
    assert 0 < env_step_seen <= result["env_step"] + 1e-6, (lr, result)
    assert env_step_seen == pytest.approx(round(env_step_seen), abs=1e-6)  # a whole number of env steps
