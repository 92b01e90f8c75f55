"""The Gaussian policies of VAC (IMPALA) and ACER start at sigma = ``init_sigma`` whatever ``sigma_type``, and
config checks refuse an ``init_sigma`` the models' log-sigma clamp would change."""
import math

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.model.acer import ACER
from ding_lite.model.vac import VAC
from ding_lite.utils import ConfigError

OBS_DIM, ACT_DIM = 6, 3
MODELS = {"vac": VAC, "acer": ACER}


def initial_sigma(model_type: str, sigma_type: str, init_sigma: float, seed: int = 0) -> torch.Tensor:
    """sigma (B, D) of a freshly built model on a batch of random observations."""
    torch.manual_seed(seed)
    model = MODELS[model_type](OBS_DIM, ACT_DIM, "continuous", sigma_type=sigma_type, init_sigma=init_sigma,
                               encoder_hidden_size_list=[64, 64], actor_head_hidden_size=64)
    obs = 3.0 * torch.randn(512, OBS_DIM, generator=torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        sigma = model(obs, mode="compute_actor")["logit"]["sigma"]
    assert sigma.shape == (512, ACT_DIM)
    return sigma


@pytest.mark.parametrize("init_sigma", [0.1, 0.5, 3.0])
@pytest.mark.parametrize("sigma_type", ["independent", "conditioned"])
@pytest.mark.parametrize("model_type", ["vac", "acer"])
def test_initial_sigma_is_init_sigma(model_type, sigma_type, init_sigma):
    for seed in range(3):
        sigma = initial_sigma(model_type, sigma_type, init_sigma, seed)
        # the mean over the batch, and every single sigma up to the small output weights of a conditioned head
        assert sigma.mean().item() == pytest.approx(init_sigma, rel=0.01)
        torch.testing.assert_close(sigma, torch.full_like(sigma, init_sigma), rtol=0.1, atol=0)


@pytest.mark.parametrize("init_sigma", [0.005, 8.0])
@pytest.mark.parametrize("policy_type", ["impala", "acer"])
def test_init_sigma_outside_the_clamp_is_refused(policy_type, init_sigma):
    main = dict(env=dict(env_id="Pendulum-v1"), policy=dict(model=dict(init_sigma=init_sigma)))
    with pytest.raises(ConfigError) as info:
        compile_config(main, dict(policy=dict(type=policy_type)))
    low, high = math.exp(-5.0), math.exp(2.0)
    assert str(info.value) == (f"policy.model.init_sigma={init_sigma}: the model clamps log(sigma) to [-5.0, 2.0], "
                               f"so init_sigma must be in [{low:.4g}, {high:.4g}]")
