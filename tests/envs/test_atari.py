"""Atari envs (ding_lite/envs/atari.py, envpool_manager.py) on real ALE games: shapes, stacking, noop reset, frame
skip, reward clipping, episodic life, episode ends, seeding, the evaluator's envs, and the envpool manager.

The games: Pong (the reference game), Breakout (5 lives, a random agent loses one in about 30 steps) and
SpaceInvaders (rewards of 5 to 30 points: clipping shows). Tests that need ale-py or envpool skip without them; the
config and install-message tests run everywhere.
"""
import ast
import importlib.util
import os
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from ding_lite.config import compile_config
from ding_lite.envs import GymEnv, make_vector_env
from ding_lite.envs.atari import AreaResize, EpisodicLife, area_weights, register_ale
from ding_lite.utils import ConfigError, UserError

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
needs_ale = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                               reason='needs ale-py: pip install -e ".[atari]"')


def env_cfg(env_id="ALE/Pong-v5", manager="base", max_episode_steps=None, kwargs=None, **atari):
    """The compiled ``env`` section of an IMPALA config on ``env_id`` (``atari`` keys override env.atari)."""
    main = dict(env=dict(env_id=env_id, collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1,
                         max_episode_steps=max_episode_steps, kwargs=kwargs or {}, atari=atari))
    return compile_config(main, dict(policy=dict(type="impala"), env_manager=dict(type=manager))).env


def one_env(role="collector", **kw):
    return GymEnv.make(env_cfg(**kw), role)


def frame_number(env) -> int:
    return env.unwrapped.ale.getEpisodeFrameNumber()


def wrapper_names(env):
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


def play(env, steps, seed=0, action_seed=0):
    """Reset with ``seed`` and take ``steps`` random actions (same ``action_seed``, same actions); the results."""
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(action_seed)
    out = [(obs, 0.0, False, False, {})]
    for _ in range(steps):
        out.append(env.step(int(rng.integers(env.action_space.n))))
        if out[-1][2] or out[-1][3]:
            break
    return out


# ---- no ALE needed: the resize, config checks and install messages ------------------------------------------------

def test_area_resize_is_the_area_average():
    image = np.random.default_rng(0).integers(0, 256, (210, 160), dtype=np.uint8)
    exact = area_weights(210, 84) @ image.astype(np.float64) @ area_weights(160, 84).T
    out = AreaResize(210, 160, 84)(image)
    assert out.dtype == np.uint8 and out.shape == (84, 84)
    assert np.abs(out - exact).max() <= 0.5 + 1e-3  # rounded to the nearest grey level
    assert np.allclose(area_weights(210, 84).sum(1), 1.0) and area_weights(4, 2)[0].tolist() == [0.5, 0.5, 0, 0]
    flat = AreaResize(210, 160, 84)(np.full((210, 160), 77, np.uint8))
    assert (flat == 77).all()


def test_area_resize_matches_opencv():
    cv2 = pytest.importorskip("cv2")
    image = np.random.default_rng(1).integers(0, 256, (210, 160), dtype=np.uint8)
    ours = AreaResize(210, 160, 84)(image).astype(int)
    theirs = cv2.resize(image, (84, 84), interpolation=cv2.INTER_AREA).astype(int)
    assert np.abs(ours - theirs).max() <= 1


def test_missing_ale_py_is_a_user_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ale_py", None)  # import ale_py raises ImportError
    with pytest.raises(UserError, match=r'pip install -e "\.\[atari\]"'):
        register_ale("ALE/NoSuchGameForThisTest-v5")
    register_ale("CartPole-v1")  # not an Atari id: nothing to import


@needs_ale
def test_missing_envpool_is_a_user_error_naming_the_extra(monkeypatch):
    import ding_lite.envs.envpool_manager as envpool_manager
    monkeypatch.setattr(envpool_manager, "envpool_available", lambda: False)
    with pytest.raises(UserError, match=r'pip install -e "\.\[envpool\]"'):
        env_cfg(manager="envpool")


def test_envpool_manager_refuses_non_atari_envs():
    with pytest.raises(ConfigError, match="envpool.*Atari envs only"):
        compile_config(dict(env=dict(env_id="CartPole-v1")), dict(policy=dict(type="impala"),
                                                                   env_manager=dict(type="envpool")))


