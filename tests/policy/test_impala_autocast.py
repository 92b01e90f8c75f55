"""IMPALA's ``learn.autocast='bfloat16'``: the learner's forward runs under torch.autocast (its convolutions and
linear layers in bfloat16), the losses come out float32 and close to the float32 update's, the weights and the
gradients stay float32 and point where the float32 ones do, collection is untouched, and any other value is refused with the key named."""
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.policy import APPOPolicy, IMPALAPolicy
from ding_lite.utils import ConfigError

from test_appo import make_appo, make_impala, policy_grads
from test_impala import OBS_DIM, random_batch


def make(autocast, policy_cls=IMPALAPolicy):
    return (make_appo if policy_cls is APPOPolicy else make_impala)(autocast=autocast)


def layer_dtypes(policy):
    """The dtypes of every nn.Linear's output, recorded by forward hooks."""
    seen = []
    for module in policy.model.modules():
        if isinstance(module, torch.nn.Linear):
            module.register_forward_hook(lambda m, args, out: seen.append(out.dtype))
    return seen


@pytest.mark.parametrize("policy_cls", [IMPALAPolicy, APPOPolicy])
def test_the_learners_forward_runs_in_bfloat16_and_the_update_stays_float32(policy_cls):
    batch = random_batch(make(None, policy_cls), 4, 6, seed=1)
    infos, grads = {}, {}
    for autocast in (None, "bfloat16"):
        policy = make(autocast, policy_cls)
        seen = layer_dtypes(policy)
        grads[autocast], infos[autocast] = policy_grads(policy, batch)
        assert seen and set(seen) == {torch.bfloat16 if autocast else torch.float32}, (autocast, set(seen))
        assert all(p.dtype == torch.float32 for p in policy.model.parameters())
        assert all(g.dtype == torch.float32 for g in grads[autocast].values())
    for key in ("total_loss", "value_loss", "entropy_loss"):  # bfloat16's 8-bit mantissa: within about 1%
        assert infos["bfloat16"][key].dtype == torch.float32
        torch.testing.assert_close(infos["bfloat16"][key], infos[None][key], rtol=2e-2, atol=2e-3)
    # the gradient of the whole model: the same direction and size, to bfloat16's precision
    flat = {k: torch.cat([g.flatten() for _, g in sorted(v.items())]) for k, v in grads.items()}
    assert torch.nn.functional.cosine_similarity(flat["bfloat16"], flat[None], dim=0) > 0.99
    assert flat["bfloat16"].norm() == pytest.approx(float(flat[None].norm()), rel=0.05)


def test_collection_and_evaluation_stay_float32():
    policy = make("bfloat16")
    seen = layer_dtypes(policy)
    obs = torch.randn(3, OBS_DIM)
    policy.collect_mode.forward(obs)
    policy.eval_mode.forward(obs)
    assert seen and set(seen) == {torch.float32}


@pytest.mark.parametrize("value", ["float16", "bf16", True])
def test_other_values_are_refused_naming_the_key(value):
    with pytest.raises(ConfigError, match=r"policy\.learn\.autocast=.*must be None \(float32\), 'bfloat16' or 'auto'"):
        compile_config(dict(env=dict(env_id="CartPole-v1"), policy=dict(learn=dict(autocast=value))),
                       dict(policy=dict(type="impala")))


@pytest.mark.parametrize("policy_type", ["impala", "appo"])
def test_normalize_advantage_must_be_a_bool(policy_type):
    """The validator's type check from the declared default (False), for IMPALA and APPO alike."""
    with pytest.raises(ConfigError, match=r"policy\.learn\.normalize_advantage='yes': expected bool, got str"):
        compile_config(dict(env=dict(env_id="CartPole-v1"), policy=dict(learn=dict(normalize_advantage="yes"))),
                       dict(policy=dict(type=policy_type)))
