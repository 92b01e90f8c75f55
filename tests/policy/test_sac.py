"""SACPolicy ('sac') and DiscreteSACPolicy ('discrete_sac') as the library builds and runs them, part 1: actions of
the three action spaces (continuous Pendulum-v1, discrete CartPole-v1 with the actor's softmax or the Boltzmann
policy, mixed MixedTarget), termination vs truncation, the actions the env gets, and the target critics. Part 2 is
test_sac_training.py (alpha, which loss moves which parameters, checkpoints, config errors, a short serial run).

The loss math itself is tested in tests/rl_utils/test_sac_math.py; here the losses are only observed (recorders patched
onto ``ding_lite.rl_utils.sac``, which the policy calls as ``S.<name>``) or sign-flipped.
"""
import copy
import math

import numpy as np
import pytest
import torch

from ding_lite.envs.toy.mixed_target import GEARS
from ding_lite.policy.base_policy import EvalMode
from ding_lite.policy.sac import DiscreteSACPolicy
from ding_lite.torch_utils import tree_stack
from ding_lite.worker import Evaluator, Learner
from sac_helpers import (
    ALL, CRITIC_TARGET_FN, Recorder, as_float, assert_tree_equal, check_action, clone, critic_params, flat_action,
    last_linear, log_alpha, max_change, set_constant_q, set_log_alpha
)



# ------------------------------------------------------------------------------------------ 1. actions and shapes
@pytest.mark.parametrize("case", ALL)
def test_collect_eval_and_random_actions(case, make):
    sac = make(case)
    policy = sac.policy
    obs = sac.collector.collect(32, random_action=True)["obs"]
    B = obs.shape[0]
    assert policy.collect_mode.unroll_len == 1
    assert policy.collect_mode.action_bound == policy.eval_mode.action_bound == "rescale"
    assert isinstance(policy, DiscreteSACPolicy) == (case in ("discrete", "boltzmann"))

    # sampled: stochastic, within range
    a1, a2 = policy.collect_mode.forward(obs)["action"], policy.collect_mode.forward(obs)["action"]
    check_action(case, a1, B)
    check_action(case, a2, B)
    assert not torch.equal(flat_action(a1), flat_action(a2))

    # warm-up: uniform over the whole range, whatever the policy
    big = obs.repeat(128, 1)
    rnd = policy.collect_mode.forward(big, random_action=True)["action"]
    check_action(case, rnd, big.shape[0])
    cont = rnd["continuous"] if case == "mixed" else rnd if case == "continuous" else None
    disc = rnd["discrete"] if case == "mixed" else None if case == "continuous" else rnd
    if cont is not None:
        assert cont.min() < -0.99 and cont.max() > 0.99
        assert abs(cont.mean().item()) < 0.03 and abs(cont.var().item() - 1 / 3) < 0.02
    if disc is not None:
        n = 3 if case == "mixed" else 2
        freq = torch.bincount(disc, minlength=n).float() / disc.numel()
        torch.testing.assert_close(freq, torch.full((n,), 1 / n), atol=0.02, rtol=0)

    # eval: deterministic, the mode of the policy
    e1, e2 = policy.eval_mode.forward(obs)["action"], policy.eval_mode.forward(obs)["action"]
    check_action(case, e1, B)
    with torch.no_grad():
        model = policy.model
        if case in ("continuous", "mixed"):
            mean_action = torch.tanh(model.compute_actor(obs)["mu"])
        if case == "continuous":
            expected = mean_action
        elif case == "discrete":
            expected = model.compute_actor(obs)["logit"].argmax(-1)
        elif case == "boltzmann":
            assert model.actor is None  # ALF's Boltzmann policy has no actor network
            expected = model.compute_critic(obs).min(0).values.argmax(-1)
        else:
            expected = {"discrete": model.compute_critic(obs, mean_action).min(0).values.argmax(-1),
                        "continuous": mean_action}
    assert_tree_equal(e1, e2, "eval action")
    if case == "mixed":
        torch.testing.assert_close(e1["continuous"], expected["continuous"])
        assert torch.equal(e1["discrete"], expected["discrete"])
    elif case == "continuous":
        torch.testing.assert_close(e1, expected)
    else:
        assert torch.equal(e1, expected)


