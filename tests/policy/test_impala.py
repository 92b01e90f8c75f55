"""IMPALAPolicy: V-trace targets across episode ends, importance weights, the gradient, checkpoints, the three action
spaces, and (marked slow) learning on tiny continuous and multi-discrete envs."""
import copy
import io
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

import ding_lite.model  # noqa: F401  (registers 'vac')
import ding_lite.policy.impala as impala_module
from ding_lite.data import ReplayBuffer
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvConfig, EnvSpec, make_vector_env
from ding_lite.policy import IMPALAPolicy
from ding_lite.torch_utils import make_dist
from ding_lite.utils import ENV_REGISTRY
from ding_lite.worker import SampleCollector

OBS_DIM = 3
GAMMA = 0.9
SPACES = {
    "discrete": gym.spaces.Discrete(2),
    "continuous": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
    "multi_discrete": gym.spaces.MultiDiscrete([3, 2]),
}


# ------------------------------------------------------------------------------------------------------- helpers


def make_cfg(action_space="discrete", obs_dim=OBS_DIM, env_cfg=None, model=None, **learn):
    pol = IMPALAPolicy.default_config()
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_hidden_size_list=[16])
    pol.model.update(model or {})
    pol.learn.update(discount_factor=GAMMA, lambda_=1.0, **learn)
    cfg = EasyDict(env=env_cfg or EasyDict(env_id=None, type="test", normalize_obs=False), policy=pol)
    obs_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
    act_space = SPACES[action_space] if isinstance(action_space, str) else action_space
    resolve_env_spaces(cfg, EnvSpec.from_spaces(obs_space, act_space))
    return cfg


def make_policy(action_space="discrete", seed=0, **kw):
    torch.manual_seed(seed)
    return IMPALAPolicy(make_cfg(action_space, **kw).policy)


def random_batch(policy, B, T, seed=0, behaviour="random"):
    """A batch as the buffer returns it: leaves (B, T, ...), with actions drawn from the behaviour logits."""
    g = torch.Generator().manual_seed(seed)
    space = policy.cfg.action_space
    obs = torch.randn(B, T, OBS_DIM, generator=g)
    next_obs = torch.cat([obs[:, 1:], torch.randn(B, 1, OBS_DIM, generator=g)], dim=1)
    if behaviour == "current":
        with torch.no_grad():
            logit = policy.model(obs.view(B * T, OBS_DIM), mode="compute_actor")["logit"]
        logit = {k: v.view(B, T, -1) for k, v in logit.items()} if isinstance(logit, dict) else logit.view(B, T, -1)
    elif space == "continuous":
        logit = {"mu": torch.randn(B, T, 2, generator=g), "sigma": torch.rand(B, T, 2, generator=g) + 0.5}
    else:
        logit = torch.randn(B, T, 2 if space == "discrete" else 5, generator=g)
    if space == "discrete":
        action = torch.randint(2, (B, T), generator=g)
    elif space == "multi_discrete":
        action = torch.stack([torch.randint(3, (B, T), generator=g), torch.randint(2, (B, T), generator=g)], -1)
    else:
        action = torch.randn(B, T, 2, generator=g)
    zeros = torch.zeros(B, T, dtype=torch.bool)
    return {"obs": obs, "next_obs": next_obs, "action": action, "logit": logit,
            "reward": torch.randn(B, T, generator=g), "terminated": zeros.clone(), "truncated": zeros.clone()}


class VtraceRecorder:
    """Stands in for impala.from_importance_weights: records its inputs and outputs."""

    def __init__(self, monkeypatch):
        self.calls = []
        self._fn = impala_module.from_importance_weights
        monkeypatch.setattr(impala_module, "from_importance_weights", self)

    def __call__(self, log_rhos, discounts, rewards, values, bootstrap_value, **kwargs):
        out = self._fn(log_rhos, discounts, rewards, values, bootstrap_value, **kwargs)
        self.calls.append(dict(log_rhos=log_rhos.clone(), discounts=discounts.clone(), rewards=rewards.clone(),
                               values=values.clone(), bootstrap_value=bootstrap_value.clone(), kwargs=kwargs,
                               vs=out.vs.clone(), pg_advantages=out.pg_advantages.clone()))
        return out


