"""IMPALA and ACER with a recurrent core, through the real collector and evaluator on an env whose episodes end by
termination, by truncation (TimeLimit, and the env's own) and by both at once:

* the learner's replay of each sampled unroll, from its stored initial state with resets at episode ends,
  reproduces exactly what the collector computed step by step (the behaviour logits it stored);
* the rows the targets bootstrap from (x_T, a truncated episode's true final observation) continue from the state
  before the reset, in both observation layouts ('full', 'compact');
* the collector and the evaluator zero the state of exactly the envs whose episode ended, and only those;
* IMPALA's update with the core trains (finite, changes every LSTM weight).
"""
import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

import ding_lite.model  # noqa: F401  (registers the models)
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvConfig, EnvSpec, make_vector_env
from ding_lite.policy import ACERPolicy, IMPALAPolicy
from ding_lite.policy.base_policy import CollectMode, EvalMode
from ding_lite.utils import ENV_REGISTRY
from ding_lite.worker import Evaluator, SampleCollector

TIME_LIMIT = 5
# Per env (its reset seed): (episode length, how it ends): terminate after 2, 3; the env truncates after 4; TimeLimit
# truncates the 9-step one at 5; env 4 terminates exactly at the time limit (terminated and truncated).
PLAN = ((2, "term"), (3, "term"), (4, "trunc"), (9, "term"), (5, "term"))
N_ENV = len(PLAN)


class PlanEnv(gym.Env):
    """obs = [env index, episode id, t, noise]; the env index is the seed of the first reset."""

    def __init__(self, continuous=False):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32) if continuous else gym.spaces.Discrete(3)
        self.idx, self.episode, self.t = 0, -1, 0

    def _obs(self):
        return np.array([self.idx, self.episode, self.t, 1.0 + np.sin(7 * self.t + self.idx)], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.idx, self.episode = int(seed), -1
        self.episode += 1
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        length, kind = PLAN[self.idx]
        end = self.t >= length
        reward = float(np.sum(action)) if np.ndim(action) else float(action == 1)
        return self._obs(), reward, kind == "term" and end, kind == "trunc" and end, {}


ENV_NAME = "test_policy_recurrent_plan_env"
if ENV_NAME not in ENV_REGISTRY:
    ENV_REGISTRY.register(ENV_NAME, PlanEnv)


def make_setup(policy_cls=IMPALAPolicy, obs_storage="full", share_encoder=True, unroll_len=4, continuous=False):
    env_cfg = EnvConfig.default_config()
    env_cfg.update(type=ENV_NAME, max_episode_steps=TIME_LIMIT, manager=dict(type="base"),
                   kwargs=dict(continuous=continuous))
    pol = policy_cls.default_config()
    pol.unroll_len = unroll_len
    pol.obs_storage = obs_storage
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_hidden_size_list=[16], share_encoder=share_encoder, core="lstm", core_size=8)
    cfg = EasyDict(env=env_cfg, policy=pol)
    venv = make_vector_env(cfg.env, N_ENV, seed=0)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(venv.single_observation_space, venv.single_action_space))
    torch.manual_seed(0)
    policy = policy_cls(cfg.policy)
    return venv, policy, cfg


def collect(policy, venv, segments=4):
    collector = SampleCollector(venv, policy.collect_mode)
    samples = collector.collect(segments * N_ENV)
    return collector, samples


def learner_pass(policy, batch):
    if isinstance(policy, IMPALAPolicy):
        return policy._forward_unroll(batch, "compute_actor_critic"), "value"
    return policy._model(batch.model_in, mode="compute_actor_critic", **policy._replay_kwargs(batch)), "q_value"


CASES = [(cls, storage, share) for cls in (IMPALAPolicy, ACERPolicy) for storage in ("full", "compact")
         for share in (True, False)]


@pytest.mark.parametrize("policy_cls,storage,share", CASES)
def test_learner_replay_reproduces_the_collectors_outputs(policy_cls, storage, share):
    venv, policy, _ = make_setup(policy_cls, storage, share)
    collector, samples = collect(policy, venv)
    assert samples["core_state"].shape == (samples["reward"].shape[0], 1, *policy.model.state_shape)
    assert ("final_obs" in samples) == (storage == "compact")
    batch = policy._unroll_batch(samples)
    with torch.no_grad():
        out, _ = learner_pass(policy, batch)
    # the behaviour logits were computed by the collector, one vector step at a time, with the carried state
    torch.testing.assert_close(batch.steps(out["logit"]), batch.data["logit"], rtol=1e-5, atol=1e-6)
    # the episode ends really are inside the unrolls (the test would prove little otherwise)
    assert batch.done.any(0).float().mean() > 0.5 and batch.bootstrapped.any()
    collector.close()


@pytest.mark.parametrize("policy_cls", [IMPALAPolicy, ACERPolicy])
@pytest.mark.parametrize("share", [True, False])
def test_continuous_actions_replay_the_collectors_gaussians(policy_cls, share):
    """Gaussian policies: IMPALA's pass, and ACER's actor-then-critic pass (the stochastic dueling network) with
    the policy's own replay arguments, reproduce the collector's mu and sigma."""
    venv, policy, _ = make_setup(policy_cls, "full", share, continuous=True)
    collector, samples = collect(policy, venv)
    batch = policy._unroll_batch(samples)
    with torch.no_grad():
        if policy_cls is IMPALAPolicy:
            logit = policy._forward_unroll(batch)["logit"]
        else:
            zeros = lambda logit: torch.zeros(1, batch.model_in.shape[0], 2)  # noqa: E731
            logit = policy.model.compute_actor_then_critic(batch.model_in, zeros, **policy._replay_kwargs(batch))["logit"]
    for key in ("mu", "sigma"):
        torch.testing.assert_close(batch.steps(logit[key]), batch.data["logit"][key], rtol=1e-5, atol=1e-6)
    collector.close()


