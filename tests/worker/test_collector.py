"""SampleCollector and gymnasium semantics, checked step by step against a tiny deterministic env.

Every env's trajectory is known in closed form (obs = [env index, episode id, t], reward = t after the step, so a
reward is never 0), so each stored transition can be compared with the env's true transition: no reset step is ever
stored, the true final observation replaces the next episode's first one, and terminated / truncated are kept apart.
"""
import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

import ding_lite.model  # noqa: F401  (registers 'vac')
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvConfig, EnvSpec, make_vector_env
from ding_lite.policy import IMPALAPolicy
from ding_lite.utils import ENV_REGISTRY
from ding_lite.worker import SampleCollector

TIME_LIMIT = 5
# Per env index (= its reset seed): (episode length, how the episode ends by itself).
#   env 0, 1: terminate after 2, 3 steps; env 2: the env itself truncates after 4 steps;
#   env 3: would terminate after 9 steps, TimeLimit(5) truncates it; env 4: terminates exactly at the time limit, so
#   gymnasium reports terminated=True and truncated=True on the same step.
ENV_PLAN = ((2, "term"), (3, "term"), (4, "trunc"), (9, "term"), (5, "term"))
N_ENV = len(ENV_PLAN)


class CountEnv(gym.Env):
    """obs = [env index, episode id, t]; reward = t after the step. The env index is the seed of the first reset."""

    def __init__(self, plan=ENV_PLAN, continuous=False):
        self.plan = [tuple(p) for p in plan]
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
        if continuous:
            self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        else:
            self.action_space = gym.spaces.Discrete(2)
        self.received_actions = []
        self.idx, self.episode, self.t = 0, -1, 0

    def _obs(self):
        return np.array([self.idx, self.episode, self.t], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.idx, self.episode = int(seed), -1
        self.episode += 1
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.received_actions.append(np.array(action, copy=True))
        self.t += 1
        length, kind = self.plan[self.idx]
        end = self.t >= length
        return self._obs(), float(self.t), kind == "term" and end, kind == "trunc" and end, {}


ENV_NAME = "test_worker_collector_count_env"
if ENV_NAME not in ENV_REGISTRY:
    ENV_REGISTRY.register(ENV_NAME, CountEnv)


def expected_step(idx, k):
    """The k-th (0-based) true transition of env ``idx``: (obs, next_obs, reward, terminated, truncated)."""
    length, kind = ENV_PLAN[idx]
    ep_len = min(length, TIME_LIMIT)
    episode, t = divmod(k, ep_len)
    ended_by_env = t + 1 == length
    return ([idx, episode, t], [idx, episode, t + 1], float(t + 1), kind == "term" and ended_by_env,
            (kind == "trunc" and ended_by_env) or t + 1 == TIME_LIMIT)


def make_setup(unroll_len=3, continuous=False, init_sigma=1.0):
    env_cfg = EnvConfig.default_config()
    env_cfg.update(type=ENV_NAME, kwargs=dict(continuous=continuous), max_episode_steps=TIME_LIMIT,
                   manager=dict(type="base"))
    pol = IMPALAPolicy.default_config()
    pol.unroll_len = unroll_len
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_hidden_size_list=[8], init_sigma=init_sigma)
    cfg = EasyDict(env=env_cfg, policy=pol)
    venv = make_vector_env(cfg.env, N_ENV, seed=0)
    spec = EnvSpec.from_spaces(venv.single_observation_space, venv.single_action_space)
    resolve_env_spaces(cfg, spec)
    torch.manual_seed(0)
    policy = IMPALAPolicy(cfg.policy, enable_field=("collect", "eval"))
    collector = SampleCollector(venv, policy.collect_mode)
    return venv, spec, policy, collector


def per_env_sequences(batches):
    """Concatenate the (N_env, T, ...) samples of several collect() calls along time, per env."""
    keys = ("obs", "next_obs", "reward", "terminated", "truncated", "action")
    return {k: torch.cat([b[k] for b in batches], dim=1) for k in keys}


@pytest.fixture
def collected():
    venv, spec, policy, collector = make_setup(unroll_len=3)
    sizes = (1, N_ENV, N_ENV + 1, 3 * N_ENV)  # 1 segment, 1, 2 and 3 segments
    batches = [collector.collect(n) for n in sizes]
    yield collector, batches, sizes
    collector.close()


def test_make_vector_env_is_same_step():
    venv, *_ = make_setup()
    assert venv.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    venv.close()


