"""encoder_type='auto' (ding_lite.torch_utils.obs_encoder): the models VAC, ACER and QAC build their observation encoder
from ``obs_space``. Float Boxes stay bit-identical to 'mlp', uint8 CHW images get exactly 'nature_conv', channel
detection, one-hots, nested Dict/Tuple observations, the error messages, gradients and uint8 staying uint8."""
import pytest
import torch
from torch import nn

from ding_lite.config import compile_config
from ding_lite.envs.obs_space import obs_shape_of
from ding_lite.model import ACER, QAC, VAC
from ding_lite.torch_utils.conv import ImpalaResNetEncoder, NatureConvEncoder, build_encoder
from ding_lite.torch_utils.network import EnsembleMLP, mlp
from ding_lite.torch_utils.obs_encoder import (ChannelsLast, FlatMLPEncoder, LeafFlattener, MultiInputEncoder,
                                               ObsFlattener, build_obs_encoder, has_conv, image_layout)
from ding_lite.utils import ConfigError


def box(shape, dtype="float32"):
    return dict(space="box", shape=list(shape), dtype=dtype)


def discrete(n, start=0):
    return dict(space="discrete", n=n, start=start)


def multi_discrete(nvec, shape=None):
    return dict(space="multi_discrete", nvec=list(nvec), shape=list(shape or [len(nvec)]))


def multi_binary(shape):
    return dict(space="multi_binary", shape=list(shape))


def dict_space(**spaces):
    return dict(space="dict", spaces=spaces)


def tuple_space(*spaces):
    return dict(space="tuple", spaces={str(i): s for i, s in enumerate(spaces)})


SMALL_CONV = dict(conv_channels=[4, 8, 8], conv_hidden_size=16)
IMAGE_CHW, IMAGE_HWC = box([3, 36, 40], "uint8"), box([36, 40, 3], "uint8")
NESTED = dict_space(image=IMAGE_CHW, pov=IMAGE_HWC, vector=box([5]), grid=box([7, 7, 3], "uint8"),
                    direction=discrete(4, start=1), keys=multi_discrete([3, 2]), flags=multi_binary([2]))


def sample(description, B=3, seed=0):
    """A batch of observations of ``description`` as ding_lite hands them to models."""
    g = torch.Generator().manual_seed(seed)
    space = description["space"]
    if space in ("dict", "tuple"):
        return {k: sample(s, B, seed + i + 1) for i, (k, s) in enumerate(description["spaces"].items())}
    if space == "box":
        shape = (B, *description["shape"])
        if description["dtype"] == "uint8":
            return torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)
        return torch.randn(shape, generator=g)
    if space == "discrete":
        return torch.randint(0, description["n"], (B,), generator=g) + description["start"]
    if space == "multi_discrete":
        cols = [torch.randint(0, n, (B, 1), generator=g) for n in description["nvec"]]
        return torch.cat(cols, 1).reshape(B, *description["shape"])
    return torch.randint(0, 2, (B, *description["shape"]), dtype=torch.int8, generator=g)


def build(model_cls, obs_shape, seed=0, **kwargs):
    """The model as the pipelines build it: ``obs_shape`` None takes the obs_space's (``obs_shape_of``)."""
    if obs_shape is None:
        obs_shape = obs_shape_of(kwargs["obs_space"])
    torch.manual_seed(seed)
    if model_cls is QAC:
        return QAC(obs_shape, 2, "continuous", critic_head_hidden_size=16, actor_head_hidden_size=16, **kwargs)
    space = dict(action_space="discrete") if model_cls is ACER else {}
    return model_cls(obs_shape, 3, encoder_hidden_size_list=[16, 8], share_encoder=False, **space, **kwargs)


def assert_same_parameters(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]


# ---- bit-identity with the encoders of before -----------------------------------------------------------------------

