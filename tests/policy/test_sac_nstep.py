"""SAC's ``policy.nstep``: the config key, the samples the collect mode emits (against a slow reference loop over the
one-step stream, with terminations, truncations and episode ends inside the window), nstep=1 unchanged, the learn
step of every action space with nstep=3, a serial run, and ported DI-engine configs that set it."""
import copy
import dataclasses
import os

import pytest
import torch

from ding_lite.config import compile_config, read_config_file
from ding_lite.port import port_file
from ding_lite.utils import ConfigError

from entry_helpers import read_result
from sac_helpers import ALL, CONFIGS, CRITIC_TARGET_FN, Recorder

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config", "fixtures")
GAMMA = 0.99
BASE_KEYS = {"obs", "next_obs", "action", "reward", "terminated", "truncated"}


def reference_samples(stream, gamma, n, starts):
    """The n-step sample of each start step t and env b, by walking the one-step stream (T, B, ...) forward from t:
    add gamma^k r_{t+k}, stop after an episode end or after n steps; bootstrap from the step it stopped at."""
    T, B = stream["reward"].shape
    out = {k: [] for k in ("obs", "action", "reward", "next_obs", "terminated", "truncated", "discount")}
    for t in starts:
        row = {k: [] for k in out}
        for b in range(B):
            g, m, j = 0.0, 0, t
            while True:
                g += gamma ** m * float(stream["reward"][j, b])
                m += 1
                if stream["terminated"][j, b] or stream["truncated"][j, b] or m == n:
                    break
                j += 1
            assert j < T, "the reference needs complete windows"
            row["obs"].append(stream["obs"][t, b])
            row["action"].append(stream["action"][t, b])
            row["reward"].append(torch.tensor(g))
            row["next_obs"].append(stream["next_obs"][j, b])
            row["terminated"].append(stream["terminated"][j, b])
            row["truncated"].append(stream["truncated"][j, b])
            row["discount"].append(torch.tensor(gamma ** m))
        for k in out:
            out[k].append(torch.stack(row[k]))
    return {k: torch.stack(v) for k, v in out.items()}