@pytest.mark.parametrize("case, logits_or_q, new_alpha", [
    ("discrete", [0.0, 1.0], None),  # actor softmax; alpha does not enter
    ("boltzmann", [[0.0, 0.3], [0.1, 0.2]], 0.5),  # min over replicas [0.0, 0.2]
    ("mixed", [[0.0, 0.1, 0.3], [0.2, 0.0, 0.5]], 0.5),  # min over replicas [0.0, 0.0, 0.3]
])
def test_sampled_discrete_actions_follow_the_policy(case, logits_or_q, new_alpha, make):
    """Gumbel-max sampling draws from the actor's softmax, or from exp(min_i Q_i / alpha) with the current alpha
    (the one learn mode tunes: collect mode must see it)."""
    sac = make(case)
    policy = sac.policy
    obs = sac.collector.collect(2, random_action=True)["obs"][:1].repeat(20000, 1)
    if case == "discrete":
        with torch.no_grad():
            last_linear(policy.model.actor).weight.zero_()
            last_linear(policy.model.actor).bias.copy_(torch.tensor(logits_or_q))
        alphas = [None]
    else:
        set_constant_q(policy, logits_or_q)
        alphas = [sac.cfg.policy.learn.alpha, new_alpha]
    q_min = torch.tensor(logits_or_q).min(0).values if case != "discrete" else torch.tensor(logits_or_q)
    torch.manual_seed(0)
    for alpha in alphas:
        if alpha is not None:  # a mixed action's discrete part has its own alpha: the continuous one is far off
            set_log_alpha(policy, [math.log(alpha), math.log(5.0)] if case == "mixed" else [math.log(alpha)])
        expected = torch.softmax(q_min / (alpha or 1.0), -1)
        action = policy.collect_mode.forward(obs)["action"]
        action = action["discrete"] if case == "mixed" else action
        freq = torch.bincount(action, minlength=len(expected)).float() / len(action)
        torch.testing.assert_close(freq, expected, atol=0.015, rtol=0)
    # eval takes the most likely action
    greedy = policy.eval_mode.forward(obs[:4])["action"]
    greedy = greedy["discrete"] if case == "mixed" else greedy
    assert (greedy == int(q_min.argmax())).all()


@pytest.mark.parametrize("case", ALL)
def test_process_transition_and_train_sample(case, make):
    sac = make(case)
    policy = sac.policy
    N = 3
    obs = sac.collector.collect(4, random_action=True)["obs"][:N]
    out = policy.collect_mode.forward(obs)
    timestep = {"next_obs": obs + 1, "reward": torch.tensor([1.0, -2.0, 0.5]),
                "terminated": torch.tensor([False, True, False]), "truncated": torch.tensor([True, False, False])}
    tr = policy.collect_mode.process_transition(obs, out, timestep)
    assert set(tr) == {"obs", "next_obs", "action", "reward", "terminated", "truncated"}
    expected = {"obs": obs, "action": out["action"], **timestep}
    assert_tree_equal(tr, expected, "transition")
    segment = tree_stack([tr])  # (T=1, N, ...)
    assert segment["obs"].shape == (1, N, obs.shape[1])
    sample = policy.collect_mode.get_train_sample(segment)
    assert_tree_equal(sample, expected, "train sample")  # (N, ...)