@pytest.mark.parametrize("obs_shape", [4, [3], [2, 3]])
@pytest.mark.parametrize("model_cls", [VAC, ACER])
def test_auto_on_a_float_box_is_mlp_bit_for_bit(model_cls, obs_shape):
    old = build(model_cls, obs_shape, encoder_type="mlp")
    shape = [obs_shape] if isinstance(obs_shape, int) else obs_shape
    for new in (build(model_cls, obs_shape), build(model_cls, obs_shape, obs_space=box(shape))):
        assert new.encoder_type == "auto"
        assert_same_parameters(old, new)
        x = torch.randn(5, *shape, generator=torch.Generator().manual_seed(1))
        out_old, out_new = old(x), new(x)
        assert all(torch.equal(out_old[k], out_new[k]) for k in out_old)
    # the state_dict keys are those of the bare MLP encoder: checkpoints of before load
    encoder, _ = build_encoder("mlp", obs_shape, [16, 8])
    enc = new.actor_encoder if model_cls is VAC else new.actor.encoder
    assert isinstance(enc, FlatMLPEncoder) and list(enc.state_dict()) == list(encoder.state_dict())


@pytest.mark.parametrize("obs_shape", [3, [2, 3]])
def test_qac_on_a_float_box_is_unchanged(obs_shape):
    """QAC built as before obs spaces existed: actor mlp, then the critic ensemble, on the flattened observation."""
    shape = [obs_shape] if isinstance(obs_shape, int) else obs_shape
    obs_dim = int(torch.tensor(shape).prod())
    torch.manual_seed(0)
    ref_actor = mlp(obs_dim, [16, 16], 4, "relu", 0.01)
    ref_critic = EnsembleMLP(2, obs_dim + 2, [16, 16], 1, "relu")
    for model in (build(QAC, obs_shape), build(QAC, obs_shape, obs_space=box(shape))):
        assert_same_parameters(model.actor, ref_actor)
        assert_same_parameters(model.critic, ref_critic)
        x, a = torch.randn(5, *shape), torch.rand(5, 2)
        assert torch.equal(model.compute_actor(x)["mu"], ref_actor(x.reshape(5, -1))[:, :2])
        assert torch.equal(model.compute_critic(x, a), ref_critic(torch.cat([x.reshape(5, -1), a], 1)).squeeze(-1))
        assert list(model.state_dict()) == ["actor." + k for k in ref_actor.state_dict()] + \
            ["critic." + k for k in ref_critic.state_dict()]


@pytest.mark.parametrize("model_cls", [VAC, ACER])
def test_auto_on_uint8_chw_frames_is_nature_conv(model_cls):
    """Pong's (4, 84, 84) uint8 frames: 'auto' builds exactly what encoder_type='nature_conv' does."""
    explicit = build(model_cls, [4, 84, 84], encoder_type="nature_conv")
    auto = build(model_cls, [4, 84, 84], obs_space=box([4, 84, 84], "uint8"))
    enc = auto.actor_encoder if model_cls is VAC else auto.actor.encoder
    assert type(enc) is NatureConvEncoder
    assert_same_parameters(explicit, auto)
    x = sample(box([4, 84, 84], "uint8"), B=2)
    out_a, out_e = auto(x), explicit(x)
    assert all(torch.equal(out_a[k], out_e[k]) for k in out_a)


# ---- which leaf is an image -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype, layout", [
    ([4, 84, 84], "uint8", "CHW"), ([1, 36, 36], "uint8", "CHW"), ([84, 84, 3], "uint8", "HWC"),
    ([64, 48, 4], "uint8", "HWC"), ([3, 64, 48], "uint8", "CHW"),
    ([7, 7, 3], "uint8", None),      # MiniGrid's object codes: too small, the MLP path
    ([3, 35, 84], "uint8", None),    # one side under 36
    ([84, 84, 5], "uint8", None),    # 5 channels: not an image
    ([4, 84, 4], "uint8", None),     # channels first (tie-break: the first dim), then W = 4 is too small
    ([4, 84, 84], "float32", None),  # float frames: not image-like for 'auto'
    ([4, 84, 84], "int32", None), ([84, 84], "uint8", None), ([1, 4, 84, 84], "uint8", None),
])
def test_image_layout(shape, dtype, layout):
    assert image_layout(box(shape, dtype)) == layout


