"""How ``export`` writes (issue 44, item 7): an inference-only module (a TorchScript output converts with
``.numpy()``), written atomically, and an existing file replaced only with ``--force`` / ``force=True``."""
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.deploy.agent import Agent, build_acting_policy
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.deploy.export import export, export_agent
from ding_lite.envs import EnvSpec
from ding_lite.utils import UserError

BOX4 = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
BOUNDS = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 3.0], np.float32))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_agent(policy_type, action_space):
    model = dict(actor_head_hidden_size=16, critic_head_hidden_size=16)
    cfg = compile_config((dict(env=dict(env_id="CartPole-v1"), policy=dict(model=model)),
                          dict(policy=dict(type=policy_type))))
    spec = EnvSpec.from_spaces(BOX4, action_space)
    resolve_env_spaces(cfg, spec)
    return Agent.from_policy(build_acting_policy(cfg.policy), spec, cfg)


@pytest.mark.parametrize("policy_type, action_space", [("sac", BOUNDS), ("impala", gym.spaces.Discrete(3))])
def test_exports_are_inference_only(tmp_path, policy_type, action_space):
    agent = make_agent(policy_type, action_space)
    path = export_agent(agent, "torchscript", str(tmp_path / "p.pt"))
    ts = torch.jit.load(path)
    out = ts(torch.zeros(3, 4))
    assert not out.requires_grad and out.numpy().shape[0] == 3  # a deploy script's .numpy() works
    assert not any(p.requires_grad for p in ts.parameters())
    assert all(p.requires_grad for p in agent.policy.model.parameters())  # the agent's model is left as it was
    onnx = export_agent(agent, "onnx", str(tmp_path / "p.onnx"))
    session = ort.InferenceSession(onnx, providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"obs": np.zeros((3, 4), np.float32)})[0], out.numpy(), atol=1e-5)


def test_an_existing_file_is_replaced_only_with_force(tmp_path):
    agent = make_agent("sac", BOUNDS)
    path = tmp_path / "p.pt"
    path.write_bytes(b"keep me")
    with pytest.raises(UserError, match=r"output '.*p\.pt' exists; pass --force \(force=True\) to overwrite it"):
        export_agent(agent, "torchscript", str(path))
    assert path.read_bytes() == b"keep me"
    inode = os.stat(path).st_ino
    export_agent(agent, "torchscript", str(path), force=True)
    assert torch.jit.load(str(path))(torch.zeros(1, 4)).shape == (1, 2)
    assert os.stat(path).st_ino != inode  # a new file renamed into place, not the old one written over
    assert sorted(os.listdir(tmp_path)) == ["p.pt"]  # no temporary file left


@pytest.mark.slow
def test_cli_refuses_to_overwrite_without_force(tmp_path):
    from ding_lite.config import read_config_file
    from ding_lite.entry import serial_pipeline
    exp = str(tmp_path / "cp")
    serial_pipeline(read_config_file(os.path.join(REPO, "dizoo_configs", "cartpole_impala.py")), seed=0,
                    max_env_step=200, quiet=True, exp_name=exp,
                    overrides={"env.collector_env_num": 2, "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1})
    cli = [sys.executable, "-m", "ding_lite.cli", "export", exp + "_seed0", "--format", "torchscript"]
    first = subprocess.run(cli, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    written = first.stdout.strip()
    again = subprocess.run(cli, capture_output=True, text=True)
    assert again.returncode == 2 and "Traceback" not in again.stderr
    assert again.stderr.strip() == (f"ding_lite: error: output '{written}' exists; pass --force (force=True) to "
                                    f"overwrite it, or name another file with -o")
    forced = subprocess.run(cli + ["--force"], capture_output=True, text=True)
    assert forced.returncode == 0 and forced.stdout.strip() == written, forced.stderr
    with pytest.raises(UserError, match="exists; pass --force"):
        export(exp + "_seed0", "torchscript")
