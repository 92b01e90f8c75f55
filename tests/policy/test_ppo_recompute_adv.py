"""PPO's ``learn.recompute_adv`` on real CartPole batches whose unrolls hold a truncation (a short time limit) and a
termination (and unrolls with several truncations): before the second epoch the values, advantages and returns the minibatches see equal a slow reference
(the critic after the first epoch called one observation at a time, and test_ppo's explicit GAE loop), with and without
value_norm and observation normalisation; the first epoch is the one without the option; off (the default), the
samples keep no more than before."""
import copy
import dataclasses

import pytest
import torch
from test_ppo import compile_ppo, reference_gae

import ding_lite.model  # noqa: F401  (registers 'vac')
from ding_lite.config import compile_config
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvSpec, make_vector_env
from ding_lite.policy import PPOPolicy
from ding_lite.utils import ConfigError
from ding_lite.worker import SampleCollector

N_ENV, TIME_LIMIT, UNROLL = 4, 20, 16
BASE_KEYS = {"obs", "action", "logp", "value", "advantage", "return"}
RECOMPUTE_KEYS = {"reward", "terminated", "truncated", "boot_obs"}  # what the option adds


def make_policy(unroll_len=UNROLL, time_limit=TIME_LIMIT, normalize_obs=False, seed=0, **learn):
    main = dict(env=dict(env_id="CartPole-v1", max_episode_steps=time_limit, collector_env_num=N_ENV,
                         normalize_obs=normalize_obs),
                policy=dict(unroll_len=unroll_len, collect=dict(n_sample=N_ENV),
                            model=dict(encoder_hidden_size_list=[16]),
                            learn=dict(batch_size=N_ENV, learning_rate=0.01, **learn)))
    cfg = compile_config(main, dict(env=dict(type="gym"), policy=dict(type="ppo")))
    venv = make_vector_env(cfg.env, N_ENV, seed=seed)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(venv.single_observation_space, venv.single_action_space))
    torch.manual_seed(seed)
    return venv, PPOPolicy(cfg.policy)


def collect(venv, policy, collections=2):
    """The samples of the last of ``collections`` collections and its raw time-major segment (T, N, ...)."""
    segments = []
    get_train_sample = policy.collect_mode.get_train_sample
    mode = dataclasses.replace(policy.collect_mode,
                               get_train_sample=lambda seg: (segments.append(seg), get_train_sample(seg))[1])
    collector = SampleCollector(venv, mode)
    for _ in range(collections):
        samples = collector.collect(N_ENV)
        policy.update_obs_stats(samples)
    collector.close()
    return samples, segments[-1]


def record_updates(policy, monkeypatch):
    """Each minibatch's inputs and stats, and a copy of the model as the first update of each epoch found it."""
    seen = []
    update = policy._update

    def recording(mb):
        seen.append({"mb": {k: v.clone() for k, v in mb.items()}, "model": copy.deepcopy(policy._model)})
        seen[-1]["stats"] = update(mb)
        return seen[-1]["stats"]

    monkeypatch.setattr(policy, "_update", recording)
    return seen


def slow_targets(model, seg, gamma, lam):
    """V(x_t), GAE's advantages and returns (reward units) and sigma_R, (N, T) each, from ``model`` called on one
    observation at a time: the value after step t is V(final obs) after a truncation and after the last step, 0 after
    a termination (test_ppo.reference_gae)."""
    norm = getattr(model, "obs_normalizer", None)
    scale = float(model.return_scale.scale()) if hasattr(model, "return_scale") else 1.0

    def v(x):
        x = x[None] if norm is None else norm(x[None])
        return float(model(x, mode="compute_critic")["value"])

    T, N = seg["reward"].shape
    values, advantages = torch.zeros(N, T), torch.zeros(N, T)
    with torch.no_grad():
        for n in range(N):
            value = [v(seg["obs"][t, n]) for t in range(T)]
            after = [v(seg["next_obs"][t, n]) if not seg["terminated"][t, n] and (seg["truncated"][t, n] or t == T - 1)
                     else float("nan") for t in range(T)]
            values[n] = torch.tensor(value)
            advantages[n] = torch.tensor(reference_gae(
                seg["reward"][:, n].tolist(), [scale * x for x in value], [scale * x for x in after],
                seg["terminated"][:, n].tolist(), seg["truncated"][:, n].tolist(), gamma, lam))
    return values, advantages, advantages + scale * values, scale


def step_of_each_row(mb, samples):
    """The index into the (N*T) steps of ``samples`` of each minibatch row, found by its observation and log-prob
    together: a log-prob alone can repeat within a batch (two steps of 64 share one on some CPUs)."""
    obs, logp = samples["obs"].flatten(0, 1), samples["logp"].flatten()
    same = (mb["obs"][:, None] == obs[None]).all(-1) & (mb["logp"][:, None] == logp[None])
    assert (same.sum(1) == 1).all(), "every minibatch row is exactly one step of the batch"
    return same.float().argmax(1)


@pytest.mark.parametrize("value_norm,normalize_obs,time_limit", [(False, False, TIME_LIMIT), (True, True, TIME_LIMIT),
                                                                  (False, False, 5)])
