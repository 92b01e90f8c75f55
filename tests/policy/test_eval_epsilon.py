"""policy.eval.epsilon of IMPALA and ACER (UnrollPolicy): epsilon-greedy evaluation at its rate, the checks."""
import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

import ding_lite.model  # noqa: F401  (registers the models)
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvSpec
from ding_lite.policy import ACERPolicy, IMPALAPolicy
from ding_lite.utils import ConfigError

OBS_DIM, DRAWS = 3, 20_000
SPACES = {
    "discrete": gym.spaces.Discrete(4),
    "multi_discrete": gym.spaces.MultiDiscrete([3, 2]),
    "continuous": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
}


def make_cfg(cls, space, epsilon):
    pol = cls.default_config()
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_hidden_size_list=[16])
    pol.eval.epsilon = epsilon
    cfg = EasyDict(env=EasyDict(env_id=None, type="test", normalize_obs=False), policy=pol)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32), SPACES[space]))
    return cfg.policy


@pytest.mark.parametrize("cls,space", [(IMPALAPolicy, "discrete"), (IMPALAPolicy, "multi_discrete"),
                                       (ACERPolicy, "discrete")])
def test_eval_epsilon_replaces_the_greedy_action_at_its_rate(cls, space):
    """epsilon = 0.4: a row leaves the greedy action with probability eps (1 - 1/n), n the number of (joint)
    actions (a replaced row may draw the greedy one again); the logits are the model's either way."""
    torch.manual_seed(0)
    policy = cls(make_cfg(cls, space, 0.4))
    obs = torch.randn(1, OBS_DIM).expand(DRAWS, OBS_DIM)
    out = policy.eval_mode.forward(obs)
    logit = policy.model(obs[:1], mode="compute_actor")["logit"]
    if space == "discrete":
        n, changed = 4, out["action"] != logit.argmax(-1)
    else:
        greedy = torch.stack([logit[:, :3].argmax(-1), logit[:, 3:].argmax(-1)], -1)
        n, changed = 6, (out["action"] != greedy).any(-1)
    rate = changed.float().mean().item()
    assert abs(rate - 0.4 * (1 - 1 / n)) < 0.02, rate  # binomial sd about 0.0035
    assert torch.allclose(out["logit"], logit.expand_as(out["logit"]))
    assert all(SPACES[space].contains(a.numpy()) for a in out["action"][:100])


def test_eval_epsilon_zero_is_greedy():
    torch.manual_seed(0)
    policy = IMPALAPolicy(make_cfg(IMPALAPolicy, "discrete", 0.0))
    obs = torch.randn(64, OBS_DIM)
    out = policy.eval_mode.forward(obs)
    assert torch.equal(out["action"], out["logit"].argmax(-1))


def test_eval_epsilon_is_checked():
    cfg = make_cfg(IMPALAPolicy, "discrete", 1.5)
    with pytest.raises(ConfigError, match=r"policy\.eval\.epsilon=1\.5: must be in \[0, 1\]"):
        IMPALAPolicy.check_config(cfg, "policy")
    with pytest.raises(ConfigError, match="epsilon-greedy evaluation needs discrete actions.*continuous"):
        IMPALAPolicy(make_cfg(IMPALAPolicy, "continuous", 0.05))
    IMPALAPolicy(make_cfg(IMPALAPolicy, "continuous", 0.0))
