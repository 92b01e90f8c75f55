"""ACERPolicy and the ACER model: the inputs the learn step builds for the rl_utils math (Retrace boundaries at
terminations, truncations and the unroll's end; importance ratios; Q_opc), the trust region, the average network,
checkpoints, the stochastic dueling network, configs and the collector round trip, for discrete and continuous."""
import copy
import io
import os

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

import ding_lite.model  # noqa: F401  (registers 'acer')
import ding_lite.rl_utils.acer as acer_math
from ding_lite.config import compile_config, read_config_file
from ding_lite.data import ReplayBuffer
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvConfig, EnvSpec, make_vector_env
from ding_lite.model import ACER
from ding_lite.policy import ACERPolicy
from ding_lite.utils import ConfigError
from ding_lite.worker import SampleCollector

OBS_DIM, GAMMA, N_ACTIONS, ACT_DIM = 3, 0.9, 3, 2
SPACES = {
    "discrete": gym.spaces.Discrete(N_ACTIONS),
    "continuous": gym.spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32),
}
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


# ------------------------------------------------------------------------------------------------------- helpers
def make_cfg(space="discrete", model=None, obs_dim=OBS_DIM, **learn):
    pol = ACERPolicy.default_config()
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_hidden_size_list=[16], actor_head_hidden_size=16, critic_head_hidden_size=16)
    pol.model.update(model or {})
    pol.learn.update(discount_factor=GAMMA, **learn)
    cfg = EasyDict(env=EasyDict(env_id=None, type="test", normalize_obs=False), policy=pol)
    obs_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(obs_space, SPACES[space]))
    return cfg


def make_policy(space="discrete", seed=0, **kw):
    torch.manual_seed(seed)
    return ACERPolicy(make_cfg(space, **kw).policy)


def actor_stats(policy, obs):
    """The current policy's statistics for obs (..., OBS_DIM), shaped (..., n)."""
    with torch.no_grad():
        out = policy.model(obs.reshape(-1, OBS_DIM), mode="compute_actor")["logit"]
    shape = obs.shape[:-1]
    return {k: v.view(*shape, -1) for k, v in out.items()} if isinstance(out, dict) else out.view(*shape, -1)


def random_batch(policy, B, T, seed=0, behaviour="random"):
    """A batch as the buffer returns it: leaves (B, T, ...)."""
    g = torch.Generator().manual_seed(seed)
    space = policy.cfg.action_space
    obs = torch.randn(B, T, OBS_DIM, generator=g)
    next_obs = torch.cat([obs[:, 1:], torch.randn(B, 1, OBS_DIM, generator=g)], dim=1)
    if behaviour == "current":
        logit = actor_stats(policy, obs)
    elif space == "continuous":
        logit = {"mu": 0.5 * torch.randn(B, T, ACT_DIM, generator=g),
                 "sigma": torch.rand(B, T, ACT_DIM, generator=g) + 0.5}
    else:
        logit = torch.randn(B, T, N_ACTIONS, generator=g)
    if space == "discrete":
        action = torch.randint(N_ACTIONS, (B, T), generator=g)
    else:
        action = torch.randn(B, T, ACT_DIM, generator=g)
    zeros = torch.zeros(B, T, dtype=torch.bool)
    return {"obs": obs, "next_obs": next_obs, "action": action, "logit": logit,
            "reward": torch.randn(B, T, generator=g), "terminated": zeros.clone(), "truncated": zeros.clone()}


# Mixed unroll, T=6, B=3: env 0 terminates at t=2, env 1 is truncated at t=3, env 2 runs through.
T_MIX, B_MIX, TERM_AT, TRUNC_AT = 6, 3, 2, 3


def mixed_batch(policy, seed=0):
    batch = random_batch(policy, B_MIX, T_MIX, seed)
    batch["terminated"][0, TERM_AT] = True
    batch["truncated"][1, TRUNC_AT] = True
    batch["next_obs"][0, TERM_AT] = torch.tensor([5.0, 5.0, 5.0])  # true final obs (never read: terminal)
    batch["next_obs"][1, TRUNC_AT] = torch.tensor([-2.0, 3.0, 1.0])  # true final obs, bootstrapped
    return batch


