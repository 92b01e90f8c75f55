"""SAC's temperatures: one target entropy per part of the action (mixed actions: discrete and continuous), targets
the policy cannot reach refused with the key path, the valid range and the fix, and log(alpha) kept between
``learn.min_log_alpha`` and ``learn.max_log_alpha`` however long a target stays out of reach."""
import math
import os

import pytest
import torch

from ding_lite.config import read_config_file
from ding_lite.entry.build import compile_input, probe_env_spec
from ding_lite.policy.sac import SACPolicy
from ding_lite.utils import ConfigError
from sac_helpers import ALL, CASES, CONFIGS, HIGH_TARGET, LOW_TARGET, SMALL, Recorder, log_alpha

LOG_ALPHA0 = math.log(0.2)  # the shipped configs' initial alpha


def config(case, overrides=None):
    name, case_overrides = CASES[case]
    main, create = read_config_file(os.path.join(CONFIGS, f"{name}.py"))
    return compile_input((main, create), 0, {**SMALL, **case_overrides, **(overrides or {})})


def learner(case, overrides=None):
    """A learn-mode SAC policy on ``case``'s env spaces, built without vector envs."""
    cfg = config(case, overrides)
    probe_env_spec(cfg, 0)
    return SACPolicy(cfg.policy, enable_field=("learn",))


def target(case, value):
    return learner(case, {"policy.learn.target_entropy": value})._target_entropy


# --------------------------------------------------------------------------------- one target per part of the action
@pytest.mark.parametrize("value, expected", [
    ([0.4, -1.5], [0.4, -1.5]),
    ({"discrete": 0.4, "continuous": -1.5}, [0.4, -1.5]),
    ({"continuous": -1.5}, [0.3 * math.log(3), -1.5]),  # mixed_sac.py: target_entropy_ratio=0.3, K=3
    ([None, 0.5], [0.3 * math.log(3), 0.5]),
    ({"discrete": 1.0}, [1.0, -2.0]),  # the continuous default: -dim(A), D=2
])
def test_mixed_sac_gives_each_part_its_own_target(value, expected, make, monkeypatch):
    sac = make("mixed", {"policy.learn.target_entropy": value})
    exact = Recorder(monkeypatch, "sac_alpha_loss_from_entropy")  # the discrete part: exact entropy
    sampled = Recorder(monkeypatch, "sac_alpha_loss")  # the continuous part: sampled log-probabilities
    sac.learn(sac.batch())
    (d,), (c,) = exact.calls, sampled.calls
    assert [d["target_entropy"], c["target_entropy"]] == pytest.approx(expected)


def test_a_mixed_action_refuses_one_number_for_both_parts():
    with pytest.raises(ConfigError) as err:
        target("mixed", -2.0)
    assert str(err.value) == (
        "policy.learn.target_entropy=-2.0: a mixed action has one temperature per part, [discrete, continuous]; "
        "give one target per part, e.g. policy.learn.target_entropy=[0.33, -2.0] (the discrete default first) or "
        "dict(continuous=-2.0) (a missing part keeps its default), or None for the defaults [0.33, -2.0]")


# ------------------------------------------------------------------------------------------ targets out of reach
LOG2, LOG3 = math.log(2), math.log(3)


@pytest.mark.parametrize("case, value, message", [
    # a discrete part: (0, log n); DI-engine's discrete SAC default -|A| is negative
    ("discrete", -2.0, "policy.learn.target_entropy=-2.0: a Discrete(2) part's target entropy must be in (0, log 2) "
                       "= (0, 0.6931): its entropy lies between 0 (deterministic) and log 2 (uniform), so a target "
                       "at or beyond either end moves alpha one way for ever (a negative target is the continuous "
                       "heuristic -dim(A), DI-engine's discrete SAC default); remove it for the default "
                       "target_entropy_ratio * log 2 = 0.3466, or choose a value inside"),
    ("discrete", 0.0, "policy.learn.target_entropy=0.0: a Discrete(2) part's target entropy must be in (0, log 2)"),
    ("boltzmann", LOG2, f"policy.learn.target_entropy={LOG2}: a Discrete(2) part's target entropy must be in"),
    ("boltzmann", 5, "policy.learn.target_entropy=5: a Discrete(2) part's target entropy must be in (0, log 2)"),
    # a continuous part: below D * 0.68364, the largest entropy of a tanh-squashed Gaussian
    ("continuous", 0.69, "policy.learn.target_entropy=0.69: a 1-dim continuous part's target entropy must be below "
                         "1 * 0.68364 = 0.6836, the largest entropy of a tanh-squashed Gaussian on [-1, 1]^1; above "
                         "it alpha would grow without bound; remove it for the default -dim(A) = -1, or choose a "
                         "lower value"),
    ("mixed", [-2.0, -2.0], "policy.learn.target_entropy[0]=-2.0: a Discrete(3) part's target entropy must be in "
                            "(0, log 3) = (0, 1.099)"),
    ("mixed", [0.5, 1.4], "policy.learn.target_entropy[1]=1.4: a 2-dim continuous part's target entropy must be "
                          "below 2 * 0.68364 = 1.367"),
    ("mixed", {"discrete": LOG3}, f"policy.learn.target_entropy.discrete={LOG3}: a Discrete(3) part's"),
    # one value per part
    ("mixed", [0.5], "policy.learn.target_entropy=[0.5]: expected 2 value(s), one per part ['discrete', "
                     "'continuous'] of the action"),
    ("continuous", [-1.0, 0.5], "policy.learn.target_entropy=[-1.0, 0.5]: expected 1 value(s), one per part "
                                "['continuous'] of the action"),
    ("discrete", {"continuous": -1.0}, "policy.learn.target_entropy.continuous: unknown part of the action; the "
                                       "parts are ['discrete']"),
])
def test_unreachable_targets_are_refused_with_the_range_and_the_fix(case, value, message):
    with pytest.raises(ConfigError) as err:
        target(case, value)
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize("case, value, expected", [
    ("discrete", 1e-6, [1e-6]),
    ("boltzmann", 0.999 * LOG2, [0.999 * LOG2]),
    ("continuous", 0.68, [0.68]),
    ("continuous", -18.0, [-18.0]),
    ("mixed", [1e-6, 1.36], [1e-6, 1.36]),
    ("mixed", (0.999 * LOG3, -40.0), [0.999 * LOG3, -40.0]),
])
def test_targets_inside_the_range_are_taken(case, value, expected, recwarn):
    assert target(case, value) == pytest.approx(expected)
    warned = [str(w.message) for w in recwarn if "target_entropy" in str(w.message)]
    assert warned == ([] if min(expected) > -37.0 else [
        "policy.learn.target_entropy[1]=-40.0: below -37.16, the entropy of the narrowest Gaussian the actor "
        "outputs (policy.model.log_std_min=-20.0) in 2 dims; only a saturated tanh (actions pinned at the bounds) "
        "reaches it, and alpha will sink to its floor exp(min_log_alpha); -dim(A) = -2 is the usual target"])


