"""Observation spaces: descriptions, refusals, env observations as tensors, final observations of nested spaces."""
import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from ding_lite.envs import EnvSpec
from ding_lite.envs.toy.goal_grid import GoalGridEnv
from ding_lite.envs.obs_space import (UnsupportedObsSpace, describe_obs_space, obs_shape_of,
                                      obs_to_tensor, replace_final_obs)
from ding_lite.torch_utils.obs_encoder import obs_leaves
from ding_lite.utils import NonFiniteError, UserError
from ding_lite.envs.finite_check import FiniteCheck

S = gym.spaces


def test_describe_every_leaf_kind_and_nesting():
    space = S.Dict(image=S.Box(0, 255, (7, 7, 3), np.uint8), direction=S.Discrete(4, start=1),
                   t=S.Tuple((S.MultiBinary(3), S.MultiDiscrete([[2, 3], [4, 5]]))))
    d = describe_obs_space(space)
    assert d == dict(space="dict", spaces=dict(
        direction=dict(space="discrete", n=4, start=1),
        image=dict(space="box", shape=[7, 7, 3], dtype="uint8"),
        t=dict(space="tuple", spaces={"0": dict(space="multi_binary", shape=[3]),
                                      "1": dict(space="multi_discrete", nvec=[2, 3, 4, 5], start=[0, 0, 0, 0],
                                                             shape=[2, 2])})))
    # leaves in the space's own key order (what gymnasium's vector envs batch by)
    assert [leaf.keys for leaf in obs_leaves(d)] == [(k,) for k in space.keys() if k != "t"] + [("t", "0"), ("t", "1")]
    assert obs_shape_of(d) == {"direction": [], "image": [7, 7, 3], "t": {"0": [3], "1": [2, 2]}}
    # a plain Box keeps the obs_shape of before: an int for one dim, a list otherwise
    assert obs_shape_of(describe_obs_space(S.Box(-1, 1, (4,)))) == 4
    assert obs_shape_of(describe_obs_space(S.Box(0, 255, (4, 84, 84), np.uint8))) == [4, 84, 84]


def test_unsupported_subspaces_are_named_with_the_fix():
    space = S.Dict(image=S.Box(0, 255, (7, 7, 3), np.uint8), mission=S.Text(10), other=S.Sequence(S.Discrete(2)))
    with pytest.raises(UnsupportedObsSpace) as err:
        describe_obs_space(space)
    msg = str(err.value)
    assert "obs['mission'] is Text" in msg and "obs['other'] is Sequence" in msg
    assert "FilterObservation', kwargs=dict(filter_keys=['image']))]" in msg and "env.wrappers" in msg
    assert isinstance(err.value, UserError)
    with pytest.raises(UnsupportedObsSpace, match=r"obs\[1\] is Text.*ObservationWrapper"):
        describe_obs_space(S.Tuple((S.Discrete(2), S.Text(3))))
    with pytest.raises(UnsupportedObsSpace, match="obs is Graph"):
        EnvSpec.from_spaces(S.Graph(S.Box(-1, 1, (2,)), None), S.Discrete(2))


def test_obs_to_tensor_dtypes_and_shared_memory():
    frames = np.zeros((2, 3, 3), np.uint8)
    obs = {"a": np.zeros((2,), np.int64), "f": np.zeros((2, 2), np.float64), "i": frames,
           "t": (np.ones((2, 3), np.int8), np.zeros((2,), np.float32))}
    x = obs_to_tensor(obs)
    assert x["a"].dtype == torch.int64 and x["f"].dtype == torch.float32 and x["i"].dtype == torch.uint8
    assert set(x["t"]) == {"0", "1"} and x["t"]["0"].dtype == torch.int8
    frames[0, 0, 0] = 7  # uint8 frames are not copied on the way in
    assert x["i"][0, 0, 0] == 7
    assert obs_to_tensor(np.ones((2, 4), np.float32)).dtype == torch.float32


def test_final_obs_of_nested_spaces_replace_the_reset_rows():
    env = SyncVectorEnv([lambda: GoalGridEnv(size=3, max_steps=2, nesting="nested")] * 3,
                        autoreset_mode=AutoresetMode.SAME_STEP)
    obs, _ = env.reset(seed=[1, 2, 3])
    for _ in range(2):  # every env is truncated at its second step (or terminated before)
        obs, _, terminated, truncated, info = env.step(np.zeros(3, np.int64))
    done = terminated | truncated
    assert done.all()
    real = replace_final_obs(obs, done, info)
    for i in range(3):
        assert real["goal"][i] == info["final_obs"][i]["goal"]
        np.testing.assert_array_equal(real["agent"]["position"][i], info["final_obs"][i]["agent"]["position"])
        np.testing.assert_array_equal(real["agent"]["walls"][i], info["final_obs"][i]["agent"]["walls"])
    # the next episode's first observations are left as they were
    assert not np.shares_memory(real["agent"]["position"], obs["agent"]["position"])
    assert all(obs["goal"][i] == env.envs[i]._obs()["goal"] for i in range(3))
    assert replace_final_obs(obs, np.zeros(3, bool), {}) is obs


class _NaNLeaf(gym.ObservationWrapper):
    """Puts NaN into the 'position' leaf of GoalGrid's observation after ``after`` steps."""

    def __init__(self, env, after):
        super().__init__(env)
        self.after, self.t = after, 0

    def observation(self, obs):
        obs = dict(obs)
        if self.t >= self.after:
            obs["position"] = np.full(2, np.nan, np.float32)
        self.t += 1
        return obs


def test_finite_check_names_the_leaf():
    env = SyncVectorEnv([lambda: _NaNLeaf(GoalGridEnv(), 2)] * 2, autoreset_mode=AutoresetMode.SAME_STEP)
    obs, _ = env.reset(seed=0)
    check = FiniteCheck(env, "collector")
    check.reset_obs(obs, 0)
    obs, reward, term, trunc, info = env.step(np.zeros(2, np.int64))
    with pytest.raises(NonFiniteError, match=r"non-finite obs\['position'\] .*env index 0 of 2.*element 0 is nan"):
        check.step(obs, reward, term | trunc, info, 2)


def test_multi_discrete_start_reaches_the_encoder():
    """gymnasium's MultiDiscrete(start=...) is one-hot encoded from its own start (described, then flattened)."""
    from ding_lite.torch_utils.obs_encoder import LeafFlattener
    space = S.MultiDiscrete([3, 2], start=[1, -1])
    flat = LeafFlattener(describe_obs_space(space))(obs_to_tensor(np.array([[1, -1], [3, 0]])))
    assert flat.tolist() == [[1, 0, 0, 1, 0], [0, 0, 1, 0, 1]]
