"""bfloat16 autocast beyond IMPALA's learner (issue 75): PPO's learner (``learn.autocast``), the acting forward passes
of every unroll policy (``collect.autocast``: collection and evaluation), and ``'auto'``, which picks bfloat16 only for
a conv encoder on a device with native bfloat16 matmuls (AMX or AVX-512 BF16 on a CPU). The losses, gradients and
actions stay float32 and close to float32's."""
import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

import ding_lite.model  # noqa: F401  (registers 'vac')
from ding_lite.config import compile_config
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvSpec
from ding_lite.policy import DQNPolicy, IMPALAPolicy, PPOPolicy
from ding_lite.torch_utils.precision import cpu_flags, resolve_autocast
from ding_lite.utils import ConfigError

FRAMES = gym.spaces.Box(0, 255, (4, 36, 36), np.uint8)  # the smallest input the Nature conv encoder takes


def make(policy_cls, learn_autocast=None, act_autocast=None, seed=0, **learn):
    pol = policy_cls.default_config()
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_type="nature_conv")
    pol.learn.update(autocast=learn_autocast, **learn)
    pol.collect.autocast = act_autocast
    cfg = EasyDict(env=EasyDict(env_id=None, type="test", normalize_obs=False), policy=pol)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(FRAMES, gym.spaces.Discrete(6)))
    torch.manual_seed(seed)
    return policy_cls(cfg.policy)


def linear_dtypes(policy):
    seen = []
    for module in policy.model.modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
            module.register_forward_hook(lambda m, args, out: seen.append(out.dtype))
    return seen


