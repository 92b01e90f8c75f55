"""Learning-rate schedules (``policy.learn.lr_scheduler``, issue 31 item 4): the multiplier against hand-worked
values, over train iterations and env steps; DI-engine's PPO form; the scheduler's base rates; config errors."""
import math

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.torch_utils.lr_schedule import LRSchedule, LRScheduler, lr_multiplier, parse_lr_scheduler
from ding_lite.utils import ConfigError

# steps=100, min_lr_ratio=0.1, worked by hand: linear 1 - 0.9 p; cosine 0.1 + 0.45 (1 + cos(pi p)), p = min(t/100, 1)
LINEAR = {0: 1.0, 25: 0.775, 50: 0.55, 75: 0.325, 100: 0.1, 101: 0.1, 10_000: 0.1}
COSINE = {0: 1.0, 25: 0.1 + 0.45 * (1 + math.sqrt(0.5)), 50: 0.55, 75: 0.1 + 0.45 * (1 - math.sqrt(0.5)), 100: 0.1,
          150: 0.1}


@pytest.mark.parametrize("kind, table", [("linear", LINEAR), ("cosine", COSINE)])
def test_multiplier_matches_hand_values(kind, table):
    for t, expected in table.items():
        assert lr_multiplier(kind, t, 100, 0.1) == pytest.approx(expected, abs=1e-12), (kind, t)


@pytest.mark.parametrize("kind, table", [("linear", LINEAR), ("cosine", COSINE)])
def test_multiplier_follows_the_counter_named_by_over(kind, table):
    by_iter = LRSchedule(kind, "train_iter", 100, 0.1)
    by_step = LRSchedule(kind, "env_step", 100, 0.1)
    for t, expected in table.items():
        assert by_iter.multiplier(train_iter=t, env_step=999_999) == pytest.approx(expected, abs=1e-12)
        assert by_step.multiplier(train_iter=999_999, env_step=t) == pytest.approx(expected, abs=1e-12)


def test_min_lr_ratio_zero_and_one():
    assert lr_multiplier("linear", 50, 100, 0.0) == 0.5 and lr_multiplier("linear", 100, 100, 0.0) == 0.0
    assert lr_multiplier("cosine", 100, 100, 0.0) == pytest.approx(0.0, abs=1e-15)
    assert all(lr_multiplier(k, t, 100, 1.0) == 1.0 for k in ("linear", "cosine") for t in (0, 37, 100, 500))


def test_none_and_constant_mean_no_schedule():
    assert parse_lr_scheduler(None) is None
    assert parse_lr_scheduler(dict(type="constant")) is None
    assert parse_lr_scheduler(dict(type="constant", over="env_step", steps=10, min_lr_ratio=0.5)) is None


def test_di_engine_ppo_form_is_its_linear_decay_over_learner_iterations():
    """DI-engine's PPO: LambdaLR(lambda epoch: max(1 - epoch * (1 - min_lr_lambda) / epoch_num, min_lr_lambda)),
    stepped once per learner iteration."""
    schedule = parse_lr_scheduler(dict(epoch_num=40, min_lr_lambda=0.25))
    assert schedule == LRSchedule("linear", "train_iter", 40, 0.25)
    for epoch in (0, 1, 13, 39, 40, 41, 400):
        di_engine = max(1.0 - epoch * (1.0 - 0.25) / 40, 0.25)
        assert schedule.multiplier(epoch, 0) == pytest.approx(di_engine, abs=1e-12)


def test_scheduler_scales_every_group_of_every_optimizer_from_its_base_rate():
    p1, p2, p3 = (torch.nn.Parameter(torch.zeros(2)) for _ in range(3))
    opt_a = torch.optim.Adam([{"params": [p1], "lr": 1e-3}, {"params": [p2], "lr": 3e-4}])
    opt_b = torch.optim.RMSprop([p3], lr=2e-2)
    scheduler = LRScheduler(LRSchedule("linear", "env_step", 100, 0.1), [opt_a, opt_b])
    for env_step, m in ((50, 0.55), (100, 0.1), (25, 0.775)):  # set from the base, not compounded
        assert scheduler.step(train_iter=0, env_step=env_step) == pytest.approx(m)
        assert [g["lr"] for g in opt_a.param_groups] == pytest.approx([1e-3 * m, 3e-4 * m])
        assert opt_b.param_groups[0]["lr"] == pytest.approx(2e-2 * m)