class Recorder:
    """Stands in for a function of ding_lite.rl_utils.acer (looked up there at call time): records its arguments
    and result."""

    def __init__(self, monkeypatch, name):
        self.calls = []
        self._fn = getattr(acer_math, name)
        monkeypatch.setattr(acer_math, name, self)

    def __call__(self, *args, **kwargs):
        out = self._fn(*args, **kwargs)
        self.calls.append(dict(args=tuple(_detached(a) for a in args), kwargs=kwargs, out=_detached(out)))
        return out


def _detached(x):
    if torch.is_tensor(x):
        return x.detach().clone()
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_detached(v) for v in x)
    return x


def state_value(policy, obs):
    """V(x) as the learner defines it: sum_a pi(a|x) Q(x, a) (discrete), the SDN's V head (continuous)."""
    with torch.no_grad():
        out = policy.model(obs.reshape(-1, OBS_DIM), mode="compute_actor_critic")
    if policy.cfg.action_space == "discrete":
        v = (torch.softmax(out["logit"], -1) * out["q_value"]).sum(-1)
    else:
        v = out["value"]
    return v.view(obs.shape[:-1])


def learn_once(policy, batch, state, seed=0):
    """One learn step from the given learn state (so several runs start from the same weights and samples)."""
    policy.learn_mode.load_state_dict(copy.deepcopy(state))
    torch.manual_seed(seed)
    return policy.learn_mode.forward(copy.deepcopy(batch))


def capture_grads(policy):
    """Make the learner's gradient clipper record the gradients it sees (by parameter name)."""
    grads = {}

    def record(params):
        names = {id(p): n for n, p in policy.model.named_parameters()}
        grads.update({names[id(p)]: p.grad.detach().clone() for p in params if p.grad is not None})
        return 0.0

    policy._grad_clip = record
    return grads


def reference_q_ret(rewards, q_taken, values, c, term, trunc, final_v, last_v):
    """Q_ret per episode, from sec. 3.1 of the paper: Q_ret = r_t + gamma [c_{t+1}(Q_ret_{t+1} - Q_{t+1}) + V_{t+1}]
    inside an episode; after a terminal step nothing (0), after a truncated one gamma V(final obs), after the
    unroll's last step gamma V(x_T). (T, B) float64 inputs."""
    T, B = rewards.shape
    out = torch.zeros(T, B, dtype=torch.float64)
    for b in range(B):
        for t in reversed(range(T)):
            if term[t, b]:
                after = 0.0
            elif trunc[t, b]:
                after = GAMMA * final_v[t, b]
            elif t == T - 1:
                after = GAMMA * last_v[b]
            else:
                after = GAMMA * (c[t + 1, b] * (out[t + 1, b] - q_taken[t + 1, b]) + values[t + 1, b])
            out[t, b] = rewards[t, b] + after
    return out


