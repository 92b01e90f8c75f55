"""Action masks through ACER and discrete SAC on the real WallGrid env (ding_lite/envs/toy/wall_grid.py, where an invalid
move ends the episode with -1): the masks travel in the unrolls / transitions (with the next state's mask, which the
values of x_T, final observations and s' need), the agents never take an invalid action while acting, warming up or
evaluating, and the learner's results do not depend on what the networks say about masked actions."""
import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import ReplayBuffer
from ding_lite.entry.build import build, compile_input, resolve_env_spaces
from ding_lite.envs import EnvSpec
from ding_lite.envs.toy.wall_grid import WallGridEnv
from ding_lite.policy.acer import ACERPolicy
from ding_lite.utils import ConfigError, set_seed
from ding_lite.worker import SampleCollector

N_ENV = 4


def mask_table():
    """(25, 4) bool: WallGrid's action mask of every cell (position = row * 5 + column)."""
    env = WallGridEnv()
    rows = []
    for cell in range(25):
        env._pos = np.array(divmod(cell, 5))
        rows.append(env.action_mask().astype(bool))
    return torch.tensor(np.array(rows))


TABLE = mask_table()


class Built:
    """An agent built through the real config path on wall_grid with its mask, its collector and envs."""

    def __init__(self, policy_type, seed=0, **policy):
        main = dict(exp_name="mask", env=dict(collector_env_num=N_ENV, evaluator_env_num=1, n_evaluator_episode=1),
                    policy=policy)
        self.cfg = compile_input((main, dict(env=dict(type="wall_grid"), policy=dict(type=policy_type))), seed)
        # The global seed, as the pipelines set it before building: the networks' initial weights and the sampled
        # actions are then the same whatever tests ran before in this process (with the generator as earlier tests
        # left it, a random walk reached the goal inside the first 80 steps once, in one test order).
        set_seed(seed)
        self.parts = build(self.cfg, seed)
        self.policy = self.parts.policy
        self.collector = SampleCollector(self.parts.collector_env, self.policy.collect_mode)

    def close(self):
        self.parts.collector_env.close()
        self.parts.evaluator_env.close()


@pytest.fixture
def make():
    made = []

    def _make(*args, **kwargs):
        made.append(Built(*args, **kwargs))
        return made[-1]
    yield _make
    for b in made:
        b.close()


def assert_valid_moves(samples, obs_key="obs"):
    """Every taken action is allowed by the stored mask, which is the env's for that cell; no -1 reward."""
    obs, mask, action = samples[obs_key], samples["action_mask"], samples["action"]
    position = obs["position"][..., :action.shape[-1]] if action.dim() > 1 else obs["position"]
    assert set(obs) == {"position"}  # the mask left the observation
    assert torch.equal(mask, TABLE[position.long()])
    assert mask.gather(-1, action.long().unsqueeze(-1)).all()
    assert (samples["reward"] >= 0).all()


def perturbed(policy, *methods):
    """A copy of ``policy`` whose networks say anything at masked actions (by each row's cell, what the stored masks
    say): ``methods`` are (model method, output key or None for a tensor output, what to add there), e.g. +50 on
    the logits and 1e6 on Q."""
    other = copy.deepcopy(policy)
    model = other._model

    def wrap(name, key, fill):
        real = getattr(model, name)

        def call(obs, *args, **kwargs):
            out = real(obs, *args, **kwargs)
            mask = TABLE[obs["position"].long()]
            if key is None:
                return torch.where(mask, out, out + fill)
            return {**out, key: torch.where(mask, out[key], out[key] + fill)}
        setattr(model, name, call)
    for method in methods:
        wrap(*method)
    return other


def learn_info(policy, batch):
    return {k: torch.as_tensor(v) for k, v in policy.learn_mode.forward(copy.deepcopy(batch)).items()}


# ------------------------------------------------------------------------------------------------------------ ACER
@pytest.mark.parametrize("storage", ["full", "compact"])
def test_acer_stores_masks_and_learns_the_same_whatever_the_nets_say_at_masked_actions(make, storage):
    """80 steps per env: every env reaches WallGrid's time limit (60) inside an unroll, so the truncated episodes'
    final observations (and x_T) need their own masks for V = sum_a pi(a) Q(a) over their valid actions."""
    b = make("acer", unroll_len=16, obs_storage=storage, model=dict(encoder_hidden_size_list=[16]))
    samples = b.collector.collect(N_ENV * 5)
    assert samples["next_action_mask"].shape == samples["action_mask"].shape == (N_ENV * 5, 16, 4)
    assert_valid_moves({**samples, "obs": {"position": samples["obs"]["position"][:, :16]}})
    assert samples["truncated"].any() and not samples["terminated"].any()
    if storage == "full":
        assert torch.equal(samples["next_action_mask"], TABLE[samples["next_obs"]["position"].long()])
    else:
        assert torch.equal(samples["next_action_mask"][:, -1], TABLE[samples["obs"]["position"][:, -1].long()])
    other = perturbed(b.policy, ("forward", "logit", 50.0), ("forward", "q_value", 1e6),
                      ("compute_actor", "logit", 50.0))  # the online and the average actor's logits
    info, info2 = learn_info(b.policy, samples), learn_info(other, samples)
    torch.testing.assert_close(info["rho_mean"], torch.tensor(1.0))  # on-policy: rho = 1 under masked pi and mu
    for key in ("critic_loss", "acer_loss", "correction_loss", "q_ret_mean", "entropy", "kl_avg", "policy_loss"):
        assert torch.isfinite(info[key]), key
        torch.testing.assert_close(info2[key], info[key], msg=key)


