"""``ding_lite export``: the TorchScript and ONNX files act as ``predict`` does (issue 29, item 2). Policies are built
directly from configs and gymnasium spaces (no env, no training) for speed."""
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.deploy.agent import Agent, as_batch, build_acting_policy
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.deploy.export import export_agent, input_names
from ding_lite.envs import EnvSpec

BOX4 = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
BOUNDS = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 3.0], np.float32))
PIXELS = gym.spaces.Box(0, 255, (1, 36, 36), np.uint8)
NESTED = gym.spaces.Dict(goal=gym.spaces.Discrete(25), agent=gym.spaces.Dict(
    position=gym.spaces.Box(0.0, 1.0, (2,), np.float32), walls=gym.spaces.MultiBinary(4)))
SMALL = dict(encoder_hidden_size_list=[16], actor_head_hidden_size=16, critic_head_hidden_size=16)
SAC_SMALL = dict(actor_head_hidden_size=16, critic_head_hidden_size=16)
CASES = {  # name -> (policy type, observation space, action space, policy overrides)
    "impala_discrete": ("impala", BOX4, gym.spaces.Discrete(3), dict(model=SMALL)),
    "impala_continuous": ("impala", BOX4, BOUNDS, dict(model=SMALL)),
    "impala_multi_discrete": ("impala", BOX4, gym.spaces.MultiDiscrete([3, 2]), dict(model=SMALL)),
    "impala_conv": ("impala", PIXELS, gym.spaces.Discrete(3), dict(model=dict(actor_head_hidden_size=16))),
    "impala_nested": ("impala", NESTED, gym.spaces.Discrete(4), dict(model=SMALL)),
    "acer_discrete": ("acer", BOX4, gym.spaces.Discrete(3), dict(model=SMALL)),
    "acer_continuous": ("acer", BOX4, BOUNDS, dict(model=SMALL)),
    "sac_continuous": ("sac", BOX4, BOUNDS, dict(model=SAC_SMALL)),
    "sac_discrete": ("sac", BOX4, gym.spaces.Discrete(3), dict(model=SAC_SMALL)),
    "sac_boltzmann": ("sac", BOX4, gym.spaces.Discrete(3),
                      dict(model=SAC_SMALL, learn=dict(discrete_policy="boltzmann"))),
    "sac_mixed": ("sac", BOX4, gym.spaces.Tuple((gym.spaces.Discrete(3), BOUNDS)), dict(model=SAC_SMALL)),
    "sac_normalized": ("sac", BOX4, BOUNDS, dict(model=SAC_SMALL)),
    "ppo_discrete": ("ppo", BOX4, gym.spaces.Discrete(3), dict(model=SMALL)),
    "ppo_continuous": ("ppo", BOX4, BOUNDS, dict(model=SMALL)),
    "ppo_multi_discrete": ("ppo", BOX4, gym.spaces.MultiDiscrete([3, 2]), dict(model=SMALL)),
    "ppo_nested": ("ppo", NESTED, gym.spaces.Discrete(4), dict(model=SMALL)),
    "ppo_normalized": ("ppo", BOX4, BOUNDS, dict(model=SMALL)),
}


def make_agent(name):
    policy_type, obs_space, action_space, policy = CASES[name]
    env = dict(env_id="CartPole-v1", normalize_obs=name.endswith("normalized"))
    cfg = compile_config((dict(env=env, policy=policy), dict(policy=dict(type=policy_type))))
    spec = EnvSpec.from_spaces(obs_space, action_space)
    resolve_env_spaces(cfg, spec)
    torch.manual_seed(0)
    agent = Agent.from_policy(build_acting_policy(cfg.policy), spec, cfg)
    with torch.no_grad():
        for p in agent.policy.model.parameters():  # larger outputs: continuous means beyond the bounds
            p.mul_(3)
    if name.endswith("normalized"):
        agent.policy.update_obs_stats({"obs": torch.randn(500, 4) * 3 + 1})
    return agent, obs_space


def observations(space, n=100):
    batch = gym.vector.utils.batch_space(space, n)
    batch.seed(0)
    obs = batch.sample()
    if isinstance(space, gym.spaces.Box) and space.dtype == np.float32:
        obs = np.clip(obs, -50, 50) * 2  # unbounded Box samples, scaled up: some actions reach the bounds
    return obs


def flat(action):
    return list(action) if isinstance(action, tuple) else [action]


def check_close(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g = np.asarray(g)
        assert g.shape == e.shape
        if e.dtype == np.int64:
            assert g.dtype == np.int64
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", list(CASES))
def test_exports_act_as_predict(name, tmp_path):
    agent, space = make_agent(name)
    obs = observations(space)
    expected = flat(agent.predict(obs))
    leaves = as_batch(obs, agent.obs_space)[0]
    if name in ("impala_continuous", "acer_continuous", "ppo_continuous"):
        assert (expected[0] == BOUNDS.high).any() or (expected[0] == BOUNDS.low).any()  # some are clipped

    ts = export_agent(agent, "torchscript", str(tmp_path / "policy.pt"))
    module = torch.jit.load(ts)
    with torch.no_grad():
        out = module(*[torch.from_numpy(x) for x in leaves])
    check_close([x.numpy() for x in flat(out)], expected)

    path = export_agent(agent, "onnx", str(tmp_path / "policy.onnx"))
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, dict(zip(input_names(agent.obs_space), leaves)))
    check_close(got, expected)


@pytest.mark.parametrize("name", ["impala_continuous", "sac_continuous", "ppo_continuous"])
def test_distribution_parameters_on_request(name, tmp_path):
    agent, space = make_agent(name)
    path = export_agent(agent, "onnx", str(tmp_path / "policy.onnx"), with_dist=True)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outputs = session.run(None, {"obs": observations(space, 5)})
    assert len(outputs) == 3  # action, mu and sigma (IMPALA) or log_std, mu (SAC)
    check_close(outputs[:1], flat(agent.predict(observations(space, 5))))


@pytest.mark.slow
@pytest.mark.parametrize("config_file", ["cartpole_impala.py", "cartpole_ppo.py"])
def test_cli_export(config_file, tmp_path):
    """``ding_lite export`` on a run directory writes the file; a bad path is a clear error."""
    from ding_lite.entry import serial_pipeline
    from ding_lite.config import read_config_file
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    config = read_config_file(os.path.join(repo, "dizoo_configs", config_file))
    exp = str(tmp_path / "cp")
    serial_pipeline(config, seed=0, max_env_step=300, quiet=True, exp_name=exp,
                    overrides={"env.collector_env_num": 2, "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1})
    out = tmp_path / "p.onnx"
    cli = [sys.executable, "-m", "ding_lite.cli"]
    done = subprocess.run(cli + ["export", exp + "_seed0", "--format", "onnx", "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert session.run(None, {"obs": np.zeros((3, 4), np.float32)})[0].shape == (3,)
    bad = subprocess.run(cli + ["export", str(tmp_path / "nope"), "--format", "onnx"], capture_output=True, text=True)
    assert bad.returncode != 0 and "nope" in bad.stderr and "Traceback" not in bad.stderr