def ppo_batch(B=4, T=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    value = torch.randn(B, T, generator=g)
    return {"obs": torch.randint(0, 256, (B, T, 4, 36, 36), generator=g, dtype=torch.uint8),
            "action": torch.randint(6, (B, T), generator=g), "logp": -torch.rand(B, T, generator=g) - 1.5,
            "value": value, "advantage": torch.randn(B, T, generator=g), "return": value + 0.5}


def grads_of_one_update(policy, batch):
    grads = {}
    policy._grad_clip = lambda params: grads.update(
        {n: p.grad.detach().clone() for n, p in policy.model.named_parameters() if p.grad is not None}) \
        or torch.zeros(())
    return grads, policy.learn_mode.forward(batch)


def test_ppos_learner_in_bfloat16_gives_float32_losses_and_gradients_close_to_float32s():
    batch = ppo_batch()
    out = {}
    for dtype in (None, "bfloat16"):
        policy = make(PPOPolicy, learn_autocast=dtype, epochs=1, minibatch_size=32, batch_size=4)
        seen = linear_dtypes(policy)
        out[dtype] = grads_of_one_update(policy, {k: v.clone() for k, v in batch.items()})
        assert set(seen) == {torch.bfloat16 if dtype else torch.float32}
        assert all(p.dtype == torch.float32 for p in policy.model.parameters())
    (g32, i32), (g16, i16) = out[None], out["bfloat16"]
    for key in ("total_loss", "policy_loss", "value_loss", "entropy"):
        assert i16[key].dtype == torch.float32
        torch.testing.assert_close(i16[key], i32[key], rtol=2e-2, atol=2e-3)
    flat32 = torch.cat([g.flatten() for _, g in sorted(g32.items())])
    flat16 = torch.cat([g.flatten() for _, g in sorted(g16.items())])
    assert torch.nn.functional.cosine_similarity(flat16, flat32, dim=0) > 0.99
    assert flat16.norm() == pytest.approx(float(flat32.norm()), rel=0.05)


def dqn_batch(B=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"obs": torch.randint(0, 256, (B, 4, 36, 36), generator=g, dtype=torch.uint8),
            "next_obs": torch.randint(0, 256, (B, 4, 36, 36), generator=g, dtype=torch.uint8),
            "action": torch.randint(6, (B,), generator=g), "reward": torch.randn(B, generator=g),
            "terminated": torch.rand(B, generator=g) < 0.2, "truncated": torch.zeros(B, dtype=torch.bool)}


def test_dqns_learner_in_bfloat16_runs_every_network_in_bfloat16_and_gives_float32s_loss_and_gradients():
    out = {}
    for dtype in (None, "bfloat16"):
        policy = make(DQNPolicy, learn_autocast=dtype)
        seen = linear_dtypes(policy)  # the online network: the update's forward and double DQN's next-state pick
        target_seen = []
        for module in policy._target_model.modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
                module.register_forward_hook(lambda m, args, o: target_seen.append(o.dtype))
        out[dtype] = grads_of_one_update(policy, dqn_batch())
        want = torch.bfloat16 if dtype else torch.float32
        assert set(seen) == {want} and set(target_seen) == {want}
        assert all(p.dtype == torch.float32 for p in policy.model.parameters())
    (g32, i32), (g16, i16) = out[None], out["bfloat16"]
    for key in ("total_loss", "q_mean"):
        assert i16[key].dtype == torch.float32
        torch.testing.assert_close(i16[key], i32[key], rtol=2e-2, atol=2e-3)
    flat32 = torch.cat([g.flatten() for _, g in sorted(g32.items())])
    flat16 = torch.cat([g.flatten() for _, g in sorted(g16.items())])
    assert torch.nn.functional.cosine_similarity(flat16, flat32, dim=0) > 0.99
    assert flat16.norm() == pytest.approx(float(flat32.norm()), rel=0.05)


def test_dqns_acting_in_bfloat16_picks_the_float32_greedy_action_where_its_q_values_are_clear():
    obs = torch.randint(0, 256, (32, 4, 36, 36), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    f32, b16 = make(DQNPolicy), make(DQNPolicy, act_autocast="bfloat16")
    seen = linear_dtypes(b16)
    q = f32.model(obs)["q"]
    top2 = q.topk(2, dim=-1).values
    clear = (top2[:, 0] - top2[:, 1]) > 0.02 * q.abs().max()  # the best action ahead by more than bfloat16's error
    assert clear.sum() >= 8
    greedy = f32.eval_mode.forward(obs)["action"]
    assert torch.equal(b16.eval_mode.forward(obs)["action"][clear], greedy[clear])
    assert seen and set(seen) == {torch.bfloat16}
    assert b16.precision_note() == "learner float32, acting bfloat16"


@pytest.mark.parametrize("policy_cls", [IMPALAPolicy, PPOPolicy])
def test_acting_in_bfloat16_hands_on_float32_logits_close_to_float32s(policy_cls):
    obs = torch.randint(0, 256, (5, 4, 36, 36), dtype=torch.uint8)
    f32, b16 = make(policy_cls), make(policy_cls, act_autocast="bfloat16")
    seen = linear_dtypes(b16)
    for mode in ("collect_mode", "eval_mode"):
        ref, got = getattr(f32, mode).forward(obs), getattr(b16, mode).forward(obs)
        assert got["logit"].dtype == torch.float32
        torch.testing.assert_close(got["logit"], ref["logit"], rtol=0.05, atol=0.02)
        assert got["action"].shape == ref["action"].shape
    assert seen and set(seen) == {torch.bfloat16}
    if policy_cls is PPOPolicy:
        assert b16.collect_mode.forward(obs)["value"].dtype == torch.float32  # GAE's input
    assert b16.precision_note() == "learner float32, acting bfloat16"


def test_auto_picks_bfloat16_for_a_conv_encoder_where_the_cpu_has_native_bfloat16():
    conv = make(IMPALAPolicy).model
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8))
    cpu = torch.device("cpu")
    assert resolve_autocast("auto", cpu, conv, frozenset({"avx2", "amx_bf16"})) == "bfloat16"
    assert resolve_autocast("auto", cpu, conv, frozenset({"avx2", "avx512_bf16"})) == "bfloat16"
    assert resolve_autocast("auto", cpu, conv, frozenset({"avx2", "avx512f"})) is None  # AMD Zen 3: emulated, slower
    assert resolve_autocast("auto", cpu, mlp, frozenset({"amx_bf16"})) is None  # a vector task's MLP gains nothing
    assert resolve_autocast("bfloat16", cpu, mlp, frozenset()) == "bfloat16"  # asked for: kept
    assert resolve_autocast(None, cpu, conv, frozenset({"amx_bf16"})) is None


def test_cpu_flags_reads_the_model_and_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu avx2 amx_bf16\n\n"
                    "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu avx2 amx_bf16\n")
    assert cpu_flags(str(info)) == ("Intel(R) Xeon(R) Processor", frozenset({"fpu", "avx2", "amx_bf16"}))
    assert cpu_flags(str(tmp_path / "missing")) == ("", frozenset())


@pytest.mark.parametrize("policy_type,key", [("ppo", "learn"), ("ppo", "collect"), ("impala", "collect"),
                                             ("appo", "collect")])
def test_other_values_are_refused_naming_the_key(policy_type, key):
    with pytest.raises(ConfigError, match=rf"policy\.{key}\.autocast='float16': must be None \(float32\), 'bfloat16' "
                                          r"or 'auto'"):
        compile_config(dict(env=dict(env_id="CartPole-v1"), policy={key: dict(autocast="float16")}),
                       dict(policy=dict(type=policy_type)))