def test_second_epoch_sees_the_targets_of_the_current_critic(value_norm, normalize_obs, time_limit, monkeypatch):
    """With a time limit of 5, every unroll of 16 steps holds several truncations (no pole falls within 5 steps)."""
    gamma, lam = 0.9, 0.8
    venv, policy = make_policy(normalize_obs=normalize_obs, recompute_adv=True, epochs=2, minibatch_size=1000,
                               value_norm=value_norm, discount_factor=gamma, gae_lambda=lam, time_limit=time_limit)
    samples, seg = collect(venv, policy)
    venv.close()
    inside = (seg["truncated"] & ~seg["terminated"])[:-1]
    if time_limit == TIME_LIMIT:
        assert inside.any() and seg["terminated"].any(), "the batch needs a truncation inside an unroll and a " \
                                                         "termination"
    else:
        assert (inside.sum(0) >= 2).all(), "every unroll needs two truncations or more"
    seen = record_updates(policy, monkeypatch)
    policy.learn_mode.forward(samples)
    assert len(seen) == 2  # one minibatch per epoch
    first, second = seen[0]["mb"], seen[1]["mb"]
    # the first epoch trains on the targets of collection
    want_first = slow_targets(seen[0]["model"], seg, gamma, lam)
    torch.testing.assert_close(samples["advantage"], want_first[1], rtol=1e-5, atol=1e-5)
    # the second: those of the critic after the first epoch (and sigma_R with the collection's returns merged)
    values, advantages, returns, scale = slow_targets(seen[1]["model"], seg, gamma, lam)
    assert not torch.allclose(values, samples["value"], atol=1e-3)  # the critic did move
    at = step_of_each_row(second, samples)  # the minibatch is a permutation of the steps
    for key, want in (("value", values), ("advantage", advantages), ("return", returns / scale)):
        torch.testing.assert_close(second[key], want.flatten()[at], rtol=1e-5, atol=1e-5, msg=key)
    assert torch.equal(first["logp"].sort().values, second["logp"].sort().values)
    if value_norm:  # the collection's returns, then the recomputed ones: each joins the statistics once
        pooled = torch.cat([samples["return"].flatten(), returns.flatten()]).double()
        torch.testing.assert_close(policy.model.return_scale.scale(),
                                   pooled.var(correction=0).add(1e-8).sqrt().float(), rtol=1e-5, atol=1e-6)


def test_the_first_epoch_is_unchanged(monkeypatch):
    """Same weights, same batch, same shuffles: the first epoch's losses are those without the option; the second
    epoch's differ (it trains on other targets)."""
    venv, collecting = make_policy(recompute_adv=True, epochs=2, minibatch_size=16, value_norm=True)
    samples, _ = collect(venv, collecting)
    venv.close()
    stats = {}
    for on in (False, True):
        venv, policy = make_policy(recompute_adv=on, epochs=2, minibatch_size=16, value_norm=True)
        venv.close()
        policy._model.load_state_dict(collecting._model.state_dict())
        seen = record_updates(policy, monkeypatch)
        torch.manual_seed(1)
        batch = samples if on else {k: v for k, v in samples.items() if k in BASE_KEYS}
        info = policy.learn_mode.forward(batch)
        stats[on] = [s["stats"] for s in seen], info
    per_epoch = len(stats[True][0]) // 2
    for off, on in zip(stats[False][0], stats[True][0]):
        assert off.keys() == on.keys()
    first = [(off, on) for off, on in zip(stats[False][0][:per_epoch], stats[True][0][:per_epoch])]
    for off, on in first:
        for key in ("total_loss", "policy_loss", "value_loss", "approx_kl", "clip_fraction"):
            assert torch.equal(off[key], on[key]), key
    second = zip(stats[False][0][per_epoch:], stats[True][0][per_epoch:])
    assert any(not torch.equal(off["value_loss"], on["value_loss"]) for off, on in second)
    assert torch.equal(stats[False][1]["explained_variance"], stats[True][1]["explained_variance"])


def test_off_by_default_the_samples_keep_nothing_more():
    venv, policy = make_policy()
    assert policy._cfg.learn.recompute_adv is False
    samples, _ = collect(venv, policy, collections=1)
    venv.close()
    assert set(samples) == BASE_KEYS


def test_on_the_samples_keep_the_observations_after_each_step():
    venv, policy = make_policy(recompute_adv=True)
    samples, seg = collect(venv, policy)
    venv.close()
    assert set(samples) == BASE_KEYS | RECOMPUTE_KEYS
    for key in ("reward", "terminated", "truncated", "next_obs"):
        assert torch.equal(samples["boot_obs" if key == "next_obs" else key], seg[key].transpose(0, 1))


def test_the_lstm_core_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"^policy.learn.recompute_adv=True: not supported with "
                                          r"policy.model.core='lstm'.*set policy.learn.recompute_adv=False$"):
        compile_ppo(learn=dict(recompute_adv=True), model=dict(core="lstm"))
    assert compile_ppo(learn=dict(recompute_adv=True)).policy.learn.recompute_adv is True
