"""The env checker (ding_lite/envs/check*.py, ding_lite/entry/check_env.py): each check caught by a tiny env broken in
exactly that way (and the fix in its line), ding_lite's own envs, MiniGrid and a config file passing with no errors,
and ``env.check=True`` refusing to start a run on a broken env. The CLI's exit codes: tests/entry/test_cli_check_env.py.
"""
import os
import sys
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.entry.check_env import check_before_run, check_config_env, check_target, target_config
from ding_lite.envs.check import Finding, has_errors
from ding_lite.envs.check_run import check_env
from ding_lite.utils import ENV_REGISTRY, UserError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)  # this module as 'test_check_env:Name', whatever pytest's import mode

BOX = gym.spaces.Box(0.0, 1.0, (1,), np.float32)


class GoodEnv(gym.Env):
    """A clean env: a counter in [0, 1] that ends (terminated) after a seeded random number of steps."""

    observation_space = BOX
    action_space = gym.spaces.Discrete(2)
    length = 10

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Any, dict]:
        super().reset(seed=seed)
        self.t, self.end = 0, int(self.np_random.integers(3, self.length))
        return self.obs(), {}

    def obs(self) -> Any:
        return np.array([self.t / self.length], np.float32)

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        self.t += 1
        return self.obs(), 1.0, self.t >= self.end, False, {}


def problems(findings: List[Finding]) -> Dict[Tuple[str, str], Finding]:
    """The errors and warnings by (level, check)."""
    return {(f.level, f.check): f for f in findings if f.level != "info"}


def only(make: Callable[[], gym.Env], level: str, check: str, fix: str, steps: int = 60, **kwargs: Any) -> Finding:
    """The one error or warning that checking ``make``'s env finds; it is of ``check`` and its fix says ``fix``."""
    found = problems(check_env(make, steps=steps, **kwargs))
    assert list(found) == [(level, check)], [f.line() for f in found.values()]
    finding = found[(level, check)]
    assert fix in finding.fix, finding.line()
    return finding


def test_a_clean_env_has_no_problems():
    findings = check_env(GoodEnv, steps=60)
    assert not problems(findings), [f.line() for f in findings]
    assert {f.check for f in findings} == {"episode end", "step time"}


# ---- spaces and action bounds -------------------------------------------------------------------------------------
class TextObsEnv(GoodEnv):
    observation_space = gym.spaces.Dict(x=BOX, mission=gym.spaces.Text(5))

    def obs(self) -> Any:
        return {"x": super().obs(), "mission": "go"}


class MultiBinaryActionEnv(GoodEnv):
    action_space = gym.spaces.MultiBinary(3)


def test_unsupported_spaces():
    finding = only(TextObsEnv, "error", "spaces", "FilterObservation")
    assert "obs['mission']" in finding.message
    only(MultiBinaryActionEnv, "error", "spaces", "Discrete, MultiDiscrete, Box or Tuple(Discrete, Box)")


class UnboundedActionEnv(GoodEnv):
    action_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)


def test_action_bounds():
    only(UnboundedActionEnv, "warning", "action bounds", "BoundActions")  # the policy is not known
    only(UnboundedActionEnv, "error", "action bounds", "BoundActions", bound="rescale")  # SAC
    assert not problems(check_env(UnboundedActionEnv, steps=20, bound="clip"))  # IMPALA, ACER


# ---- observations and rewards -------------------------------------------------------------------------------------
class Float64ObsEnv(GoodEnv):
    def obs(self) -> Any:
        return super().obs().astype(np.float64)


class ShapeEnv(GoodEnv):
    def obs(self) -> Any:
        return np.zeros(2, np.float32)


class OutOfBoundsEnv(GoodEnv):
    def obs(self) -> Any:
        return super().obs() + 1.5 * (self.t > 0)


class NanObsEnv(GoodEnv):
    def obs(self) -> Any:
        return np.array([np.nan if self.t == 2 else 0.0], np.float32)


class InfRewardEnv(GoodEnv):
    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        obs, _, terminated, truncated, info = super().step(action)
        return obs, float("inf"), terminated, truncated, info