def value_of(policy, obs):
    with torch.no_grad():
        return policy.model(obs.reshape(-1, OBS_DIM), mode="compute_critic")["value"].view(obs.shape[:-1])


def reference_targets(rec, batch, policy_values, final_values):
    """V-trace written per episode, from the Gymnasium semantics: after a terminated step the value is 0, after a
    truncated one it is V(true final obs); otherwise the trace continues. Time-major (T, B) float64 outputs."""
    learn = dict(rho=1.0, c=1.0, pg=1.0)  # the default clips
    rhos = rec["log_rhos"].double().exp()
    term = batch["terminated"].T
    trunc = batch["truncated"].T
    reward = batch["reward"].T.double()
    V = policy_values.T.double()
    T, B = V.shape
    bootstrap = rec["bootstrap_value"].double()
    fin = final_values.T.double()
    vs = torch.zeros(T, B, dtype=torch.float64)
    adv = torch.zeros(T, B, dtype=torch.float64)
    for b in range(B):
        def next_value(t, table):
            if term[t, b]:
                return 0.0
            if trunc[t, b]:
                return float(fin[t, b])
            return float(table[t + 1, b]) if t + 1 < T else float(bootstrap[b])

        deltas = [min(learn["rho"], rhos[t, b]) * (reward[t, b] + GAMMA * next_value(t, V) - V[t, b])
                  for t in range(T)]
        for s in range(T):
            total, coef = V[s, b], 1.0
            for t in range(s, T):
                total = total + coef * deltas[t]
                if term[t, b] or trunc[t, b]:
                    break
                coef *= GAMMA * min(learn["c"], rhos[t, b])
            vs[s, b] = total
        for s in range(T):
            adv[s, b] = min(learn["pg"], rhos[s, b]) * (reward[s, b] + GAMMA * next_value(s, vs) - V[s, b])
    return vs, adv


# Mixed unroll, T=6, B=3: env 0 terminates at t=2, env 1 is truncated at t=3, env 2 runs through.
T_MIX, B_MIX, TERM_AT, TRUNC_AT = 6, 3, 2, 3


def mixed_batch(policy, seed=0):
    batch = random_batch(policy, B_MIX, T_MIX, seed)
    batch["terminated"][0, TERM_AT] = True
    batch["truncated"][1, TRUNC_AT] = True
    # next_obs[t] == obs[t+1] except at the ends, where next_obs is the true final obs
    batch["next_obs"][0, TERM_AT] = torch.tensor([5.0, 5.0, 5.0])
    batch["next_obs"][1, TRUNC_AT] = torch.tensor([-2.0, 3.0, 1.0])
    return batch


def learn_once(policy, batch, state):
    """One learn step from the given learn state (so several runs start from the same weights)."""
    policy.learn_mode.load_state_dict(copy.deepcopy(state))
    return policy.learn_mode.forward(copy.deepcopy(batch))


