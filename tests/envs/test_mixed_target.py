"""The mixed-action demo env: its spaces, dynamics, and the documented returns of reference policies."""
import numpy as np

from ding_lite.envs import EnvSpec
from ding_lite.envs.toy.mixed_target import GEARS, SOLVED_RETURN, MixedTargetEnv, oracle_action
from ding_lite.utils import ENV_REGISTRY


def mean_return(policy, episodes=300):
    env = MixedTargetEnv()
    returns = []
    for i in range(episodes):
        obs, _ = env.reset(seed=i)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total += reward
            done = terminated or truncated
            assert not terminated  # only the time limit ends an episode
        returns.append(total)
    return float(np.mean(returns))


def test_registered_and_mixed_spec():
    assert ENV_REGISTRY.get("mixed_target") is MixedTargetEnv
    env = MixedTargetEnv()
    spec = EnvSpec.from_spaces(env.observation_space, env.action_space)
    assert spec.action_space_type == "mixed" and spec.model_action_shape == [3, 2]


def test_step_moves_by_gear_along_normalised_direction():
    env = MixedTargetEnv()
    obs, _ = env.reset(seed=0)
    obs2, reward, *_ = env.step((2, np.array([3.0, 4.0], dtype=np.float32)))
    np.testing.assert_allclose(obs2[:2] - obs[:2], GEARS[2] * np.array([0.6, 0.8]), atol=1e-6)
    assert np.isclose(reward, -np.linalg.norm(obs2[:2] - obs2[2:4]))
    obs3, *_ = env.step((0, np.array([1.0, 0.0], dtype=np.float32)))
    np.testing.assert_allclose(obs3[:2], obs2[:2])


def test_documented_returns():
    rng = np.random.default_rng(0)
    random_return = mean_return(lambda o: (rng.integers(3), rng.uniform(-1, 1, 2)))
    coarse = mean_return(lambda o: (2, o[2:4] - o[0:2]))
    oracle = mean_return(oracle_action)
    assert random_return < -18 and -5 < coarse < SOLVED_RETURN < oracle