@pytest.mark.parametrize("case", ALL)
def test_learn_step_on_collected_batch_returns_finite_monitored_scalars(case, make):
    sac = make(case)
    batch = sac.batch()
    assert batch["terminated"].dtype == torch.bool and batch["reward"].shape == (32,)
    info = sac.policy.learn_mode.forward(batch)
    monitored = set(sac.policy.learn_mode.monitor_vars())
    expected = {"critic_loss", "alpha_loss", "alpha", "entropy", "q_mean", "target_q_mean", "grad_norm"}
    expected |= {"actor_loss"} if case != "boltzmann" else set()
    expected |= {"alpha_discrete", "entropy_discrete"} if case == "mixed" else set()
    assert set(info) == expected
    assert set(info) <= monitored  # everything returned is logged
    for name, value in info.items():
        if isinstance(value, torch.Tensor):
            assert value.dim() == 0 and not value.requires_grad, name
        assert math.isfinite(float(value)), name
    # and through the Learner, which averages what it logs
    learner = Learner(sac.policy.learn_mode)
    learner.train(sac.batch())
    means = learner.pop_means()
    assert set(means) == expected and all(math.isfinite(v) for v in means.values())


# --------------------------------------------------------------------------------- 2. termination vs truncation
@pytest.mark.parametrize("ignore_done", [False, True])
@pytest.mark.parametrize("case", ALL)
def test_truncation_bootstraps_termination_does_not(case, ignore_done, make, monkeypatch):
    sac = make(case, {"policy.learn.ignore_done": ignore_done})
    batch = sac.batch(4)
    # 0: truncated only (time limit), 1: terminated, 2: both, 3: neither
    batch["terminated"] = torch.tensor([False, True, True, False])
    batch["truncated"] = torch.tensor([True, False, True, False])
    rec = Recorder(monkeypatch, CRITIC_TARGET_FN[case])
    sac.learn(batch)
    (call,) = rec.calls
    expected = [0.0, 0.0, 0.0, 0.0] if ignore_done else [0.0, 1.0, 1.0, 0.0]
    torch.testing.assert_close(as_float(call["terminated"]), torch.tensor(expected), rtol=0, atol=0)
    torch.testing.assert_close(call["reward"], batch["reward"])
    assert call["gamma"] == sac.cfg.policy.learn.discount_factor
    # the targets: a terminated transition's is its reward, the others bootstrap
    y, r = call["out"], batch["reward"]
    if ignore_done:
        assert (y != r).all()
    else:
        assert y[1] == r[1] and y[2] == r[2] and y[0] != r[0] and y[3] != r[3]


# ------------------------------------------------------------------------------------- 3. actions reach the env
def record_env_steps(env, monkeypatch):
    sent = []
    step = env.step

    def recording_step(action):
        sent.append(copy.deepcopy(action))
        return step(action)

    monkeypatch.setattr(env, "step", recording_step)
    return sent


def test_pendulum_env_gets_actions_rescaled_to_its_box(make, monkeypatch):
    sac = make("continuous")
    env = sac.parts.collector_env
    assert env.single_action_space.low.tolist() == [-2.0] and env.single_action_space.high.tolist() == [2.0]
    sent = record_env_steps(env, monkeypatch)
    torques = []
    stored = []
    for random_action in [True] * 20 + [False] * 20:
        stored.append(sac.collector.step(random_action=random_action)["action"])
        torques.append([e.unwrapped.last_u for e in env.envs])
    stored = torch.stack(stored).numpy()  # (steps, N_env, 1), the policy's own action in [-1, 1]
    sent = np.stack(sent)
    assert np.abs(stored).max() <= 1.0 and np.abs(stored).max() > 0.9
    np.testing.assert_allclose(sent, 2.0 * stored, rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(torques, dtype=np.float32), sent[..., 0], rtol=0, atol=1e-6)

    # the evaluator rescales the deterministic action the same way
    eval_env = sac.parts.evaluator_env
    sent_eval = record_env_steps(eval_env, monkeypatch)
    seen = []

    def forward(obs):
        out = sac.policy.eval_mode.forward(obs)
        seen.append(out["action"].clone())
        return out

    evaluator = Evaluator(eval_env, EvalMode(forward, sac.policy.eval_mode.reset, sac.policy.eval_mode.action_bound),
                          1, 1)
    evaluator.eval(0)
    np.testing.assert_allclose(np.stack(sent_eval), 2.0 * torch.stack(seen).numpy(), rtol=0, atol=1e-6)


