"""Blind Cliffwalk (Schaul et al. 2016): one-hot observations, the fixed chain of "right" actions, a wrong action
ends the episode with 0, the last right action with 1; a random policy reaches the reward once in 2^n episodes; and
the env is made through ENV_REGISTRY."""
import numpy as np
import pytest
from easydict import EasyDict

from ding_lite.envs import EnvConfig, make_vector_env
from ding_lite.envs.toy.blind_cliffwalk import SOLVED_RETURN, BlindCliffwalkEnv
from ding_lite.utils import ENV_REGISTRY


def test_the_oracle_walks_the_chain_in_n_steps_for_the_only_reward():
    env = BlindCliffwalkEnv(6)
    obs, info = env.reset(seed=3)
    assert obs.dtype == np.float32 and obs.shape == (6,) and info == {}
    rewards = []
    for k in range(6):
        assert np.array_equal(obs, np.eye(6, dtype=np.float32)[k])  # one-hot of the state
        obs, reward, terminated, truncated, _ = env.step(env.oracle_action())
        rewards.append(reward)
        assert terminated == (k == 5) and not truncated
    assert rewards == [0.0] * 5 + [SOLVED_RETURN] and not obs.any()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


@pytest.mark.parametrize("k", [0, 3])
def test_a_wrong_action_falls_off_the_cliff(k):
    env = BlindCliffwalkEnv(6)
    env.reset(seed=0)
    for _ in range(k):
        env.step(env.oracle_action())
    obs, reward, terminated, truncated, _ = env.step(1 - env.oracle_action())
    assert (reward, terminated, truncated) == (0.0, True, False) and not obs.any()


def test_the_chain_is_the_same_for_every_seed_and_not_constant():
    a, b = BlindCliffwalkEnv(16), BlindCliffwalkEnv(16)
    a.reset(seed=1)
    b.reset(seed=2)
    assert np.array_equal(a.right, b.right) and 0 < a.right.sum() < 16


def test_a_random_policy_reaches_the_reward_once_in_2_to_the_n_episodes():
    env, rng, n, episodes = BlindCliffwalkEnv(3), np.random.default_rng(0), 3, 8000
    wins = 0
    for _ in range(episodes):
        env.reset()
        done = False
        while not done:
            _, reward, done, _, _ = env.step(int(rng.integers(2)))
            wins += reward
    expected = episodes / 2 ** n  # 1000, sd ~30
    assert abs(wins - expected) < 4 * np.sqrt(expected * (1 - 2 ** -n)), wins


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="n >= 1"):
        BlindCliffwalkEnv(0)
    env = BlindCliffwalkEnv(2)
    env.reset()
    with pytest.raises(ValueError, match="0 or 1"):
        env.step(2)


def test_made_through_the_registry_and_a_vector_env():
    assert ENV_REGISTRY.get("blind_cliffwalk") is BlindCliffwalkEnv
    cfg = EnvConfig.default_config()  # the env section every env type has, as compile_config gives it
    cfg.update(type="blind_cliffwalk", kwargs=dict(n=5), manager=EasyDict(type="base"))
    env = make_vector_env(cfg, 2, seed=[0, 1])
    try:
        assert env.last_obs.shape == (2, 5) and (env.last_obs[:, 0] == 1).all()
        right = BlindCliffwalkEnv(5).right[0]
        _, reward, terminated, _, _ = env.step(np.array([right, 1 - right]))
        assert terminated.tolist() == [False, True] and reward.tolist() == [0.0, 0.0]
    finally:
        env.close()