# ------------------------------------------------------------------------------------------------- the modes
@pytest.mark.parametrize("space", list(SPACES))
def test_collect_eval_and_learn_shapes(space):
    policy = make_policy(space)
    obs = torch.randn(5, OBS_DIM)
    out = policy.collect_mode.forward(obs)
    ev = policy.eval_mode.forward(obs)
    assert torch.equal(ev["action"], policy.eval_mode.forward(obs)["action"])  # deterministic
    if space == "discrete":
        assert out["action"].shape == (5,) and out["action"].dtype == torch.int64
        assert out["logit"].shape == (5, N_ACTIONS)
        assert torch.equal(ev["action"], ev["logit"].argmax(-1))
    else:
        assert out["action"].shape == (5, ACT_DIM) and out["action"].dtype == torch.float32
        assert set(out["logit"]) == {"mu", "sigma"} and (out["logit"]["sigma"] > 0).all()
        assert torch.equal(ev["action"], ev["logit"]["mu"])
    ts = {"next_obs": obs + 1, "reward": torch.ones(5), "terminated": torch.zeros(5, dtype=torch.bool),
          "truncated": torch.ones(5, dtype=torch.bool)}
    tr = policy.collect_mode.process_transition(obs, out, ts)
    assert set(tr) == {"obs", "next_obs", "action", "logit", "reward", "terminated", "truncated"}
    assert torch.equal(tr["next_obs"], obs + 1) and tr["truncated"].all() and not tr["terminated"].any()
    seg = {k: (torch.stack([v] * 4) if torch.is_tensor(v) else {kk: torch.stack([vv] * 4) for kk, vv in v.items()})
           for k, v in tr.items()}  # (T=4, N=5, ...)
    sample = policy.collect_mode.get_train_sample(seg)
    assert sample["obs"].shape == (5, 4, OBS_DIM) and sample["reward"].shape == (5, 4)
    assert policy.collect_mode.unroll_len == 32  # DI-engine's default, read from policy.unroll_len
    logs = policy.learn_mode.forward(random_batch(policy, 3, 4))
    assert set(policy.learn_mode.monitor_vars()) <= set(logs)
    assert all(np.isfinite(float(v)) for v in logs.values())


def test_model_heads_and_parameter_split():
    model = ACER(OBS_DIM, N_ACTIONS, "discrete", encoder_hidden_size_list=[8])
    out = model(torch.randn(4, OBS_DIM))
    assert out["logit"].shape == out["q_value"].shape == (4, N_ACTIONS)
    cont = ACER(OBS_DIM, ACT_DIM, "continuous", encoder_hidden_size_list=[8], sdn_n_samples=3)
    x = torch.randn(4, OBS_DIM)
    out = cont(x, mode="compute_critic", action=torch.randn(2, 4, ACT_DIM))
    assert out["value"].shape == (4,) and out["q_value"].shape == (2, 4)
    assert cont(x, mode="compute_critic", action=torch.randn(4, ACT_DIM))["q_value"].shape == (4,)
    for shared in (False, True):
        m = ACER(OBS_DIM, N_ACTIONS, "discrete", share_encoder=shared, encoder_hidden_size_list=[8])
        actor, critic = {id(p) for p in m.actor_parameters()}, {id(p) for p in m.critic_parameters()}
        assert not actor & critic and actor | critic == {id(p) for p in m.parameters()}
        assert ({id(p) for p in m.actor.encoder.parameters()} <= critic) == shared


def test_stochastic_dueling_network_averages_to_v_under_pi():
    """E_{a ~ pi, u_i ~ pi} Q~(x, a) = V(x): A(x, a) - mean_i A(x, u_i) has mean zero (each row draws its own u_i)."""
    torch.manual_seed(0)
    model = ACER(OBS_DIM, ACT_DIM, "continuous", encoder_hidden_size_list=[8], sdn_n_samples=5)
    M = 4000
    x = torch.randn(3, OBS_DIM).repeat(M, 1)  # (M * 3, OBS_DIM): the 3 states, M times each
    with torch.no_grad():
        pi = model(x, mode="compute_actor")["logit"]
        actions = pi["mu"] + pi["sigma"] * torch.randn_like(pi["mu"])
        out = model(x, mode="compute_critic", action=actions, policy=pi)
        adv = model.critic.adv_head(torch.cat([model.critic.encoder(x), actions], -1))
    spread = float(adv.view(M, 3).std(0).min())
    assert spread > 1e-3  # A(x, a) does depend on a
    q_mean = out["q_value"].view(M, 3).mean(0)
    torch.testing.assert_close(q_mean, out["value"][:3], atol=5 * spread * (1.2 / M) ** 0.5 * 2, rtol=0)


