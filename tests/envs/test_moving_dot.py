"""MovingDot, the tiny pixel env: uint8 frames of the declared shape, seeded determinism, truncation at the time limit
(never a termination), the rewards of the docstring, and creation through ENV_REGISTRY and the vector env."""
import numpy as np
import pytest
from easydict import EasyDict

from ding_lite.envs import EnvConfig, make_vector_env
from ding_lite.envs.toy.moving_dot import DOT, LEFT, PADDLE, RIGHT, SOLVED_RETURN, STAY, MovingDotEnv, tracker_action
from ding_lite.utils import ENV_REGISTRY


def run(env, policy, episodes, seed=0):
    rng = np.random.default_rng(seed)
    returns = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed * 100_000 + ep)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs, rng))
            total += reward
            done = terminated or truncated
        returns.append(total)
    return np.asarray(returns)


def test_frames_are_uint8_of_the_declared_shape():
    env = MovingDotEnv()
    assert env.observation_space.shape == (1, 36, 36) and env.observation_space.dtype == np.uint8
    assert env.action_space.n == 3
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.uint8 and obs.shape == (1, 36, 36) and env.observation_space.contains(obs)
    assert info == {}
    # one dot and one paddle cell, scale x scale pixels each; the paddle in the bottom row
    assert (obs == DOT).sum() == 16 and (obs == PADDLE).sum() == 16
    assert (obs[0, 32:] == PADDLE).sum() == 16 and not (obs[0, 32:] == DOT).any()
    big = MovingDotEnv(size=21, scale=4)  # Atari-sized frames
    assert big.reset(seed=0)[0].shape == big.observation_space.shape == (1, 84, 84)


def test_seeded_episodes_repeat_exactly():
    def episode(seed):
        env = MovingDotEnv()
        frames = [env.reset(seed=seed)[0]]
        actions = np.random.default_rng(7).integers(0, 3, 30)
        rewards = []
        for a in actions:
            obs, r, *_ = env.step(a)
            frames.append(obs)
            rewards.append(r)
        return np.stack(frames), rewards

    a, b, c = episode(3), episode(3), episode(4)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    assert not np.array_equal(a[0], c[0])


def test_truncated_at_the_time_limit_never_terminated():
    env = MovingDotEnv(max_steps=7)
    for seed in range(3):
        env.reset(seed=seed)
        for t in range(1, 8):
            _, _, terminated, truncated, _ = env.step(STAY)
            assert terminated is False and truncated is (t == 7)


def test_reward_and_paddle_moves():
    env = MovingDotEnv(flip_prob=0.0)
    env.reset(seed=0)
    env._dot[:] = (2, 5)
    env._vel[:] = (1, 1)
    env._paddle = 4
    obs, reward, *_ = env.step(RIGHT)  # paddle 4 -> 5, under the dot's column 5: rewarded; the dot moves to (3, 6)
    assert reward == 1.0 and env._paddle == 5 and tuple(env._dot) == (3, 6)
    assert tracker_action(obs) == RIGHT
    _, reward, *_ = env.step(LEFT)  # 5 -> 4, the dot was at 6
    assert reward == 0.0
    env._paddle = 0
    env.step(LEFT)  # the wall
    assert env._paddle == 0
    with pytest.raises(ValueError, match="action must be 0"):
        env.step(3)


@pytest.mark.slow
def test_returns_of_the_docstring():
    env = MovingDotEnv()
    random = run(env, lambda obs, rng: int(rng.integers(3)), 1000)
    stay = run(env, lambda obs, rng: STAY, 1000, seed=1)
    tracker = run(env, lambda obs, rng: tracker_action(obs), 1000, seed=2)
    assert random.mean() == pytest.approx(3.3, abs=0.3) and random.max() < SOLVED_RETURN
    assert random.reshape(-1, 10).mean(1).max() < 7  # an evaluation of 10 episodes
    assert stay.mean() == pytest.approx(3.3, abs=0.3)
    assert tracker.mean() == pytest.approx(28.0, abs=0.5) and tracker.min() > SOLVED_RETURN


def test_registered_and_vectorised():
    assert ENV_REGISTRY.get("moving_dot") is MovingDotEnv
    cfg = EnvConfig.default_config()  # the env section every env type has, as compile_config gives it
    cfg.update(type="moving_dot", kwargs=dict(size=10), manager=EasyDict(type="base"))
    env = make_vector_env(cfg, 3, seed=0)
    try:
        obs = env.last_obs
        assert obs.dtype == np.uint8 and obs.shape == (3, 1, 40, 40)
        next_obs, reward, terminated, truncated, _ = env.step(np.zeros(3, dtype=np.int64))
        assert next_obs.dtype == np.uint8 and reward.shape == (3,)
    finally:
        env.close()