def test_mixed_env_gets_a_tuple_of_discrete_and_continuous_arrays(make, monkeypatch):
    sac = make("mixed")
    sent = record_env_steps(sac.parts.collector_env, monkeypatch)
    samples = [sac.collector.step(random_action=r) for r in [True] * 10 + [False] * 10]
    assert len(sent) == len(samples) == 20
    for action, sample in zip(sent, samples):
        assert isinstance(action, tuple) and len(action) == 2
        gear, direction = action
        assert isinstance(gear, np.ndarray) and gear.dtype.kind == "i" and gear.shape == (2,)
        assert isinstance(direction, np.ndarray) and direction.dtype == np.float32 and direction.shape == (2, 2)
        np.testing.assert_array_equal(gear, sample["action"]["discrete"].numpy())
        np.testing.assert_array_equal(direction, sample["action"]["continuous"].numpy())  # Box(-1, 1): unchanged
        # and the env moved as told: by GEARS[gear] along the normalised direction
        pos, next_pos = sample["obs"][:, :2].numpy(), sample["next_obs"][:, :2].numpy()
        step = GEARS[gear][:, None] * direction / np.linalg.norm(direction, axis=1, keepdims=True)
        np.testing.assert_allclose(next_pos, np.clip(pos + step, -2, 2), rtol=0, atol=1e-5)


# ---------------------------------------------------------------------------------------------- 4. target critics
@pytest.mark.parametrize("case", ALL)
def test_target_critics_follow_the_online_ones_by_polyak(case, make):
    theta = 0.25
    sac = make(case, {"policy.learn.target_theta": theta})
    policy = sac.policy
    target0 = clone(policy.learn_mode.state_dict()["target_critic"])
    assert_tree_equal(target0, critic_params(policy), "initial target")  # starts as a copy
    for p in policy._target_critic.parameters():
        assert not p.requires_grad
    sac.learn(sac.batch())
    online1 = critic_params(policy)
    target1 = policy.learn_mode.state_dict()["target_critic"]
    assert max_change(target0, online1) > 0  # the critics learnt
    for k in target0:
        torch.testing.assert_close(target1[k], target0[k] + theta * (online1[k] - target0[k]), rtol=0, atol=1e-6)
    assert all(not p.requires_grad and p.grad is None for p in policy._target_critic.parameters())


@pytest.mark.parametrize("case", ["continuous", "mixed"])
def test_target_update_period(case, make):
    theta = 0.25
    sac = make(case, {"policy.learn.target_theta": theta, "policy.learn.target_update_period": 2})
    policy = sac.policy
    target0 = clone(policy.learn_mode.state_dict()["target_critic"])
    sac.learn(sac.batch())
    assert_tree_equal(policy.learn_mode.state_dict()["target_critic"], target0, "target after step 1")
    sac.learn(sac.batch())
    online2 = critic_params(policy)
    target2 = clone(policy.learn_mode.state_dict()["target_critic"])
    for k in target0:
        torch.testing.assert_close(target2[k], target0[k] + theta * (online2[k] - target0[k]), rtol=0, atol=1e-6)
    sac.learn(sac.batch())
    assert_tree_equal(policy.learn_mode.state_dict()["target_critic"], target2, "target after step 3")
    sac.learn(sac.batch())
    assert max_change(target2, policy.learn_mode.state_dict()["target_critic"]) > 0


def make_actor_deterministic(policy):
    """log_std -> its lower clamp (std ~ 2e-9): a sampled continuous action is tanh(mu) up to ~1e-8."""
    last = last_linear(policy.model.actor)
    dim = last.out_features // 2
    with torch.no_grad():
        last.weight[dim:].zero_()
        last.bias[dim:].fill_(-30.0)