# ---------------------------------------------------------------------------------------- Retrace boundaries
def test_retrace_inputs_at_termination_truncation_and_unroll_end(monkeypatch):
    policy = make_policy("discrete")
    state = copy.deepcopy(policy.learn_mode.state_dict())
    batch = mixed_batch(policy)
    values = state_value(policy, batch["obs"]).T  # (T, B)
    final_v = state_value(policy, batch["next_obs"]).T
    with torch.no_grad():
        q = policy.model(batch["obs"].reshape(-1, OBS_DIM), mode="compute_critic")["q_value"]
    q_taken = q.view(B_MIX, T_MIX, -1).gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1).T
    log_pi = torch.log_softmax(actor_stats(policy, batch["obs"]), -1)
    log_mu = torch.log_softmax(batch["logit"], -1)
    rho = (log_pi - log_mu).gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1).T.exp()
    rec = Recorder(monkeypatch, "acer_retrace_targets")
    learn_once(policy, batch, state)
    (call,) = rec.calls
    rewards, q_in, v_in, c_in, discounts, bootstrap = call["args"]
    torch.testing.assert_close(rewards, batch["reward"].T)
    torch.testing.assert_close(q_in, q_taken)
    torch.testing.assert_close(v_in, values)
    torch.testing.assert_close(c_in, rho.clamp(max=1.0))
    expected_disc = torch.full((T_MIX, B_MIX), GAMMA)
    expected_disc[TERM_AT, 0] = expected_disc[TRUNC_AT, 1] = 0.0
    expected_disc[-1] = 0.0
    torch.testing.assert_close(discounts, expected_disc)
    expected_boot = torch.zeros(T_MIX, B_MIX)
    expected_boot[TRUNC_AT, 1] = GAMMA * final_v[TRUNC_AT, 1]  # truncated: gamma V(true final obs)
    expected_boot[-1] = GAMMA * final_v[-1]  # end of the unroll: gamma V(x_T); terminated step: 0
    torch.testing.assert_close(bootstrap, expected_boot)
    assert final_v[TERM_AT, 0].abs() > 1e-4 and final_v[TRUNC_AT, 1].abs() > 1e-4  # the zeros are meaningful
    # and the targets are the paper's, episode by episode
    ref = reference_q_ret(rewards.double(), q_taken.double(), values.double(), c_in.double(), batch["terminated"].T,
                          batch["truncated"].T, final_v.double(), final_v[-1].double())
    torch.testing.assert_close(call["out"].double(), ref, rtol=1e-5, atol=1e-5)


def test_last_step_terminated_and_terminated_truncated_do_not_bootstrap(monkeypatch):
    policy = make_policy("discrete")
    state = copy.deepcopy(policy.learn_mode.state_dict())
    batch = random_batch(policy, 2, 4, seed=1)
    batch["terminated"][0, -1] = True  # the unroll ends on a terminal step: no V(x_T)
    batch["terminated"][1, 1] = batch["truncated"][1, 1] = True  # TimeLimit on a terminal step: termination wins
    v_last = float(state_value(policy, batch["next_obs"][1, -1]))
    rec = Recorder(monkeypatch, "acer_retrace_targets")
    learn_once(policy, batch, state)
    _, _, _, _, discounts, bootstrap = rec.calls[0]["args"]
    assert bootstrap[-1, 0] == 0 and bootstrap[1, 1] == 0 and discounts[1, 1] == 0
    assert bootstrap[-1, 1] == pytest.approx(GAMMA * v_last, abs=1e-5)


