"""policy.obs_storage: an unroll stored 'compact' (x_0 .. x_T plus one final-observation slot) trains exactly as the
same unroll stored 'full' (obs and next_obs of every step), across terminations and truncations inside the unroll and
at its last step, for a Dict observation too; 'auto' picks compact for uint8 observations; what compact storage
cannot hold is an error."""
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.policy import ACERPolicy, IMPALAPolicy
from ding_lite.policy.unroll_policy import compact_observations
from ding_lite.utils import ConfigError, UserError

T, N = 6, 4
OBS_SHAPE = [2, 3, 3]
POLICIES = {"impala": IMPALAPolicy, "acer": ACERPolicy}


def segment(dtype=torch.uint8, seed=0):
    """A time-major segment (T, N, ...) as the collector builds it: next_obs[t] is obs[t+1] unless step t ended an
    episode, where it is that episode's own final observation.

    env 0: no episode end; env 1: terminated at t=2; env 2: truncated at t=1 and at t=T-1 (its final obs is x_T);
    env 3: terminated and truncated at t=1, truncated at t=3."""
    g = torch.Generator().manual_seed(seed)

    def rand(*shape):
        x = torch.randint(0, 256, shape, generator=g)
        return x.to(dtype) if dtype == torch.uint8 else (x.float() / 64 - 2)

    obs = rand(T + 1, N, *OBS_SHAPE)  # x_0 .. x_T: a row after an episode end is the next episode's first
    terminated = torch.zeros(T, N, dtype=torch.bool)
    truncated = torch.zeros(T, N, dtype=torch.bool)
    terminated[2, 1] = True
    truncated[1, 2] = truncated[T - 1, 2] = True
    terminated[1, 3] = truncated[1, 3] = truncated[3, 3] = True
    next_obs = obs[1:].clone()
    done = terminated | truncated
    finals = rand(int(done[:-1].sum()), *OBS_SHAPE)
    next_obs[:-1][done[:-1]] = finals  # a true final obs differs from the next row (the reset)
    return {"obs": obs[:-1].clone(), "next_obs": next_obs, "action": torch.randint(0, 3, (T, N), generator=g),
            "reward": torch.rand(T, N, generator=g), "terminated": terminated, "truncated": truncated}


def make_policy(name, storage, dtype=torch.uint8, encoder_type="mlp", share_encoder=False):
    model = dict(encoder_type=encoder_type, share_encoder=share_encoder, encoder_hidden_size_list=[16],
                 actor_head_hidden_size=16, critic_head_hidden_size=16)
    if encoder_type != "mlp":
        model.update(conv_channels=[4, 8, 8], conv_hidden_size=16)
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(obs_storage=storage, model=model))
    cfg = compile_config((main, dict(policy=dict(type=name))))
    cfg.policy.action_space = "discrete"
    cfg.policy.model.update(obs_shape=OBS_SHAPE, action_shape=3, action_space="discrete")
    torch.manual_seed(0)
    return POLICIES[name](cfg.policy)


def with_logits(policy, seg):
    seg = dict(seg)
    seg["logit"] = policy.collect_mode.forward(seg["obs"].reshape(T * N, *OBS_SHAPE))["logit"].reshape(T, N, -1)
    return seg


def test_compact_layout_holds_every_observation_the_targets_read():
    seg = segment()
    out = compact_observations(seg)
    assert set(out) == {"obs", "final_obs", "action", "reward", "terminated", "truncated"}
    assert out["obs"].shape == (T + 1, N, *OBS_SHAPE) and out["final_obs"].shape == (1, N, *OBS_SHAPE)
    assert out["obs"].dtype == out["final_obs"].dtype == torch.uint8
    assert torch.equal(out["obs"][:T], seg["obs"]) and torch.equal(out["obs"][T], seg["next_obs"][-1])
    assert torch.equal(out["final_obs"][0, 3], seg["next_obs"][3, 3])  # truncated inside the unroll
    assert torch.equal(out["final_obs"][0, 2], seg["next_obs"][1, 2])  # (its truncation at T-1 is x_T)
    assert not out["final_obs"][0, :2].any()  # env 0 and 1: none (a termination needs none)
    # every next_obs the targets read is there: x_{t+1}, x_T, or the final slot
    for t in range(T):
        for n in range(N):
            if seg["terminated"][t, n]:
                continue  # never read
            if seg["truncated"][t, n] and t < T - 1:
                assert torch.equal(out["final_obs"][0, n], seg["next_obs"][t, n])
            else:
                assert torch.equal(out["obs"][t + 1, n], seg["next_obs"][t, n])