@pytest.mark.parametrize("value, message", [
    ("high", "policy.learn.target_entropy='high': must be None (each part's default), a number, [discrete, "
             "continuous] or dict(discrete=..., continuous=...) (None entries keep that part's default)"),
    (True, "policy.learn.target_entropy=True: must be None"),
    ([0.1, "a"], "policy.learn.target_entropy=[0.1, 'a']: must be None"),
    ([0.1, 0.2, 0.3], "policy.learn.target_entropy=[0.1, 0.2, 0.3]: expected one value per part of the action"),
    ({"discrte": 0.5}, "policy.learn.target_entropy.discrte: unknown part of the action; the parts are ['discrete', "
                       "'continuous']"),
])
def test_the_form_of_target_entropy_is_checked_before_any_env_is_made(value, message):
    with pytest.raises(ConfigError) as err:
        config("mixed", {"policy.learn.target_entropy": value})
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize("overrides, message", [
    ({"policy.learn.min_log_alpha": -1.0, "policy.learn.max_log_alpha": -1.0},
     "policy.learn.max_log_alpha=-1.0: must be above policy.learn.min_log_alpha=-1.0"),
    ({"policy.learn.alpha": 1e-6}, "policy.learn.alpha=1e-06: the initial alpha must lie within exp(-10.0) = "
                                   "4.54e-05, the bounds of policy.learn.min_log_alpha / max_log_alpha; change one "
                                   "or the other"),
    ({"policy.learn.max_log_alpha": 0.0, "policy.learn.alpha": 2.0},
     "policy.learn.alpha=2.0: the initial alpha must lie within [exp(-10.0), exp(0.0)] = [4.54e-05, 1]"),
    ({"policy.learn.min_log_alpha": None}, "policy.learn.min_log_alpha=None: expected float, got NoneType"),
])
def test_temperature_bound_errors(overrides, message):
    with pytest.raises(ConfigError) as err:
        config("continuous", overrides)
    assert str(err.value).startswith(message), str(err.value)


# ------------------------------------------------------------------------------------- alpha at the floor and cap
def run_bounded(sac, bound, updates=40):
    """``updates`` learner steps; log(alpha) never crosses ``bound`` on the way, and ends on it for every part."""
    for _ in range(updates):
        sac.learn(sac.batch())
        la = log_alpha(sac.policy)
        assert (la >= bound).all() if bound < LOG_ALPHA0 else (la <= bound).all(), la
    assert torch.equal(log_alpha(sac.policy), torch.full_like(log_alpha(sac.policy), bound))


@pytest.mark.parametrize("case", ALL)
def test_alpha_stops_at_the_floor_when_the_target_is_below_reach(case, make):
    """Every part's entropy stays far above its target, so every alpha falls (by Adam's step of 0.5 per update) until
    the floor, and stays there instead of decaying towards 0."""
    floor = LOG_ALPHA0 - 1.0
    sac = make(case, {"policy.learn.target_entropy": LOW_TARGET[case], "policy.learn.learning_rate_alpha": 0.5,
                      "policy.learn.min_log_alpha": floor})
    run_bounded(sac, floor)


@pytest.mark.parametrize("case", ["continuous", "mixed"])
def test_alpha_stops_at_the_cap_when_the_target_is_above_reach(case, make):
    """Every part's entropy stays below its target, so every alpha rises until the cap and stays there: a
    continuous part's because the actor's std is capped at exp(-1), the discrete part's because its target is
    0.999 log 3 and alpha is capped too low for the Boltzmann policy to get that close to uniform. (A discrete part
    reaches any target below log n as alpha grows: the cap only matters on the way.)"""
    cap = LOG_ALPHA0 + 0.25
    sac = make(case, {"policy.learn.target_entropy": HIGH_TARGET[case], "policy.learn.learning_rate_alpha": 0.5,
                      "policy.learn.max_log_alpha": cap, "policy.model.log_std_max": -1.0})
    run_bounded(sac, cap)


@pytest.mark.parametrize("case", ["continuous", "mixed"])
def test_a_fixed_alpha_outside_the_bounds_is_left_alone(case, make):
    alpha = 1e-6  # below the default floor exp(-10)
    sac = make(case, {"policy.learn.auto_alpha": False, "policy.learn.alpha": alpha})
    for _ in range(3):
        sac.learn(sac.batch())
    assert torch.equal(log_alpha(sac.policy), torch.full_like(log_alpha(sac.policy), math.log(alpha)))
