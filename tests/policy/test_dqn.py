"""DQNPolicy: the epsilon schedule, masked acting (greedy, epsilon and warm-up draws never pick an invalid action),
multi-discrete heads, one update's loss against the (double) DQN target written out, the target network's hard and
soft updates, n-step discounts, prioritised replay's output, QR-DQN's update, checkpoints and config checks."""
import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

import ding_lite.model  # noqa: F401  (registers 'qnet')
from ding_lite.config import compile_config
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvSpec
from ding_lite.policy import DQNPolicy
from ding_lite.policy.dqn import epsilon_at
from ding_lite.rl_utils.dqn import q_target, td_loss
from ding_lite.utils import ConfigError

OBS = 3


def make(action_space=gym.spaces.Discrete(4), seed=0, model=None, mask_key=None, **learn):
    pol = DQNPolicy.default_config()
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_hidden_size_list=[16], head_hidden_size=16, **(model or {}))
    pol.learn.update(learn)
    pol.action_mask_key = mask_key
    cfg = EasyDict(env=EasyDict(env_id=None, type="test", normalize_obs=False), policy=pol)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(gym.spaces.Box(-np.inf, np.inf, (OBS,), np.float32), action_space))
    torch.manual_seed(seed)
    return DQNPolicy(cfg.policy)


def batch(B=8, A=4, seed=0, heads=1):
    g = torch.Generator().manual_seed(seed)
    action = torch.randint(A, (B,) if heads == 1 else (B, heads), generator=g)
    return {"obs": torch.randn(B, OBS, generator=g), "next_obs": torch.randn(B, OBS, generator=g), "action": action,
            "reward": torch.randn(B, generator=g), "terminated": torch.rand(B, generator=g) < 0.3,
            "truncated": torch.zeros(B, dtype=torch.bool)}


def test_epsilon_schedules():
    lin = EasyDict(type="linear", start=1.0, end=0.04, decay=8000)
    assert epsilon_at(lin, 0) == 1.0 and epsilon_at(lin, 4000) == pytest.approx(0.52)
    assert epsilon_at(lin, 8000) == pytest.approx(0.04) and epsilon_at(lin, 10 ** 6) == pytest.approx(0.04)
    exp = EasyDict(type="exp", start=1.0, end=0.1, decay=1000)
    assert epsilon_at(exp, 1000) == pytest.approx(0.1 + 0.9 * np.exp(-1))


def test_collect_follows_the_schedule_over_the_env_steps_it_is_given():
    policy = make()
    obs = torch.randn(4000, OBS)
    greedy = policy.eval_mode.forward(obs)["action"]
    for env_step, eps in ((0, 1.0), (5000, 1 - 0.95 * 0.5), (20000, 0.05)):
        action = policy.collect_mode.forward(obs, env_step=env_step)["action"]
        changed = (action != greedy).float().mean().item()
        assert changed == pytest.approx(eps * 3 / 4, abs=0.03)  # a random draw equals the greedy one 1/4 of times


def test_no_invalid_action_is_ever_chosen_and_the_next_mask_travels():
    """WallGrid's mask: greedy, epsilon and warm-up draws all valid (an invalid move costs -1 reward), and the
    transition keeps the next observation's mask for the target's max."""
    from ding_lite.envs import EnvConfig, make_vector_env
    from ding_lite.envs.toy.wall_grid import WallGridEnv
    from ding_lite.worker import SampleCollector
    env = WallGridEnv()
    pol = DQNPolicy.default_config()
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, obs_space=None, action_shape=None,
                         action_space=None, encoder_hidden_size_list=[16], head_hidden_size=16)
    env_cfg = EnvConfig.default_config()
    env_cfg.update(type="wall_grid", action_mask_key="action_mask", manager=dict(type="base"))
    cfg = EasyDict(env=env_cfg, policy=pol)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(env.observation_space, env.action_space))
    torch.manual_seed(0)
    policy = DQNPolicy(cfg.policy)
    venv = make_vector_env(cfg.env, 4, seed=0)
    try:
        collector = SampleCollector(venv, policy.collect_mode)
        for kwargs in (dict(random_action=True), {}):
            samples = collector.collect(200, **kwargs)
            assert samples["action_mask"].gather(-1, samples["action"].unsqueeze(-1)).all()
            assert (samples["reward"] >= 0).all() and samples["next_action_mask"].shape == (200, 4)
        collector.envstep = 10 ** 6  # epsilon at its end: mostly greedy
        samples = collector.collect(200)
        assert samples["action_mask"].gather(-1, samples["action"].unsqueeze(-1)).all()
    finally:
        venv.close()
    info = policy.learn_mode.forward(samples)
    assert torch.isfinite(info["total_loss"])