def assert_samples_match(emitted, ref):
    for key in ("obs", "action", "next_obs", "terminated", "truncated"):
        assert torch.equal(emitted[key], ref[key].to(emitted[key].dtype)), key
    torch.testing.assert_close(emitted["reward"].double(), ref["reward"].double(), rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(emitted["discount"].double(), ref["discount"].double(), rtol=1e-6, atol=0)


def random_stream(T, B, seed, p_end=0.15):
    g = torch.Generator().manual_seed(seed)
    return {"obs": torch.randn(T, B, 3, generator=g), "next_obs": torch.randn(T, B, 3, generator=g),
            "action": torch.randint(0, 2, (T, B), generator=g), "reward": torch.randn(T, B, generator=g),
            "terminated": torch.rand(T, B, generator=g) < p_end, "truncated": torch.rand(T, B, generator=g) < p_end}


# ---- the config key ----------------------------------------------------------------------------------------------
PENDULUM = os.path.join(CONFIGS, "pendulum_sac.py")


def test_sac_takes_nstep():
    assert compile_config(read_config_file(PENDULUM)).policy.nstep == 1
    assert compile_config(read_config_file(PENDULUM), overrides=["policy.nstep=3"]).policy.nstep == 3
    cartpole = os.path.join(CONFIGS, "cartpole_sac.py")
    assert compile_config(read_config_file(cartpole), overrides=["policy.nstep=5"]).policy.nstep == 5


@pytest.mark.parametrize("value", ["0", "-2", "2.5", "True", "'3'"])
def test_a_bad_nstep_names_the_key(value):
    with pytest.raises(ConfigError) as info:
        compile_config(read_config_file(PENDULUM), overrides=[f"policy.nstep={value}"])
    assert "policy.nstep" in str(info.value)


@pytest.mark.parametrize("config, policy", [("cartpole_acer.py", "acer"), ("cartpole_impala.py", "impala")])
def test_impala_and_acer_still_say_nstep_has_no_effect(config, policy):
    with pytest.raises(ConfigError) as info:
        compile_config(read_config_file(os.path.join(CONFIGS, config)), overrides=["policy.nstep=3"])
    message = str(info.value)
    assert message.startswith(f"policy.nstep: has no effect for policy '{policy}'") and "remove it" in message
    assert "did you mean" not in message


# ---- the samples of the collect mode -----------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 5])
def test_collect_mode_emits_the_nstep_sample_of_n_minus_1_steps_back(make, n):
    sac = make("discrete", {"policy.nstep": n})
    mode = sac.policy.collect_mode
    T, B = 40, 4
    stream = random_stream(T, B, seed=n)
    emitted = []
    for t in range(T):
        out = mode.get_train_sample({k: v[t:t + 1] for k, v in stream.items()})
        if t < n - 1:
            assert out is None  # no window is complete yet
        else:
            assert set(out) == BASE_KEYS | {"discount"} and out["reward"].shape == (B,)
            emitted.append(out)
    assert len(emitted) == T - n + 1
    emitted = {k: torch.stack([e[k] for e in emitted]) for k in emitted[0]}
    ref = reference_samples(stream, GAMMA, n, range(T - n + 1))
    assert (ref["discount"] > GAMMA ** n + 1e-9).any()  # some windows were cut by an episode end
    assert_samples_match(emitted, ref)


def test_a_collector_reset_drops_the_steps_held_back_and_a_partial_reset_cuts_the_window(make):
    sac = make("discrete", {"policy.nstep": 3})
    mode = sac.policy.collect_mode
    stream = random_stream(8, 2, seed=7, p_end=0.0)
    step = [{k: v[t:t + 1] for k, v in stream.items()} for t in range(8)]
    assert mode.get_train_sample(step[0]) is None and mode.get_train_sample(step[1]) is None
    mode.reset(None)
    assert mode.get_train_sample(step[2]) is None and mode.get_train_sample(step[3]) is None
    first = mode.get_train_sample(step[4])  # the window 2, 3, 4
    assert torch.equal(first["obs"], stream["obs"][2]) and torch.equal(first["next_obs"], stream["next_obs"][4])
    mode.reset([1])  # env 1 alone starts a new episode after step 4: its windows stop there
    second = mode.get_train_sample(step[5])  # start 3: env 0 runs to step 5, env 1 stops at step 4
    assert torch.equal(second["next_obs"][0], stream["next_obs"][5, 0])
    assert torch.equal(second["next_obs"][1], stream["next_obs"][4, 1]) and bool(second["truncated"][1])
    torch.testing.assert_close(second["discount"], torch.tensor([GAMMA ** 3, GAMMA ** 2]))


def test_the_collector_emits_reference_samples_across_terminations_and_truncations(make):
    """CartPole with random actions and a time limit of 12 steps: episodes end by termination and by truncation,
    inside windows. The one-step stream the collector hands the policy is recorded; the emitted samples must be its
    reference n-step samples, with the true final observation (not the reset one) after a truncation."""
    n = 3
    sac = make("discrete", {"policy.nstep": n, "env.kwargs": {"max_episode_steps": 12}})
    stream = []
    mode = sac.collector.policy

    def recording(segment):
        stream.append(copy.deepcopy(segment))
        return mode.get_train_sample(segment)

    sac.collector.policy = dataclasses.replace(mode, get_train_sample=recording)
    emitted = [sac.collector.collect(60, random_action=True) for _ in range(3)]
    stream = {k: torch.cat([s[k] for s in stream]) for k in stream[0]}
    T, B = stream["reward"].shape
    emitted = {k: torch.cat([e[k] for e in emitted]) for k in emitted[0]}
    emitted = {k: v.view(-1, B, *v.shape[1:]) for k, v in emitted.items()}  # (steps, envs, ...)
    assert emitted["reward"].shape[0] == T - n + 1  # every step but the n - 1 held back
    assert stream["terminated"].any() and stream["truncated"].any()
    assert_samples_match(emitted, reference_samples(stream, GAMMA, n, range(T - n + 1)))
    cut = stream["truncated"][:-1] & ~stream["terminated"][:-1]
    assert not torch.equal(stream["next_obs"][:-1][cut], stream["obs"][1:][cut])  # final obs, not the reset one
    assert emitted["truncated"].any()


# ---- nstep=1 is the one-step SAC --------------------------------------------------------------------------------
def test_nstep_1_samples_and_targets_are_the_one_step_ones(make, monkeypatch):
    sac = make("continuous")
    assert sac.cfg.policy.nstep == 1
    stream = random_stream(3, 2, seed=0)
    seg = {k: v[:1] for k, v in stream.items()}
    out = sac.policy.collect_mode.get_train_sample(seg)
    assert set(out) == BASE_KEYS and all(torch.equal(out[k], seg[k][0]) for k in seg)
    recorder = Recorder(monkeypatch, "sac_critic_target")
    batch = sac.batch()
    assert "discount" not in batch
    sac.learn(batch)
    gamma = recorder.calls[0]["gamma"]
    assert type(gamma) is float and gamma == sac.cfg.policy.learn.discount_factor  # the float, as before


# ---- the learn step ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ALL)
def test_learn_with_nstep_3_bootstraps_with_each_samples_discount(make, monkeypatch, case):
    sac = make(case, {"policy.nstep": 3})
    batch = sac.batch()
    discount = batch["discount"]
    assert discount.shape == batch["reward"].shape and discount.dtype == torch.float32
    gamma = sac.cfg.policy.learn.discount_factor
    powers = torch.tensor([gamma, gamma ** 2, gamma ** 3])
    assert ((discount.unsqueeze(-1) - powers).abs().min(-1).values < 1e-6).all()
    recorder = Recorder(monkeypatch, CRITIC_TARGET_FN[case])
    info = sac.learn(batch)
    assert torch.equal(recorder.calls[0]["gamma"], discount)
    call = recorder.calls[0]
    live = call["terminated"] < 0.5  # y = G + gamma^m (1 - terminated) V(s'): G alone where terminated
    assert torch.equal(call["out"][~live], call["reward"][~live])
    assert all(torch.isfinite(torch.as_tensor(v)).all() for v in info.values())


@pytest.mark.slow
def test_a_serial_run_with_nstep_3(cli, in_tmp):  # the whole pipeline, its preflight too (a short run, no learning)
    res = cli.train("--set", "policy.nstep=3", "--set", "policy.random_collect_size=200", "--set",
                    "policy.eval.evaluator.eval_freq=100", "--set", "env.stop_value=None", "--exp-name", "n",
                    config=PENDULUM, env_step=600)
    assert res.exit_code == 0, res.output
    result = read_result(in_tmp / "n_seed0")
    assert result["stop_reason"] == "max_env_step" and result["train_iter"] > 0


def test_the_buffer_memory_estimate_sees_the_nstep_samples():
    """The preflight builds one train sample through the collect hooks: with nstep=3 the first two steps give none,
    and the sample it measures has the ``discount`` leaf the buffer will hold."""
    from ding_lite.entry.build import compile_input, probe_env
    from ding_lite.entry.preflight import train_sample_layout

    cfg = compile_input(read_config_file(PENDULUM), 0, {"policy.nstep": 3})
    _, observation_space = probe_env(cfg, 0)
    layout = {name: (shape, dtype) for name, shape, dtype in train_sample_layout(cfg, observation_space)}
    assert layout["discount"] == ((), torch.float32) and layout["next_obs"] == ((3,), torch.float32)


# ---- ported DI-engine configs ------------------------------------------------------------------------------------
def test_a_ported_di_engine_sac_config_keeps_nstep(tmp_path):
    src = tmp_path / "pendulum_sac_config.py"
    text = open(os.path.join(FIXTURES, "dingengine_pendulum_sac.py")).read()
    src.write_text(text.replace("        priority=False,\n", "        priority=False,\n        nstep=3,\n", 1))
    port, out = port_file(str(src), str(tmp_path / "ported.py"))
    assert port.problems is None and not port.todos
    assert not any("nstep" in change for change in port.changes)
    assert compile_config(read_config_file(out)).policy.nstep == 3


def test_a_ported_acer_config_drops_nstep_with_the_reason(tmp_path):
    src = tmp_path / "cartpole_acer_config.py"
    text = open(os.path.join(FIXTURES, "dingengine_cartpole_acer.py")).read()
    assert "    policy=dict(\n" in text
    src.write_text(text.replace("    policy=dict(\n", "    policy=dict(\n        nstep=3,\n", 1))
    port, out = port_file(str(src), str(tmp_path / "ported.py"))
    assert port.problems is None
    assert "removed policy.nstep=3: has no effect for policy 'acer'" in open(out).read()
    assert "nstep" not in compile_config(read_config_file(out)).policy