def test_continuous_retrace_inputs(monkeypatch):
    """V head bootstraps, c_t = min(1, rho_t^(1/d)), and the SDN's V target uses the full ratio."""
    policy = make_policy("continuous")
    state = copy.deepcopy(policy.learn_mode.state_dict())
    batch = mixed_batch(policy)
    values, final_v = state_value(policy, batch["obs"]).T, state_value(policy, batch["next_obs"]).T
    pi = actor_stats(policy, batch["obs"])
    normal = torch.distributions.Normal
    rho = (normal(pi["mu"], pi["sigma"]).log_prob(batch["action"]).sum(-1) -
           normal(batch["logit"]["mu"], batch["logit"]["sigma"]).log_prob(batch["action"]).sum(-1)).exp().T
    assert (rho > 1).any() and (rho < 1).any()
    rec = Recorder(monkeypatch, "acer_retrace_targets")
    rec_v = Recorder(monkeypatch, "acer_value_target")
    learn_once(policy, batch, state)
    _, _, v_in, c_in, discounts, bootstrap = rec.calls[0]["args"]
    torch.testing.assert_close(v_in, values)
    torch.testing.assert_close(c_in, rho.pow(1.0 / ACT_DIM).clamp(max=1.0))
    assert discounts[TERM_AT, 0] == 0 and discounts[TRUNC_AT, 1] == 0 and (discounts[-1] == 0).all()
    assert bootstrap[TERM_AT, 0] == 0
    torch.testing.assert_close(bootstrap[TRUNC_AT, 1], GAMMA * final_v[TRUNC_AT, 1])
    torch.testing.assert_close(bootstrap[-1], GAMMA * final_v[-1])
    q_targets, _, v_values, ratios = rec_v.calls[0]["args"]
    torch.testing.assert_close(q_targets, rec.calls[0]["out"])
    torch.testing.assert_close(ratios, rho, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("space", list(SPACES))
def test_q_opc_feeds_the_policy_gradient_and_q_ret_the_critic(space, monkeypatch):
    name = f"acer_policy_loss_{space}"
    targets = {}
    for use_q_opc in (False, True):
        policy = make_policy(space, use_q_opc=use_q_opc)
        rec_ret = Recorder(monkeypatch, "acer_retrace_targets")
        rec_pi = Recorder(monkeypatch, name)
        learn_once(policy, mixed_batch(policy), copy.deepcopy(policy.learn_mode.state_dict()))
        q_ret = rec_ret.calls[0]["out"]  # with Q_opc on, the second call (all c = 1) is Q_opc
        q_pg = rec_pi.calls[0]["args"][4] if space == "discrete" else rec_pi.calls[0]["args"][5]
        targets[use_q_opc] = (q_ret, q_pg, rec_ret.calls)
        monkeypatch.undo()
    q_ret, q_pg, _ = targets[False]
    torch.testing.assert_close(q_pg, q_ret)
    q_ret, q_pg, calls = targets[True]
    assert len(calls) == 2 and torch.equal(calls[1]["args"][3], torch.ones_like(q_ret))
    torch.testing.assert_close(q_pg, calls[1]["out"])
    assert not torch.allclose(q_pg, q_ret)


@pytest.mark.parametrize("space", list(SPACES))
def test_on_policy_ratios_are_one(space):
    policy = make_policy(space)
    out = policy.learn_mode.forward(random_batch(policy, 3, 5, behaviour="current"))
    assert out["rho_mean"] == pytest.approx(1.0, abs=1e-4)
    assert out["kl_avg"] == pytest.approx(0.0, abs=1e-6)  # the average network starts as a copy of the actor
    if space == "discrete":  # every rho(a) <= c: the bias correction vanishes (continuous: a' ~ pi may have rho > c)
        assert out["correction_loss"] == 0.0


@pytest.mark.parametrize("space", list(SPACES))
def test_policy_and_critic_losses_reach_only_their_own_network(space, monkeypatch):
    """The policy loss moves the actor only (Q, V and Q~ enter it as constants); the critic loss the critic only."""
    for silenced, untouched in ((f"acer_policy_loss_{space}", "actor."), (f"acer_critic_loss_{space}", "critic.")):
        policy = make_policy(space, entropy_weight=0.0, trust_region=False)
        grads = capture_grads(policy)
        fn = getattr(acer_math, silenced)
        if silenced.startswith("acer_policy_loss"):
            monkeypatch.setattr(acer_math, silenced, lambda *a, **k: fn(*a, **k)._replace(
                loss=fn(*a, **k).loss * 0.0))
        else:
            monkeypatch.setattr(acer_math, silenced, lambda *a, **k: fn(*a, **k) * 0.0)
        policy.learn_mode.forward(random_batch(policy, 3, 4))
        assert grads and all(g.abs().max() == 0 for n, g in grads.items() if n.startswith(untouched))
        other = "actor." if untouched == "critic." else "critic."
        assert any(g.abs().max() > 0 for n, g in grads.items() if n.startswith(other))
        monkeypatch.undo()


# -------------------------------------------------------------------------------------------- trust region
@pytest.mark.parametrize("space", list(SPACES))
def test_trust_region_projection(space, monkeypatch):
    """Off: the plain ACER loss. On with a huge delta: the same gradient. On with a small delta and an average
    policy that moved away: the projected gradient, which satisfies k^T z <= delta."""
    runs = {}
    for name, learn in (("off", dict(trust_region=False)), ("loose", dict(trust_region_value=1e9)),
                        ("tight", dict(trust_region_value=1e-3))):
        policy = make_policy(space, entropy_weight=0.0, **learn)
        with torch.no_grad():  # move the average network away from the actor, so that k != 0
            for p in policy._avg_actor.parameters():
                p.add_(0.3 * torch.randn_like(p))
        state = copy.deepcopy(policy.learn_mode.state_dict())
        grads = capture_grads(policy)
        rec = Recorder(monkeypatch, "acer_trust_region_update")
        info = learn_once(policy, random_batch(policy, 4, 5, seed=2), state)
        runs[name] = (grads, info, rec.calls)
        monkeypatch.undo()
    off, loose, tight = runs["off"], runs["loose"], runs["tight"]
    assert not off[2] and len(loose[2]) == len(tight[2]) == 1
    for key in off[0]:
        torch.testing.assert_close(loose[0][key], off[0][key], rtol=1e-4, atol=1e-6)
    assert loose[1]["trust_region_active"] == 0.0 and tight[1]["trust_region_active"] > 0.0
    assert any(not torch.allclose(tight[0][k], off[0][k]) for k in off[0] if k.startswith("actor."))
    for k in off[0]:  # the critic does not see the trust region
        if k.startswith("critic."):
            torch.testing.assert_close(tight[0][k], off[0][k])
    call = tight[2][0]
    g, k, delta = call["args"]
    z = call["out"]
    kz = sum((a * b).sum(-1) for a, b in zip(k, z))
    assert (kz <= delta + 1e-5).all()


# ----------------------------------------------------------------------------------------- average network
@pytest.mark.parametrize("space", list(SPACES))
def test_average_network_is_an_ema_without_gradient(space):
    theta = 0.2
    policy = make_policy(space, target_theta=theta)
    avg = policy._avg_actor
    assert all(torch.equal(a, p) for a, p in zip(avg.parameters(), policy.model.actor.parameters()))
    before = [p.detach().clone() for p in avg.parameters()]
    for seed in range(2):
        before = [p.detach().clone() for p in avg.parameters()]
        policy.learn_mode.forward(random_batch(policy, 3, 4, seed=seed))
        for a, b, p in zip(avg.parameters(), before, policy.model.actor.parameters()):
            torch.testing.assert_close(a, (1 - theta) * b + theta * p.detach())
    assert all(not p.requires_grad and p.grad is None for p in avg.parameters())
    assert not any(torch.equal(a, p) for a, p in zip(avg.parameters(), policy.model.actor.parameters())
                   if a.dim() == 2)
    ids = {id(p) for g in (policy._optimizer_actor, policy._optimizer_critic) for pg in g.param_groups
           for p in pg["params"]}
    assert not ids & {id(p) for p in avg.parameters()}


# ------------------------------------------------------------------------------------------------ checkpoints
@pytest.mark.parametrize("space", list(SPACES))
def test_state_dict_round_trip(space):
    a = make_policy(space, seed=0)
    batch = random_batch(a, 4, 5, seed=0)
    for _ in range(3):
        a.learn_mode.forward(copy.deepcopy(batch))
    buf = io.BytesIO()
    torch.save(a.learn_mode.state_dict(), buf)
    buf.seek(0)
    state = torch.load(buf, weights_only=True)  # a plain dict of tensors and numbers
    assert set(state) == {"model", "avg_actor", "optimizer_actor", "optimizer_critic"}
    b = make_policy(space, seed=1)
    b.learn_mode.load_state_dict(state)
    for x, y in ((a.model, b.model), (a._avg_actor, b._avg_actor)):
        for (n, p), q in zip(x.state_dict().items(), y.state_dict().values()):
            assert torch.equal(p, q), n
    for opt in ("optimizer_actor", "optimizer_critic"):
        sa, sb = a.learn_mode.state_dict()[opt], b.learn_mode.state_dict()[opt]
        assert sa["param_groups"] == sb["param_groups"] and len(sa["state"]) > 0
        for k in sa["state"]:
            for name, v in sa["state"][k].items():
                assert torch.equal(v, sb["state"][k][name]), (opt, k, name)
    torch.manual_seed(5)
    out_a = a.learn_mode.forward(copy.deepcopy(batch))
    torch.manual_seed(5)
    out_b = b.learn_mode.forward(copy.deepcopy(batch))
    assert out_a == out_b
    for p, q in zip(list(a.model.parameters()) + list(a._avg_actor.parameters()),
                    list(b.model.parameters()) + list(b._avg_actor.parameters())):
        assert torch.equal(p, q)


# ---------------------------------------------------------------------------------------------------- configs
@pytest.mark.parametrize("name", ["cartpole_acer", "pendulum_acer", "lunarlander_acer"])
def test_shipped_configs_compile(name):
    cfg = compile_config(read_config_file(os.path.join(ROOT, "dizoo_configs", f"{name}.py")))
    assert cfg.policy.type == "acer" and cfg.policy.model.type == "acer"
    assert "unroll_len" not in cfg.policy.learn and "unroll_len" not in cfg.policy.collect


@pytest.mark.parametrize("override, fragment", [
    ("policy.learn.c_clip_ratio=0", "policy.learn.c_clip_ratio"),
    ("policy.learn.target_theta=0", "policy.learn.target_theta"),
    ("policy.learn.trust_region_value=-1.0", "policy.learn.trust_region_value"),
    ("policy.learn.learning_rate_critic=0.0", "policy.learn.learning_rate_critic"),
    ("policy.learn.grad_clip_type='clip_norm'", "policy.learn.clip_value"),
    ("policy.model.sdn_n_samples=0", "policy.model.sdn_n_samples"),
    ("policy.learn.unroll_len=8", "policy.unroll_len"),
    ("policy.collect.unroll_len=8", "policy.unroll_len"),
])
def test_impossible_values_are_config_errors(override, fragment):
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(learn=dict(clip_value=None)))
    with pytest.raises(ConfigError, match=fragment.replace(".", r"\.")):
        compile_config((main, dict(policy=dict(type="acer"))), overrides=[override])