def test_channels_last_frames_are_permuted_to_the_nature_conv():
    torch.manual_seed(0)
    encoder, dim = build_obs_encoder("auto", box([36, 40, 3], "uint8"), None, [8], **SMALL_CONV)
    torch.manual_seed(0)
    chw = NatureConvEncoder([3, 36, 40], channels=[4, 8, 8], hidden_size=16)
    assert isinstance(encoder, ChannelsLast) and dim == 16
    assert_same_parameters(encoder.encoder, chw)
    x = sample(box([36, 40, 3], "uint8"), B=2)
    out = encoder(x)
    assert out.shape == (2, 16)
    assert torch.equal(out, chw(x.permute(0, 3, 1, 2).contiguous()))


@pytest.mark.parametrize("model_cls", [VAC, ACER])
def test_small_uint8_grids_take_the_mlp_path_unscaled(model_cls):
    grid = box([7, 7, 3], "uint8")
    model = build(model_cls, [7, 7, 3], obs_space=grid)
    mlp_model = build(model_cls, [7, 7, 3], encoder_type="mlp")  # 'mlp' takes it too: not an image
    enc = model.actor_encoder if model_cls is VAC else model.actor.encoder
    assert isinstance(enc, FlatMLPEncoder) and enc[0].in_features == 147
    assert_same_parameters(model, mlp_model)
    x = sample(grid)
    out, ref = model(x), model(x.float())
    assert all(torch.equal(out[k], ref[k]) for k in out)


# ---- leaves as features ---------------------------------------------------------------------------------------------

def test_discrete_one_hot_with_a_start():
    flat = LeafFlattener(discrete(3, start=-1))
    out = flat(torch.tensor([-1, 1, 0]))
    assert out.dtype == torch.float32
    assert torch.equal(out, torch.tensor([[1., 0., 0.], [0., 0., 1.], [0., 1., 0.]]))


def test_multi_discrete_one_hots_concatenated():
    flat = LeafFlattener(multi_discrete([3, 2]))
    assert torch.equal(flat(torch.tensor([[2, 1], [0, 0]])),
                       torch.tensor([[0., 0., 1., 0., 1.], [1., 0., 0., 1., 0.]]))
    # a 2-d MultiDiscrete: nvec flattened in row-major order, as the description holds it
    flat = LeafFlattener(multi_discrete([2, 3, 2, 2], shape=[2, 2]))
    x = torch.tensor([[[1, 2], [0, 1]]])
    assert torch.equal(flat(x), torch.tensor([[0., 1., 0., 0., 1., 1., 0., 0., 1.]]))
    # a per-entry start (gymnasium's MultiDiscrete(nvec, start=...)), if the description carries one
    flat = LeafFlattener(dict(multi_discrete([3, 2]), start=[-1, 5]))
    assert torch.equal(flat(torch.tensor([[1, 5], [-1, 6]])),
                       torch.tensor([[0., 0., 1., 1., 0.], [1., 0., 0., 0., 1.]]))


def test_multi_binary_and_box_leaves_are_flat_floats():
    assert torch.equal(LeafFlattener(multi_binary([2, 2]))(torch.tensor([[[1, 0], [0, 1]]], dtype=torch.int8)),
                       torch.tensor([[1., 0., 0., 1.]]))
    x = torch.tensor([[[1, 200], [3, 4]]], dtype=torch.uint8)
    assert torch.equal(LeafFlattener(box([2, 2], "uint8"))(x), torch.tensor([[1., 200., 3., 4.]]))


