"""APPOPolicy: IMPALA with PPO's clipped surrogate on V-trace's advantages, the ratio taken against a target network
(RLlib's APPO) or, with target_update_freq=0, against the behaviour policy. Its policy loss against ppo_policy_loss on
independently computed V-trace advantages, the target network's ratio against RLlib's formula written out, when the
target network is refreshed, its gradient against IMPALA's on-policy, the zero gradient past the clip range, and the
config checks."""
import copy

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.policy import APPOPolicy, IMPALAPolicy
from ding_lite.rl_utils import from_importance_weights, impact_old_log_prob, ppo_policy_loss
from ding_lite.torch_utils import make_dist
from ding_lite.utils import ConfigError

from test_impala import GAMMA, OBS_DIM, make_cfg, random_batch, value_of

LINEAR = dict(encoder_hidden_size_list=[], actor_head_layer_num=0, critic_head_layer_num=0)


def make_appo(seed=0, clip_ratio=0.2, normalize_advantage=False, kl_weight=0.0, target_update_freq=0, **kw):
    cfg = make_cfg("discrete", **kw)
    cfg.policy.type = "appo"
    cfg.policy.learn.update(clip_ratio=clip_ratio, normalize_advantage=normalize_advantage, kl_weight=kl_weight,
                            target_update_freq=target_update_freq)
    torch.manual_seed(seed)
    return APPOPolicy(cfg.policy)


def make_impala(seed=0, **kw):
    torch.manual_seed(seed)
    return IMPALAPolicy(make_cfg("discrete", **kw).policy)


def policy_grads(policy, batch):
    """The gradients of one learn step (recorded where the gradient clipper runs, before the optimiser's step)."""
    grads = {}
    policy._grad_clip = lambda params: grads.update(
        {n: p.grad.detach().clone() for n, p in policy.model.named_parameters() if p.grad is not None}) or 0.0
    info = policy.learn_mode.forward(copy.deepcopy(batch))
    return grads, info


