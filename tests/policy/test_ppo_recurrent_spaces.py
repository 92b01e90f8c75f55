"""PPOPolicy with the LSTM core beyond a flat observation and one Discrete action, through the real collector and
real envs: observation normalisation (CartPole), a Gaussian policy (Pendulum, cut by a short time limit), nested Dict
observations (GoalGrid), action masks (WallGrid, whose mask leaves a Dict observation) and MultiDiscrete actions.

For each, GAE at collection equals a reference computed from one learner-style replay of the whole segment (the
values after a truncation and after the unroll's last step as rows that continue from the state after that step,
before its reset: ``model.forward_unroll``'s extra rows), and the learner's replay of the stored unrolls (from their
initial states, with the resets of acting, on the observations normalised as the learner sees them, re-masked with
the stored masks) reproduces the collector's log-probabilities and values, so the first minibatch of an update is
on-policy: approximate KL 0, nothing clipped. With ``normalize_obs`` this holds for the second collection too, after
the statistics moved with the first update.
"""
import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch
from test_ppo import reference_gae

import ding_lite.model  # noqa: F401  (registers the models)
from ding_lite.config import compile_config
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvSpec, make_vector_env
from ding_lite.policy import PPOPolicy
from ding_lite.torch_utils import make_dist, tree_cat
from ding_lite.torch_utils.tree import tree_map
from ding_lite.utils import ENV_REGISTRY
from ding_lite.worker import SampleCollector