class DiscreteObsEnv(GoodEnv):
    observation_space = gym.spaces.Dict(cell=gym.spaces.Discrete(3), x=BOX)

    def obs(self) -> Any:
        return {"cell": self.t, "x": super().obs()}  # reaches 3, outside Discrete(3)


class LeavesEnv(GoodEnv):
    """uint8 in a float32 Box (cast without loss: fine), and three leaves out of bounds (a Tuple's MultiBinary item
    among them): a line each."""

    observation_space = gym.spaces.Dict(a=BOX, b=BOX, c=BOX, d=gym.spaces.Tuple([gym.spaces.MultiBinary(2)]))

    def obs(self) -> Any:
        return {"a": np.full(1, 2.0, np.float32), "b": np.full(1, -1.0, np.float32), "c": np.zeros(1, np.uint8),
                "d": (np.array([0, 2], np.int8),)}


def test_observations_in_their_space():
    lines = [f.message for f in check_env(LeavesEnv, steps=20) if f.level != "info"]
    assert [line.split(" ")[0] for line in lines] == ["obs['a']", "obs['b']", "obs['d'][0]"], lines
    only(Float64ObsEnv, "error", "obs", "astype(np.float32)")
    assert "shape (2,)" in only(ShapeEnv, "error", "obs", "of shape (1,)").message
    finding = only(OutOfBoundsEnv, "error", "obs", "clip the observation")
    assert "at step 1" in finding.message and "times" in finding.message  # one line for every step it happened
    assert "obs['cell']" in only(DiscreteObsEnv, "error", "obs", "clip the observation").message


def test_finite_observations_and_rewards():
    assert "at step 2" in only(NanObsEnv, "error", "finite", "sanitise").message
    assert "inf" in only(InfRewardEnv, "error", "finite", "sanitise").message


# ---- reset and step -----------------------------------------------------------------------------------------------
class ObsOnlyResetEnv(GoodEnv):
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        return super().reset(seed=seed)[0]


class NoSeedResetEnv(GoodEnv):
    def reset(self) -> Tuple[Any, dict]:  # type: ignore[override]
        return super().reset()


class OldStepEnv(GoodEnv):
    def step(self, action: Any) -> Tuple[Any, float, bool, dict]:  # type: ignore[override]
        obs, reward, terminated, _, info = super().step(action)
        return obs, reward, terminated, info


class CrashingEnv(GoodEnv):
    def step(self, action: Any) -> Any:
        raise RuntimeError("boom")


def test_reset_and_step_signatures():
    only(ObsOnlyResetEnv, "error", "signature", "returning (obs, info)")
    only(NoSeedResetEnv, "error", "signature", "seed=None, options=None")
    assert "4 values" in only(OldStepEnv, "error", "signature", "terminated, truncated, info").message
    # under a TimeLimit (gymnasium.make, env.max_episode_steps), the wrapper's unpacking fails: the same finding
    assert "expected 5, got 4" in only(lambda: gym.wrappers.TimeLimit(OldStepEnv(), 50), "error", "signature",
                                       "terminated, truncated, info").message
    assert "RuntimeError: boom" in only(CrashingEnv, "error", "crash", "fix the env").message


# ---- episode ends, seeding, time ----------------------------------------------------------------------------------
class NeverEndsEnv(GoodEnv):
    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        obs, reward, _, truncated, info = super().step(action)
        self.t = 0
        return obs, reward, False, truncated, info


class FixedHorizonEnv(GoodEnv):
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Any, dict]:
        obs, info = super().reset(seed=seed)
        self.end = 7  # always: a time limit reported as termination
        return obs, info


def test_terminated_and_truncated():
    only(NeverEndsEnv, "warning", "episode end", "env.max_episode_steps")
    assert not problems(check_env(lambda: gym.wrappers.TimeLimit(NeverEndsEnv(), 200), steps=60))
    only(FixedHorizonEnv, "warning", "episode end", "truncated=True")


