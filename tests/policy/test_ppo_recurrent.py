"""PPOPolicy with the LSTM core (``policy.model.core='lstm'``), through the real collector on an env whose episodes
end by termination, by truncation and by both at once (test_recurrent_impala.py's PlanEnv):

* collection carries each env's state and records V(x_t) from the same recurrent step; GAE's values after a
  truncation and after the unroll's last step continue from the state after that step before its reset (against a
  slow reference that steps the model one row at a time);
* the learner's replay of whole unrolls from their stored initial states reproduces the collector's log-probs and
  values, so the first minibatch of an update is on-policy (ratio 1, approximate KL 0, nothing clipped);
* minibatches are whole unrolls, every unroll once per epoch, about ``minibatch_size`` steps each.
"""
import dataclasses
import math

import pytest
import torch
from easydict import EasyDict
from test_ppo import OBS_DIM, compile_ppo, make_cfg, random_batch, reference_gae
from test_recurrent_impala import ENV_NAME, N_ENV, TIME_LIMIT

import ding_lite.model  # noqa: F401  (registers the models)
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvConfig, EnvSpec, make_vector_env
from ding_lite.policy import PPOPolicy
from ding_lite.worker import SampleCollector

CORE = 8


def make_setup(unroll_len=4, share_encoder=True, **learn):
    env_cfg = EnvConfig.default_config()
    env_cfg.update(type=ENV_NAME, max_episode_steps=TIME_LIMIT, manager=dict(type="base"))
    pol = PPOPolicy.default_config()
    pol.unroll_len = unroll_len
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_hidden_size_list=[16], share_encoder=share_encoder, core="lstm", core_size=CORE)
    pol.learn.update(learn)
    cfg = EasyDict(env=env_cfg, policy=pol)
    venv = make_vector_env(cfg.env, N_ENV, seed=0)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(venv.single_observation_space, venv.single_action_space))
    PPOPolicy.check_config(cfg.policy, "policy")
    torch.manual_seed(0)
    return venv, PPOPolicy(cfg.policy)


def test_the_core_is_accepted_by_the_config():
    assert compile_ppo(model=dict(core="lstm", core_size=16)).policy.model.core == "lstm"


@pytest.mark.parametrize("share_encoder,value_norm", [(True, False), (False, False), (True, True)])
def test_first_minibatch_is_on_policy_with_the_core(share_encoder, value_norm):
    """The learner replays each unroll from its stored initial state with the collector's resets: its log-probs and
    values are the collector's, so the first (here the only) minibatch has ratio 1: approx_kl 0, nothing clipped."""
    venv, policy = make_setup(share_encoder=share_encoder, epochs=1, minibatch_size=10_000, value_norm=value_norm,
                              clip_ratio=1e-4)
    collector = SampleCollector(venv, policy.collect_mode)
    collector.collect(N_ENV)  # the second collection starts mid-episode, from a non-zero carried state
    samples = collector.collect(2 * N_ENV)
    collector.close()
    B, T = samples["done"].shape
    assert samples["core_state"].shape == (B, 1, *policy.model.state_shape)
    assert samples["core_state"].abs().sum() > 0 and samples["done"].any(1).float().mean() > 0.5
    with torch.no_grad():
        out = policy.model.forward_unroll(samples["obs"].transpose(0, 1).flatten(0, 1),
                                          samples["core_state"][:, 0], samples["done"].t())
    torch.testing.assert_close(out["value"].view(T, B).t(), samples["value"], rtol=1e-5, atol=1e-6)
    replayed_logp = torch.distributions.Categorical(logits=out["logit"].view(T, B, -1).transpose(0, 1)).log_prob(
        samples["action"])
    torch.testing.assert_close(replayed_logp, samples["logp"], rtol=1e-5, atol=1e-6)
    info = policy.learn_mode.forward(samples)
    assert abs(float(info["approx_kl"])) < 1e-6 and float(info["clip_fraction"]) == 0.0, info


