"""Action masks through the policies (IMPALA, APPO, PPO): the mask leaves the model's observation, travels in the
unrolls (``action_mask``) with the behaviour logits stored masked, and acting, evaluating and learning use it."""
import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

import ding_lite.model  # noqa: F401  (registers 'vac')
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvConfig, EnvSpec, make_vector_env
from ding_lite.envs.toy.wall_grid import WallGridEnv
from ding_lite.policy.action_mask import EmptyActionMask, split_mask
from ding_lite.utils import POLICY_REGISTRY, ConfigError
from ding_lite.worker import SampleCollector

torch.set_num_threads(1)
MASKED_POLICIES = ["impala", "appo", "ppo"]


def make_cfg(policy_type, env=None, action_mask_key="action_mask", **policy):
    env = env or WallGridEnv()
    pol = POLICY_REGISTRY.get(policy_type).default_config()
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, obs_space=None, action_shape=None,
                         action_space=None, encoder_hidden_size_list=[16])
    pol.update(policy)
    env_cfg = EnvConfig.default_config()
    env_cfg.update(type="wall_grid", action_mask_key=action_mask_key, manager=dict(type="base"))
    cfg = EasyDict(env=env_cfg, policy=pol)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(env.observation_space, env.action_space))
    return cfg


def collect(policy_type, n_env=4, model=None, **policy):
    cfg = make_cfg(policy_type, unroll_len=8, **policy)
    cfg.policy.model.update(model or {})
    torch.manual_seed(0)
    policy = POLICY_REGISTRY.get(policy_type)(cfg.policy)
    venv = make_vector_env(cfg.env, n_env, seed=0)
    try:
        samples = SampleCollector(venv, policy.collect_mode).collect(n_env)
    finally:
        venv.close()
    return policy, samples


@pytest.mark.parametrize("policy_type", MASKED_POLICIES)
def test_mask_leaves_the_model_input_and_travels_in_the_unrolls(policy_type):
    policy, samples = collect(policy_type)
    assert policy.cfg.action_mask_key == "action_mask"
    assert set(policy.cfg.model.obs_space["spaces"]) == {"position"}
    mask = samples["action_mask"]
    assert mask.dtype == torch.bool and mask.shape == (4, 8, 4)
    assert set(samples["obs"]) == {"position"}
    chosen = mask.gather(-1, samples["action"].unsqueeze(-1))
    assert chosen.all()  # never an invalid move: no -1 reward
    assert "reward" not in samples or (samples["reward"] >= 0).all()
    if "logit" in samples:  # the behaviour logits are stored masked
        assert (samples["logit"][~mask] < -1e30).all()
    info = policy.learn_mode.forward(samples)
    assert all(torch.isfinite(torch.as_tensor(v)).all() for v in info.values())


@pytest.mark.parametrize("core", [None, "lstm"])
def test_impala_learns_with_the_masked_target_policy(core, monkeypatch):
    """V-trace's ratio: pi is re-masked with the stored mask, so on-policy data gives ratios of exactly 1 (with a
    recurrent core too: acting and the learner's replay both mask)."""
    policy, samples = collect("impala", model=dict(core=core, core_size=8) if core else None)
    seen = {}
    import ding_lite.policy.impala as impala_module
    real = impala_module.from_importance_weights

    def spy(log_rhos, *args, **kwargs):
        seen["log_rhos"] = log_rhos
        return real(log_rhos, *args, **kwargs)
    monkeypatch.setattr(impala_module, "from_importance_weights", spy)
    policy.learn_mode.forward(samples)
    assert torch.allclose(seen["log_rhos"], torch.zeros_like(seen["log_rhos"]), atol=1e-5)


@pytest.mark.parametrize("policy_type", MASKED_POLICIES)
def test_eval_is_greedy_over_valid_actions_only(policy_type):
    cfg = make_cfg(policy_type)
    policy = POLICY_REGISTRY.get(policy_type)(cfg.policy)
    obs = {"position": torch.zeros(3, dtype=torch.long),
           "action_mask": torch.tensor([[0, 1, 0, 0], [0, 0, 0, 1], [1, 0, 1, 0]], dtype=torch.int8)}
    assert policy.eval_mode.forward(obs)["action"].tolist()[:2] == [1, 3]
    assert policy.eval_mode.forward(obs)["action"][2].item() in (0, 2)


