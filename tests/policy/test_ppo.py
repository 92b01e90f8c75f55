"""PPOPolicy: GAE at collection across a truncation and a termination, epochs x minibatches over each batch, the
target_kl early stop, the on-policy data path of the serial pipeline, Gaussian actions and config validation."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict
from torch import nn

import ding_lite.model  # noqa: F401  (registers 'vac')
from ding_lite.config import compile_config
from ding_lite.entry import serial_pipeline
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvSpec
from ding_lite.policy import PPOPolicy
from ding_lite.policy.ppo import explained_variance
from ding_lite.utils import ConfigError

OBS_DIM = 3
SPACES = {"discrete": gym.spaces.Discrete(2), "continuous": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)}


def make_cfg(action_space="discrete", **learn):
    pol = PPOPolicy.default_config()
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_hidden_size_list=[16])
    pol.learn.update(learn)
    cfg = EasyDict(env=EasyDict(env_id=None, type="test", normalize_obs=False), policy=pol)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32),
                                                SPACES[action_space]))
    return cfg


def make_policy(action_space="discrete", seed=0, model=None, enable_field=("learn", "collect", "eval"), **learn):
    torch.manual_seed(seed)
    return PPOPolicy(make_cfg(action_space, **learn).policy, model=model, enable_field=enable_field)


def random_batch(B, T, space="discrete", seed=0):
    """A batch as the buffer returns it, leaves (B, T, ...); ``advantage`` numbers the steps 0 .. B*T-1."""
    g = torch.Generator().manual_seed(seed)
    action = torch.randint(2, (B, T), generator=g) if space == "discrete" else torch.randn(B, T, 2, generator=g)
    value = torch.randn(B, T, generator=g)
    return {"obs": torch.randn(B, T, OBS_DIM, generator=g), "action": action,
            "logp": -torch.rand(B, T, generator=g) - 0.5, "value": value,
            "advantage": torch.arange(B * T, dtype=torch.float32).view(B, T), "return": value + 1.0}


# ------------------------------------------------------------------------------------------ GAE at collection
class SumCritic(nn.Module):
    """V(x) = sum(x), uniform logits over 2 actions; counts the rows the critic is asked for."""

    def __init__(self):
        super().__init__()
        self.critic_rows = 0

    def forward(self, obs, mode="compute_actor_critic"):
        out = {}
        if mode in ("compute_actor", "compute_actor_critic"):
            out["logit"] = torch.zeros(*obs.shape[:-1], 2)
        if mode in ("compute_critic", "compute_actor_critic"):
            out["value"] = obs.sum(-1)
            if mode == "compute_critic":
                self.critic_rows += obs.shape[0]
        return out


def reference_gae(reward, value, next_value, terminated, truncated, gamma, lam):
    """GAE one env at a time, (T,) each, written from the rules: the value after step t is 0 after a termination,
    V(final obs) after a truncation or the unroll's last step, V(x_{t+1}) otherwise; the trace is cut at an end."""
    T = len(reward)
    adv, running = [0.0] * T, 0.0
    for t in reversed(range(T)):
        end = terminated[t] or truncated[t] or t == T - 1
        after = 0.0 if terminated[t] else (next_value[t] if end else value[t + 1])
        delta = reward[t] + gamma * after - value[t]
        running = delta + gamma * lam * (0.0 if end else running)
        adv[t] = running
    return adv


def test_gae_bootstraps_at_truncation_and_unroll_end_not_at_termination():
    gamma, lam = 0.9, 0.8
    critic = SumCritic()
    policy = make_policy(model=critic, enable_field=("collect",), discount_factor=gamma, gae_lambda=lam)
    T, N = 4, 2
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(T, N, 1, generator=g)
    next_obs = torch.cat([obs[1:], torch.randn(1, N, 1, generator=g)])
    terminated = torch.zeros(T, N, dtype=torch.bool)
    truncated = torch.zeros(T, N, dtype=torch.bool)
    truncated[1, 0] = True  # env 0: a time limit at t=1; next_obs[1, 0] is its true final observation
    next_obs[1, 0] = 7.0
    terminated[2, 1] = True  # env 1: a terminal state at t=2 (whatever next_obs holds is never read)
    next_obs[2, 1] = float("nan")
    terminated[3, 1] = truncated[3, 1] = True  # and both at t=3: terminated, no bootstrap
    next_obs[3, 1] = float("nan")
    reward = torch.randn(T, N, generator=g)
    action = torch.randint(2, (T, N), generator=g)
    segment = {"obs": obs, "next_obs": next_obs, "action": action, "reward": reward, "terminated": terminated,
               "truncated": truncated, "logit": torch.zeros(T, N, 2), "value": obs.sum(-1)}
    sample = policy.collect_mode.get_train_sample(segment)
    assert set(sample) == {"obs", "action", "logp", "value", "advantage", "return"}
    assert sample["obs"].shape == (N, T, 1) and sample["advantage"].shape == (N, T)
    assert critic.critic_rows == 2  # V(final obs) of env 0's truncation and V(x_T) of env 0 (env 1 terminated)
    value, next_value = obs.sum(-1), next_obs.sum(-1)
    for n in range(N):
        want = reference_gae(reward[:, n].tolist(), value[:, n].tolist(), next_value[:, n].tolist(),
                             terminated[:, n].tolist(), truncated[:, n].tolist(), gamma, lam)
        torch.testing.assert_close(sample["advantage"][n], torch.tensor(want))
    torch.testing.assert_close(sample["return"], sample["advantage"] + value.T)
    torch.testing.assert_close(sample["logp"], torch.full((N, T), -math.log(2)))
    assert torch.equal(sample["action"], action.T) and torch.equal(sample["value"], value.T)