@needs_ale
def test_atari_config_checks():
    with pytest.raises(ConfigError, match=r"env.kwargs.frameskip=4: .*set env.atari.frame_skip instead"):
        env_cfg(kwargs=dict(frameskip=4))
    with pytest.raises(ConfigError, match=r"env.atari.frame_stack=0: must be at least 1"):
        env_cfg(frame_stack=0)
    with pytest.raises(ConfigError, match=r"env.atari.repeat_action_probability=1.5"):
        env_cfg(repeat_action_probability=1.5)
    with pytest.raises(ConfigError, match="env.atari.noop_max"):
        env_cfg(noop_mx=3)  # a misspelt key: did you mean


def test_evaluator_envs_are_made_with_the_evaluator_role(monkeypatch):
    """The pipelines make evaluator envs with role='evaluator' (no episodic life, no clipping): build() by a recorded
    call, and every make_vector_env call of ding_lite on evaluator_env_num by reading the source."""
    import ding_lite.entry.build as build_module
    roles = []
    real = build_module.make_vector_env

    def record(cfg, num, seed=None, role="collector"):
        roles.append((num, role))
        return real(cfg, num, seed, role=role)

    monkeypatch.setattr(build_module, "make_vector_env", record)
    cfg = compile_config(dict(env=dict(env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=3,
                                       n_evaluator_episode=3)), dict(policy=dict(type="impala")))
    parts = build_module.build(cfg, seed=0)
    parts.collector_env.close()
    parts.evaluator_env.close()
    assert roles == [(2, "collector"), (3, "evaluator")]
    assert (parts.collector_env.role, parts.evaluator_env.role) == ("collector", "evaluator")

    calls = []
    for root, _, files in os.walk(os.path.join(REPO, "ding_lite")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                    if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "make_vector_env"
                            and "evaluator_env_num" in ast.unparse(node.args[1])):
                        role = [k.value.value for k in node.keywords if k.arg == "role"]
                        calls.append((os.path.relpath(path, REPO), role))
                    # the parallel workers build theirs through roles.build_worker_env(spec, num_envs, role)
                    if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "build_worker_env"
                            and "evaluator_env_num" in ast.unparse(node.args[1])):
                        calls.append((os.path.relpath(path, REPO), [node.args[2].value]))
    assert len(calls) >= 3 and all(role == ["evaluator"] for _, role in calls), calls


# ---- the gymnasium path on real games ------------------------------------------------------------------------------

@needs_ale
def test_shapes_dtypes_and_action_space():
    venv = make_vector_env(env_cfg(), 2, seed=0)
    try:
        assert venv.single_observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
        assert venv.single_action_space == gym.spaces.Discrete(6)  # Pong's minimal action set
        assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        assert venv.last_obs.shape == (2, 4, 84, 84) and venv.last_obs.dtype == np.uint8
        obs, reward, terminated, truncated, _ = venv.step(np.array([0, 1]))
        assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8 and obs.max() > obs.min()
        assert reward.shape == (2,) and terminated.dtype == bool and truncated.dtype == bool
    finally:
        venv.close()
    env = one_env(full_action_space=True, screen_size=64, frame_stack=2)
    assert env.action_space == gym.spaces.Discrete(18)
    assert env.reset(seed=0)[0].shape == (2, 64, 64)
    raw = one_env(preprocess=False)
    assert raw.reset(seed=0)[0].shape == (210, 160, 3) and raw.unwrapped._frameskip == 4  # as gymnasium.make


@needs_ale
def test_frames_match_gymnasium_atari_preprocessing():
    """Frame for frame the same as gymnasium's AtariPreprocessing (which needs OpenCV) within one grey level, but for
    the last frame of a game that ends inside a frame skip (ours is the true last screen)."""
    pytest.importorskip("cv2")
    from ding_lite.envs.atari import AtariPreprocess
    register_ale("ALE/Breakout-v5")
    ours = AtariPreprocess(gym.make("ALE/Breakout-v5", frameskip=1, repeat_action_probability=0.0))
    theirs = gym.wrappers.AtariPreprocessing(gym.make("ALE/Breakout-v5", frameskip=1, repeat_action_probability=0.0))
    rng = np.random.default_rng(0)
    a, b = ours.reset(seed=7), theirs.reset(seed=7)
    for _ in range(150):
        assert np.abs(a[0].astype(int) - b[0]).max() <= 1
        action = int(rng.integers(4))
        a, b = ours.step(action), theirs.step(action)
        assert a[1:4] == b[1:4]
        if a[2] or a[3]:
            break