class TwoHeadsEnv(gym.Env):
    """MultiDiscrete([3, 2]) actions on a random 3-dim observation; reward 1 when the heads pick (0, 1); an episode
    ends by termination after a (1, 0) action, else by truncation after 5 steps."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.MultiDiscrete([3, 2])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        a = tuple(int(x) for x in action)
        return self.observation_space.sample(), float(a == (0, 1)), a == (1, 0), self.t >= 5, {}


if "test_ppo_lstm_two_heads" not in ENV_REGISTRY:
    ENV_REGISTRY.register("test_ppo_lstm_two_heads", TwoHeadsEnv)

N_ENV, T = 3, 8
MODEL = dict(core="lstm", core_size=8, encoder_hidden_size_list=[16], actor_head_hidden_size=16,
             critic_head_hidden_size=16)
CASES = {  # name -> env section
    "normalize_obs": dict(env_id="CartPole-v1", normalize_obs=True),
    "gaussian": dict(env_id="Pendulum-v1", max_episode_steps=5),
    "nested": dict(type="goal_grid", kwargs=dict(nesting="nested", max_steps=6)),
    "action_mask": dict(type="wall_grid", action_mask_key="action_mask", kwargs=dict(maze="open", max_steps=6)),
    "multi_discrete": dict(type="test_ppo_lstm_two_heads"),
}


def make_policy(name, share_encoder=True, **learn):
    env = dict(collector_env_num=N_ENV, manager=dict(type="base"), **CASES[name])
    main = dict(env=env, policy=dict(unroll_len=T, model=dict(MODEL, share_encoder=share_encoder),
                                     learn=dict(batch_size=N_ENV, **learn), collect=dict(n_sample=N_ENV),
                                     other=dict(replay_buffer=dict(replay_buffer_size=N_ENV))))
    create = dict(env=dict(type=env.pop("type", "gym")), policy=dict(type="ppo"))
    cfg = compile_config((main, create))
    venv = make_vector_env(cfg.env, N_ENV, seed=0)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(venv.single_observation_space, venv.single_action_space))
    torch.manual_seed(0)
    return venv, PPOPolicy(cfg.policy)


def replay(policy, samples):
    """The learner's view of a batch of unrolls (B, T, ...): log pi(a_t|x_t) and V(x_t), (B, T), from the model's
    replay of the normalised observations from the stored initial states, masked with the stored masks."""
    B = samples["done"].shape[0]
    obs = tree_map(lambda x: x.transpose(0, 1).flatten(0, 1), policy._normalized(samples["obs"]))
    with torch.no_grad():
        out = policy.model.forward_unroll(obs, samples["core_state"][:, 0], samples["done"].t())
    mask = samples.get("action_mask")
    mask = None if mask is None else mask.transpose(0, 1).flatten(0, 1)
    action = samples["action"].transpose(0, 1).flatten(0, 1)
    logp = make_dist(policy.cfg.action_space, out["logit"], policy._nvec, mask).log_prob(action)
    return logp.view(T, B).t(), out["value"].view(T, B).t()


def reference_advantages(policy, seg):
    """GAE of a collected segment (T, N, ...) from one replay of it: V(x_t) of every step, and V(next_obs_t) where
    the trace is cut without a termination, each from the state after step t before its reset; (N, T)."""
    cfg = policy.cfg.learn
    terminated, truncated = seg["terminated"], seg["truncated"]
    Ts, N = terminated.shape
    cut = truncated & ~terminated
    cut[-1] = ~terminated[-1]
    t, n = cut.nonzero(as_tuple=True)
    obs = tree_map(lambda x: x.flatten(0, 1), policy._normalized(seg["obs"]))  # rows t*N + n
    rows = tree_cat([obs, policy._normalized(tree_map(lambda x: x[t, n], seg["next_obs"]))])
    with torch.no_grad():
        out = policy.model.forward_unroll(rows, seg["core_state"][0], terminated | truncated, t * N + n)
    value = out["value"][:Ts * N].view(Ts, N)
    next_value = torch.zeros(Ts, N)
    next_value[t, n] = out["value"][Ts * N:]
    return torch.tensor([reference_gae(seg["reward"][:, i].tolist(), value[:, i].tolist(), next_value[:, i].tolist(),
                                       terminated[:, i].tolist(), truncated[:, i].tolist(), cfg.discount_factor,
                                       cfg.gae_lambda) for i in range(N)])


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("share_encoder", [True, False])
def test_gae_and_the_learners_replay_match_the_collector(name, share_encoder):
    venv, policy = make_policy(name, share_encoder, epochs=1, minibatch_size=10_000, clip_ratio=1e-4,
                               learning_rate=0.01)
    segments = []
    get_train_sample = policy.collect_mode.get_train_sample
    mode = dataclasses.replace(policy.collect_mode,
                               get_train_sample=lambda seg: (segments.append(seg), get_train_sample(seg))[1])
    collector = SampleCollector(venv, mode)
    try:
        for _ in range(2):  # the second collection starts mid-episode, from a carried state and moved statistics
            samples = collector.collect(N_ENV)
            torch.testing.assert_close(samples["advantage"], reference_advantages(policy, segments[-1]),
                                       rtol=1e-5, atol=1e-5)
            policy.update_obs_stats(samples)  # where the training loop calls it: at the samples' arrival
            assert samples["core_state"].shape == (N_ENV, 1, *policy.model.state_shape)
            logp, value = replay(policy, samples)
            torch.testing.assert_close(logp, samples["logp"], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(value, samples["value"], rtol=1e-5, atol=1e-5)
            info = policy.learn_mode.forward(samples)
            assert abs(float(info["approx_kl"])) < 1e-5 and float(info["clip_fraction"]) == 0.0, info
    finally:
        collector.close()
    assert samples["done"].any(), "the unrolls should cross episode ends"
    assert samples["core_state"].abs().sum() > 0
    if name == "normalize_obs":
        assert policy.model.obs_normalizer.count == 2 * N_ENV * T  # both collections merged, after their updates
    if name == "gaussian":
        assert samples["action"].shape == (N_ENV, T, 1) and samples["logp"].shape == (N_ENV, T)
    if name == "multi_discrete":
        assert samples["action"].shape == (N_ENV, T, 2) and samples["logp"].shape == (N_ENV, T)
    if name == "nested":
        assert set(samples["obs"]) == {"agent", "goal"} and set(samples["obs"]["agent"]) == {"position", "walls"}
    if name == "action_mask":
        assert set(samples["obs"]) == {"position"} and samples["action_mask"].shape == (N_ENV, T, 4)
        assert samples["action_mask"].gather(-1, samples["action"][..., None]).all()  # only valid moves taken
        assert not samples["action_mask"].all()  # and some were not valid