@pytest.mark.parametrize("case", ALL)
def test_bootstrap_uses_the_target_critics_and_the_current_policy(case, make, monkeypatch):
    sac = make(case, {"policy.learn.target_theta": 0.1})
    policy, model = sac.policy, sac.policy.model
    for _ in range(3):
        sac.learn(sac.batch())
    if model.actor is not None and case != "discrete":
        make_actor_deterministic(policy)
    if case == "mixed":  # two different alphas: [discrete, continuous]
        set_log_alpha(policy, [math.log(0.1), math.log(0.3)])
    batch = sac.batch()
    next_obs = batch["next_obs"]
    target_net = copy.deepcopy(model.critic)
    target_net.load_state_dict(policy.learn_mode.state_dict()["target_critic"])
    alpha = log_alpha(policy).exp()
    with torch.no_grad():
        if case in ("continuous", "mixed"):
            a2 = torch.tanh(model.compute_actor(next_obs)["mu"])
            x, online = torch.cat([next_obs, a2], -1), model.compute_critic(next_obs, a2)
        else:
            x, online = next_obs, model.compute_critic(next_obs)
        expected_q = target_net(x).squeeze(-1) if case == "continuous" else target_net(x)
        if case == "discrete":  # the actor's softmax at s'
            log_probs = torch.log_softmax(model.compute_actor(next_obs)["logit"], -1)
        elif case != "continuous":  # ALF: the Boltzmann policy of the online critics' min at s' (and a_c')
            log_probs = torch.log_softmax(online.min(0).values / alpha[0], -1)
    assert not torch.allclose(expected_q, online.squeeze(-1) if case == "continuous" else online)
    rec = Recorder(monkeypatch, CRITIC_TARGET_FN[case])
    sac.learn(batch)
    (call,) = rec.calls
    torch.testing.assert_close(call["next_q"], expected_q, rtol=1e-5, atol=1e-5)
    if case in ("discrete", "boltzmann"):
        torch.testing.assert_close(call["next_log_probs"], log_probs, rtol=1e-5, atol=1e-5)
    elif case == "mixed":
        torch.testing.assert_close(call["next_discrete_log_probs"], log_probs, rtol=1e-5, atol=1e-5)
        assert float(call["alpha_discrete"]) == pytest.approx(0.1) and float(call["alpha_continuous"]) == \
            pytest.approx(0.3)


@pytest.mark.parametrize("case", ALL)
def test_critics_regress_the_taken_action_on_the_target(case, make, monkeypatch):
    sac = make(case)
    policy, model = sac.policy, sac.policy.model
    if case == "mixed":
        set_log_alpha(policy, [math.log(0.1), math.log(0.3)])
    batch = sac.batch()
    obs, action = batch["obs"], batch["action"]
    with torch.no_grad():  # the online critics before the step, at the stored action
        if case == "continuous":
            expected_q = model.compute_critic(obs, action)
        elif case == "mixed":
            expected_q = model.compute_critic(obs, action["continuous"]).gather(
                -1, action["discrete"].view(1, -1, 1).expand(2, -1, 1)).squeeze(-1)
        else:
            expected_q = model.compute_critic(obs).gather(-1, action.view(1, -1, 1).expand(2, -1, 1)).squeeze(-1)
    targets = Recorder(monkeypatch, CRITIC_TARGET_FN[case])
    losses = Recorder(monkeypatch, "sac_critic_loss")
    actor_losses = Recorder(monkeypatch, "mixed_sac_actor_loss") if case == "mixed" else None
    sac.learn(batch)
    (loss,), (target,) = losses.calls, targets.calls
    assert loss["q"].shape == (2, 32)  # one row per critic replica
    torch.testing.assert_close(loss["q"], expected_q)
    assert torch.equal(loss["target"], target["out"])
    if case == "mixed":  # the actor loss gets each part's alpha too
        (call,) = actor_losses.calls
        assert float(call["alpha_discrete"]) == pytest.approx(0.1)
        assert float(call["alpha_continuous"]) == pytest.approx(0.3)