# --------------------------------------------------------------------------------------- with the collector
def test_collector_buffer_learner_round_trip():
    env_cfg = EnvConfig.default_config()
    env_cfg.update(type="gym", env_id="CartPole-v1", manager=dict(type="base"))
    venv = make_vector_env(env_cfg, 4, seed=0)
    cfg = make_cfg("discrete", obs_dim=4)  # CartPole: 4 observations, 2 actions
    cfg.policy.unroll_len = 8
    cfg.policy.model.action_shape = None
    cfg.env = env_cfg
    resolve_env_spaces(cfg, EnvSpec.from_spaces(venv.single_observation_space, venv.single_action_space))
    policy = ACERPolicy(cfg.policy)
    collector = SampleCollector(venv, policy.collect_mode)
    buffer = ReplayBuffer(EasyDict(ReplayBuffer.default_config(), replay_buffer_size=64, max_use=4), seed=0)
    for it in range(6):
        samples = collector.collect(4)
        assert samples["obs"].shape == (4, 8, 4) and samples["logit"].shape == (4, 8, 2)
        buffer.push(samples, collector.envstep, collect_iter=it)
        batch = buffer.sample(4, it)
        assert batch is not None and batch["action"].shape == (4, 8)
        info = policy.learn_mode.forward(batch)
        assert np.isfinite(float(info["total_loss"]))
    collector.close()
    assert collector.envstep == 6 * 4 * 8