# ------------------------------------------------------------------------------------------- V-trace / episodes
def test_mixed_batch_targets_match_per_episode_reference(monkeypatch):
    policy = make_policy("discrete")
    state = copy.deepcopy(policy.learn_mode.state_dict())
    batch = mixed_batch(policy)
    values = value_of(policy, batch["obs"])
    final_values = value_of(policy, batch["next_obs"])
    with torch.no_grad():
        target_logit = policy.model(batch["obs"].view(-1, OBS_DIM), mode="compute_actor")["logit"]
    rec = VtraceRecorder(monkeypatch)
    learn_once(policy, batch, state)
    (call,) = rec.calls
    # inputs: zero discount at both ends; the truncated step's reward carries gamma * V(final obs), the terminated
    # step's reward is left alone (nothing after a terminal state)
    assert call["discounts"][TERM_AT, 0] == 0 and call["discounts"][TRUNC_AT, 1] == 0
    expected_disc = torch.full((T_MIX, B_MIX), GAMMA)
    expected_disc[TERM_AT, 0] = expected_disc[TRUNC_AT, 1] = 0
    torch.testing.assert_close(call["discounts"], expected_disc)
    expected_reward = batch["reward"].T.clone()
    expected_reward[TRUNC_AT, 1] += GAMMA * final_values[1, TRUNC_AT]
    torch.testing.assert_close(call["rewards"], expected_reward)
    torch.testing.assert_close(call["values"], values.T)
    torch.testing.assert_close(call["bootstrap_value"], final_values[:, -1])
    # log rho = log pi(a|x) - log mu(a|x), computed here from the logits
    target_lp = make_dist("discrete", target_logit.view(B_MIX, T_MIX, 2)).log_prob(batch["action"])
    behaviour_lp = make_dist("discrete", batch["logit"]).log_prob(batch["action"])
    torch.testing.assert_close(call["log_rhos"], (target_lp - behaviour_lp).T)
    # outputs: the per-episode definition
    vs, adv = reference_targets(call, batch, values, final_values)
    torch.testing.assert_close(call["vs"].double(), vs, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(call["pg_advantages"].double(), adv, rtol=1e-5, atol=1e-5)


def test_targets_before_an_episode_end_ignore_everything_after_it(monkeypatch):
    policy = make_policy("discrete")
    state = copy.deepcopy(policy.learn_mode.state_dict())
    batch = mixed_batch(policy)
    perturbed = copy.deepcopy(batch)
    g = torch.Generator().manual_seed(123)
    # env 0 (terminated at TERM_AT): everything after the step, and even the final obs of the terminated step
    perturbed["obs"][0, TERM_AT + 1:] += 3 * torch.randn(T_MIX - TERM_AT - 1, OBS_DIM, generator=g)
    perturbed["next_obs"][0, TERM_AT:] += 3 * torch.randn(T_MIX - TERM_AT, OBS_DIM, generator=g)
    perturbed["reward"][0, TERM_AT + 1:] += 10
    perturbed["logit"][0, TERM_AT + 1:] += torch.randn(T_MIX - TERM_AT - 1, 2, generator=g)
    perturbed["action"][0, TERM_AT + 1:] = 1 - perturbed["action"][0, TERM_AT + 1:]
    # env 1 (truncated at TRUNC_AT): everything after the step; its final obs stays
    perturbed["obs"][1, TRUNC_AT + 1:] += 3 * torch.randn(T_MIX - TRUNC_AT - 1, OBS_DIM, generator=g)
    perturbed["next_obs"][1, TRUNC_AT + 1:] += 3 * torch.randn(T_MIX - TRUNC_AT - 1, OBS_DIM, generator=g)
    perturbed["reward"][1, TRUNC_AT + 1:] -= 10
    perturbed["logit"][1, TRUNC_AT + 1:] += torch.randn(T_MIX - TRUNC_AT - 1, 2, generator=g)
    perturbed["action"][1, TRUNC_AT + 1:] = 1 - perturbed["action"][1, TRUNC_AT + 1:]
    rec = VtraceRecorder(monkeypatch)
    learn_once(policy, batch, state)
    learn_once(policy, perturbed, state)
    base, pert = rec.calls
    for key in ("vs", "pg_advantages"):
        torch.testing.assert_close(pert[key][:TERM_AT + 1, 0], base[key][:TERM_AT + 1, 0])
        torch.testing.assert_close(pert[key][:TRUNC_AT + 1, 1], base[key][:TRUNC_AT + 1, 1])
        torch.testing.assert_close(pert[key][:, 2], base[key][:, 2])
        # the perturbation is real: the targets after the ends did move
        assert not torch.allclose(pert[key][TERM_AT + 1:, 0], base[key][TERM_AT + 1:, 0])
        assert not torch.allclose(pert[key][TRUNC_AT + 1:, 1], base[key][TRUNC_AT + 1:, 1])

    # ... while the truncated step's final observation does matter (its value is bootstrapped)
    moved = copy.deepcopy(batch)
    moved["next_obs"][1, TRUNC_AT] += 3.0
    learn_once(policy, moved, state)
    assert not torch.allclose(rec.calls[-1]["vs"][TRUNC_AT, 1], base["vs"][TRUNC_AT, 1])


def test_terminated_and_truncated_on_the_same_step_does_not_bootstrap(monkeypatch):
    """Gymnasium's TimeLimit reports truncated=True on the limit step even when the env terminated on it (see
    tests/worker/test_collector.py, env 4). Termination wins: the value after a terminal state is 0."""
    policy = make_policy("discrete")
    state = copy.deepcopy(policy.learn_mode.state_dict())
    batch = random_batch(policy, 2, 4, seed=1)
    batch["terminated"][0, 1] = batch["truncated"][0, 1] = True
    batch["next_obs"][0, 1] = torch.tensor([4.0, -4.0, 4.0])  # V(final obs) != 0
    assert value_of(policy, batch["next_obs"][0, 1]).abs() > 1e-3
    rec = VtraceRecorder(monkeypatch)
    learn_once(policy, batch, state)
    (call,) = rec.calls
    assert call["discounts"][1, 0] == 0
    torch.testing.assert_close(call["rewards"][1, 0], batch["reward"][0, 1])


@pytest.mark.parametrize("space", list(SPACES))
def test_on_policy_importance_weights_are_one(space, monkeypatch):
    policy = make_policy(space)
    batch = random_batch(policy, 3, 5, behaviour="current")
    rec = VtraceRecorder(monkeypatch)
    out = policy.learn_mode.forward(batch)
    (call,) = rec.calls
    torch.testing.assert_close(call["log_rhos"], torch.zeros(5, 3), atol=1e-5, rtol=0)
    assert out["rho_mean"] == pytest.approx(1.0, abs=1e-5)


# ------------------------------------------------------------------------------------------------------ gradient
@pytest.mark.parametrize("normalize", [False, True])
def test_gradient_matches_hand_computation(monkeypatch, normalize):
    """Linear policy and value heads (no hidden layers): the gradient of
    -mean(adv * log pi) + w_v mean((V - vs)^2) - w_e mean(H) is written out by hand; with
    learn.normalize_advantage, adv is V-trace's advantage minus its mean over the batch's T x B steps, over their
    (population) standard deviation."""
    w_v, w_e = 0.5, 0.01
    linear = dict(encoder_hidden_size_list=[], actor_head_layer_num=0, critic_head_layer_num=0)
    policy = make_policy("discrete", value_weight=w_v, entropy_weight=w_e, model=linear,
                         normalize_advantage=normalize)
    actor = policy.model.actor_head
    critic = policy.model.critic_head
    assert len(actor) == 1 and isinstance(actor[0], torch.nn.Linear) and len(policy.model.actor_encoder) == 0
    W, b = actor[0].weight.detach().clone(), actor[0].bias.detach().clone()
    Wv, bv = critic[0].weight.detach().clone(), critic[0].bias.detach().clone()

    B, T = 2, 3
    batch = random_batch(policy, B, T, seed=3)
    batch["terminated"][0, 1] = True
    grads = {}

    def record_grads(params):
        grads.update({name: p.grad.detach().clone() for name, p in policy.model.named_parameters()})
        return 0.0

    policy._grad_clip = record_grads
    rec = VtraceRecorder(monkeypatch)
    policy.learn_mode.forward(copy.deepcopy(batch))
    (call,) = rec.calls
    N = B * T
    x = batch["obs"].transpose(0, 1).reshape(N, OBS_DIM)  # time-major rows, as the targets
    a = batch["action"].T.reshape(N)
    adv = call["pg_advantages"].reshape(N)
    if normalize:
        values = [float(v) for v in adv]
        mean = sum(values) / N
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / N)
        adv = torch.tensor([(v - mean) / std for v in values])
    vs = call["vs"].reshape(N)
    z = x @ W.T + b
    p = torch.softmax(z, -1)
    logp = torch.log_softmax(z, -1)
    H = -(p * logp).sum(-1)
    onehot = torch.nn.functional.one_hot(a, 2).float()
    dlogpi_dz = onehot - p  # d log pi(a|x) / dz
    dH_dz = -p * (logp + H.unsqueeze(-1))  # d H / dz
    dz = (-adv.unsqueeze(-1) * dlogpi_dz - w_e * dH_dz) / N
    V = x @ Wv.T.squeeze(-1) + bv
    dV = w_v * 2 * (V - vs) / N
    torch.testing.assert_close(grads["actor_head.0.weight"], dz.T @ x, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(grads["actor_head.0.bias"], dz.sum(0), rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(grads["critic_head.0.weight"], (dV.unsqueeze(-1) * x).sum(0, keepdim=True),
                               rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(grads["critic_head.0.bias"], dV.sum(0, keepdim=True), rtol=1e-4, atol=1e-6)


def test_policy_gradient_of_one_step(monkeypatch):
    """T=1, B=1, no value or entropy terms: grad = -adv * grad log pi(a|x), with adv = r - V(x) after a terminal."""
    policy = make_policy("discrete", value_weight=0.0, entropy_weight=0.0,
                         model=dict(encoder_hidden_size_list=[], actor_head_layer_num=0, critic_head_layer_num=0))
    W, b = policy.model.actor_head[0].weight.detach().clone(), policy.model.actor_head[0].bias.detach().clone()
    batch = random_batch(policy, 1, 1, seed=5, behaviour="current")
    batch["terminated"][:] = True
    x, a, r = batch["obs"][0, 0], int(batch["action"][0, 0]), float(batch["reward"][0, 0])
    adv = r - float(value_of(policy, x))  # rho = 1 (on-policy), nothing after the terminal step
    grads = {}
    policy._grad_clip = lambda params: grads.update(
        {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}) or 0.0
    policy.learn_mode.forward(copy.deepcopy(batch))
    p = torch.softmax(W @ x + b, -1)
    dlogpi = torch.nn.functional.one_hot(torch.tensor(a), 2).float() - p
    torch.testing.assert_close(grads["actor_head.0.weight"], -adv * torch.outer(dlogpi, x), rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(grads["actor_head.0.bias"], -adv * dlogpi, rtol=1e-4, atol=1e-6)
    assert grads["critic_head.0.weight"].abs().max() == 0  # value_weight = 0


# ------------------------------------------------------------------------------------------------- checkpoints
def test_state_dict_round_trip_restores_model_and_optimizer():
    a = make_policy("discrete", seed=0)
    batch = random_batch(a, 4, 5, seed=0)
    for _ in range(3):
        a.learn_mode.forward(copy.deepcopy(batch))
    buf = io.BytesIO()
    torch.save(a.learn_mode.state_dict(), buf)  # a plain dict of tensors and numbers
    buf.seek(0)
    state = torch.load(buf, weights_only=True)
    b = make_policy("discrete", seed=1)
    assert not all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))
    b.learn_mode.load_state_dict(state)
    for (n, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(p, q), n
    sa, sb = a.learn_mode.state_dict()["optimizer"], b.learn_mode.state_dict()["optimizer"]
    assert sa["param_groups"] == sb["param_groups"]
    assert sa["state"].keys() == sb["state"].keys() and len(sa["state"]) > 0
    for k in sa["state"]:
        for name, v in sa["state"][k].items():
            assert torch.equal(v, sb["state"][k][name]), (k, name)
    # and training goes on identically
    out_a = a.learn_mode.forward(copy.deepcopy(batch))
    out_b = b.learn_mode.forward(copy.deepcopy(batch))
    assert out_a == out_b
    for p, q in zip(a.model.parameters(), b.model.parameters()):
        assert torch.equal(p, q)


# ------------------------------------------------------------------------------------------- the action spaces
@pytest.mark.parametrize("space", list(SPACES))
def test_collect_eval_and_learn_shapes(space):
    policy = make_policy(space)
    obs = torch.randn(5, OBS_DIM)
    out = policy.collect_mode.forward(obs)
    action, logit = out["action"], out["logit"]
    ev = policy.eval_mode.forward(obs)
    assert torch.equal(ev["action"], policy.eval_mode.forward(obs)["action"])  # deterministic
    if space == "discrete":
        assert action.shape == (5,) and action.dtype == torch.int64
        assert ((action >= 0) & (action < 2)).all()
        assert logit.shape == (5, 2)
        assert torch.equal(ev["action"], ev["logit"].argmax(-1))
    elif space == "multi_discrete":
        assert action.shape == (5, 2) and action.dtype == torch.int64
        assert ((action[:, 0] >= 0) & (action[:, 0] < 3)).all() and ((action[:, 1] >= 0) & (action[:, 1] < 2)).all()
        assert logit.shape == (5, 5)
        assert torch.equal(ev["action"], torch.stack([ev["logit"][:, :3].argmax(-1), ev["logit"][:, 3:].argmax(-1)],
                                                     -1))
        assert SPACES[space].contains(ev["action"][0].numpy())
    else:
        assert action.shape == (5, 2) and action.dtype == torch.float32
        assert set(logit) == {"mu", "sigma"} and logit["mu"].shape == logit["sigma"].shape == (5, 2)
        assert (logit["sigma"] > 0).all()
        assert torch.equal(ev["action"], ev["logit"]["mu"])
    # a transition and a train sample keep the per-env leading dim
    ts = {"next_obs": obs + 1, "reward": torch.ones(5), "terminated": torch.zeros(5, dtype=torch.bool),
          "truncated": torch.zeros(5, dtype=torch.bool)}
    tr = policy.collect_mode.process_transition(obs, out, ts)
    assert torch.equal(tr["obs"], obs) and torch.equal(tr["next_obs"], obs + 1)
    seg = {k: (torch.stack([v] * 4) if torch.is_tensor(v) else {kk: torch.stack([vv] * 4) for kk, vv in v.items()})
           for k, v in tr.items()}  # (T=4, N=5, ...)
    sample = policy.collect_mode.get_train_sample(seg)
    assert sample["obs"].shape == (5, 4, OBS_DIM) and sample["reward"].shape == (5, 4)
    # one learn step on a batch of samples
    logs = policy.learn_mode.forward(random_batch(policy, 3, 4))
    assert set(policy.learn_mode.monitor_vars()) <= set(logs)
    assert all(np.isfinite(float(v)) for v in logs.values())


# ------------------------------------------------------------------------------------------ learning (slow)
class TargetBanditEnv(gym.Env):
    """Continuous bandit: reward = -||a - target||^2 whatever the obs; episodes of 1..8 steps."""

    TARGET = np.array([0.5, -0.3], dtype=np.float32)

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (OBS_DIM,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def _obs(self):
        return self.np_random.uniform(-1, 1, OBS_DIM).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.length = 0, int(self.np_random.integers(1, 9))
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        reward = -float(np.sum((np.asarray(action) - self.TARGET) ** 2))
        return self._obs(), reward, self.t >= self.length, False, {}


class MatchTwoHeadsEnv(gym.Env):
    """MultiDiscrete([3, 2]): obs is a one-hot state s in {0, 1, 2}; reward 1 when the action is (s, s % 2)."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(0.0, 1.0, (OBS_DIM,), np.float32)
        self.action_space = gym.spaces.MultiDiscrete([3, 2])

    def _obs(self):
        self.state = int(self.np_random.integers(3))
        return np.eye(OBS_DIM, dtype=np.float32)[self.state]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        reward = float(int(action[0]) == self.state and int(action[1]) == self.state % 2)
        return self._obs(), reward, False, self.t >= 4, {}


for _name, _cls in (("test_policy_impala_target_bandit", TargetBanditEnv),
                    ("test_policy_impala_match_two_heads", MatchTwoHeadsEnv)):
    if _name not in ENV_REGISTRY:
        ENV_REGISTRY.register(_name, _cls)


def train(env_name, iters, n_env=8, unroll_len=8, batch_size=16, update_per_collect=2, seed=0, model=None, **learn):
    env_cfg = EnvConfig.default_config()
    env_cfg.update(type=env_name, manager=dict(type="base"))
    venv = make_vector_env(env_cfg, n_env, seed=seed)
    spec = EnvSpec.from_spaces(venv.single_observation_space, venv.single_action_space)
    pol = IMPALAPolicy.default_config()
    pol.unroll_len = unroll_len
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_hidden_size_list=[32, 32])
    pol.model.update(model or {})
    pol.learn.update(batch_size=batch_size, **learn)
    cfg = EasyDict(env=env_cfg, policy=pol)
    resolve_env_spaces(cfg, spec)
    torch.manual_seed(seed)
    policy = IMPALAPolicy(cfg.policy)
    collector = SampleCollector(venv, policy.collect_mode)
    buffer = ReplayBuffer(EasyDict(ReplayBuffer.default_config(), replay_buffer_size=256, max_use=4), seed=seed)
    train_iter = 0
    for _ in range(iters):
        buffer.push(collector.collect(n_env), collector.envstep, collect_iter=train_iter)
        for _ in range(update_per_collect):
            batch = buffer.sample(batch_size, train_iter)
            if batch is None:
                break
            policy.learn_mode.forward(batch)
            train_iter += 1
    collector.close()
    return policy, train_iter


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny networks: threading only adds overhead
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_learns_continuous_target(one_thread):
    policy, n_updates = train("test_policy_impala_target_bandit", iters=150, learning_rate=1e-2,
                              entropy_weight=0.0, discount_factor=0.9, model=dict(init_sigma=0.5))
    assert n_updates > 200
    obs = torch.rand(64, OBS_DIM) * 2 - 1
    mu = policy.eval_mode.forward(obs)["action"]
    err = (mu - torch.from_numpy(TargetBanditEnv.TARGET)).norm(dim=-1)
    assert err.max() < 0.15, f"greedy actions {mu[:4]} far from target {TargetBanditEnv.TARGET}"


@pytest.mark.slow
def test_learns_multi_discrete_targets(one_thread):
    policy, n_updates = train("test_policy_impala_match_two_heads", iters=100, learning_rate=3e-3,
                              entropy_weight=0.001, discount_factor=0.9)
    assert n_updates > 100
    action = policy.eval_mode.forward(torch.eye(OBS_DIM))["action"]
    assert action.tolist() == [[0, 0], [1, 1], [2, 0]]


def test_encoder_grad_norms_are_each_terms_own_gradient_on_the_encoder():
    from ding_lite.policy.impala import encoder_grad_norms
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    other = torch.tensor(3.0, requires_grad=True)
    terms = {"a": (w ** 2).sum(), "b": 3 * w[0] + other, "c": other * 2}  # grads on w: 2w, (3, 0), none
    out = encoder_grad_norms(terms, [w])
    torch.testing.assert_close(out["grad_norm_encoder_a"], torch.tensor(20.0).sqrt())
    torch.testing.assert_close(out["grad_norm_encoder_b"], torch.tensor(3.0))
    assert float(out["grad_norm_encoder_c"]) == 0.0  # does not reach the encoder
    sum(terms.values()).backward()  # the graph is kept for the update's own backward
    torch.testing.assert_close(w.grad, 2 * w.detach() + torch.tensor([3.0, 0.0]))


def test_encoder_grad_norms_are_logged_every_encoder_grad_norm_freq_updates():
    policy = make_policy("discrete", encoder_grad_norm_freq=2)
    batch = random_batch(policy, 3, 4)
    probed = ["grad_norm_encoder_policy", "grad_norm_encoder_value", "grad_norm_encoder_entropy"]
    seen = [set(probed) <= set(policy.learn_mode.forward(copy.deepcopy(batch))) for _ in range(4)]
    assert seen == [True, False, True, False]
    assert set(probed) <= set(policy.learn_mode.monitor_vars())
    off = make_policy("discrete", encoder_grad_norm_freq=0)
    assert not set(probed) & set(off.learn_mode.forward(copy.deepcopy(batch)))