class UnseededEnv(GoodEnv):
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Any, dict]:
        obs, info = super().reset()
        self.start = np.random.default_rng().random()  # not from self.np_random
        return self.obs(), info

    def obs(self) -> Any:
        return np.array([getattr(self, "start", 0.0)], np.float32)


class SeededResetOnlyEnv(GoodEnv):
    """Seeds its first observation, but its steps draw from an unseeded generator."""

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        return np.random.default_rng().random(1).astype(np.float32), reward, terminated, truncated, info


def test_seeding():
    assert "first observation" in only(UnseededEnv, "warning", "seeding", "self.np_random").message
    assert "after step 1" in only(SeededResetOnlyEnv, "warning", "seeding", "self.np_random").message


class SlowEnv(GoodEnv):
    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        time.sleep(0.003)
        return super().step(action)


def test_step_time():
    finding = only(SlowEnv, "error", "step time", "env.step_timeout_s", steps=12, step_timeout_s=0.001)
    assert "a step took" in finding.message
    info = [f for f in check_env(GoodEnv, steps=30) if f.check == "step time"]
    assert len(info) == 1 and "median" in info[0].message and "max" in info[0].message and "30 steps" in \
        info[0].message


# ---- action masks -------------------------------------------------------------------------------------------------
class MaskedEnv(GoodEnv):
    """Discrete(4): the mask (a Dict observation key) allows actions 1 and 3; any other action raises."""

    action_space = gym.spaces.Discrete(4)
    observation_space = gym.spaces.Dict(x=BOX, action_mask=gym.spaces.MultiBinary(4))
    allowed = np.array([0, 1, 0, 1], np.int8)

    def obs(self) -> Any:
        return {"x": super().obs(), "action_mask": self.allowed.copy()}

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        if not self.allowed[action]:
            raise ValueError(f"invalid action {action}")
        return super().step(action)


class MethodMaskEnv(MaskedEnv):
    observation_space = BOX

    def obs(self) -> Any:
        return GoodEnv.obs(self)

    def action_masks(self) -> np.ndarray:
        return self.allowed.astype(bool)


class InfoMaskEnv(MethodMaskEnv):
    action_masks = None  # type: ignore[assignment]

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Any, dict]:
        return super().reset(seed=seed)[0], {"action_mask": self.allowed}

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {"action_mask": self.allowed}


class MultiDiscreteMaskEnv(MethodMaskEnv):
    action_space = gym.spaces.MultiDiscrete([2, 3])

    def action_masks(self) -> Any:
        return [np.array([True, False]), np.array([False, True, True])]  # one mask per head

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        assert action[0] == 0 and action[1] > 0, action
        return GoodEnv.step(self, action)


class BrokenMaskEnv(MethodMaskEnv):
    """Takes any action: the mask is broken, so the checker's random actions ignore it."""

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        return GoodEnv.step(self, action)


class WrongShapeMaskEnv(BrokenMaskEnv):
    def action_masks(self) -> np.ndarray:
        return np.ones(3, bool)


class EmptyMaskEnv(BrokenMaskEnv):
    def action_masks(self) -> np.ndarray:
        return np.zeros(4, bool) if self.t == 2 else self.allowed.astype(bool)


class FloatMaskEnv(BrokenMaskEnv):
    def action_masks(self) -> np.ndarray:
        return self.allowed * 0.5


class BoxMaskEnv(BrokenMaskEnv):
    action_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


class VanishingMaskEnv(InfoMaskEnv):
    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, _ = GoodEnv.step(self, action)
        return obs, reward, terminated, truncated, {} if self.t == 3 else {"action_mask": self.allowed}


@pytest.mark.parametrize("env", [MaskedEnv, MethodMaskEnv, InfoMaskEnv, MultiDiscreteMaskEnv])
def test_consistent_masks_pass_and_random_actions_follow_them(env):
    findings = check_env(env, steps=60)
    assert not problems(findings), [f.line() for f in findings]