@needs_ale
def test_stack_shifts_by_one_and_the_newest_frame_is_last():
    env = one_env(frame_skip=1, noop_max=0)
    obs, _ = env.reset(seed=0)
    assert all((obs[k] == obs[0]).all() for k in range(4))  # a reset fills the stack with the first frame
    resize = AreaResize(210, 160, 84)
    screen = np.zeros((210, 160), np.uint8)
    for t in range(60):
        new, *_ = env.step(t % 6)
        assert (new[:3] == obs[1:]).all()  # the stack shifts by one
        env.unwrapped.ale.getScreenGrayscale(screen)
        assert (new[-1] == resize(screen)).all()  # the newest frame is last
        obs = new
    assert len({obs[k].tobytes() for k in range(4)}) > 1  # the frames do change (the check above can fail)


@needs_ale
def test_noop_reset_plays_1_to_noop_max_frames():
    env = one_env()
    counts = set()
    for seed in range(12):
        env.reset(seed=seed)
        counts.add(frame_number(env))
    assert counts <= set(range(1, 31)) and len(counts) > 4
    env = one_env(noop_max=0)
    env.reset(seed=0)
    assert frame_number(env) == 0


@needs_ale
@pytest.mark.parametrize("skip", [4, 2])
def test_frame_skip_in_ale_frames(skip):
    env = one_env(frame_skip=skip)
    assert env.unwrapped._frameskip == 1  # ALE v5 ids skip 4 themselves: made with frameskip=1
    env.reset(seed=0)
    start = frame_number(env)
    for t in range(10):
        env.step(t % 6)
    assert frame_number(env) - start == 10 * skip


@needs_ale
def test_sticky_actions_follow_the_config():
    assert one_env().unwrapped.ale.getFloat("repeat_action_probability") == 0.0
    env = one_env(repeat_action_probability=0.25)
    assert env.unwrapped.ale.getFloat("repeat_action_probability") == 0.25


@needs_ale
def test_reward_clipping_in_collector_envs_only():
    """Same seed, same actions, same game: the collector's rewards are the evaluator's clipped to [-1, 1]."""
    game = "ALE/SpaceInvaders-v5"
    evaluator = play(one_env("evaluator", env_id=game), 200)
    collector = play(one_env("collector", env_id=game, episodic_life=False), 200)
    unclipped = play(one_env("collector", env_id=game, episodic_life=False, clip_reward=False), 200)
    raw = np.array([step[1] for step in evaluator])
    assert raw.max() > 1  # SpaceInvaders scores 5 to 30 points a hit
    assert np.array_equal([step[1] for step in collector], np.clip(raw, -1, 1))
    assert np.array_equal([step[1] for step in unclipped], raw)


@needs_ale
def test_episodic_life_terminates_on_a_lost_life_and_the_game_goes_on():
    game = "ALE/Breakout-v5"
    venv = make_vector_env(env_cfg(game), 1, seed=3)
    env = venv.envs[0]
    assert "EpisodicLife" in wrapper_names(env) and "ClipReward" in wrapper_names(env)
    rng = np.random.default_rng(0)
    lives, frames = 5, frame_number(env)
    ends = 0
    for _ in range(3000):
        obs, _, terminated, truncated, info = venv.step(rng.integers(0, 4, 1))
        now = env.unwrapped.ale.lives()
        if terminated[0]:
            ends += 1
            assert not truncated[0] and info["_final_obs"][0]
            assert not np.array_equal(info["final_obs"][0], obs[0])
            assert all((obs[0][k] == obs[0][0]).all() for k in range(4))  # a fresh stack after the reset
            if info["final_info"]["lives"][0] > 0:  # a lost life: the same game goes on
                assert now == lives - 1 and frame_number(env) > frames
            else:  # game over: a new game
                assert now == 5 and frame_number(env) <= 30
                break
        else:
            assert now == lives  # no life is lost without terminated=True
        lives, frames = env.unwrapped.ale.lives(), frame_number(env)
    assert ends == 5  # one training episode per life
    venv.close()


