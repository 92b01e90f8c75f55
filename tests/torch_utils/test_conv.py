"""The conv encoders of ding_lite.torch_utils.conv: shapes on Atari frames, uint8 == float/255, gradients, parameter
counts worked out by hand from the architectures, and the registry."""
import pytest
import torch
from torch import nn

from ding_lite.torch_utils.conv import (ENCODER_REGISTRY, ImpalaResNetEncoder, NatureConvEncoder, build_encoder,
                                        encoder_types, mlp_input, pixels_to_float)
from ding_lite.utils import RegistryError

ATARI = (4, 84, 84)
CONV = ["nature_conv", "impala_resnet"]


def frames(B=3, shape=ATARI, seed=0):
    return torch.randint(0, 256, (B, *shape), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def conv_params(c_in, c_out, k):
    return c_out * c_in * k * k + c_out  # weights + biases


def linear_params(n_in, n_out):
    return n_in * n_out + n_out


def test_registered_encoder_types():
    assert encoder_types() == ["impala_resnet", "mlp", "nature_conv"]
    assert ENCODER_REGISTRY.get("nature_conv") is NatureConvEncoder
    assert ENCODER_REGISTRY.get("impala_resnet") is ImpalaResNetEncoder
    with pytest.raises(RegistryError, match="did you mean nature_conv"):
        build_encoder("nature_cnv", ATARI)


@pytest.mark.parametrize("name, out_dim", [("nature_conv", 512), ("impala_resnet", 256)])
def test_output_shape_on_atari_frames(name, out_dim):
    torch.manual_seed(0)
    encoder, dim = build_encoder(name, list(ATARI))  # obs_shape arrives from the env as a list
    assert dim == out_dim == encoder.output_dim
    out = encoder(frames())
    assert out.shape == (3, out_dim) and out.dtype == torch.float32
    assert (out >= 0).all()  # the last layer is a ReLU


def test_nature_conv_parameter_count_by_hand():
    # 84 -> (84 - 8) / 4 + 1 = 20 -> (20 - 4) / 2 + 1 = 9 -> 9 - 3 + 1 = 7: 64 x 7 x 7 = 3136 features into fc 512
    expected = (conv_params(4, 32, 8) + conv_params(32, 64, 4) + conv_params(64, 64, 3)
                + linear_params(64 * 7 * 7, 512))
    assert expected == 8_224 + 32_832 + 36_928 + 1_606_144 == 1_684_128
    encoder, _ = build_encoder("nature_conv", ATARI)
    assert sum(p.numel() for p in encoder.parameters()) == expected


def test_impala_resnet_parameter_count_by_hand():
    # Each stage: conv 3x3 (c_in -> c), then two residual blocks of two 3x3 convs (c -> c); the max-pool 3x3 stride 2
    # with padding 1 halves the size rounding up: 84 -> 42 -> 21 -> 11, so 32 x 11 x 11 = 3872 features into fc 256.
    def stage(c_in, c):
        return conv_params(c_in, c, 3) + 4 * conv_params(c, c, 3)

    expected = stage(4, 16) + stage(16, 32) + stage(32, 32) + linear_params(32 * 11 * 11, 256)
    assert expected == 9_872 + 41_632 + 46_240 + 991_488 == 1_089_232
    encoder, _ = build_encoder("impala_resnet", ATARI)
    assert sum(p.numel() for p in encoder.parameters()) == expected
    # 3 stages x (1 + 2 x 2) convs, no other layers with parameters but the fc
    assert sum(isinstance(m, nn.Conv2d) for m in encoder.modules()) == 15
    assert sum(isinstance(m, nn.Linear) for m in encoder.modules()) == 1


@pytest.mark.parametrize("name", CONV)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int64])
def test_integer_input_is_float_over_255(name, dtype):
    torch.manual_seed(0)
    encoder, _ = build_encoder(name, ATARI)
    x = frames().to(dtype)
    assert torch.equal(encoder(x), encoder(x.float() / 255))
    assert x.dtype == dtype  # the input is not modified in place


def test_pixels_to_float_and_mlp_input():
    x = frames(B=2, shape=(2, 3))
    assert torch.equal(pixels_to_float(x), x.float() / 255)
    f = torch.rand(2, 2, 3)
    assert pixels_to_float(f) is f  # floats are taken as already scaled
    assert torch.equal(mlp_input(x), x.float().flatten(1))  # the MLP takes integers unscaled, as before
    g = torch.rand(5, 4)
    assert mlp_input(g) is g  # float (B, D): untouched (the MLP configs' bit-identical path)


@pytest.mark.parametrize("name", CONV)
def test_gradients_reach_every_parameter(name):
    torch.manual_seed(0)
    encoder, dim = build_encoder(name, ATARI)
    head = nn.Linear(dim, 1)
    head(encoder(frames())).sum().backward()
    for pname, p in encoder.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, pname


@pytest.mark.parametrize("name", CONV)
def test_small_variants_and_two_dim_frames(name):
    encoder, dim = build_encoder(name, [36, 36], conv_channels=[4, 8, 8], conv_hidden_size=32)
    assert dim == 32 and encoder.obs_shape == (1, 36, 36)
    x = frames(B=2, shape=(36, 36))
    assert torch.equal(encoder(x), encoder(x.unsqueeze(1)))
    with pytest.raises(ValueError, match="built for observations"):
        encoder(frames(B=2, shape=(2, 36, 36)))


def test_nature_conv_rejects_small_frames_and_bad_channels():
    with pytest.raises(ValueError, match="at least 36x36"):
        build_encoder("nature_conv", [1, 16, 16])
    with pytest.raises(ValueError, match="3 positive ints"):
        build_encoder("impala_resnet", ATARI, conv_channels=[16, 32])
    with pytest.raises(ValueError, match=r"needs image observations \(C, H, W\)"):
        build_encoder("impala_resnet", 8)


def test_mlp_encoder_is_the_old_mlp():
    torch.manual_seed(0)
    encoder, dim = build_encoder("mlp", [2, 3], [16, 8], "tanh")
    from ding_lite.torch_utils import mlp

    torch.manual_seed(0)
    old = mlp(6, [16, 8], act="tanh")
    assert dim == 8 and isinstance(encoder, nn.Sequential)
    assert all(torch.equal(a, b) for a, b in zip(encoder.state_dict().values(), old.state_dict().values()))
    assert build_encoder("mlp", 5, [])[1] == 5


@pytest.mark.parametrize("name", CONV)
def test_encoder_on_module_device_keeps_uint8_until_there(name):
    """The scaling happens inside forward: a uint8 batch moved to the module's device is converted there."""
    encoder, _ = build_encoder(name, ATARI)
    seen = []
    encoder.torso.register_forward_pre_hook(lambda m, args: seen.append(args[0].dtype))
    encoder(frames())
    assert seen == [torch.float32]