@pytest.mark.parametrize("name", ["impala", "acer"])
@pytest.mark.parametrize("encoder_type", ["mlp", "impala_resnet"])
def test_compact_and_full_storage_train_the_same(name, encoder_type):
    full, compact = (make_policy(name, s, encoder_type=encoder_type) for s in ("full", "compact"))
    seg = with_logits(full, segment())
    sample_full = full.collect_mode.get_train_sample(seg)
    sample_compact = compact.collect_mode.get_train_sample(seg)
    assert "next_obs" in sample_full and "next_obs" not in sample_compact
    assert sample_compact["obs"].shape == (N, T + 1, *OBS_SHAPE)
    b_full, b_compact = full._unroll_batch(sample_full), compact._unroll_batch(sample_compact)
    assert torch.equal(b_full.bootstrapped, b_compact.bootstrapped)
    # the same final observation for every bootstrapped step, in the same order
    assert torch.equal(b_full.finals(b_full.model_in), b_compact.finals(b_compact.model_in))
    assert torch.equal(b_full.last(b_full.model_in), b_compact.last(b_compact.model_in))
    assert torch.equal(b_full.flat_obs, b_compact.flat_obs)
    info_full = full.learn_mode.forward(sample_full)
    info_compact = compact.learn_mode.forward(sample_compact)
    for key, value in info_full.items():
        assert float(info_compact[key]) == pytest.approx(float(value), rel=1e-5, abs=1e-6), key
    for (pname, p), q in zip(full.model.named_parameters(), compact.model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=pname)


@pytest.mark.parametrize("storage, dtype, compact", [("auto", torch.uint8, True), ("auto", torch.float32, False),
                                                     ("full", torch.uint8, False), ("compact", torch.float32, True)])
def test_auto_is_compact_for_integer_observations(storage, dtype, compact):
    policy = make_policy("impala", storage)
    sample = policy.collect_mode.get_train_sample(with_logits(policy, segment(dtype)))
    assert ("final_obs" in sample) == compact and ("next_obs" in sample) != compact
    assert sample["obs"].dtype == dtype
    policy.learn_mode.forward(sample)


def test_two_truncations_in_one_unroll_are_an_error():
    seg = segment()
    seg["truncated"][0, 0] = seg["truncated"][4, 0] = True
    with pytest.raises(UserError, match=r"env 0 had 2 episodes cut by a time limit \(steps \[0, 4\]\).*"
                                        r"policy.obs_storage='full'"):
        compact_observations(seg)
    seg["terminated"][4, 0] = True  # a termination needs no final observation
    compact_observations(seg)


def test_obs_storage_is_checked():
    with pytest.raises(ConfigError, match="policy.obs_storage='half': must be 'auto', 'full' or 'compact'"):
        compile_config((dict(env=dict(env_id="CartPole-v1"), policy=dict(obs_storage="half")),
                        dict(policy=dict(type="impala"))))


def nested_segment():
    """``segment`` with a Dict observation: a uint8 leaf and a float leaf (same episode ends, other values)."""
    pixels, floats = segment(torch.uint8, seed=0), segment(torch.float32, seed=1)
    seg = dict(pixels)
    for key in ("obs", "next_obs"):
        seg[key] = {"frame": pixels[key], "vec": floats[key]}
    return seg


NESTED_SPACE = dict(space="dict", spaces=dict(frame=dict(space="box", shape=OBS_SHAPE, dtype="uint8"),
                                              vec=dict(space="box", shape=OBS_SHAPE, dtype="float32")))


@pytest.mark.parametrize("name", ["impala", "acer"])
def test_compact_and_full_storage_train_the_same_on_dict_observations(name):
    """Compact storage of a Dict observation keeps every leaf's observations; 'auto' picks it for the uint8 leaf."""
    policies = []
    for storage in ("full", "auto"):
        policy = make_policy(name, storage)
        policy.cfg.model.obs_space = NESTED_SPACE
        torch.manual_seed(0)
        policies.append(type(policy)(policy.cfg))
    full, compact = policies
    seg = nested_segment()
    flat = {k: v.reshape(T * N, *OBS_SHAPE) for k, v in seg["obs"].items()}
    seg["logit"] = full.collect_mode.forward(flat)["logit"].reshape(T, N, -1)
    sample_full = full.collect_mode.get_train_sample(seg)
    sample_compact = compact.collect_mode.get_train_sample(seg)
    assert "final_obs" in sample_compact and set(sample_compact["obs"]) == {"frame", "vec"}
    assert sample_compact["obs"]["frame"].dtype == torch.uint8
    assert sample_compact["obs"]["vec"].shape == (N, T + 1, *OBS_SHAPE)
    b_full, b_compact = full._unroll_batch(sample_full), compact._unroll_batch(sample_compact)
    for key in ("frame", "vec"):
        assert torch.equal(b_full.finals(b_full.model_in[key]), b_compact.finals(b_compact.model_in[key]))
        assert torch.equal(b_full.last(b_full.model_in[key]), b_compact.last(b_compact.model_in[key]))
        assert torch.equal(b_full.flat_obs[key], b_compact.flat_obs[key])
    info_full, info_compact = full.learn_mode.forward(sample_full), compact.learn_mode.forward(sample_compact)
    for key, value in info_full.items():
        assert float(info_compact[key]) == pytest.approx(float(value), rel=1e-5, abs=1e-6), key