def test_an_empty_mask_is_one_error_naming_the_env_and_step():
    class Stuck(WallGridEnv):
        def action_mask(self):
            mask = super().action_mask()
            return mask * 0 if self._steps >= 2 else mask
    cfg = make_cfg("impala", env=Stuck())
    policy = POLICY_REGISTRY.get("impala")(cfg.policy)
    venv = gym.vector.SyncVectorEnv([Stuck, Stuck], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    venv.reset(seed=0)
    venv.last_obs = venv.reset(seed=0)[0]
    try:
        collector = SampleCollector(venv, policy.collect_mode)
        with pytest.raises(EmptyActionMask, match=r"env index 0, collector env step 4: .*allows no action"):
            for _ in range(3):
                collector.step()
    finally:
        venv.close()


def test_split_mask_per_head_and_checks():
    obs = {"x": torch.zeros(2), "m": {"0": torch.tensor([[1, 0], [0, 1]]), "1": torch.tensor([[1, 1, 0], [0, 0, 1]])}}
    rest, mask = split_mask(obs, "m", (2, 3))
    assert set(rest) == {"x"} and mask.tolist() == [[1, 0, 1, 1, 0], [0, 1, 0, 0, 1]]
    obs["m"]["1"][1] = 0
    with pytest.raises(EmptyActionMask, match="env 1 of the batch"):
        split_mask(obs, "m", (2, 3))
    assert split_mask({"x": torch.zeros(1)}, "m") == ({"x": torch.zeros(1)}, None)


def test_masks_refused_for_non_discrete_actions():
    """(A policy without mask support: tests/policy/test_action_mask_acer_sac.py.)"""
    box_env = WallGridEnv()
    box_env.action_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    with pytest.raises(ConfigError, match="continuous.*env.action_mask_key=''"):
        make_cfg("impala", env=box_env)
    cfg = make_cfg("acer", action_mask_key="")  # off: the mask is an ordinary observation
    assert "action_mask" in cfg.policy.model.obs_space["spaces"]


class HeadsEnv(gym.Env):
    """MultiDiscrete([3, 2]) actions with one mask per head (a Tuple), head 0 allowing only action 2 and head 1
    only action 0; reward 1 for any step (it never ends before its time limit)."""

    def __init__(self, per_head=True):
        mask = gym.spaces.Tuple((gym.spaces.MultiBinary(3), gym.spaces.MultiBinary(2))) if per_head \
            else gym.spaces.MultiBinary(5)
        self.observation_space = gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (2,), np.float32), "action_mask": mask})
        self.action_space = gym.spaces.MultiDiscrete([3, 2])
        self.per_head = per_head

    def _obs(self):
        heads = (np.array([0, 0, 1], np.int8), np.array([1, 0], np.int8))
        return {"x": np.zeros(2, np.float32), "action_mask": heads if self.per_head else np.concatenate(heads)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self._obs(), {}

    def step(self, action):
        assert tuple(action) == (2, 0), action
        return self._obs(), 1.0, False, False, {}


@pytest.mark.parametrize("per_head", [True, False])
@pytest.mark.parametrize("policy_type", ["impala", "ppo"])
def test_multi_discrete_masks_flat_and_per_head(policy_type, per_head):
    env = HeadsEnv(per_head)
    cfg = make_cfg(policy_type, env=env, unroll_len=4)
    torch.manual_seed(0)
    policy = POLICY_REGISTRY.get(policy_type)(cfg.policy)
    venv = gym.vector.SyncVectorEnv([lambda: HeadsEnv(per_head)] * 2, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    venv.last_obs = venv.reset(seed=0)[0]
    try:
        samples = SampleCollector(venv, policy.collect_mode).collect(2)
    finally:
        venv.close()
    assert samples["action_mask"].shape == (2, 4, 5) and (samples["action"] == torch.tensor([2, 0])).all()
    info = policy.learn_mode.forward(samples)
    assert all(torch.isfinite(torch.as_tensor(v)).all() for v in info.values())


def test_a_mask_that_does_not_fit_the_action_space_is_refused():
    env = WallGridEnv()
    env.observation_space = gym.spaces.Dict({"position": gym.spaces.Discrete(25),
                                             "action_mask": gym.spaces.MultiBinary(5)})
    with pytest.raises(ConfigError, match=r"obs\['action_mask'\].*shape \(4,\)"):
        make_cfg("impala", env=env)


def test_epsilon_greedy_evaluation_explores_valid_actions_only():
    cfg = make_cfg("impala")
    cfg.policy.eval.epsilon = 1.0  # every step random
    policy = POLICY_REGISTRY.get("impala")(cfg.policy)
    torch.manual_seed(0)
    mask = torch.tensor([[0, 1, 0, 1]] * 500, dtype=torch.int8)
    action = policy.eval_mode.forward({"position": torch.zeros(500, dtype=torch.long), "action_mask": mask})["action"]
    assert set(action.tolist()) == {1, 3}