def test_gae_with_the_core_continues_from_the_state_before_the_reset():
    """GAE at collection against a slow reference that steps the model one env and one step at a time: V(x_t) from
    the carried state, zeroed after an episode's end; the value after a truncation and after the unroll's last step
    from the state after that step, before the reset; no bootstrap after a termination."""
    gamma, lam, T = 0.9, 0.8, 8
    venv, policy = make_setup(unroll_len=T, discount_factor=gamma, gae_lambda=lam)
    segments = []
    get_train_sample = policy.collect_mode.get_train_sample
    mode = dataclasses.replace(policy.collect_mode,
                               get_train_sample=lambda seg: (segments.append(seg), get_train_sample(seg))[1])
    collector = SampleCollector(venv, mode)
    sample = collector.collect(N_ENV)
    collector.close()
    seg = segments[0]
    terminated, truncated = seg["terminated"], seg["truncated"]
    assert (truncated & ~terminated)[:-1].any() and terminated.any() and (terminated & truncated).any()
    model = policy.model
    with torch.no_grad():
        for n in range(N_ENV):
            state = model.initial_state(1)
            values, next_values = [], []
            for t in range(T):
                out = model(seg["obs"][t, n][None], mode="compute_critic", state=state)
                values.append(float(out["value"]))
                cut = bool(terminated[t, n] or truncated[t, n]) or t == T - 1
                after = 0.0
                if cut and not terminated[t, n]:  # from the state after step t, before any reset
                    after = float(model(seg["next_obs"][t, n][None], mode="compute_critic",
                                        state=out["state"])["value"])
                next_values.append(after)
                state = out["state"] * (0.0 if terminated[t, n] or truncated[t, n] else 1.0)
            torch.testing.assert_close(sample["value"][n], torch.tensor(values), rtol=1e-5, atol=1e-6)
            want = reference_gae(seg["reward"][:, n].tolist(), values, next_values, terminated[:, n].tolist(),
                                 truncated[:, n].tolist(), gamma, lam)
            torch.testing.assert_close(sample["advantage"][n], torch.tensor(want), rtol=1e-5, atol=1e-5)
    assert torch.equal(sample["done"], (terminated | truncated).t())
    assert torch.equal(sample["core_state"], seg["core_state"][:1].transpose(0, 1))


@pytest.mark.parametrize("minibatch_size,unrolls", [(8, [2, 2, 2]), (10, [2, 2, 2]), (1, [1] * 6), (100, [6]),
                                                    (16, [3, 3])])
def test_minibatches_are_whole_unrolls(minibatch_size, unrolls, monkeypatch):
    """B=6 unrolls of T=4 steps: each epoch splits the shuffled unrolls into min(B, ceil(B*T / minibatch_size))
    minibatches; each minibatch holds whole unrolls, time-major (row t*b + j), with their initial states, ends and
    action masks."""
    B, T, epochs = 6, 4, 3
    cfg = make_cfg(epochs=epochs, minibatch_size=minibatch_size)
    cfg.policy.model.update(core="lstm", core_size=CORE)
    torch.manual_seed(0)
    policy = PPOPolicy(cfg.policy)
    batch = random_batch(B, T)
    g = torch.Generator().manual_seed(3)
    batch["core_state"] = torch.randn(B, 1, 2, CORE, generator=g)
    batch["done"] = torch.rand(B, T, generator=g) < 0.3
    batch["action_mask"] = torch.ones(B, T, 2, dtype=torch.bool)  # an action mask travels with its steps
    batch["action_mask"][..., 1] = batch["action"] == 1
    seen = []
    update = policy._update
    monkeypatch.setattr(policy, "_update", lambda mb: (seen.append({k: v.clone() for k, v in mb.items()}),
                                                       update(mb))[1])
    info = policy.learn_mode.forward(batch)
    assert info["epochs"] == epochs and len(seen) == epochs * len(unrolls)
    for epoch in range(epochs):
        ids = []
        for mb in seen[epoch * len(unrolls):(epoch + 1) * len(unrolls)]:
            b = mb["core_state"].shape[0]
            steps = mb["advantage"].long().view(T, b)  # the step numbers b*T + t, time-major
            cols = (steps[0] // T).tolist()
            assert torch.equal(steps, torch.tensor(cols)[None] * T + torch.arange(T)[:, None])  # whole unrolls
            assert torch.equal(mb["core_state"], batch["core_state"][cols, 0])
            assert torch.equal(mb["done"], batch["done"][cols].t())
            assert mb["obs"].shape == (T * b, OBS_DIM)
            assert torch.equal(mb["action_mask"], batch["action_mask"][cols].transpose(0, 1).flatten(0, 1))
            ids += cols
        assert sorted(ids) == list(range(B))  # every unroll once per epoch
    assert sorted(mb["core_state"].shape[0] for mb in seen[:len(unrolls)]) == sorted(unrolls)
    assert len(unrolls) == min(B, math.ceil(B * T / minibatch_size))


def test_target_kl_stops_the_epochs_with_the_core():
    """The early stop reads each epoch's minibatches of whole unrolls: a tiny target_kl stops after the first epoch
    (its later minibatches are off-policy), none runs every epoch."""
    B, T = 6, 4
    for target_kl, want in ((1e-9, 1), (None, 5)):
        cfg = make_cfg(epochs=5, minibatch_size=8, learning_rate=0.01, target_kl=target_kl)
        cfg.policy.model.update(core="lstm", core_size=CORE)
        torch.manual_seed(0)
        batch = random_batch(B, T)
        batch["core_state"] = torch.zeros(B, 1, 2, CORE)
        batch["done"] = torch.zeros(B, T, dtype=torch.bool)
        assert PPOPolicy(cfg.policy).learn_mode.forward(batch)["epochs"] == want