@needs_ale
def test_evaluator_env_plays_whole_games_with_true_scores():
    game = "ALE/Breakout-v5"
    env = one_env("evaluator", env_id=game)
    assert "EpisodicLife" not in wrapper_names(env) and "ClipReward" not in wrapper_names(env)
    steps = play(env, 3000, seed=3)
    terminated = [step[2] for step in steps]
    assert terminated.count(True) == 1 and terminated[-1]  # one episode: the whole game
    assert env.unwrapped.ale.lives() == 0 and env.unwrapped.ale.game_over()
    lost = [s[4]["lives"] for s in steps[1:]]
    assert lost[0] == 5 and lost[-1] == 0  # five lives lost inside that one episode


@needs_ale
def test_soft_reset_only_after_a_lost_life():
    register_ale("ALE/Breakout-v5")
    env = EpisodicLife(gym.make("ALE/Breakout-v5", frameskip=4, repeat_action_probability=0.0))
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    while not env.step(int(rng.integers(4)))[2]:
        pass
    frames = frame_number(env)
    env.reset()  # right after a lost life: one no-op step of the same game
    assert env.unwrapped.ale.lives() == 4 and frame_number(env) == frames + 4
    while not env.step(int(rng.integers(4)))[2]:
        pass
    env.reset(seed=1)  # a seeded reset is a new game even right after a lost life
    assert env.unwrapped.ale.lives() == 5 and frame_number(env) == 0
    env.step(0)
    env.reset()  # an unseeded reset mid-game, not after a lost life: a new game too
    assert frame_number(env) == 0


@needs_ale
def test_episode_ends_truncated_by_max_episode_steps():
    for role in ("collector", "evaluator"):
        env = one_env(role, max_episode_steps=10)
        steps = play(env, 50)
        assert len(steps) == 11 and steps[-1][3] and not steps[-1][2]  # truncated after 10 agent steps
        assert all(not (s[2] or s[3]) for s in steps[1:-1])
        env.reset()
        assert frame_number(env) <= 30


@needs_ale
def test_pong_game_over_is_terminated_not_truncated():
    env = one_env("evaluator")
    steps = play(env, 3000)
    assert steps[-1][2] and not steps[-1][3]  # a game over ends the episode as terminated
    rewards = [s[1] for s in steps]
    assert 21 in (rewards.count(-1.0), rewards.count(1.0))  # someone reached 21 points


@pytest.mark.slow
@needs_ale
def test_same_seed_same_frames():
    a, b, c = (play(one_env(), 40, seed=s) for s in (5, 5, 6))
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(a, b))
    assert not all(np.array_equal(x[0], y[0]) for x, y in zip(a, c))
    va = make_vector_env(env_cfg(), 2, seed=5)
    vb = make_vector_env(env_cfg(), 2, seed=5)
    assert np.array_equal(va.last_obs, vb.last_obs)
    differ = False  # env i is seeded seed + i: the two envs of one vector env differ
    for t in range(40):
        obs = va.step(np.array([2, 2]))[0]
        assert np.array_equal(obs, vb.step(np.array([2, 2]))[0])
        differ = differ or not np.array_equal(obs[0], obs[1])
    assert differ
    va.close()
    vb.close()


@needs_ale
def test_subprocess_manager_gives_the_same_frames():
    cfg = env_cfg(manager="subprocess")
    cfg.manager.context = "fork" if sys.platform == "linux" else "spawn"
    sub = make_vector_env(cfg, 2, seed=1)
    base = make_vector_env(env_cfg(), 2, seed=1)
    try:
        assert np.array_equal(sub.last_obs, base.last_obs)
        for t in range(10):
            action = np.array([t % 6, (t + 3) % 6])
            assert np.array_equal(sub.step(action)[0], base.step(action)[0])
    finally:
        sub.close()
        base.close()


# ---- the envpool manager ------------------------------------------------------------------------------------------

needs_envpool = pytest.mark.skipif(importlib.util.find_spec("envpool") is None or importlib.util.find_spec("ale_py")
                                   is None, reason='needs envpool and ale-py: pip install -e ".[atari,envpool]"')


def random_steps(venv, steps, n_actions, seed=0):
    rng = np.random.default_rng(seed)
    return [venv.step(rng.integers(0, n_actions, venv.num_envs)) for _ in range(steps)]