def test_nested_leaves_concatenate_depth_first_in_key_order():
    description = dict_space(b=discrete(2), a=tuple_space(box([2]), multi_binary([1])))
    flat = ObsFlattener(description)
    obs = {"b": torch.tensor([1]), "a": {"0": torch.tensor([[0.5, -2.0]]), "1": torch.tensor([[1]], dtype=torch.int8)}}
    assert flat.output_dim == 5 and not list(flat.parameters())
    assert torch.equal(flat(obs), torch.tensor([[0., 1., 0.5, -2.0, 1.]]))


# ---- models on every kind of space ----------------------------------------------------------------------------------

SPACES = {
    "box": box([5]),
    "discrete": discrete(4, start=2),
    "multi_discrete": multi_discrete([3, 2, 4]),
    "multi_binary": multi_binary([6]),
    "dict": NESTED,
    "tuple": tuple_space(box([36, 36, 1], "uint8"), discrete(3), box([2])),
}


@pytest.mark.parametrize("name", list(SPACES))
@pytest.mark.parametrize("model_cls", [VAC, ACER])
def test_models_on_every_space(model_cls, name):
    description = SPACES[name]
    model = build(model_cls, None, obs_space=description, **SMALL_CONV)
    obs = sample(description, B=4)
    out = model(obs)
    assert out["logit"].shape == (4, 3)
    assert (out["value"] if model_cls is VAC else out["q_value"]).shape == ((4,) if model_cls is VAC else (4, 3))
    enc = model.actor_encoder if model_cls is VAC else model.actor.encoder
    assert enc(obs).shape == (4, 8)
    if model_cls is ACER:
        avg = model.make_average_actor()
        assert torch.equal(model.compute_actor(obs, actor=avg)["logit"], out["logit"])


def test_multi_input_encoder_parts():
    encoder, dim = build_obs_encoder("auto", NESTED, None, [32], **SMALL_CONV)
    assert isinstance(encoder, MultiInputEncoder) and dim == 32
    kinds = [type(e) for e in encoder.inputs.leaf_encoders]
    # key order of the description: image, pov, vector, grid, direction, keys, flags
    assert kinds == [NatureConvEncoder, ChannelsLast, LeafFlattener, LeafFlattener, LeafFlattener, LeafFlattener,
                     LeafFlattener]
    assert encoder.inputs.output_dim == 16 + 16 + 5 + 147 + 4 + 5 + 2
    empty, dim = build_obs_encoder("auto", NESTED, None, [], **SMALL_CONV)
    assert dim == 16 + 16 + 5 + 147 + 4 + 5 + 2 and empty(sample(NESTED)).shape == (3, dim)


def test_an_explicit_conv_encoder_serves_the_image_leaves_of_a_nesting():
    encoder, _ = build_obs_encoder("impala_resnet", NESTED, None, [8], conv_channels=[2, 4, 4], conv_hidden_size=8)
    assert type(encoder.inputs.leaf_encoders[0]) is ImpalaResNetEncoder
    assert type(encoder.inputs.leaf_encoders[1].encoder) is ImpalaResNetEncoder
    assert encoder(sample(NESTED)).shape == (3, 8)


@pytest.mark.parametrize("model_cls", [VAC, ACER])
def test_gradients_reach_every_leaf_encoder(model_cls):
    model = build(model_cls, None, obs_space=NESTED, **SMALL_CONV)
    out = model(sample(NESTED, B=4))
    loss = out["logit"].pow(2).sum() + (out["value"] if model_cls is VAC else out["q_value"]).pow(2).sum()
    loss.backward()
    encoder = model.actor_encoder if model_cls is VAC else model.actor.encoder
    named = list(encoder.named_parameters())
    assert any(n.startswith("inputs.leaf_encoders.0.") for n, _ in named)  # the CHW image's conv
    assert any(n.startswith("inputs.leaf_encoders.1.") for n, _ in named)  # the HWC image's conv
    for name, p in named:
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_uint8_leaves_reach_their_encoder_as_the_same_uint8_tensor():
    model = build(VAC, None, obs_space=NESTED, **SMALL_CONV)
    obs = sample(NESTED)
    seen = {}
    for i, leaf in enumerate(model.actor_encoder.inputs.leaf_encoders):
        leaf.register_forward_pre_hook(lambda module, args, i=i: seen.__setitem__(i, args[0]))
    model(obs)
    for i, key in ((0, "image"), (1, "pov"), (3, "grid")):
        assert seen[i].dtype == torch.uint8 and seen[i].data_ptr() == obs[key].data_ptr(), key
    single = build(VAC, None, obs_space=IMAGE_CHW, **SMALL_CONV)
    x = sample(IMAGE_CHW)
    single.actor_encoder.register_forward_pre_hook(lambda module, args: seen.__setitem__("single", args[0]))
    single(x)
    assert seen["single"] is x