# ------------------------------------------------------------------------------------------------ the loss
@pytest.mark.parametrize("normalize", [False, True])
def test_policy_loss_is_the_clipped_surrogate_on_vtrace_advantages(normalize):
    policy = make_appo(clip_ratio=0.1, normalize_advantage=normalize)
    B, T = 3, 5
    batch = random_batch(policy, B, T, seed=1)  # random behaviour logits: off-policy, ratios far from 1
    with torch.no_grad():
        logit = policy.model(batch["obs"].reshape(-1, OBS_DIM), mode="compute_actor")["logit"].view(B, T, 2)
    target_lp = make_dist("discrete", logit).log_prob(batch["action"]).T  # (T, B)
    behaviour_lp = make_dist("discrete", batch["logit"]).log_prob(batch["action"]).T
    values = value_of(policy, batch["obs"]).T
    bootstrap = value_of(policy, batch["next_obs"][:, -1])
    # no episode end in the batch: discount gamma everywhere, the rewards as collected, V(x_T) from the last next_obs
    vtrace = from_importance_weights(target_lp - behaviour_lp, torch.full((T, B), GAMMA), batch["reward"].T, values,
                                     bootstrap, clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0,
                                     clip_c_threshold=1.0, lambda_=1.0)
    advantages = vtrace.pg_advantages
    if normalize:
        advantages = (advantages - advantages.mean()) / (advantages.std(correction=0) + 1e-8)
    expected = ppo_policy_loss(target_lp, behaviour_lp, advantages, 0.1)
    info = policy.learn_mode.forward(copy.deepcopy(batch))
    torch.testing.assert_close(info["policy_loss"], expected.loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(info["clip_fraction"], expected.clip_fraction)
    torch.testing.assert_close(info["approx_kl"], expected.approx_kl, rtol=1e-5, atol=1e-6)
    assert 0 < float(info["clip_fraction"]) < 1  # the batch exercises both sides of the clip
    assert {"clip_fraction", "approx_kl"} <= set(policy.learn_mode.monitor_vars())


def test_on_policy_gradient_is_impalas():
    """pi == mu: every ratio is 1, and the clipped surrogate's gradient there is A grad log pi, IMPALA's."""
    kw = dict(value_weight=0.5, entropy_weight=0.01, model=LINEAR)
    appo, impala = make_appo(**kw), make_impala(**kw)
    batch = random_batch(appo, 3, 4, seed=2, behaviour="current")
    batch["terminated"][1, 2] = True
    appo_grads, appo_info = policy_grads(appo, batch)
    impala_grads, impala_info = policy_grads(impala, batch)
    assert appo_grads.keys() == impala_grads.keys() and appo_grads
    for name in appo_grads:
        torch.testing.assert_close(appo_grads[name], impala_grads[name], rtol=1e-5, atol=1e-7)
    assert float(appo_info["clip_fraction"]) == 0 and float(appo_info["approx_kl"]) == pytest.approx(0, abs=1e-6)


def test_off_policy_gradient_is_ratio_weighted_and_zero_past_the_clip():
    """On hand-made log-probs: d loss / d log pi_t = -r_t A_t / N inside the clip range (r_t = pi_t / mu_t with mu the
    behaviour policy, so it fails if pi's own detached log-probs stood in for mu's), 0 past it in the advantage's
    direction, and -r_t A_t / N past it against the advantage's direction (the min keeps the unclipped term)."""
    policy = make_appo(clip_ratio=0.2)
    behaviour_lp = torch.log(torch.tensor([0.5, 0.5, 0.01, 0.01, 0.9]))
    target_lp = torch.log(torch.tensor([0.55, 0.45, 0.5, 0.5, 0.1])).requires_grad_()
    adv = torch.tensor([1.0, -2.0, 3.0, -1.0, -0.5])
    loss, info = policy._policy_loss(target_lp, behaviour_lp, adv, target_lp.detach())
    (grad,) = torch.autograd.grad(loss, target_lp)
    ratio = (target_lp - behaviour_lp).exp().detach()
    expected = -ratio * adv / 5
    expected[2] = 0.0  # r = 50 > 1.2 with A > 0: clipped
    expected[4] = 0.0  # r = 1/9 < 0.8 with A < 0: clipped (index 3, r = 50 with A < 0, is not)
    torch.testing.assert_close(grad, expected)
    assert float(info["clip_fraction"]) == pytest.approx(3 / 5)
    # IMPALA's term on the same numbers: -A / N, whatever the ratio
    (impala_grad,) = torch.autograd.grad(
        IMPALAPolicy._policy_loss(policy, target_lp, behaviour_lp, adv, target_lp.detach())[0], target_lp)
    torch.testing.assert_close(impala_grad, -adv / 5)


def test_ratio_far_outside_the_clip_gives_no_policy_gradient():
    """One terminal step whose action the behaviour policy almost never took (r ~ e^20) with a positive advantage:
    the actor gets no gradient at all (no value, entropy or KL terms)."""
    policy = make_appo(value_weight=0.0, entropy_weight=0.0, model=LINEAR)
    batch = random_batch(policy, 1, 1, seed=5)
    batch["terminated"][:] = True
    batch["action"][:] = 0
    batch["logit"] = torch.tensor([[[-10.0, 10.0]]])
    batch["reward"][:] = 10.0 + float(value_of(policy, batch["obs"][0, 0]).abs())  # A = r - V > 0
    grads, info = policy_grads(policy, batch)
    assert float(info["clip_fraction"]) == 1
    assert grads["actor_head.0.weight"].abs().max() == 0 and grads["actor_head.0.bias"].abs().max() == 0
    # IMPALA on the same step does push the policy (its truncated rho_pg = 1 keeps the advantage)
    impala = make_impala(value_weight=0.0, entropy_weight=0.0, model=LINEAR)
    impala_grads, _ = policy_grads(impala, batch)
    assert impala_grads["actor_head.0.bias"].abs().max() > 0


# ---------------------------------------------------------------------------------------------- config
def compile_appo(**policy):
    return compile_config(dict(env=dict(env_id="CartPole-v1"), policy=policy), dict(policy=dict(type="appo")))


def test_defaults_inherit_impala_and_add_the_clip():
    cfg = compile_appo()
    impala = compile_config(dict(env=dict(env_id="CartPole-v1")), dict(policy=dict(type="impala")))
    assert cfg.policy.type == "appo"
    # RLlib APPO's: clip 0.4, no KL term, a target network (refreshed once per collection of the default schedule)
    learn = cfg.policy.learn
    assert (learn.clip_ratio, learn.kl_weight, learn.normalize_advantage) == (0.4, 0.0, False)
    assert learn.target_update_freq == learn.update_per_collect
    # asynchronous like IMPALA: the same replay (unrolls reused max_use times) and update schedule
    assert cfg.policy.other.replay_buffer == impala.policy.other.replay_buffer
    assert cfg.policy.learn.update_per_collect == impala.policy.learn.update_per_collect
    assert cfg.policy.unroll_len == impala.policy.unroll_len


@pytest.mark.parametrize("policy,match", [
    (dict(learn=dict(clip_rato=0.1)), "clip_ratio"),
    (dict(learn=dict(kl_weigth=0.1)), "kl_weight"),
    (dict(learn=dict(clip_ratio=0)), "clip_ratio=0"),
    (dict(learn=dict(clip_ratio=-0.2)), "clip_ratio=-0.2"),
    (dict(learn=dict(kl_weight=-1.0)), "kl_weight"),
    (dict(learn=dict(lambda_=1.5)), "lambda_"),
    (dict(learn=dict(target_update_freq=-1)), "target_update_freq=-1"),
    (dict(learn=dict(target_update_freq=1.5)), "target_update_freq=1.5"),
])
def test_config_errors(policy, match):
    with pytest.raises(ConfigError, match=match):
        compile_appo(**policy)


# ------------------------------------------------------------------------------------------- the target network
def rllib_ratio(logp_pi, logp_mu, logp_target, max_is_ratio=2.0):
    """RLlib's APPO ratio written out: clip(mu / pi_target, 0, max) * pi / mu."""
    is_ratio = torch.clamp(torch.exp(logp_mu - logp_target), 0.0, max_is_ratio)
    return is_ratio * torch.exp(logp_pi - logp_mu)


def test_impact_old_log_prob_makes_ppos_ratio_rllibs():
    g = torch.Generator().manual_seed(0)
    logp_pi, logp_mu, logp_target = (torch.log_softmax(torch.randn(64, 4, generator=g) * 2, -1)[:, 0]
                                     for _ in range(3))
    old = impact_old_log_prob(logp_mu, logp_target)
    torch.testing.assert_close(torch.exp(logp_pi - old), rllib_ratio(logp_pi, logp_mu, logp_target))
    assert (logp_mu - logp_target > torch.log(torch.tensor(2.0))).any()  # the clip binds on some rows
    with pytest.raises(ValueError, match="max_is_ratio"):
        impact_old_log_prob(logp_mu, logp_target, 0.0)


def test_with_a_target_network_vtrace_and_the_ratio_use_it():
    """target_update_freq=3: the first update copies the model into the target network; the second update's loss is
    the clipped surrogate with RLlib's ratio against those (older) weights, and V-trace's rhos are pi_target / mu."""
    policy = make_appo(clip_ratio=0.1, target_update_freq=3)
    B, T = 3, 5
    batch = random_batch(policy, B, T, seed=1)
    initial = copy.deepcopy(policy.model)
    policy.learn_mode.forward(copy.deepcopy(batch))  # update 1: refresh, then train
    assert any(not torch.equal(p, q) for p, q in zip(policy.model.parameters(), initial.parameters()))

    def log_prob(model):
        with torch.no_grad():
            logit = model(batch["obs"].reshape(-1, OBS_DIM), mode="compute_actor")["logit"].view(B, T, 2)
        return make_dist("discrete", logit).log_prob(batch["action"]).T  # (T, B)

    pi_lp, target_lp = log_prob(policy.model), log_prob(initial)
    behaviour_lp = make_dist("discrete", batch["logit"]).log_prob(batch["action"]).T
    values, bootstrap = value_of(policy, batch["obs"]).T, value_of(policy, batch["next_obs"][:, -1])
    vtrace = from_importance_weights(target_lp - behaviour_lp, torch.full((T, B), GAMMA), batch["reward"].T, values,
                                     bootstrap, clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0,
                                     clip_c_threshold=1.0, lambda_=1.0)
    ratio = rllib_ratio(pi_lp, behaviour_lp, target_lp)
    adv = vtrace.pg_advantages
    expected = -torch.minimum(ratio * adv, ratio.clamp(0.9, 1.1) * adv).mean()
    info = policy.learn_mode.forward(copy.deepcopy(batch))  # update 2: the target network of update 1
    torch.testing.assert_close(info["policy_loss"], expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(info["rho_mean"], (target_lp - behaviour_lp).exp().mean(), rtol=1e-5, atol=1e-6)
    policy.learn_mode.forward(copy.deepcopy(batch))  # update 3: still the old copy
    for p, q in zip(policy._target_model.parameters(), initial.parameters()):
        assert torch.equal(p, q)
    before_4 = copy.deepcopy(policy.model)
    policy.learn_mode.forward(copy.deepcopy(batch))  # update 4: refreshed from the weights after update 3
    for p, q in zip(policy._target_model.parameters(), before_4.parameters()):
        assert torch.equal(p, q)


def test_the_target_network_and_its_schedule_are_checkpointed():
    a, b = make_appo(target_update_freq=3, seed=0), make_appo(target_update_freq=3, seed=1)
    batch = random_batch(a, 3, 4, seed=2)
    for _ in range(2):
        a.learn_mode.forward(copy.deepcopy(batch))
    b.learn_mode.load_state_dict(copy.deepcopy(a.learn_mode.state_dict()))
    for _ in range(3):  # across the next refresh (update 4)
        out_a, out_b = (p.learn_mode.forward(copy.deepcopy(batch)) for p in (a, b))
        assert out_a == out_b