def test_one_update_regresses_q_onto_the_double_dqn_target():
    policy = make(double=True, loss="huber", clip_value=1e9)
    data = batch()
    online, target = copy.deepcopy(policy.model), copy.deepcopy(policy._target_model)
    with torch.no_grad():
        y = q_target(target(data["next_obs"])["q"], data["reward"], torch.full((8,), 0.99), data["terminated"],
                     online(data["next_obs"])["q"])
    q = online(data["obs"])["q"].gather(1, data["action"].view(-1, 1)).squeeze(1)
    expected = td_loss(q, y, "huber").loss
    info = policy.learn_mode.forward(copy.deepcopy(data))
    torch.testing.assert_close(info["total_loss"], expected.detach())
    assert {"total_loss", "q_mean", "grad_norm", "cur_lr"} <= set(info)


def test_the_n_step_discount_of_a_sample_is_used():
    policy = make(double=False)
    data = batch()
    data["discount"] = torch.full((8,), 0.5)
    with torch.no_grad():
        y = q_target(policy._target_model(data["next_obs"])["q"], data["reward"], data["discount"], data["terminated"])
        q = policy.model(data["obs"])["q"].gather(1, data["action"].view(-1, 1)).squeeze(1)
    info = policy.learn_mode.forward(copy.deepcopy(data))
    torch.testing.assert_close(info["total_loss"], td_loss(q, y, "huber").loss)


def test_hard_and_soft_target_updates():
    hard = make(target_update_freq=3)
    start = copy.deepcopy(hard._target_model.state_dict())
    for i in range(3):
        hard.learn_mode.forward(batch(seed=i))
        same = all(torch.equal(v, start[k]) for k, v in hard._target_model.state_dict().items())
        assert same == (i < 2)  # copied at the 3rd update
    assert all(torch.equal(v, hard.model.state_dict()[k]) for k, v in hard._target_model.state_dict().items())
    soft = make(target_theta=0.25)
    before = [p.clone() for p in soft._target_model.parameters()]
    soft.learn_mode.forward(batch())
    for b, t, o in zip(before, soft._target_model.parameters(), soft.model.parameters()):
        torch.testing.assert_close(t, 0.75 * b + 0.25 * o.detach())


def test_priorities_and_importance_weights():
    policy = make()
    policy._cfg.priority = True
    data = batch()
    data["weight"] = torch.linspace(0.1, 1.0, 8)
    info = policy.learn_mode.forward(data)
    assert info["priority"].shape == (8,) and (info["priority"] >= 0).all()


def test_multi_discrete_heads_and_qr_dqn_update():
    policy = make(gym.spaces.MultiDiscrete([3, 2]), model=dict(dueling=True, num_quantiles=8))
    obs = torch.randn(5, OBS)
    out = policy.model(obs)
    assert out["quantiles"].shape == (5, 5, 8) and out["q"].shape == (5, 5)
    act = policy.collect_mode.forward(obs, env_step=10 ** 6)["action"]
    assert act.shape == (5, 2) and (act[:, 0] < 3).all() and (act[:, 1] < 2).all()
    data = batch(heads=2, A=2)
    info = policy.learn_mode.forward(data)
    assert torch.isfinite(info["total_loss"])


def test_the_dueling_head_aggregates_as_rl_utils_dueling_q():
    from ding_lite.rl_utils.dqn import dueling_q
    policy = make(model=dict(dueling=True))
    obs = torch.randn(6, OBS)
    model = policy.model
    feature = model.encoder(obs)
    want = dueling_q(model.value_head(feature), model.advantage_head(feature))
    torch.testing.assert_close(model(obs)["q"], want)


def test_a_continuous_action_space_is_one_line_naming_the_policies_that_take_it():
    with pytest.raises(ConfigError, match="DQN's Q-network takes discrete or multi-discrete actions; for this env's "
                                          "use 'sac'"):
        make(gym.spaces.Box(-1.0, 1.0, (2,), np.float32))


def test_checkpoint_round_trip_continues_identically():
    a, b = make(seed=0, target_update_freq=2), make(seed=1, target_update_freq=2)
    a.learn_mode.forward(batch(seed=0))
    b.learn_mode.load_state_dict(copy.deepcopy(a.learn_mode.state_dict()))
    for i in range(1, 4):  # across the next copy (update 2)
        assert a.learn_mode.forward(batch(seed=i)) == b.learn_mode.forward(batch(seed=i))


@pytest.mark.parametrize("policy,match", [
    (dict(learn=dict(loss="l1")), "learn.loss='l1'"),
    (dict(learn=dict(target_theta=2.0)), "target_theta=2.0"),
    (dict(collect=dict(eps=dict(type="cosine"))), "eps.type='cosine'"),
    (dict(collect=dict(eps=dict(start=0.1, end=0.5))), "need 0 <= end <= start <= 1"),
    (dict(nstep=0), "nstep=0"),
    (dict(learn=dict(dubble=True)), "did you mean policy.learn.double"),
])
def test_config_errors(policy, match):
    with pytest.raises(ConfigError, match=match):
        compile_config(dict(env=dict(env_id="CartPole-v1"), policy=policy), dict(policy=dict(type="dqn")))