def _compile(lr_scheduler, policy="impala"):
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(learn=dict(lr_scheduler=lr_scheduler)))
    return compile_config(main, dict(policy=dict(type=policy)))


@pytest.mark.parametrize("policy", ["impala", "acer", "sac"])
def test_the_key_compiles_for_every_policy_and_defaults_to_none(policy):
    main = dict(env=dict(env_id="CartPole-v1" if policy != "sac" else "Pendulum-v1"))
    assert compile_config(main, dict(policy=dict(type=policy))).policy.learn.lr_scheduler is None
    spec = dict(type="cosine", over="env_step", steps=1000, min_lr_ratio=0.1)
    main["policy"] = dict(learn=dict(lr_scheduler=spec))
    assert dict(compile_config(main, dict(policy=dict(type=policy))).policy.learn.lr_scheduler) == spec


def test_set_overrides_reach_the_schedule():
    cfg = compile_config(dict(env=dict(env_id="CartPole-v1")), dict(policy=dict(type="impala")),
                         overrides=["policy.learn.lr_scheduler.type=linear", "policy.learn.lr_scheduler.steps=500"])
    assert parse_lr_scheduler(cfg.policy.learn.lr_scheduler) == LRSchedule("linear", "train_iter", 500, 0.0)


@pytest.mark.parametrize("value, message", [
    (dict(type="exponential", steps=10), "policy.learn.lr_scheduler.type='exponential': unknown schedule; use one of "
                                         "'constant', 'linear', 'cosine'"),
    (dict(type="linear", steps=0), "policy.learn.lr_scheduler.steps=0: must be an integer >= 1"),
    (dict(type="cosine", steps=-5), "policy.learn.lr_scheduler.steps=-5: must be an integer >= 1"),
    (dict(type="cosine", steps=2.5), "policy.learn.lr_scheduler.steps=2.5: must be an integer >= 1"),
    (dict(type="linear"), "policy.learn.lr_scheduler.steps: missing"),
    (dict(type="linear", steps=10, min_lr_ratio=1.5), "policy.learn.lr_scheduler.min_lr_ratio=1.5: must be a "
                                                      "number in [0, 1]"),
    (dict(type="linear", steps=10, min_lr_ratio=-0.1), "policy.learn.lr_scheduler.min_lr_ratio=-0.1: must be a "
                                                       "number in [0, 1]"),
    (dict(type="linear", steps=10, over="epoch"), "policy.learn.lr_scheduler.over='epoch': must be 'train_iter' "
                                                  "(learner updates) or 'env_step'"),
    (dict(type="linear", step=10), "policy.learn.lr_scheduler.step: unknown key; did you mean "
                                   "policy.learn.lr_scheduler.steps?"),
    (dict(epoch_num=10, steps=10), "policy.learn.lr_scheduler: both epoch_num (DI-engine's name) and steps are set"),
    ("cosine", "policy.learn.lr_scheduler='cosine': must be None (a constant learning rate) or a dict such as"),
])
def test_config_errors_name_the_key_and_the_fix(value, message):
    with pytest.raises(ConfigError) as err:
        _compile(value, policy="acer")
    assert str(err.value).startswith(message), str(err.value)


def test_a_string_from_the_command_line_is_told_how_to_write_the_dict():
    """``--set policy.learn.lr_scheduler=dict(type='cosine')`` arrives as a string (a call is not a literal): the
    message shows the two forms that work on the command line."""
    with pytest.raises(ConfigError) as err:
        compile_config(dict(env=dict(env_id="CartPole-v1")), dict(policy=dict(type="impala")),
                       overrides=["policy.learn.lr_scheduler=dict(type='cosine')"])
    assert "--set policy.learn.lr_scheduler.type=cosine --set policy.learn.lr_scheduler.steps=100000" in str(err.value)
    assert "\"policy.learn.lr_scheduler={'type': 'cosine', 'steps': 100000}\"" in str(err.value)