def test_inconsistent_masks():
    assert "shape (3,)" in only(WrongShapeMaskEnv, "error", "mask", "one entry per action").message
    assert "at step 2" in only(EmptyMaskEnv, "error", "mask", "at least one action").message
    only(FloatMaskEnv, "error", "mask", "np.int8")
    only(BoxMaskEnv, "error", "mask", "Discrete/MultiDiscrete action space")
    assert "nowhere at step 3" in only(VanishingMaskEnv, "error", "mask", "after every reset and step").message


class LegalKeyEnv(MaskedEnv):
    """MaskedEnv with its mask under the key 'legal' (a run's env.action_mask_key='legal')."""

    observation_space = gym.spaces.Dict(x=BOX, legal=gym.spaces.MultiBinary(4))

    def obs(self) -> Any:
        return {"x": GoodEnv.obs(self), "legal": self.allowed.copy()}


def test_the_config_mask_key_is_the_one_looked_for():
    """check_env(mask_key=...) is a config's env.action_mask_key: the random actions follow that key's mask (the
    env raises on an invalid action); without it the key is not a mask and an invalid action crashes the env."""
    assert not problems(check_env(LegalKeyEnv, steps=60, mask_key="legal"))
    assert ("error", "crash") in problems(check_env(LegalKeyEnv, steps=60))


# ---- ding_lite's own envs, MiniGrid, a config file ----------------------------------------------------------------
@pytest.mark.parametrize("target", ["goal_grid", "wall_grid", "moving_dot", "mixed_target", "blind_cliffwalk",
                                    "ding_lite.envs.toy.goal_grid:GoalGridEnv", "ALE/Pong-v5"])
def test_own_envs_pass(target):
    if target.startswith("ALE/"):
        pytest.importorskip("ale_py")  # Atari: ding_lite's preprocessing (envs/atari.py), collector role
    findings = check_config_env(target_config(target), steps=100)
    assert not has_errors(findings), [f.line() for f in findings]


def test_minigrid_by_class_and_by_id():
    pytest.importorskip("minigrid")
    findings = check_config_env(target_config("minigrid.envs:EmptyEnv"), steps=300)  # its episodes: 256 steps
    assert [(f.level, f.check) for f in findings if f.level != "info"] == [("error", "spaces")]
    assert "obs['mission']" in findings[0].message and "FilterObservation" in findings[0].fix
    cfg = target_config("minigrid:MiniGrid-Empty-5x5-v0", ["env.wrappers=['minigrid.wrappers:ImgObsWrapper']"])
    findings = check_config_env(cfg, steps=50)
    assert not has_errors(findings), [f.line() for f in findings]


def test_config_file():
    report, ok = check_target(os.path.join(REPO, "dizoo_configs", "cartpole_impala.py"), steps=100)
    assert ok and "CartPole-v1" in report and report.endswith("result: ok"), report


# ---- env.check=True -----------------------------------------------------------------------------------------------
ENV_REGISTRY.register("check_env_test_old_step", OldStepEnv)


def test_env_check_refuses_to_start_a_run(tmp_path, monkeypatch):
    from ding_lite.entry.serial import serial_pipeline
    monkeypatch.chdir(tmp_path)
    config = (dict(exp_name="broken", env=dict(check=True, collector_env_num=1, evaluator_env_num=1,
                                               n_evaluator_episode=1)),
              dict(env=dict(type="check_env_test_old_step"), policy=dict(type="impala")))
    with pytest.raises(UserError, match=r"(?s)env.check=True: .*failed its check.*\[signature\] step returned 4 "
                                        r"values.*fix: return \(obs, reward, terminated"):
        serial_pipeline(config, seed=0, max_env_step=100)
    assert os.listdir(tmp_path) == []  # nothing started
    good = target_config("goal_grid", ["env.check=True"])
    check_before_run(good)  # no error


ENV_REGISTRY.register("check_env_test_never_ends", NeverEndsEnv)


def test_env_check_warns_and_starts():
    cfg = target_config("check_env_test_never_ends", ["env.check=True"])
    with pytest.warns(UserWarning, match=r"env.check: warning \[episode end\] no episode ended in 1000 steps"):
        check_before_run(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_before_run(target_config("check_env_test_never_ends"))  # env.check=False (the default): no check
