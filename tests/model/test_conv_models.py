"""VAC (IMPALA) and ACER with conv encoders: selected by ``policy.model.encoder_type``, uint8 frames scaled in the
model (uint8 == float/255), both share_encoder settings, and a misspelt encoder_type is a ConfigError naming the key
and the choices."""
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.model import ACER, VAC
from ding_lite.policy import ACERPolicy, IMPALAPolicy
from ding_lite.torch_utils.conv import ImpalaResNetEncoder, NatureConvEncoder
from ding_lite.utils import ConfigError

ATARI = [4, 84, 84]
ENCODERS = {"nature_conv": NatureConvEncoder, "impala_resnet": ImpalaResNetEncoder}


def frames(B=2, seed=0):
    return torch.randint(0, 256, (B, *ATARI), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def compiled(policy_type, **model):
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(model=model))
    return compile_config((main, dict(policy=dict(type=policy_type))))


def with_env_shapes(cfg, action_shape=6):
    cfg.policy.action_space = "discrete"
    cfg.policy.model.update(obs_shape=ATARI, action_shape=action_shape, action_space="discrete")
    return cfg


@pytest.mark.parametrize("policy_type", ["impala", "acer"])
def test_encoder_type_defaults_to_auto(policy_type):
    model = compiled(policy_type).policy.model
    assert model.encoder_type == "auto" and model.conv_channels is None and model.conv_hidden_size is None


@pytest.mark.parametrize("policy_type", ["impala", "acer"])
def test_misspelt_encoder_type_names_the_key_and_the_choices(policy_type):
    with pytest.raises(ConfigError) as err:
        compiled(policy_type, encoder_type="natur_conv")
    msg = str(err.value)
    assert "policy.model.encoder_type='natur_conv'" in msg
    assert "did you mean nature_conv?" in msg
    assert "['auto', 'impala_resnet', 'mlp', 'nature_conv']" in msg


@pytest.mark.parametrize("model, match", [
    (dict(encoder_type="nature_conv", conv_channels=[32, 64]), r"policy.model.conv_channels=\[32, 64\]: .* 3 conv"),
    (dict(encoder_type="impala_resnet", conv_channels=[16, 0, 32]), "policy.model.conv_channels"),
    (dict(encoder_type="impala_resnet", conv_hidden_size=-1), "policy.model.conv_hidden_size=-1"),
    (dict(encoder_type="mlp", conv_hidden_size=64), "encoder_type='mlp' has no conv layers"),
    (dict(conv_channels=[32, 64]), r"conv_channels=\[32, 64\]: encoder 'auto' \(its image leaves get 'nature_conv'\)"),
])
def test_conv_sizes_are_checked(model, match):
    with pytest.raises(ConfigError, match=match):
        compiled("impala", **model)


@pytest.mark.parametrize("encoder_type", list(ENCODERS))
@pytest.mark.parametrize("share_encoder", [True, False])
def test_impala_builds_the_selected_encoder(encoder_type, share_encoder):
    cfg = with_env_shapes(compiled("impala", encoder_type=encoder_type, share_encoder=share_encoder))
    torch.manual_seed(0)
    model = IMPALAPolicy(cfg.policy).model
    assert isinstance(model.actor_encoder, ENCODERS[encoder_type])
    assert isinstance(model.critic_encoder, ENCODERS[encoder_type])
    assert (model.actor_encoder is model.critic_encoder) == share_encoder
    x = frames()
    out = model(x)
    assert out["logit"].shape == (2, 6) and out["value"].shape == (2,)
    ref = model(x.float() / 255)
    assert torch.equal(out["logit"], ref["logit"]) and torch.equal(out["value"], ref["value"])


@pytest.mark.parametrize("encoder_type", list(ENCODERS))
@pytest.mark.parametrize("share_encoder", [True, False])
def test_acer_builds_the_selected_encoder(encoder_type, share_encoder):
    cfg = with_env_shapes(compiled("acer", encoder_type=encoder_type, share_encoder=share_encoder))
    torch.manual_seed(0)
    model = ACERPolicy(cfg.policy).model
    assert isinstance(model.actor.encoder, ENCODERS[encoder_type])
    assert (model.actor.encoder is model.critic.encoder) == share_encoder
    # a shared encoder belongs to the critic's parameters, not the actor's own
    encoder_ids = {id(p) for p in model.actor.encoder.parameters()}
    assert (encoder_ids <= {id(p) for p in model.actor_parameters()}) != share_encoder
    x = frames()
    out = model(x)
    assert out["logit"].shape == (2, 6) and out["q_value"].shape == (2, 6)
    ref = model(x.float() / 255)
    assert torch.equal(out["logit"], ref["logit"]) and torch.equal(out["q_value"], ref["q_value"])
    avg = model.make_average_actor()
    assert torch.equal(model.compute_actor(x, actor=avg)["logit"], out["logit"])
    # the actor's encoder runs once per forward, also when the critic shares it; the same outputs as the two
    # networks run apart
    calls = []
    model.actor.encoder.register_forward_hook(lambda *args: calls.append(1))
    both = model(x)
    assert len(calls) == 1
    assert torch.equal(both["logit"], model.actor(x)) and torch.equal(both["q_value"], model.critic(x)["q_value"])


def test_acer_continuous_with_a_conv_encoder():
    torch.manual_seed(0)
    model = ACER(ATARI, 2, "continuous", encoder_type="impala_resnet", conv_channels=[4, 8, 8], conv_hidden_size=32)
    x = frames(B=3)
    logit = model(x, mode="compute_actor")["logit"]
    assert logit["mu"].shape == (3, 2)
    critic = model(x, mode="compute_critic", action=torch.zeros(3, 2), policy=logit)
    assert critic["value"].shape == (3,) and critic["q_value"].shape == (3,)


@pytest.mark.parametrize("model_cls, kwargs", [(VAC, {}), (ACER, {"action_space": "discrete"})])
def test_gradients_flow_through_the_conv_encoder_from_uint8(model_cls, kwargs):
    torch.manual_seed(0)
    model = model_cls(ATARI, 6, encoder_type="nature_conv", conv_hidden_size=64, **kwargs)
    out = model(frames(B=4))
    loss = out["logit"].sum() + (out["value"].sum() if "value" in out else out["q_value"].sum())
    loss.backward()
    encoder = model.actor_encoder if model_cls is VAC else model.actor.encoder
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in encoder.parameters())


def test_mlp_models_take_integer_observations_unscaled():
    """Integer observations reach an MLP encoder as floats of the same values (what the collector's .float() did)."""
    torch.manual_seed(0)
    model = VAC([2, 3], 2, encoder_hidden_size_list=[8])
    x = torch.randint(0, 5, (4, 2, 3), dtype=torch.uint8)
    assert torch.equal(model(x)["value"], model(x.float())["value"])