@pytest.mark.parametrize("policy_cls,storage,share", CASES)
def test_bootstrap_rows_continue_from_the_state_before_the_reset(policy_cls, storage, share):
    """Reference: each unroll stepped alone from its stored state; the value (IMPALA) or Q (ACER) of x_T and of
    every truncated step's final observation from the state right after that step, before its reset."""
    venv, policy, _ = make_setup(policy_cls, storage, share)
    collector, samples = collect(policy, venv)
    batch = policy._unroll_batch(samples)
    model = policy.model
    with torch.no_grad():
        out, key = learner_pass(policy, batch)
        T, B = batch.T, batch.B
        data = batch.data
        next_obs = data["next_obs"] if "next_obs" in data else None
        for b in range(B):
            state = data["core_state"][0, b:b + 1]
            for t in range(T):
                step = model(data["obs"][t, b:b + 1], mode="compute_actor_critic", state=state)
                after = step["state"]
                if bool(batch.bootstrapped[t, b]):
                    final = next_obs[t, b:b + 1] if next_obs is not None else (
                        data["obs"][T, b:b + 1] if t == T - 1 else data["final_obs"][0, b:b + 1])
                    want = model(final, mode="compute_actor_critic", state=after)[key]
                    k = int(torch.nonzero((batch.boot_index == t * B + b)).flatten()[0])
                    torch.testing.assert_close(batch.finals(out[key])[k], want[0], rtol=1e-5, atol=1e-6)
                if t == T - 1:
                    last = next_obs[t, b:b + 1] if next_obs is not None else data["obs"][T, b:b + 1]
                    want = model(last, mode="compute_actor_critic", state=after)[key]
                    torch.testing.assert_close(batch.last(out[key])[b], want[0], rtol=1e-5, atol=1e-6)
                state = after * (0.0 if bool(batch.done[t, b]) else 1.0)
    assert batch.bootstrapped[:-1].any()  # a truncation inside an unroll, not only at its last step
    collector.close()


def test_collector_zeroes_the_state_of_exactly_the_envs_that_finished():
    venv, policy, _ = make_setup()
    calls = []
    mode = policy.collect_mode

    def reset(env_ids):
        calls.append(env_ids)
        mode.reset(env_ids)
    collector = SampleCollector(venv, CollectMode(mode.forward, mode.process_transition, mode.get_train_sample,
                                                  reset, mode.unroll_len, mode.action_bound))
    for step in range(12):
        before = len(calls)
        prev = None if policy._collect_state is None else policy._collect_state.clone()
        collector.step()
        t = step + 1  # steps taken by every env so far
        ended = [i for i, (length, _) in enumerate(PLAN) if t % min(length, TIME_LIMIT) == 0]
        state = policy._collect_state
        assert prev is None or prev.shape == state.shape
        if ended:
            assert calls[before:] == [ended]
        else:
            assert len(calls) == before
        for i in range(N_ENV):
            assert state[i].eq(0).all() == (i in ended), (step, i)
    collector.close()


def test_evaluator_zeroes_the_state_of_exactly_the_envs_that_finished():
    venv, policy, cfg = make_setup()
    eval_env = make_vector_env(cfg.env, N_ENV, seed=0, role="evaluator")
    mode = policy.eval_mode
    seen = []

    def forward(obs):
        out = mode.forward(obs)
        seen.append((obs[:, 2].clone(), out["core_state"].clone()))  # obs[:, 2]: the step within the episode
        return out
    evaluator = Evaluator(eval_env, EvalMode(forward, mode.reset, mode.action_bound), n_episode=2 * N_ENV,
                          eval_freq=1)
    result = evaluator.eval(0)
    assert result["episodes"] == 2 * N_ENV
    for t_in_episode, state in seen:  # the state is zero exactly at an episode's first step, env by env
        first = t_in_episode == 0
        assert torch.equal(state.flatten(1).eq(0).all(1), first)
    assert sum(int((t == 0).sum()) for t, _ in seen) > 2 * N_ENV  # resets inside the evaluation, not only at start
    evaluator.close()
    venv.close()


def test_impala_update_with_the_core_trains():
    venv, policy, _ = make_setup()
    collector, samples = collect(policy, venv)
    before = {k: v.clone() for k, v in policy.model.state_dict().items()}
    info = policy.learn_mode.forward(samples)
    assert all(torch.isfinite(torch.as_tensor(v)).all() for v in info.values())
    changed = [k for k, v in policy.model.state_dict().items() if not torch.equal(v, before[k])]
    assert "core.gates.weight" in changed and "core.gates.bias" in changed
    collector.close()


def test_acting_refuses_a_carried_state_of_another_number_of_envs():
    venv, policy, _ = make_setup()
    policy.collect_mode.forward(torch.zeros(N_ENV, 4))
    with pytest.raises(Exception, match="reset"):
        policy.collect_mode.forward(torch.zeros(2, 4))
    policy.collect_mode.reset(None)
    assert policy.collect_mode.forward(torch.zeros(2, 4))["core_state"].eq(0).all()
    venv.close()