def test_segments_shapes_and_no_step_lost_or_duplicated(collected):
    collector, batches, sizes = collected
    unroll = 3
    for batch, n in zip(batches, sizes):
        segments = -(-n // N_ENV)  # collect() stops at the first segment boundary with >= n samples
        assert batch["obs"].shape == (segments * N_ENV, unroll, 3)
        assert batch["next_obs"].shape == (segments * N_ENV, unroll, 3)
        assert batch["reward"].shape == batch["terminated"].shape == batch["truncated"].shape == (
            segments * N_ENV, unroll)
        assert batch["terminated"].dtype == batch["truncated"].dtype == torch.bool
        assert batch["action"].shape == (segments * N_ENV, unroll)
        assert batch["logit"].shape == (segments * N_ENV, unroll, 2)
    # Samples of one call are grouped segment by segment, env by env: regroup them to (N_env, time).
    per_call = []
    for batch in batches:
        s = batch["obs"].shape[0] // N_ENV
        per_call.append({k: v.view(s, N_ENV, *v.shape[1:]).transpose(0, 1).reshape(N_ENV, s * unroll, *v.shape[2:])
                         for k, v in batch.items() if not isinstance(v, dict)})
    seq = per_env_sequences(per_call)
    total_steps = seq["obs"].shape[1]
    assert total_steps == unroll * sum(-(-n // N_ENV) for n in sizes)
    # every env step was emitted exactly once: env steps counted by the collector == stored transitions
    assert collector.envstep == N_ENV * total_steps
    assert sum(len(e.received_actions) for e in (env.unwrapped for env in collector.env.envs)) == N_ENV * total_steps

    for i in range(N_ENV):
        for k in range(total_steps):
            obs, next_obs, reward, terminated, truncated = expected_step(i, k)
            where = f"env {i} step {k}"
            assert seq["obs"][i, k].tolist() == obs, where
            assert seq["next_obs"][i, k].tolist() == next_obs, where  # the true next state, final obs included
            assert seq["reward"][i, k].item() == reward != 0.0, where  # never a reset step's zero reward
            assert bool(seq["terminated"][i, k]) == terminated, where
            assert bool(seq["truncated"][i, k]) == truncated, where
            if k + 1 < total_steps:
                if terminated or truncated:
                    # across an episode end: next_obs is the final obs, the next row starts the new episode
                    assert seq["obs"][i, k + 1].tolist() == [i, obs[1] + 1, 0], where
                    assert seq["next_obs"][i, k].tolist() != seq["obs"][i, k + 1].tolist()
                else:
                    assert seq["obs"][i, k + 1].tolist() == seq["next_obs"][i, k].tolist(), where
    # The plan really exercises every kind of episode end.
    assert seq["terminated"][0].any() and not seq["truncated"][0].any()
    assert seq["truncated"][2].any() and not seq["terminated"][2].any()
    assert seq["truncated"][3].any() and not seq["terminated"][3].any()
    assert (seq["terminated"][4] & seq["truncated"][4]).any()


def test_stored_actions_are_the_ones_sent(collected):
    collector, batches, _ = collected
    envs = [env.unwrapped for env in collector.env.envs]
    stored = []
    for batch in batches:
        s = batch["action"].shape[0] // N_ENV
        stored.append(batch["action"].view(s, N_ENV, -1).transpose(0, 1).reshape(N_ENV, -1))
    stored = torch.cat(stored, dim=1)
    for i, env in enumerate(envs):
        assert [int(a) for a in env.received_actions] == stored[i].tolist()


def test_episode_returns_and_lengths(collected):
    collector, _, _ = collected
    steps = collector.envstep // N_ENV
    expected = []  # (end step, env index, return, length) in the order episodes end
    for i, (length, _) in enumerate(ENV_PLAN):
        ep_len = min(length, TIME_LIMIT)
        for end in range(ep_len, steps + 1, ep_len):
            expected.append((end, i, ep_len * (ep_len + 1) / 2, ep_len))
    expected.sort()
    finished = collector.episodes.pop_finished()
    assert [(e["return"], e["length"]) for e in finished] == [(r, n) for _, _, r, n in expected]
    assert collector.episodes.pop_finished() == []
    # the running episode of every env is still counted
    for i, (length, _) in enumerate(ENV_PLAN):
        ep_len = min(length, TIME_LIMIT)
        t = steps % ep_len
        assert collector.episodes.lengths[i] == t
        assert collector.episodes.returns[i] == t * (t + 1) / 2


def test_continuous_actions_clipped_for_env_but_stored_unclipped():
    venv, spec, policy, collector = make_setup(unroll_len=4, continuous=True, init_sigma=3.0)
    assert spec.action_space_type == "continuous"
    batch = collector.collect(N_ENV)
    action = batch["action"]  # (N_env, T, 2), unclipped samples of N(mu, 3)
    assert action.shape == (N_ENV, 4, 2) and action.dtype == torch.float32
    assert (action.abs() > 1).any(), "sigma=3 should sample outside the [-1, 1] box"
    assert set(batch["logit"]) == {"mu", "sigma"}
    for i, env in enumerate(venv.envs):
        sent = np.stack(env.unwrapped.received_actions)  # (T, 2)
        assert sent.shape == (4, 2)
        assert (np.abs(sent) <= 1).all()
        np.testing.assert_allclose(sent, np.clip(action[i].numpy(), -1, 1), rtol=0, atol=1e-6)
    collector.close()
