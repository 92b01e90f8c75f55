"""``ding_lite.load(path).predict(obs)`` of a policy trained with an action mask applies the mask the observation
carries; its TorchScript and ONNX exports take the mask as an input (``action_mask``) and act as ``predict`` (IMPALA,
ACER, discrete SAC)."""
import numpy as np
import onnxruntime as ort
import pytest
import torch

import ding_lite
from ding_lite.entry import serial_pipeline
from ding_lite.deploy.export import export
from ding_lite.envs.toy.wall_grid import WallGridEnv
from ding_lite.utils import UserError


POLICIES = {  # policy type -> its small settings
    "impala": {"unroll_len": 4, "collect": {"n_sample": 2}, "learn": {"batch_size": 2}},
    "acer": {"unroll_len": 4, "collect": {"n_sample": 2}, "learn": {"batch_size": 2}},
    "discrete_sac": {"random_collect_size": 16, "learn": {"batch_size": 4},
                     "model": {"actor_head_hidden_size": 16, "critic_head_hidden_size": 16}},
}


@pytest.fixture(scope="module", params=list(POLICIES))
def run(request, tmp_path_factory):
    exp = str(tmp_path_factory.mktemp("runs") / "masked")
    config = ({"env": {"collector_env_num": 2, "evaluator_env_num": 1, "n_evaluator_episode": 1},
               "policy": POLICIES[request.param]},
              {"env": {"type": "wall_grid"}, "policy": {"type": request.param}})
    serial_pipeline(config, seed=0, max_env_step=64, quiet=True, exp_name=exp, overrides={"torch_threads": 1})
    return exp + "_seed0"


def test_predict_applies_the_mask(run):
    agent = ding_lite.load(run)
    obs, _ = WallGridEnv().reset(seed=0)
    for only in range(4):
        mask = np.zeros(4, dtype=np.int8)
        mask[only] = 1
        assert agent.predict({**obs, "action_mask": mask}) == only
        assert agent.predict({**obs, "action_mask": mask}, deterministic=False) == only
    batch = {"position": np.array([0, 0]), "action_mask": np.array([[0, 0, 1, 0], [1, 0, 0, 0]], dtype=np.int8)}
    assert agent.predict(batch).tolist() == [2, 0]
    assert agent.predict({"position": 0}) in range(4)  # no mask given: acts unmasked
    with pytest.raises(UserError, match="action mask"):
        agent.predict({"position": 0, "action_mask": np.ones(5, dtype=np.int8)})


def test_exports_take_the_mask_as_an_input(run, tmp_path):
    agent = ding_lite.load(run)
    position = np.array([0, 7, 12, 3], dtype=np.int64)
    mask = np.array([[0, 0, 1, 0], [1, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 1]], dtype=np.int8)
    expected = agent.predict({"position": position, "action_mask": mask})
    assert mask[np.arange(4), expected].all()
    module = torch.jit.load(export(run, "torchscript", str(tmp_path / "p.pt")))
    with torch.no_grad():
        got = module(torch.from_numpy(position), torch.from_numpy(mask))
    assert got.tolist() == expected.tolist()
    session = ort.InferenceSession(export(run, "onnx", str(tmp_path / "p.onnx")), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["position", "action_mask"]
    got = session.run(None, {"position": position, "action_mask": mask})[0]
    assert got.tolist() == expected.tolist()