# ---- errors ---------------------------------------------------------------------------------------------------------

def test_mlp_on_an_image_names_the_key_the_leaf_and_the_fix():
    with pytest.raises(ConfigError) as err:
        build(VAC, None, obs_space=NESTED, encoder_type="mlp")
    msg = str(err.value)
    assert "policy.model.encoder_type='mlp'" in msg
    assert "obs['image'] (uint8 [3, 36, 40])" in msg and "obs['pov'] (uint8 [36, 40, 3])" in msg
    assert "'grid'" not in msg  # not an image
    assert "'auto'" in msg and "'nature_conv'" in msg
    with pytest.raises(ConfigError, match=r"cannot take the image observation obs \(uint8 \[4, 84, 84\]\)"):
        build(ACER, [4, 84, 84], obs_space=box([4, 84, 84], "uint8"), encoder_type="mlp")
    with pytest.raises(ConfigError, match=r"obs\[0\] \(uint8 \[36, 36, 1\]\)"):
        build(VAC, None, obs_space=SPACES["tuple"], encoder_type="mlp")


def test_a_conv_encoder_without_an_image_leaf_is_refused():
    with pytest.raises(ConfigError, match="policy.model.encoder_type='nature_conv' is a conv encoder but the "
                                          "observation has no image-like leaf"):
        build(VAC, None, obs_space=dict_space(a=discrete(3), b=box([7, 7, 3], "uint8")), encoder_type="nature_conv")


def test_qac_refuses_pixels_with_the_way_out():
    with pytest.raises(ConfigError) as err:
        build(QAC, None, obs_space=NESTED)
    msg = str(err.value)
    assert "policy.model.obs_space" in msg and "from pixels is not supported yet" in msg
    assert "obs['image']" in msg and "ObservationWrapper" in msg and "IMPALA or ACER" in msg


@pytest.mark.parametrize("name", ["discrete", "multi_discrete", "multi_binary", "box"])
def test_qac_on_flattened_spaces(name):
    description = dict_space(x=SPACES[name], v=box([2]))
    model = build(QAC, None, obs_space=description)
    assert not list(model.flatten_obs.parameters())
    obs, a = sample(description, B=4), torch.rand(4, 2)
    flat = ObsFlattener(description)(obs)
    assert model.compute_actor(obs)["mu"].shape == (4, 2)
    assert torch.equal(model.compute_critic(obs, a), model.critic(torch.cat([flat, a], 1)).squeeze(-1))
    assert torch.equal(model.compute_critic(obs, a, critic=model.make_target_critic()),
                       model.compute_critic(obs, a))


# ---- config ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("policy_type", ["impala", "acer"])
def test_auto_takes_the_conv_sizes_at_config_time(policy_type):
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(model=dict(conv_channels=[8, 16, 16], conv_hidden_size=32)))
    cfg = compile_config((main, dict(policy=dict(type=policy_type))))
    assert cfg.policy.model.encoder_type == "auto" and cfg.policy.model.conv_hidden_size == 32


def test_has_conv():
    assert not has_conv("auto", None) and not has_conv("auto", box([4])) and not has_conv("mlp", NESTED)
    assert has_conv("auto", NESTED) and has_conv("auto", box([84, 84, 3], "uint8")) and has_conv("nature_conv", None)
    assert not has_conv("auto", box([7, 7, 3], "uint8"))