def test_acer_learning_keeps_acting_valid(make):
    """A short real run: collect, replay, learn, collect again with the trained policy: never an invalid move."""
    b = make("acer", unroll_len=8, model=dict(encoder_hidden_size_list=[16]))
    buffer = ReplayBuffer(dict(replay_buffer_size=200), seed=0)
    for _ in range(6):
        samples = b.collector.collect(N_ENV)
        assert_valid_moves({**samples, "obs": {"position": samples["obs"]["position"][:, :8]}})
        buffer.push(samples, b.collector.envstep)
        for _ in range(2):
            info = b.policy.learn_mode.forward(buffer.sample(4, 0))
            assert all(torch.isfinite(torch.as_tensor(v)).all() for v in info.values())
    obs = {"position": torch.arange(25), "action_mask": TABLE.to(torch.int8)}
    free = TABLE.any(-1)
    action = b.policy.eval_mode.forward({k: v[free] for k, v in obs.items()})["action"]
    assert TABLE[free].gather(-1, action.unsqueeze(-1)).all()


# ------------------------------------------------------------------------------------------------- discrete SAC
SAC_MODEL = dict(actor_head_hidden_size=16, critic_head_hidden_size=16)


@pytest.mark.parametrize("discrete_policy", ["actor", "boltzmann"])
def test_sac_stores_masks_and_learns_the_same_whatever_the_nets_say_at_masked_actions(make, discrete_policy):
    b = make("discrete_sac", model=SAC_MODEL, learn=dict(discrete_policy=discrete_policy, alpha=2.0))
    warm = b.collector.collect(40, random_action=True)  # uniformly random, valid moves
    acted = b.collector.collect(40)
    for samples in (warm, acted):
        assert_valid_moves(samples)
        assert torch.equal(samples["next_action_mask"], TABLE[samples["next_obs"]["position"].long()])
    batch = {k: torch.cat([warm[k], acted[k]]) if not isinstance(warm[k], dict)
             else {"position": torch.cat([warm[k]["position"], acted[k]["position"]])} for k in warm}
    methods = [("compute_critic", None, 1e6)] + ([("compute_actor", "logit", 50.0)] if discrete_policy == "actor"
                                                  else [])
    other = perturbed(b.policy, *methods)
    info, info2 = learn_info(b.policy, batch), learn_info(other, batch)
    keys = ["critic_loss", "alpha_loss", "entropy", "target_q_mean"] + (["actor_loss"] if discrete_policy == "actor"
                                                                         else [])
    for key in keys:
        assert torch.isfinite(info[key]), key
        torch.testing.assert_close(info2[key], info[key], msg=key)


def test_sac_nstep_keeps_the_mask_of_the_bootstrap_state(make):
    b = make("discrete_sac", model=SAC_MODEL, nstep=3)
    samples = b.collector.collect(40)
    assert torch.equal(samples["next_action_mask"], TABLE[samples["next_obs"]["position"].long()])
    assert_valid_moves(samples)


def test_sac_learning_keeps_acting_valid(make):
    """A short real run: warm-up, then collect, replay and learn in turn: never an invalid move."""
    b = make("discrete_sac", model=SAC_MODEL, learn=dict(batch_size=16))
    buffer = ReplayBuffer(dict(replay_buffer_size=500), seed=0)
    buffer.push(b.collector.collect(48, random_action=True), b.collector.envstep)
    for _ in range(20):
        samples = b.collector.collect(8)
        assert_valid_moves(samples)
        buffer.push(samples, b.collector.envstep)
        info = b.policy.learn_mode.forward(buffer.sample(16, 0))
        assert all(torch.isfinite(torch.as_tensor(v)).all() for v in info.values())
    free = TABLE.any(-1)
    obs = {"position": torch.arange(25)[free], "action_mask": TABLE[free].to(torch.int8)}
    action = b.policy.eval_mode.forward(obs)["action"]
    assert TABLE[free].gather(-1, action.unsqueeze(-1)).all()


def test_sac_refuses_a_mask_on_continuous_actions():
    env = WallGridEnv()
    cfg = compile_config((dict(exp_name="x", env=dict()), dict(env=dict(type="wall_grid"), policy=dict(type="sac"))))
    box = gym.spaces.Box(-1, 1, (2,), np.float32)
    with pytest.raises(ConfigError, match=r"action space is continuous.*env.action_mask_key=''"):
        resolve_env_spaces(cfg, EnvSpec.from_spaces(env.observation_space, box))


def test_a_policy_without_mask_support_is_refused(monkeypatch):
    monkeypatch.setattr(ACERPolicy, "supports_action_mask", False)
    env = WallGridEnv()
    cfg = compile_config((dict(exp_name="x", env=dict()), dict(env=dict(type="wall_grid"), policy=dict(type="acer"))))
    with pytest.raises(ConfigError, match=r"policy 'acer' does not support action masks \(IMPALA, APPO, PPO, ACER"):
        resolve_env_spaces(cfg, EnvSpec.from_spaces(env.observation_space, env.action_space))