# ------------------------------------------------------------------------------------------ the learn step
@pytest.mark.parametrize("n_steps,minibatch_size,sizes", [(32, 10, [8, 8, 8, 8]), (32, 32, [32]),
                                                          (32, 7, [7, 7, 6, 6, 6])])
def test_each_epoch_covers_every_step_once_in_minibatches(n_steps, minibatch_size, sizes, monkeypatch):
    policy = make_policy(epochs=3, minibatch_size=minibatch_size)
    seen = []
    update = policy._update
    monkeypatch.setattr(policy, "_update", lambda mb: (seen.append(mb["advantage"].clone()), update(mb))[1])
    info = policy.learn_mode.forward(random_batch(4, n_steps // 4))
    per_epoch = len(sizes)
    assert len(seen) == 3 * per_epoch and info["epochs"] == 3
    assert sorted(len(s) for s in seen[:per_epoch]) == sorted(sizes)
    for epoch in range(3):
        ids = torch.cat(seen[epoch * per_epoch:(epoch + 1) * per_epoch])
        assert sorted(ids.long().tolist()) == list(range(n_steps))  # every step once per epoch
    assert not torch.equal(torch.cat(seen[:per_epoch]), torch.cat(seen[per_epoch:2 * per_epoch]))  # reshuffled


def test_learn_info_and_monitored_names():
    policy = make_policy()
    info = policy.learn_mode.forward(random_batch(4, 8))
    names = {"cur_lr", "total_loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction",
             "grad_norm", "epochs", "explained_variance"}
    assert set(policy.learn_mode.monitor_vars()) == names and names <= set(info)
    assert all(np.isfinite(float(info[k])) for k in names)


def test_target_kl_stops_the_remaining_epochs():
    batch = random_batch(4, 16)
    assert make_policy(epochs=6, minibatch_size=16, learning_rate=0.05).learn_mode.forward(batch)["epochs"] == 6
    policy = make_policy(epochs=6, minibatch_size=16, learning_rate=0.05, target_kl=1e-6)
    info = policy.learn_mode.forward(batch)
    assert info["epochs"] == 1 and float(info["approx_kl"]) > 1e-6
    assert make_policy(epochs=6, minibatch_size=16, target_kl=1e9).learn_mode.forward(batch)["epochs"] == 6


def test_first_minibatch_is_on_policy_ratio_one():
    """With logp recorded by the collecting policy, the first update sees ratio 1: no clipping, KL 0."""
    policy = make_policy(epochs=1, minibatch_size=64)
    batch = random_batch(4, 16)
    with torch.no_grad():
        logit = policy.model(batch["obs"].view(-1, OBS_DIM), mode="compute_actor")["logit"].view(4, 16, 2)
    batch["logp"] = torch.distributions.Categorical(logits=logit).log_prob(batch["action"])
    info = policy.learn_mode.forward(batch)
    assert float(info["approx_kl"]) < 1e-6 and float(info["clip_fraction"]) == 0.0


def test_explained_variance():
    r = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert float(explained_variance(r, r)) == 1.0
    assert float(explained_variance(torch.full((4,), 2.5), r)) == 0.0
    assert float(explained_variance(r, torch.ones(4))) == 0.0  # constant returns: 0, not NaN


def test_gaussian_actions_with_state_independent_std():
    policy = make_policy("continuous")
    assert policy.action_bound == "clip"  # the env gets actions clipped to its Box; the sample keeps the draw
    obs = torch.randn(5, OBS_DIM)
    out = policy.collect_mode.forward(obs)
    assert out["action"].shape == (5, 2) and out["value"].shape == (5,)
    sigma = out["logit"]["sigma"]
    assert torch.equal(sigma, sigma[:1].expand(5, 2))  # one log std for every state
    assert torch.equal(policy.eval_mode.forward(obs)["action"], out["logit"]["mu"])
    before = policy.model.log_sigma.detach().clone()
    info = policy.learn_mode.forward(random_batch(4, 8, "continuous"))
    assert np.isfinite(float(info["total_loss"])) and not torch.equal(before, policy.model.log_sigma)


# ------------------------------------------------------------------------------------------ config
def compile_ppo(**policy):
    return compile_config(dict(env=dict(env_id="CartPole-v1"), policy=policy), dict(policy=dict(type="ppo")))


def test_defaults_compile_and_keep_the_on_policy_contract():
    cfg = compile_ppo()
    assert cfg.policy.learn.batch_size == cfg.policy.collect.n_sample and cfg.policy.learn.update_per_collect == 1
    buffer = cfg.policy.other.replay_buffer
    assert (buffer.replacement, buffer.max_staleness, buffer.max_use) == (False, 0, 1)


def test_misspelt_key_names_the_right_one():
    with pytest.raises(ConfigError, match="epochs"):
        compile_ppo(learn=dict(epoch=3))
    with pytest.raises(ConfigError, match="target_kl"):
        compile_ppo(learn=dict(target_kld=0.01))


@pytest.mark.parametrize("policy,match", [
    (dict(learn=dict(batch_size=4)), "learn.batch_size=4: PPO is on-policy"),
    (dict(learn=dict(update_per_collect=4)), "learn.update_per_collect=4"),
    (dict(other=dict(replay_buffer=dict(replacement=True))), "replacement=True"),
    (dict(other=dict(replay_buffer=dict(max_staleness=float("inf")))), "max_staleness=inf"),
    (dict(other=dict(replay_buffer=dict(max_use=4))), "max_use=4"),
    (dict(collect=dict(n_sample=16), learn=dict(batch_size=16)), "replay_buffer_size=8: must hold"),
    (dict(learn=dict(gae_lambda=1.5)), "gae_lambda"),
    (dict(learn=dict(target_kl=0)), "target_kl=0"),
    (dict(learn=dict(value_clip=-1.0)), "value_clip"),
    (dict(obs_storage="compact"), "obs_storage"),
    (dict(priority=True), "does not support prioritised replay"),
])
def test_config_errors(policy, match):
    with pytest.raises(ConfigError, match=match):
        compile_ppo(**policy)


# ------------------------------------------------------------------------------------------ on-policy end to end
@pytest.mark.parametrize("n_env,n_sample", [(4, 4), (3, 4)])
def test_serial_pipeline_uses_each_collection_for_one_update_then_drops_it(n_env, n_sample, tmp_path, monkeypatch):
    """Each update's batch is n_sample distinct unrolls of the collection just made; no unroll reaches two updates
    (with 3 envs a collection has 6 unrolls: 4 are trained on, the other 2 are dropped as stale)."""
    monkeypatch.chdir(tmp_path)
    events = []
    get_train_sample, forward_learn = PPOPolicy._get_train_sample, PPOPolicy._forward_learn

    def keys(obs):  # an unroll's identity: its observations
        return [tuple(row.flatten().tolist()) for row in obs]

    def recording_sample(self, segment):
        sample = get_train_sample(self, segment)
        if sample["obs"].abs().sum() > 0:  # not the preflight's zero observation
            events.append(("collected", keys(sample["obs"])))
        return sample

    def recording_learn(self, data):
        events.append(("trained", keys(data["obs"])))
        return forward_learn(self, data)

    monkeypatch.setattr(PPOPolicy, "_get_train_sample", recording_sample)
    monkeypatch.setattr(PPOPolicy, "_forward_learn", recording_learn)
    main = dict(env=dict(env_id="CartPole-v1", collector_env_num=n_env, evaluator_env_num=1, n_evaluator_episode=1),
                policy=dict(unroll_len=8, collect=dict(n_sample=n_sample),
                            learn=dict(batch_size=n_sample, epochs=2, minibatch_size=16),
                            eval=dict(evaluator=dict(eval_freq=1000))))
    serial_pipeline((main, dict(policy=dict(type="ppo"))), seed=0, max_train_iter=5, quiet=True,
                    overrides={"torch_threads": 1})
    fresh, trained_before, updates = set(), set(), 0
    for kind, unrolls in events:
        if kind == "collected":
            fresh.update(unrolls)
            continue
        updates += 1
        assert len(unrolls) == n_sample and len(set(unrolls)) == n_sample
        assert set(unrolls) <= fresh, "an update trained on an unroll collected before the previous update"
        assert not set(unrolls) & trained_before
        trained_before.update(unrolls)
        fresh = set()
    assert updates == 5


def test_learning_rate_follows_the_schedule():
    cfg = make_cfg(learning_rate=0.01)
    cfg.policy.learn.lr_scheduler = dict(type="linear", over="train_iter", steps=4, min_lr_ratio=0.0)
    policy = PPOPolicy(cfg.policy)
    policy.learn_mode.set_counters(2, 0)
    assert policy.learn_mode.forward(random_batch(2, 8))["cur_lr"] == pytest.approx(0.005)


# ------------------------------------------------------------------------------------------ value normalisation
def test_value_norm_scales_values_for_gae_and_targets_at_the_learner():
    """learn.value_norm: GAE runs on the critic's outputs times sigma_R (reward units); the learner trains V on
    return / sigma_R with the sigma_R the collector used, then merges the batch's returns (reward units) into it."""
    gamma, lam = 0.9, 0.8
    critic = SumCritic()
    policy = make_policy(model=critic, enable_field=("collect",), discount_factor=gamma, gae_lambda=lam,
                         value_norm=True)
    scale = critic.return_scale
    scale.update(torch.tensor([0.0, 6.0]))  # Var = 9: sigma_R = 3
    torch.testing.assert_close(scale.scale(), torch.tensor(3.0))
    T, N = 3, 2
    g = torch.Generator().manual_seed(2)
    obs, next_obs = torch.randn(T, N, 1, generator=g), torch.randn(T, N, 1, generator=g)
    terminated = torch.zeros(T, N, dtype=torch.bool)
    truncated = torch.zeros(T, N, dtype=torch.bool)
    truncated[0, 1] = True
    reward = torch.randn(T, N, generator=g)
    segment = {"obs": obs, "next_obs": torch.cat([obs[1:], next_obs[-1:]]).index_put_((torch.tensor([0]),
               torch.tensor([1])), next_obs[0, 1:2]), "action": torch.zeros(T, N, dtype=torch.long),
               "reward": reward, "terminated": terminated, "truncated": truncated, "logit": torch.zeros(T, N, 2),
               "value": obs.sum(-1)}
    sample = policy.collect_mode.get_train_sample(segment)
    value, after = obs.sum(-1), segment["next_obs"].sum(-1)
    for n in range(N):  # the reference in reward units: every critic output times 3
        want = reference_gae(reward[:, n].tolist(), (3 * value[:, n]).tolist(), (3 * after[:, n]).tolist(),
                             terminated[:, n].tolist(), truncated[:, n].tolist(), gamma, lam)
        torch.testing.assert_close(sample["advantage"][n], torch.tensor(want))
    torch.testing.assert_close(sample["return"], sample["advantage"] + 3 * value.T)  # reward units
    assert torch.equal(sample["value"], value.T)  # as the critic gave it

    learner = make_policy(value_norm=True, normalize_advantage=False)
    learner._model.return_scale.update(torch.tensor([0.0, 6.0]))
    batch = random_batch(4, 8)
    seen = []
    update = learner._update
    learner._update = lambda mb: (seen.append(mb["return"].clone()), update(mb))[1]
    info = learner.learn_mode.forward(batch)
    assert sorted(torch.cat(seen[:len(seen) // learner._cfg.learn.epochs]).tolist()) == pytest.approx(
        sorted((batch["return"].flatten() / 3).tolist()))  # the targets the critic trains on: return / 3
    pooled = torch.cat([torch.tensor([0.0, 6.0]), batch["return"].flatten()]).double()
    torch.testing.assert_close(info["return_scale"], pooled.var(correction=0).add(1e-8).sqrt().float())
    assert "return_scale" in learner._monitor_vars_learn()


def test_value_norm_statistics_travel_with_the_weights():
    """sigma_R is model state: a second policy loading the state dict (a collector, -m eval, a resume) scales alike."""
    a, b = make_policy(value_norm=True, seed=0), make_policy(value_norm=True, seed=1)
    a._model.return_scale.update(torch.tensor([1.0, 5.0, 9.0]))
    b._model.load_state_dict(a._model.state_dict())
    torch.testing.assert_close(b._model.return_scale.scale(), a._model.return_scale.scale())
    assert "return_scale" not in dict(make_policy()._model.named_children())  # off by default: no extra state