@pytest.mark.slow
@needs_envpool
def test_envpool_spaces_and_shapes_match_the_gymnasium_path():
    for atari in (dict(), dict(full_action_space=True, screen_size=64, frame_stack=2)):
        pool = make_vector_env(env_cfg(manager="envpool", **atari), 2, seed=0)
        base = make_vector_env(env_cfg(**atari), 2, seed=0)
        try:
            assert pool.single_observation_space == base.single_observation_space
            assert pool.single_action_space == base.single_action_space
            assert pool.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP and pool.role == "collector"
            assert pool.last_obs.shape == base.last_obs.shape and pool.last_obs.dtype == np.uint8
            obs, reward, terminated, truncated, _ = pool.step(np.array([0, 1]))
            assert obs.shape == base.last_obs.shape and obs.dtype == np.uint8
            assert reward.shape == (2,) and terminated.dtype == bool and truncated.dtype == bool
        finally:
            pool.close()
            base.close()


@needs_envpool
def test_envpool_autoresets_in_the_same_step_with_the_true_final_obs():
    from ding_lite.envs.obs_space import replace_final_obs
    venv = make_vector_env(env_cfg("ALE/SpaceInvaders-v5", manager="envpool", max_episode_steps=6), 2, seed=0)
    prev = None
    for t in range(6):
        obs, _, terminated, truncated, info = venv.step(np.array([1, 2]))
        if t < 5:
            assert not (terminated | truncated).any()
            prev = obs
    assert truncated.all() and not terminated.any() and info["_final_obs"].all()
    for i in range(2):
        final = info["final_obs"][i]
        assert (final[:3] == prev[i][1:]).all()  # the true last observation of that episode: its stack follows on
        assert not np.array_equal(final, obs[i])
        assert all((obs[i][k] == obs[i][0]).all() for k in range(4))  # and obs is the next episode's first
    assert (info["elapsed_step"] == 0).all() and (info["final_info"]["elapsed_step"] == 6).all()
    assert np.array_equal(replace_final_obs(obs, terminated | truncated, info)[1], info["final_obs"][1])
    _, _, _, _, info = venv.step(np.array([1, 2]))
    assert (info["elapsed_step"] == 1).all()  # no reset step was left for the collector
    venv.close()


@needs_envpool
def test_envpool_episodic_life_in_collector_envs_only():
    cfg = env_cfg("ALE/Breakout-v5", manager="envpool")
    collector = make_vector_env(cfg, 1, seed=3)
    evaluator = make_vector_env(cfg, 1, seed=3, role="evaluator")
    rng = np.random.default_rng(0)
    for _ in range(1000):
        action = rng.integers(0, 4, 1)
        _, _, terminated, _, info = collector.step(action)
        _, _, eval_terminated, _, eval_info = evaluator.step(action)
        if terminated[0]:
            break
    assert info["final_info"]["lives"][0] == 4 and info["lives"][0] == 4  # a life lost; the game goes on
    assert info["elapsed_step"][0] > 1 and not info["game_over"][0]
    assert eval_info["lives"][0] == 4 and not eval_terminated[0]  # the same moment: the evaluator plays on
    collector.close()
    evaluator.close()


@pytest.mark.slow
@needs_envpool
def test_envpool_clips_rewards_in_collector_envs_only():
    cfg = env_cfg("ALE/SpaceInvaders-v5", manager="envpool", episodic_life=False)
    collector = make_vector_env(cfg, 2, seed=1)
    evaluator = make_vector_env(cfg, 2, seed=1, role="evaluator")
    clipped = np.array([s[1] for s in random_steps(collector, 150, 6)])
    raw = np.array([s[1] for s in random_steps(evaluator, 150, 6)])
    assert raw.max() > 1 and np.array_equal(clipped, np.clip(raw, -1, 1))
    collector.close()
    evaluator.close()


@pytest.mark.slow
@needs_envpool
def test_envpool_same_seed_same_frames():
    a = make_vector_env(env_cfg(manager="envpool"), 2, seed=3)
    b = make_vector_env(env_cfg(manager="envpool"), 2, seed=3)
    assert np.array_equal(a.last_obs, b.last_obs)
    steps_a, steps_b = random_steps(a, 30, 6), random_steps(b, 30, 6)
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(steps_a, steps_b))
    b.reset(seed=4)  # a new seed: a new pool
    steps_c = random_steps(b, 30, 6)
    assert not all(np.array_equal(x[0], y[0]) for x, y in zip(steps_a, steps_c))
    a.close()
    b.close()
